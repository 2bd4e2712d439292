build-asan/tests/unit/test_http_client.o: tests/unit/test_http_client.c \
 tests/harness.h src/net/http_client.h src/base/buf.h
tests/harness.h:
src/net/http_client.h:
src/base/buf.h:
