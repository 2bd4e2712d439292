build-asan/tests/harness.o: tests/harness.c tests/harness.h
tests/harness.h:
