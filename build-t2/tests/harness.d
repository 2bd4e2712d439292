build-t2/tests/harness.o: tests/harness.c tests/harness.h
tests/harness.h:
