build-asan/tests/integration/test_ack.o: tests/integration/test_ack.c \
 tests/harness.h tests/integration/support.h src/base/json.h \
 src/base/buf.h src/net/http_client.h
tests/harness.h:
tests/integration/support.h:
src/base/json.h:
src/base/buf.h:
src/net/http_client.h:
