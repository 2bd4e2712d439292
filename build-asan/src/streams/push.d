build-asan/src/streams/push.o: src/streams/push.c src/streams/push.h \
 src/db/pool.h /usr/include/postgresql/libpq-fe.h \
 /usr/include/postgresql/postgres_ext.h \
 /usr/include/postgresql/pg_config_ext.h src/db/statements.h \
 src/base/buf.h src/base/ids.h src/base/log.h src/streams/push_plan.h
src/streams/push.h:
src/db/pool.h:
/usr/include/postgresql/libpq-fe.h:
/usr/include/postgresql/postgres_ext.h:
/usr/include/postgresql/pg_config_ext.h:
src/db/statements.h:
src/base/buf.h:
src/base/ids.h:
src/base/log.h:
src/streams/push_plan.h:
