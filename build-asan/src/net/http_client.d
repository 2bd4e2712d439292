build-asan/src/net/http_client.o: src/net/http_client.c \
 src/net/http_client.h src/base/buf.h
src/net/http_client.h:
src/base/buf.h:
