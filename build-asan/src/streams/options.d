build-asan/src/streams/options.o: src/streams/options.c \
 src/streams/options.h src/base/buf.h src/base/json.h
src/streams/options.h:
src/base/buf.h:
src/base/json.h:
