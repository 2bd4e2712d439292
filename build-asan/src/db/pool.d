build-asan/src/db/pool.o: src/db/pool.c src/db/pool.h \
 /usr/include/postgresql/libpq-fe.h \
 /usr/include/postgresql/postgres_ext.h \
 /usr/include/postgresql/pg_config_ext.h src/db/statements.h \
 src/base/buf.h src/base/log.h
src/db/pool.h:
/usr/include/postgresql/libpq-fe.h:
/usr/include/postgresql/postgres_ext.h:
/usr/include/postgresql/pg_config_ext.h:
src/db/statements.h:
src/base/buf.h:
src/base/log.h:
