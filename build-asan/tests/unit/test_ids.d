build-asan/tests/unit/test_ids.o: tests/unit/test_ids.c tests/harness.h \
 src/base/ids.h
tests/harness.h:
src/base/ids.h:
