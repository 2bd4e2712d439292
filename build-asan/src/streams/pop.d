build-asan/src/streams/pop.o: src/streams/pop.c src/streams/pop.h \
 src/base/buf.h src/db/pool.h /usr/include/postgresql/libpq-fe.h \
 /usr/include/postgresql/postgres_ext.h \
 /usr/include/postgresql/pg_config_ext.h src/db/statements.h \
 src/base/ids.h src/base/log.h src/db/result.h src/streams/frame.h \
 src/streams/segment.h
src/streams/pop.h:
src/base/buf.h:
src/db/pool.h:
/usr/include/postgresql/libpq-fe.h:
/usr/include/postgresql/postgres_ext.h:
/usr/include/postgresql/pg_config_ext.h:
src/db/statements.h:
src/base/ids.h:
src/base/log.h:
src/db/result.h:
src/streams/frame.h:
src/streams/segment.h:
