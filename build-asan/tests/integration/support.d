build-asan/tests/integration/support.o: tests/integration/support.c \
 tests/integration/support.h src/base/json.h src/base/buf.h \
 src/net/http_client.h /usr/include/postgresql/libpq-fe.h \
 /usr/include/postgresql/postgres_ext.h \
 /usr/include/postgresql/pg_config_ext.h tests/harness.h
tests/integration/support.h:
src/base/json.h:
src/base/buf.h:
src/net/http_client.h:
/usr/include/postgresql/libpq-fe.h:
/usr/include/postgresql/postgres_ext.h:
/usr/include/postgresql/pg_config_ext.h:
tests/harness.h:
