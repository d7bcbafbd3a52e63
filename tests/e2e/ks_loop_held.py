#!/usr/bin/python3
"""ks_loop_held.py - how long an agent's loop was held, less the time the
machine kept it from a CPU (test_steer_housekeep.sh).

    ks_loop_held.py sample PID LOG OUT   every 20 ms until PID exits: one
                                         line "MONO_NS RUN_NS DELAY_NS N"
                                         appended to OUT, RUN_NS and
                                         DELAY_NS the loop's (the main
                                         thread's) schedstat, N the "#SEQ
                                         N req/s" lines (one an interval)
                                         in LOG so far
    ks_loop_held.py held INTERVAL_S OUT  from OUT's samples: "HELD_S
                                         WALL_S DELAY_S", the longest time
                                         the loop spent neither on a CPU
                                         nor waiting for one between two
                                         samples that saw a new interval
                                         line (less INTERVAL_S for each
                                         further line between them: each
                                         interval sleeps at most that
                                         long), that span's wall time and
                                         run_delay

Why: beside stress-ng at load 26 the loop's wall-clock interval reached
37.3 s once (docs/testing.md), and a trace of the loop's syscalls showed
nothing on it that waits for rtnl or another thread; a loop that is
runnable but not run is the machine's doing, which the wall clock does
not tell from a hold. The time off the CPU less run_delay does.
"""
import re
import sys
import time

LINE = re.compile(rb"^keysteer: #[0-9]+ [0-9.]+ req/s ", re.M)


def schedstat(pid):
    with open("/proc/%d/task/%d/schedstat" % (pid, pid)) as f:
        run, delay = f.read().split()[:2]
    return int(run), int(delay)


def sample(pid, log, out):
    pid = int(pid)
    n, buf, off = 0, b"", 0
    with open(out, "a") as o:
        while True:
            try:
                run, delay = schedstat(pid)
            except (OSError, ValueError):
                return 0
            now = time.monotonic_ns()
            try:
                with open(log, "rb") as f:
                    f.seek(off)
                    data = f.read()
            except OSError:
                data = b""
            off += len(data)
            buf += data
            cut = buf.rfind(b"\n") + 1
            n += len(LINE.findall(buf[:cut]))
            buf = buf[cut:]
            o.write("%d %d %d %d\n" % (now, run, delay, n))
            o.flush()
            time.sleep(0.02)


def held(interval_s, out):
    rows = []
    for line in open(out):
        f = line.split()
        if len(f) == 4:
            rows.append(tuple(int(x) for x in f))
    # the samples at which a new interval line had appeared
    marks = [r for i, r in enumerate(rows) if i and r[3] > rows[i - 1][3]]
    best = (0.0, 0.0, 0.0)
    for a, b in zip(marks, marks[1:]):
        wall = (b[0] - a[0]) / 1e9
        delay = (b[2] - a[2]) / 1e9
        off = wall - (b[1] - a[1]) / 1e9 - delay
        h = off - float(interval_s) * (b[3] - a[3] - 1)
        if h > best[0]:
            best = (h, wall, delay)
    if len(marks) < 2:
        print("no two interval lines sampled", file=sys.stderr)
        return 1
    print("%.3f %.3f %.3f" % best)
    return 0


if __name__ == "__main__":
    if len(sys.argv) == 5 and sys.argv[1] == "sample":
        sys.exit(sample(*sys.argv[2:]))
    if len(sys.argv) == 4 and sys.argv[1] == "held":
        sys.exit(held(*sys.argv[2:]))
    print(__doc__, file=sys.stderr)
    sys.exit(2)
