#!/usr/bin/python3
"""ks_plain_window.py - how long a copy of a hot key still serves the old
value after a write that did not go through the client library (a plain
`set` on the owner): the window docs/client.md says the owner's agent
bounds by invalidating the copies on the datapath's dirty event.

  ks_plain_window.py --owner HOST:PORT --replicas HOST:PORT,... --key KEY
                     [--writes N] [--timeout SEC]

For each write: wait until every replica serves a usable copy (meta
`mg KEY v f`: found, not stale "X", not the tombstone's flags) of the
value last written, note time.monotonic(), `set` the next value on the
owner over TCP (text protocol, as a plain client does), then poll every
replica until none would serve the old value to a library reader (stale,
tombstone, miss, or the new value). Prints one JSON object: the window in
ms (p50, p99, max, samples), writes whose copies never came back usable
(timeouts), and how each window ended (stale / tombstone / new / miss).
"""
import argparse
import json
import socket
import sys
import time

TOMB = 0x6B73746D  # KS_MC_TOMB_FLAGS in user/net/mc_client.h


class Conn:
    def __init__(self, addr, timeout):
        host, port = addr.rsplit(":", 1)
        self.s = socket.create_connection((host, int(port)), timeout=timeout)
        self.s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buf = b""

    def line(self):
        while b"\r\n" not in self.buf:
            d = self.s.recv(65536)
            if not d:
                raise EOFError
            self.buf += d
        ln, self.buf = self.buf.split(b"\r\n", 1)
        return ln

    def exact(self, n):
        while len(self.buf) < n + 2:
            self.buf += self.s.recv(65536)
        v, self.buf = self.buf[:n], self.buf[n + 2:]
        return v

    def mg(self, key):
        """(state, value): state 'usable', 'stale', 'tomb' or 'miss'."""
        self.s.sendall(b"mg %s v f\r\n" % key.encode())
        ln = self.line()
        if ln == b"EN":
            return "miss", None
        toks = ln.split()
        val = self.exact(int(toks[1]))
        flags = 0
        for t in toks[2:]:
            if t.startswith(b"f"):
                flags = int(t[1:])
        if b"X" in toks[2:]:
            return "stale", val
        if flags == TOMB:
            return "tomb", val
        return "usable", val

    def set(self, key, val):
        self.s.sendall(b"set %s 0 0 %d\r\n%s\r\n" % (key.encode(), len(val), val))
        if self.line() != b"STORED":
            raise RuntimeError("set not stored")


def pct(xs, q):
    xs = sorted(xs)
    return round(xs[min(len(xs) - 1, int(round(q * (len(xs) - 1))))], 3) if xs else None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--owner", required=True)
    ap.add_argument("--replicas", required=True)
    ap.add_argument("--key", required=True)
    ap.add_argument("--writes", type=int, default=20)
    ap.add_argument("--timeout", type=float, default=3.0)
    a = ap.parse_args()
    owner = Conn(a.owner, a.timeout)
    reps = [Conn(r, a.timeout) for r in a.replicas.split(",")]
    res = {"window_ms": [], "timeouts": 0, "ended_by": {}}
    last = None
    for i in range(a.writes):
        deadline = time.monotonic() + a.timeout
        ready = False
        while time.monotonic() < deadline:
            st = [r.mg(a.key) for r in reps]
            if all(s == "usable" and (last is None or v == last) for s, v in st):
                ready = True
                break
            time.sleep(0.005)
        if not ready:
            res["timeouts"] += 1
            continue
        new = b"plain-%d" % i
        t0 = time.monotonic()
        owner.set(a.key, new)
        open_ = set(range(len(reps)))
        while open_ and time.monotonic() < t0 + a.timeout:
            for j in list(open_):
                s, v = reps[j].mg(a.key)
                if s != "usable" or v == new:
                    how = "new" if s == "usable" else s
                    res["ended_by"][how] = res["ended_by"].get(how, 0) + 1
                    open_.discard(j)
        if open_:
            res["timeouts"] += 1
        else:
            res["window_ms"].append((time.monotonic() - t0) * 1000)
        last = new
    xs = res["window_ms"]
    res["window_ms"] = {"n": len(xs), "p50": pct(xs, 0.5), "p99": pct(xs, 0.99),
                        "max": round(max(xs), 3) if xs else None,
                        "samples": [round(x, 3) for x in xs]}
    print(json.dumps(res))
    return 0


if __name__ == "__main__":
    sys.exit(main())
