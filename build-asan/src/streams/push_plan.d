build-asan/src/streams/push_plan.o: src/streams/push_plan.c \
 src/streams/push_plan.h src/db/pool.h /usr/include/postgresql/libpq-fe.h \
 /usr/include/postgresql/postgres_ext.h \
 /usr/include/postgresql/pg_config_ext.h src/db/statements.h \
 src/streams/push.h src/base/buf.h src/base/ids.h src/streams/frame.h \
 src/streams/segment.h
src/streams/push_plan.h:
src/db/pool.h:
/usr/include/postgresql/libpq-fe.h:
/usr/include/postgresql/postgres_ext.h:
/usr/include/postgresql/pg_config_ext.h:
src/db/statements.h:
src/streams/push.h:
src/base/buf.h:
src/base/ids.h:
src/streams/frame.h:
src/streams/segment.h:
