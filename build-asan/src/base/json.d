build-asan/src/base/json.o: src/base/json.c src/base/json.h \
 src/base/buf.h
src/base/json.h:
src/base/buf.h:
