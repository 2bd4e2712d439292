build-asan/src/streams/segment.o: src/streams/segment.c \
 src/streams/segment.h src/base/buf.h src/streams/frame.h
src/streams/segment.h:
src/base/buf.h:
src/streams/frame.h:
