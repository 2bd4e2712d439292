build-asan/src/streams/ack.o: src/streams/ack.c src/streams/ack.h \
 src/db/pool.h /usr/include/postgresql/libpq-fe.h \
 /usr/include/postgresql/postgres_ext.h \
 /usr/include/postgresql/pg_config_ext.h src/db/statements.h \
 src/base/buf.h src/base/ids.h src/base/json.h src/base/log.h \
 src/db/result.h src/streams/frame.h src/streams/segment.h
src/streams/ack.h:
src/db/pool.h:
/usr/include/postgresql/libpq-fe.h:
/usr/include/postgresql/postgres_ext.h:
/usr/include/postgresql/pg_config_ext.h:
src/db/statements.h:
src/base/buf.h:
src/base/ids.h:
src/base/json.h:
src/base/log.h:
src/db/result.h:
src/streams/frame.h:
src/streams/segment.h:
