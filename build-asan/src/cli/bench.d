build-asan/src/cli/bench.o: src/cli/bench.c src/cli/cli.h \
 src/cli/cli_common.h src/base/buf.h src/base/json.h \
 src/net/http_client.h src/cli/bench_load.h src/base/ids.h
src/cli/cli.h:
src/cli/cli_common.h:
src/base/buf.h:
src/base/json.h:
src/net/http_client.h:
src/cli/bench_load.h:
src/base/ids.h:
