-- wrk script of bench.py's timed searches: `wrk -t1 -cCLIENTS -s search.lua URL`
-- posts one search per request, each with the next query of BENCH_QUERY_FILE
-- (one JSON string a line, asked in order, each once: new queries stay new),
-- and stops after BENCH_REQUESTS answers. Its `done` prints one line of JSON:
-- requests, seconds, p50/p99 in ms (wrk's latency of every answered request,
-- so a 503 counts too), statuses other than 200, and the fewest results an
-- answer held (records counted by their "createdAt" key). One wrk thread
-- keeps all state in one Lua state.

local queries = {}
for line in io.lines(os.getenv("BENCH_QUERY_FILE")) do
    queries[#queries + 1] = line
end
local wanted = tonumber(os.getenv("BENCH_REQUESTS"))
local head = string.format('{"userKey":%s,"account":%s,"dbName":%s,"limit":10,"query":',
    os.getenv("BENCH_USER_KEY_JSON"), os.getenv("BENCH_ACCOUNT_JSON"), os.getenv("BENCH_DB_JSON"))

-- Globals, so that `done` (in wrk's main Lua state) reads them with thread:get.
sent, answered, other, timeouts, fewest = 0, 0, 0, 0, nil
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"

function request()
    sent = sent + 1
    local q = queries[(sent - 1) % #queries + 1]
    return wrk.format(nil, nil, nil, head .. q .. "}")
end

function response(status, headers, body)
    answered = answered + 1
    if status == 200 then
        local _, n = string.gsub(body, '"createdAt":', "")
        if fewest == nil or n < fewest then
            fewest = n
        end
    elseif status == 503 and string.find(body, '"timeout"', 1, true) then
        timeouts = timeouts + 1
    else
        -- The run is void: say why once and end it.
        other = other + 1
        if other == 1 then
            io.stderr:write(string.format("status %d: %s\n", status, string.sub(body, 1, 300)))
        end
    end
    if answered == wanted or other == 1 then
        -- wrk runs for its -d duration even when its threads stop: this
        -- line asks bench.py to end the run with a SIGINT, as Ctrl-C does.
        wrk.thread:stop()
        io.write("ANSWERED\n")
        io.flush()
    end
end

local threads = {}
function setup(thread)
    threads[#threads + 1] = thread
end

function done(summary, latency, requests)
    local t = threads[1]
    io.write(string.format(
        '{"requests":%d,"seconds":%.6f,"p50":%.3f,"p99":%.3f,"answered":%d,"timeouts":%d,"other":%d,"fewest":%d}\n',
        summary.requests, summary.duration / 1e6, latency:percentile(50) / 1000, latency:percentile(99) / 1000,
        t:get("answered"), t:get("timeouts"), t:get("other"), t:get("fewest") or -1))
end
