/* columns: values of binary PostgreSQL results written with the emitter,
 * NULL as null, so every reply shows a uuid, a text and a time one way. */
#include "api/api.h"
#include "db/result.h"

/* A NULL column is written as null here, once for every kind of value:
 * true when it was, and the caller writes nothing more. */
static bool emitted_null(emit *e, const PGresult *r, int row, int col)
{
    bool null = db_null(r, row, col);
    if (null) emit_null(e);
    return null;
}

void api_emit_uuid_col(emit *e, const PGresult *r, int row, int col)
{
    if (!emitted_null(e, r, row, col)) emit_uuid(e, db_uuid(r, row, col));
}

void api_emit_time_col(emit *e, const PGresult *r, int row, int col)
{
    if (!emitted_null(e, r, row, col)) emit_time(e, db_time_us(r, row, col));
}

void api_emit_int_col(emit *e, const PGresult *r, int row, int col)
{
    if (!emitted_null(e, r, row, col)) emit_int(e, db_int(r, row, col));
}

void api_emit_text_col(emit *e, const PGresult *r, int row, int col)
{
    if (emitted_null(e, r, row, col)) return;
    size_t n;
    const char *s = db_text(r, row, col, &n);
    emit_strn(e, s, n);
}

void api_emit_stored_json_col(emit *e, const PGresult *r, int row, int col)
{
    if (emitted_null(e, r, row, col)) return;
    size_t n;
    const char *text = db_json(r, row, col, &n);
    emit_raw(e, text, n);   /* stored verbatim from a checked JSON value */
}

void api_emit_pagination(emit *e, int64_t total, int64_t limit, int64_t offset)
{
    emit_key(e, "total"); emit_int(e, total);
    emit_key(e, "pagination"); emit_object(e);
    emit_key(e, "limit"); emit_int(e, limit);
    emit_key(e, "offset"); emit_int(e, offset);
    emit_end(e);
}
