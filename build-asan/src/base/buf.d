build-asan/src/base/buf.o: src/base/buf.c src/base/buf.h
src/base/buf.h:
