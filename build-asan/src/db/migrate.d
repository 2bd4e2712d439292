build-asan/src/db/migrate.o: src/db/migrate.c src/db/migrate.h \
 /usr/include/postgresql/libpq-fe.h \
 /usr/include/postgresql/postgres_ext.h \
 /usr/include/postgresql/pg_config_ext.h src/base/config.h \
 src/base/embed.h src/base/log.h
src/db/migrate.h:
/usr/include/postgresql/libpq-fe.h:
/usr/include/postgresql/postgres_ext.h:
/usr/include/postgresql/pg_config_ext.h:
src/base/config.h:
src/base/embed.h:
src/base/log.h:
