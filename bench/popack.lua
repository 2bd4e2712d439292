-- popack.lua: silt bench's popack. A consumer pops up to 100 messages of
-- QUEUE (queue mode), then acks all of them in one POST /api/v1/ack/batch
-- naming each message's transactionId, partitionId and leaseId, as
-- src/cli/bench.c does; then pops again. The queue is preloaded first
-- (scripts/bench-wrk.sh does it).
--   wrk -t10 -c10 -d7s -s popack.lua http://127.0.0.1:6632 -- QUEUE [WARMUP_S]
-- Run it with as many threads as connections (-t N -c N): wrk's Lua API
-- does not say which connection asks for the next request, so only a
-- thread with one connection knows that its next request is the ack of
-- the pop it just read.
-- Messages are the items acked successfully, counted from WARMUP_S seconds
-- on (default 1, like silt bench's warm-up). When the queue runs dry before
-- the run ends, the rate covers the time until the last successful ack, as
-- silt bench's does (it stops there), and the result line says dry_after=S:
-- a run that divided by the whole duration read a third of silt bench's rate
-- once the preload was gone halfway through (issue 33, point 5). The warm-up cannot be a
-- separate wrk run as for the other scripts: a run ends right after a
-- reply, so it leaves popped messages unacked, and their partitions stay
-- leased for the queue's leaseTime (300 s by default).
local common = require("common")
local now = common.now

local headers = { ["Content-Type"] = "application/json" }
local pop_request, ack_body, acking, measure_from
warmup = 1   -- globals: done() reads them through the thread handles
acked, failed, empty, popped = 0, 0, 0, 0
last_ack_at, started_at = 0, 0   -- monotonic seconds: this thread's last successful ack, its start

setup = common.setup

function init(args)
    local queue = assert(args[1], "usage: -- QUEUE [WARMUP_S]")
    warmup = tonumber(args[2]) or 1
    pop_request = wrk.format("GET", "/api/v1/pop/queue/" .. queue .. "?batch=100")
    started_at = now()
    measure_from = started_at + warmup
end

function request()
    acking = ack_body ~= nil
    if not acking then return pop_request end
    local body = ack_body
    ack_body = nil
    return wrk.format("POST", "/api/v1/ack/batch", headers, body)
end

-- Every message names its transactionId, then (after data and createdAt)
-- its partitionId and leaseId: the order of the wire contract's envelope.
-- The ack copies the three JSON strings as they came.
local string_after = common.string_after

local function ack_of(body)
    local items, n, pos = {}, 0, 1
    while true do
        local tx, pid, lease
        tx, pos = string_after(body, '"transactionId":', pos)
        if not tx then break end
        pid, pos = string_after(body, '"partitionId":', pos)
        lease, pos = string_after(body, '"leaseId":', pos)
        n = n + 1
        items[n] = '{"transactionId":' .. tx .. ',"partitionId":' .. pid
            .. ',"leaseId":' .. lease .. ',"status":"completed"}'
    end
    if n == 0 then return nil, 0 end
    return '{"acknowledgments":[' .. table.concat(items, ",") .. "]}", n
end

function response(status, headers, body)
    if acking then
        if status ~= 200 or now() < measure_from then return end
        local ok = common.occurrences(body, '"success":true')
        acked = acked + ok
        if ok > 0 then last_ack_at = now() end
        failed = failed + common.occurrences(body, '"success":false')
    elseif status == 204 then
        empty = empty + 1   -- every partition leased by another consumer, or none left
    elseif status == 200 then
        local n
        ack_body, n = ack_of(body)
        popped = popped + n   -- warm-up included: as many as were preloaded is dry
    end
end

-- The run's measured seconds, and those until the last successful ack when
-- the queue ran dry (no ack in the run's last half second): nil otherwise.
local function measured_seconds(summary)
    local n = math.max(1, common.count())
    local start = common.sum("started_at") / n
    local seconds = summary.duration / 1e6 - common.sum("warmup") / n
    local last = common.max("last_ack_at")
    if last <= 0 or last > start + summary.duration / 1e6 - 0.5 then return seconds, nil end
    local until_dry = last - start - common.sum("warmup") / n
    return until_dry, until_dry
end

function done(summary, latency)
    local seconds, dry = measured_seconds(summary)
    common.report(summary, latency, common.sum("acked"), seconds,
        string.format(" ack_failed=%d empty_pops=%d popped=%d%s",
            common.sum("failed"), common.sum("empty"), common.sum("popped"),
            dry and string.format(" dry_after=%.2f", dry) or ""))
end
