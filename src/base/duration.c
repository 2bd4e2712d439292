/* duration: parse and render "7d", "36h", "90m", "45s" (see duration.h).
 * Integers only, never floating point: a duration becomes a class key, and
 * two spellings of one length must give one key, exactly. */
#include "base/duration.h"
#include <stdio.h>
#include <string.h>

typedef struct unit {
    char    letter;
    int64_t seconds;
} unit;

/* Largest first: duration_format takes the first that divides. */
static const unit units[] = { { 'd', 86400 }, { 'h', 3600 }, { 'm', 60 }, { 's', 1 } };

static const unit *unit_of(char letter)
{
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++)
        if (units[i].letter == letter) return &units[i];
    return NULL;
}

/* The leading decimal digits of s as a number, capped (past the cap the
 * exact value no longer matters: it is too long either way); their count
 * through ndigits. */
static int64_t leading_number(const char *s, size_t *ndigits)
{
    int64_t v = 0;
    size_t n = 0;
    for (; s[n] >= '0' && s[n] <= '9'; n++)
        if (v <= DURATION_MAX_SECONDS) v = v * 10 + (s[n] - '0');
    *ndigits = n;
    return v;
}

duration_fault duration_parse(const char *text, int64_t *seconds)
{
    size_t n;
    int64_t v = leading_number(text, &n);
    const unit *u = n ? unit_of(text[n]) : NULL;
    if (!u || text[n + 1] != '\0') return DURATION_E_FORM;
    if (v == 0) return DURATION_E_ZERO;
    if (v > DURATION_MAX_SECONDS / u->seconds) return DURATION_E_TOO_LONG;
    *seconds = v * u->seconds;
    return DURATION_OK;
}

void duration_format(int64_t seconds, char out[DURATION_TEXT_BYTES])
{
    const unit *u = &units[sizeof units / sizeof units[0] - 1];
    for (size_t i = 0; seconds > 0 && i < sizeof units / sizeof units[0]; i++)
        if (seconds % units[i].seconds == 0) { u = &units[i]; break; }
    snprintf(out, DURATION_TEXT_BYTES, "%lld%c", (long long)(seconds / u->seconds), u->letter);
}

/* "I.F<unit>": at most 9 fraction digits, so that F x unit cannot overflow. */
int duration_decimal(const char *text, int64_t *seconds)
{
    size_t ni, nf;
    int64_t whole = leading_number(text, &ni);
    if (!ni || text[ni] != '.') return -1;
    const char *frac = text + ni + 1;
    int64_t f = leading_number(frac, &nf);
    const unit *u = unit_of(frac[nf]);
    if (!nf || nf > 9 || !u || frac[nf + 1] != '\0' || whole > DURATION_MAX_SECONDS / u->seconds) return -1;
    int64_t scale = 1;
    for (size_t i = 0; i < nf; i++) scale *= 10;
    if ((f * u->seconds) % scale != 0) return -1;
    int64_t total = whole * u->seconds + f * u->seconds / scale;
    if (total <= 0 || total > DURATION_MAX_SECONDS) return -1;
    *seconds = total;
    return 0;
}
