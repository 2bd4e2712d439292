build-asan/src/cli/ack.o: src/cli/ack.c src/cli/cli.h \
 src/cli/cli_common.h src/base/buf.h src/base/json.h \
 src/net/http_client.h
src/cli/cli.h:
src/cli/cli_common.h:
src/base/buf.h:
src/base/json.h:
src/net/http_client.h:
