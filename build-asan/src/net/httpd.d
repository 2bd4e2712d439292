build-asan/src/net/httpd.o: src/net/httpd.c src/net/httpd.h \
 src/base/buf.h src/base/json.h src/base/log.h
src/net/httpd.h:
src/base/buf.h:
src/base/json.h:
src/base/log.h:
