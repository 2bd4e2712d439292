build-asan/src/base/ids.o: src/base/ids.c src/base/ids.h
src/base/ids.h:
