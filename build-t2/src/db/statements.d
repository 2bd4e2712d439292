build-t2/src/db/statements.o: src/db/statements.c src/db/statements.h
src/db/statements.h:
