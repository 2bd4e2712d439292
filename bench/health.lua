-- health.lua: silt bench's `health` scenario, GET /health over keep-alive
-- connections, one request in flight on each (wrk's default, no pipelining).
-- No request() or response() function: wrk then sends one prebuilt request
-- and never hands replies to Lua, the cheapest client it can be.
--   wrk -t1 -c50 -d6s -s health.lua http://127.0.0.1:6632
local common = require("common")

wrk.method = "GET"
wrk.path = "/health"

setup = common.setup

function done(summary, latency)
    local seconds = summary.duration / 1e6
    common.report(summary, latency, summary.requests, seconds)
end
