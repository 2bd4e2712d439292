-- common.lua: what every script in bench/ shares. wrk runs each thread in
-- a Lua state of its own and done() in yet another, so a count kept by the
-- threads (a global of theirs) reaches done() only through the thread
-- handles that setup() collects here.
local ffi = require("ffi")
local M = {}
local threads = {}

ffi.cdef [[
typedef struct { long tv_sec; long tv_nsec; } bench_timespec;
int clock_gettime(int clock, bench_timespec *ts);
]]
local ts = ffi.new("bench_timespec")
local CLOCK_MONOTONIC = 1

-- Seconds on the monotonic clock. Lua's own clocks are CPU time or whole
-- seconds; a warm-up counted inside a run needs better.
function M.now()
    ffi.C.clock_gettime(CLOCK_MONOTONIC, ts)
    return tonumber(ts.tv_sec) + tonumber(ts.tv_nsec) / 1e9
end

function M.setup(thread)
    threads[#threads + 1] = thread
end

function M.count()
    return #threads
end

-- The sum over the threads of their global `name` (0 where unset).
function M.sum(name)
    local total = 0
    for _, t in ipairs(threads) do total = total + (t:get(name) or 0) end
    return total
end

-- The largest over the threads of their global `name` (0 where unset).
function M.max(name)
    local m = 0
    for _, t in ipairs(threads) do m = math.max(m, t:get(name) or 0) end
    return m
end

-- Reading replies with plain string.find rather than patterns: LuaJIT runs
-- gmatch and gsub in its interpreter, and reading a pop of 100 and its ack
-- reply that way took ~400 µs of the client's CPU a round (plain finds
-- ~55 µs) on the two cores the server needs.

-- The JSON string that follows key (plain text such as '"leaseId":') at or
-- after pos, quotes included, and the position after it; nil when none
-- follows. For the ids silt writes, which never hold an escaped quote.
function M.string_after(body, key, pos)
    local _, e = string.find(body, key, pos, true)
    if not e then return nil, pos end
    local close = string.find(body, '"', e + 2, true)
    return string.sub(body, e + 1, close), close + 1
end

-- The JSON object (balanced braces) that follows key at or after pos, and
-- the position after it; nil when none follows.
function M.object_after(body, key, pos)
    local _, e = string.find(body, key, pos, true)
    if not e then return nil, pos end
    local object = string.match(body, "^%b{}", e + 1)
    return object, e + 1 + #object
end

-- How many times text occurs in body, read as plain text.
function M.occurrences(body, text)
    local n, pos = 0, 1
    while true do
        local _, e = string.find(body, text, pos, true)
        if not e then return n end
        n, pos = n + 1, e + 1
    end
end

-- One line for scripts/bench-wrk.sh; p50 is wrk's, per request (for
-- popack, pops and acks alike, warm-up included). Errors are failed requests
-- (connect, read, write, HTTP status > 399); wrk's "timeout" only counts
-- replies slower than --timeout, which still arrived, so it is apart.
function M.report(summary, latency, msgs, seconds, extra)
    local e = summary.errors
    io.write(string.format("wrk-result requests=%d msgs=%d seconds=%.3f rate=%.1f p50ms=%.2f errors=%d slow=%d%s\n",
        summary.requests, msgs, seconds, seconds > 0 and msgs / seconds or 0, latency:percentile(50) / 1000,
        e.connect + e.read + e.write + e.status, e.timeout, extra or ""))
end

return M
