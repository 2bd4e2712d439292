build-asan/src/cli/bench_load.o: src/cli/bench_load.c \
 src/cli/bench_load.h src/base/buf.h
src/cli/bench_load.h:
src/base/buf.h:
