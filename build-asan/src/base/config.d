build-asan/src/base/config.o: src/base/config.c src/base/config.h \
 src/base/buf.h
src/base/config.h:
src/base/buf.h:
