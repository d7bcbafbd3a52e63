#!/usr/bin/python3
"""ks_owner_replies.py ADDR PORT KEY CYCLES OUT.json - single-key reads of
KEY, one at a time, over UDP and TCP, while KEY expires and is set again
CYCLES times (TTL 1 s): each cycle sets it, reads it until memcached says
it expired (the misses), and reads it a few times more while it is gone.

Every read waits for its reply before the next is sent (no pipelining), so
each reply is pairable by the datapath. memcached's own `stats` (get_hits,
get_misses) before and after are the truth; OUT.json has them and what the
client itself saw, per protocol.
"""
import json
import random
import socket
import struct
import sys
import time


def stats(addr, port):
    with socket.create_connection((addr, port), timeout=5) as s:
        s.sendall(b"stats\r\n")
        buf = b""
        while not buf.endswith(b"END\r\n"):
            chunk = s.recv(65536)
            if not chunk:
                raise RuntimeError("stats: connection closed")
            buf += chunk
    out = {}
    for line in buf.decode().splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[0] == "STAT":
            out[parts[1]] = parts[2]
    return {k: int(out[k]) for k in ("get_hits", "get_misses", "cmd_get")}


class Tcp:
    def __init__(self, addr, port):
        self.s = socket.create_connection((addr, port), timeout=5)
        self.s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buf = b""

    def line(self):
        while b"\r\n" not in self.buf:
            chunk = self.s.recv(65536)
            if not chunk:
                raise RuntimeError("tcp: connection closed")
            self.buf += chunk
        line, self.buf = self.buf.split(b"\r\n", 1)
        return line

    def take(self, n):
        while len(self.buf) < n + 2:
            self.buf += self.s.recv(65536)
        data, self.buf = self.buf[:n], self.buf[n + 2:]
        return data

    def set(self, key, value, ttl):
        self.s.sendall(b"set %s 0 %d %d\r\n%s\r\n" % (key, ttl, len(value), value))
        if self.line() != b"STORED":
            raise RuntimeError("set not stored")

    def get(self, key):
        self.s.sendall(b"get %s\r\n" % key)
        line = self.line()
        if line == b"END":
            return False
        if not line.startswith(b"VALUE "):
            raise RuntimeError("tcp get: %r" % line)
        self.take(int(line.split()[3]))
        if self.line() != b"END":
            raise RuntimeError("tcp get: no END")
        return True


class Udp:
    def __init__(self, addr, port):
        self.s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.s.settimeout(2)
        self.s.connect((addr, port))
        self.rid = random.randrange(65536)

    def get(self, key):
        """True hit, False miss, None no answer (the read is retried with a
        new id; a lost one is still a get memcached may have counted)."""
        self.rid = (self.rid + 1) & 0xFFFF
        self.s.send(struct.pack("!HHHH", self.rid, 0, 1, 0) + b"get %s\r\n" % key)
        while True:
            try:
                d = self.s.recv(65536)
            except socket.timeout:
                return None
            rid, seq, _total, _ = struct.unpack("!HHHH", d[:8])
            if rid != self.rid:
                continue
            if seq == 0:
                return d[8:].startswith(b"VALUE ")


def main():
    addr, port, key, cycles, out = sys.argv[1:6]
    port, key, cycles = int(port), key.encode(), int(cycles)
    tcp, udp = Tcp(addr, port), Udp(addr, port)
    seen = {"udp": {"hits": 0, "misses": 0, "lost": 0},
            "tcp": {"hits": 0, "misses": 0}}
    before = stats(addr, port)

    def read(i):
        if i % 2:
            hit = tcp.get(key)
            seen["tcp"]["hits" if hit else "misses"] += 1
            return hit
        hit = udp.get(key)
        if hit is None:
            seen["udp"]["lost"] += 1
            return True  # unknown: keep reading
        seen["udp"]["hits" if hit else "misses"] += 1
        return hit

    for _ in range(cycles):
        tcp.set(key, b"v" * 100, 1)
        i = 0
        deadline = time.monotonic() + 10
        # read until it has expired (memcached's clock has 1 s steps)
        while read(i) and time.monotonic() < deadline:
            i += 1
            time.sleep(0.01)
        # the herd: reads while it is gone, both protocols
        for j in range(20):
            read(j)
    after = stats(addr, port)
    doc = {"before": before, "after": after, "seen": seen,
           "delta": {k: after[k] - before[k] for k in before}}
    with open(out, "w") as f:
        json.dump(doc, f)
    print(json.dumps(doc["delta"]), json.dumps(seen))
    return 0


if __name__ == "__main__":
    sys.exit(main())
