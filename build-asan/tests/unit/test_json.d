build-asan/tests/unit/test_json.o: tests/unit/test_json.c tests/harness.h \
 src/base/json.h src/base/buf.h
tests/harness.h:
src/base/json.h:
src/base/buf.h:
