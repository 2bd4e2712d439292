build-asan/src/api/queues.o: src/api/queues.c src/api/api.h \
 src/api/server.h src/base/config.h src/db/pool.h \
 /usr/include/postgresql/libpq-fe.h \
 /usr/include/postgresql/postgres_ext.h \
 /usr/include/postgresql/pg_config_ext.h src/db/statements.h \
 src/net/httpd.h src/base/buf.h src/streams/pop.h src/streams/push.h \
 src/base/json.h src/streams/options.h
src/api/api.h:
src/api/server.h:
src/base/config.h:
src/db/pool.h:
/usr/include/postgresql/libpq-fe.h:
/usr/include/postgresql/postgres_ext.h:
/usr/include/postgresql/pg_config_ext.h:
src/db/statements.h:
src/net/httpd.h:
src/base/buf.h:
src/streams/pop.h:
src/streams/push.h:
src/base/json.h:
src/streams/options.h:
