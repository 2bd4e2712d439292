-- push.lua: silt bench's push1/push10/push100. Each request is
-- POST /api/v1/push of BATCH items {"queue","partition","payload"}, the
-- partitions p0..p(PARTITIONS-1) taken in turn item by item, the payload
-- {"n":<10000..99999>,"s":"abcdefghij"} (about 30 bytes), as
-- src/cli/bench.c builds them. No transactionId, like silt bench: the
-- server generates one and skips the dedup probe.
-- With PER_REQUEST "1p", each request's items all go to one partition (the
-- next per request), as silt bench's push10-1p/push100-1p.
--   wrk -t1 -c50 -d6s -s push.lua http://127.0.0.1:6632 -- QUEUE BATCH [PARTITIONS [PER_REQUEST]]
-- A push commits entirely or fails with a non-2xx status (docs/api.md), so
-- messages are requests x BATCH; replies are not parsed (no response()),
-- which keeps the client's CPU per request low.
local common = require("common")

local headers = { ["Content-Type"] = "application/json" }
local queue, partitions, per_request
batch = 1   -- global: done() reads it through the thread handles
local seq = 0
local requests = 0

setup = common.setup

function init(args)
    queue = assert(args[1], "usage: -- QUEUE BATCH [PARTITIONS]")
    batch = tonumber(args[2]) or 1
    partitions = tonumber(args[3]) or 10
    per_request = args[4] == "1p"
end

function request()
    local items = {}
    for i = 1, batch do
        local p = per_request and requests or seq
        items[i] = string.format('{"queue":"%s","partition":"p%d","payload":{"n":%d,"s":"abcdefghij"}}',
            queue, p % partitions, 10000 + seq % 90000)
        seq = seq + 1
    end
    requests = requests + 1
    return wrk.format("POST", "/api/v1/push", headers, '{"items":[' .. table.concat(items, ",") .. "]}")
end

function done(summary, latency)
    local per_request = common.sum("batch") / math.max(1, common.count())
    common.report(summary, latency, summary.requests * per_request, summary.duration / 1e6)
end
