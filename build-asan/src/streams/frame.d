build-asan/src/streams/frame.o: src/streams/frame.c src/streams/frame.h \
 src/base/buf.h
src/streams/frame.h:
src/base/buf.h:
