/* test_iso_time: which timestamps the API accepts (ISO 8601 only). */
#include "harness.h"
#include "base/iso_time.h"

TEST(iso_time_accepts_what_clients_send)
{
    const char *good[] = {
        "2026-12-01", "2026-12-01T07:04:30.501Z", "2026-12-01T07:04:30Z", "2026-12-01T07:04Z",
        "2026-12-01 07:04:30.444387+00:00", "2026-12-01T07:04:30+0100", "2026-12-01T07:04:30-05",
        "2026-12-01T07:04:30", "2024-02-29T00:00:00Z", "2000-02-29", "2026-12-01T23:59:59.999999999Z",
        "2026-12-01T07:04:30+15:59", "2026-12-01T07:04:30-15:00",
    };
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++)
        if (!iso_time_valid(good[i])) harness_failf(__FILE__, __LINE__, "refused %s", good[i]);
}

TEST(iso_time_refuses_everything_else)
{
    const char *bad[] = {
        "", "garbage", "yesterday", "infinity", "-infinity", "epoch", "now", "today", "Dec 1 2026",
        "2026-13-01", "2026-02-30", "2023-02-29", "1900-02-29", "2026-12-00", "2026-12-1", "26-12-01",
        "2026-12-01T24:00:00Z", "2026-12-01T07:60Z", "2026-12-01T07", "2026-12-01T07:04:30.Z",
        "2026-12-01T07:04:30ZZ", "2026-12-01T07:04:30+25:00", "2026-12-01x", "2026-12-01T07:04:30 ",
        "0000-01-01", "2026-12-01T07:04:30+16:00", "2026-12-01T07:04:30.1234567890Z",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        if (iso_time_valid(bad[i])) harness_failf(__FILE__, __LINE__, "accepted %s", bad[i]);
    CHECK(!iso_time_valid(NULL));
}
