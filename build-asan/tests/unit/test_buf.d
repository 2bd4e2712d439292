build-asan/tests/unit/test_buf.o: tests/unit/test_buf.c tests/harness.h \
 src/base/buf.h
tests/harness.h:
src/base/buf.h:
