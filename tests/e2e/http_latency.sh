#!/usr/bin/env bash
# http_latency.sh - the agent's HTTP answer time (docs/operations.md): an
# agent on the e2e veth pair with --listen and --metrics on loopback,
# N sequential requests (default 2,000) to each of /routing and /metrics
# from inside the server namespace, each a new connection (the agent
# answers one request per connection), timed from connect to the
# answer's last byte. Prints p50/p90/p99/max per path, in microseconds.
# Not a test (no PASS/FAIL lines, not run by tests/run.sh); as root:
#
#   OUT=build tests/e2e/http_latency.sh [N]
#   LAT_AGENT=/path/to/another/agent OUT=build tests/e2e/http_latency.sh [N]
set -u
. "$(dirname "$0")/lib.sh"
[ -n "${LAT_AGENT:-}" ] && AGENT=$LAT_AGENT
N=${1:-2000}
e2e_init http_latency
e2e_net_up
LPORT=19281
MPORT=19282
e2e_agent_start --sample 1 --listen "$LPORT" --metrics "$MPORT" ||
	{ echo "the agent did not attach: $(head -c 300 "$E2E_TMP/agent.out")"; exit 1; }
# Until both paths answer 200: the agent's first interval has rendered a
# routing document and the metrics (503 before). 30 s: a guard.
ks_in_ns "$SNS" "$PY" - "$LPORT" "$MPORT" <<'PYEOF' ||
import sys, time, urllib.error, urllib.request
end = time.monotonic() + 30
for port, path in ((sys.argv[1], "/routing"), (sys.argv[2], "/metrics")):
    while True:
        try:
            urllib.request.urlopen("http://127.0.0.1:%s%s" % (port, path), timeout=5).read()
            break
        except (urllib.error.URLError, OSError) as e:
            if time.monotonic() > end:
                sys.exit("%s: no 200 within 30 s (%s)" % (path, e))
            time.sleep(0.1)
PYEOF
	{ echo "the agent did not answer 200 on both paths"; exit 1; }
ks_in_ns "$SNS" "$PY" - "$N" "$LPORT" "$MPORT" <<'PYEOF'
import socket, sys, time
n, lport, mport = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
def one(port, path):
    req = ("GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n" % path).encode()
    t0 = time.perf_counter_ns()
    s = socket.create_connection(("127.0.0.1", port), timeout=5)
    s.sendall(req)
    data = b""
    while True:
        b = s.recv(65536)
        if not b:
            break
        data += b
    t = time.perf_counter_ns() - t0
    s.close()
    assert data.startswith(b"HTTP/1.1 200"), data[:80]
    return t / 1000.0, len(data)
for port, path in ((lport, "/routing"), (mport, "/metrics")):
    for _ in range(50):
        one(port, path) # warm-up
    ts, size = [], 0
    for _ in range(n):
        t, size = one(port, path)
        ts.append(t)
    ts.sort()
    pick = lambda q: ts[min(len(ts) - 1, int(q * len(ts)))]
    print("%-9s n=%d answer=%d bytes  p50 %.0f us  p90 %.0f us  p99 %.0f us  max %.0f us"
          % (path, n, size, pick(0.50), pick(0.90), pick(0.99), ts[-1]))
PYEOF
e2e_agent_stop INT
