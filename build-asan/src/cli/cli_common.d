build-asan/src/cli/cli_common.o: src/cli/cli_common.c \
 src/cli/cli_common.h src/base/buf.h src/base/json.h \
 src/net/http_client.h
src/cli/cli_common.h:
src/base/buf.h:
src/base/json.h:
src/net/http_client.h:
