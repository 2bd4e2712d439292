build-asan/tests/unit/test_config.o: tests/unit/test_config.c \
 tests/harness.h src/base/config.h
tests/harness.h:
src/base/config.h:
