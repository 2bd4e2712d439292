build-t2/src/cli/bench.o: src/cli/bench.c src/cli/cli.h
src/cli/cli.h:
