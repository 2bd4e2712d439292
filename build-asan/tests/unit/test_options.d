build-asan/tests/unit/test_options.o: tests/unit/test_options.c \
 tests/harness.h src/streams/options.h src/base/buf.h src/base/json.h
tests/harness.h:
src/streams/options.h:
src/base/buf.h:
src/base/json.h:
