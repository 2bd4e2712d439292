build-asan/tests/unit/test_frames.o: tests/unit/test_frames.c \
 tests/harness.h src/streams/frame.h src/base/buf.h src/streams/segment.h
tests/harness.h:
src/streams/frame.h:
src/base/buf.h:
src/streams/segment.h:
