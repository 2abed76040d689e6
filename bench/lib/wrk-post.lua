-- wrk script: POSTs one body (read from a file) with the given headers, and
-- prints one JSON line of results at the end.
-- usage: wrk -s wrk-post.lua <url> -- <body file> [header: value]...
function init(args)
  local file = assert(io.open(args[1], "rb"))
  wrk.body = file:read("*all")
  file:close()
  wrk.method = "POST"
  for i = 2, #args do
    local name, value = args[i]:match("^([^:]+):%s*(.*)$")
    wrk.headers[name] = value
  end
end

function done(summary, latency, requests)
  local errors = summary.errors
  io.write(string.format(
    '{"requests":%d,"durationUs":%d,"p50Us":%d,"p90Us":%d,"p99Us":%d,"meanUs":%.1f,"non2xx":%d,"connectErrors":%d,"readErrors":%d,"writeErrors":%d,"timeouts":%d}\n',
    summary.requests, summary.duration, latency:percentile(50), latency:percentile(90), latency:percentile(99), latency.mean,
    errors.status, errors.connect, errors.read, errors.write, errors.timeout))
end
