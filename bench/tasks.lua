-- tasks.lua: silt bench's tasks scenario (src/cli/bench_tasks.c). 8
-- producers each POST /api/v1/tasks of 25 no-op tasks; 8 workers claim up
-- to 100 of them (started by the claim, long-polling 1 s), then finish all
-- of them in one request with their args as the result. While 1,000 tasks
-- or more are sent and not completed, producers send GET /health instead,
-- a millisecond apart, so the queue stays short and the rate is the engine's.
--   wrk -t16 -c16 -d7s -s tasks.lua http://127.0.0.1:6632 -- QUEUE [WARMUP_S]
-- One connection per thread (-t N -c N), as popack.lua: the first 8
-- threads produce, the rest work. Messages are tasks completed from
-- WARMUP_S (default 1) on.
local common = require("common")
local ffi = require("ffi")
local now = common.now

local PRODUCERS, SEND_BATCH, CLAIM, BACKLOG = 8, 25, 100, 1000
local SLOTS = 64   -- threads at most

-- The backlog spans threads, and wrk's threads share no Lua state: they
-- share this array instead, allocated once in the main state by setup().
-- Each thread writes only its own slot (a producer the tasks it sent, a
-- worker the tasks it completed), so no write races another.
local next_slot = 0
function setup(thread)
    common.setup(thread)
    assert(next_slot < SLOTS, "tasks.lua: at most 64 threads")
    shared = shared or ffi.new("int64_t[?]", SLOTS)   -- a global: kept alive for the run
    thread:set("slot", next_slot)
    thread:set("shared_addr", tonumber(ffi.cast("intptr_t", shared)))
    next_slot = next_slot + 1
end

local headers = { ["Content-Type"] = "application/json" }
local queue, counters, producer, measure_from, claim_req, finish_path, health_req
local phase, finish_body
warmup = 1   -- globals: done() reads them through the thread handles
completed, sends, idles = 0, 0, 0   -- idles: a producer's GET /health at the backlog cap

function init(args)
    queue = assert(args[1], "usage: -- QUEUE [WARMUP_S]")
    warmup = tonumber(args[2]) or 1
    counters = ffi.cast("int64_t *", shared_addr)
    producer = slot < PRODUCERS
    measure_from = now() + warmup
    local worker = "/api/v1/workers/wrk-" .. slot
    claim_req = wrk.format("POST", worker .. "/claim", headers,
        string.format('{"queues":["%s"],"max":%d,"start":true,"waitMs":1000}', queue, CLAIM))
    finish_path = worker .. "/finish"
    health_req = wrk.format("GET", "/health")
end

local function backlog()
    local sent, done = 0, 0
    for i = 0, PRODUCERS - 1 do sent = sent + tonumber(counters[i]) end
    for i = PRODUCERS, SLOTS - 1 do done = done + tonumber(counters[i]) end
    return sent - done
end

-- The send time rides in args (and back in the result), as silt bench's.
local function send_req()
    local item = string.format('{"name":"noop","queue":"%s","args":{"t":%.6f}}', queue, now())
    local items = {}
    for i = 1, SEND_BATCH do items[i] = item end
    return wrk.format("POST", "/api/v1/tasks", headers, '{"tasks":[' .. table.concat(items, ",") .. "]}")
end

-- A producer waiting for room asks a millisecond apart: spinning on
-- GET /health took the server's CPU from the workers (wrk's cheaper
-- threads spun harder than silt bench's, and read a lower rate).
function delay()
    return (producer and backlog() >= BACKLOG) and 1 or 0
end

function request()
    if producer then
        phase = backlog() >= BACKLOG and "idle" or "send"
        if phase == "idle" then idles = idles + 1; return health_req end
        sends = sends + 1
        return send_req()
    end
    if finish_body then
        phase = "finish"
        local body = finish_body
        finish_body = nil
        return wrk.format("POST", finish_path, headers, body)
    end
    phase = "claim"
    return claim_req
end

-- A claimed task names its id, then (after its name and queue) its args,
-- then its claimId: the order of the claim reply.
local function finish_of(body)
    local items, n, pos = {}, 0, 1
    while true do
        local id, args, claim
        id, pos = common.string_after(body, '"id":', pos)
        if not id then break end
        args, pos = common.object_after(body, '"args":', pos)
        claim, pos = common.string_after(body, '"claimId":', pos)
        n = n + 1
        items[n] = '{"id":' .. id .. ',"claimId":' .. claim .. ',"result":' .. args .. "}"
    end
    if n == 0 then return nil end
    return '{"tasks":[' .. table.concat(items, ",") .. "]}"
end

function response(status, headers, body)
    if status < 200 or status > 299 then return end   -- wrk counts it as an error
    if phase == "send" then
        counters[slot] = counters[slot] + SEND_BATCH
    elseif phase == "claim" then
        finish_body = finish_of(body)
    elseif phase == "finish" then
        local n = common.occurrences(body, '"status":"COMPLETED"')
        counters[slot] = counters[slot] + n
        if now() >= measure_from then completed = completed + n end
    end
end

function done(summary, latency)
    local seconds = summary.duration / 1e6 - common.sum("warmup") / math.max(1, common.count())
    common.report(summary, latency, common.sum("completed"), seconds,
        string.format(" sends=%d idle_health=%d", common.sum("sends"), common.sum("idles")))
end
