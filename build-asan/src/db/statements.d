build-asan/src/db/statements.o: src/db/statements.c src/db/statements.h
src/db/statements.h:
