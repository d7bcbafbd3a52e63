#!/usr/bin/python3
"""nutcracker_ref.py - twemproxy itself (Debian's nutcracker) as the oracle
of where a key lives: real memcached processes on 127.0.0.1, one real
nutcracker with a pool per (distribution, key hash, hash tag) in front of
them, every key set through a pool, then each memcached asked directly
which of the keys it holds.

  nutcracker_ref.py [--full] [--lists N] [--keys K] [--seed S]

Prints, for ring_compat.c (the line format of the other references):
  ring I                  a new pool follows
  pool DIST HASH TAG      ketama or modula, one of the 12 key hashes,
                          the hash_tag or - for none
  server HOST:PORT:W NAME one line per server, in the pool's order (NAME
                          - when the server has none)
  key HEX INDEX           a key (hex of its bytes) and the index of the
                          server that stored it
  end                     the end of a pool's keys
Every memcached and nutcracker is this script's own, listening on
127.0.0.1 only, stopped by its pid on every exit path.
"""
import argparse
import atexit
import os
import random
import signal
import socket
import subprocess
import sys
import tempfile
import time

HASHES = ("one_at_a_time", "md5", "crc16", "crc32", "crc32a", "fnv1_64",
          "fnv1a_64", "fnv1_32", "fnv1a_32", "hsieh", "murmur", "jenkins")
DISTS = ("ketama", "modula")
TAGS = (None, "{}")
procs = []


def stop_all():
    """SIGTERM to every process this script started, then a shared 5 s
    for all of them to go before SIGKILL."""
    live = [p for p in procs if p.poll() is None]
    for p in live:
        p.terminate()
    deadline = time.monotonic() + 5
    for p in live:
        try:
            p.wait(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


def free_ports(n):
    """n distinct free loopback ports (held open until all are chosen)."""
    socks, ports = [], []
    for _ in range(n):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        socks.append(s)
        ports.append(s.getsockname()[1])
    for s in socks:
        s.close()
    return ports


def wait_port(port, what):
    for _ in range(200):
        try:
            return socket.create_connection(("127.0.0.1", port), timeout=5)
        except OSError:
            time.sleep(0.05)
    raise SystemExit("%s on port %d did not start" % (what, port))


def start_memcached(port):
    args = ["memcached", "-l", "127.0.0.1", "-p", str(port), "-U", "0",
            "-m", "8", "-t", "1", "-c", "256"]
    if os.geteuid() == 0:
        args += ["-u", "nobody"]
    procs.append(subprocess.Popen(args, stdout=subprocess.DEVNULL,
                                  stderr=subprocess.DEVNULL))


class Conn:
    """One text-protocol connection, replies read by line."""

    def __init__(self, sock):
        self.s = sock
        self.buf = b""

    def send(self, data):
        self.s.sendall(data)

    def line(self):
        while b"\r\n" not in self.buf:
            chunk = self.s.recv(65536)
            if not chunk:
                raise SystemExit("connection closed by the server")
            self.buf += chunk
        ln, self.buf = self.buf.split(b"\r\n", 1)
        return ln

    def close(self):
        self.s.close()


def random_key(rnd, tagged):
    """Short and long ASCII up to 250 bytes and UTF-8, without the space
    and control bytes memcached's text protocol cannot carry; with a tag,
    keys with every edge of nutcracker's tag rule."""
    ascii_ = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789:_-./"
    utf8 = "\u00e9\u00fc\u00df\u65e5\u672c\u8a9e\u0416\U0001f600"
    ln = rnd.choice((1, 2, 3, 4, 5, 7, 8, 9, 12, 13, 16, 24, 40, 64, 100,
                     200, 250))
    if rnd.random() < 0.25:
        k = "".join(rnd.choice(ascii_ + utf8) for _ in range(ln))
    else:
        k = "".join(rnd.choice(ascii_) for _ in range(ln))
    b = k.encode()
    if tagged:
        inner = "".join(rnd.choice(ascii_) for _ in range(rnd.randint(1, 9)))
        shape = rnd.choice((
            "{%s}" + k, k + "{%s}", k[:3] + "{%s}" + k[3:],
            k + "{}" + "{%s}", "{" + k, k + "}", "}" + k + "{%s}",
            k + "{%s}{x}", "{{%s}}" + k, k + "{%s", "{}" + k))
        b = (shape.replace("%s", inner)).encode() if "%s" in shape \
            else shape.encode()
    return b[:250]


def server_lists(rnd, count, max_servers):
    """count lists of 1..max_servers (weights 1 or 1..5, names or none)."""
    sizes = [1, 2, 3, 5, 8, 13, 20, 32, 50, 64, 77, 100]
    out = []
    for i in range(count):
        n = min(sizes[i % len(sizes)], max_servers)
        weighted = i % 3 == 1
        named = i % 4 == 2
        out.append([(rnd.randint(1, 5) if weighted else 1,
                     "node%d-%s" % (j, rnd.choice("abc")) if named else None)
                    for j in range(n)])
    return out


def conf_pool(name, port, dist, hsh, tag, servers):
    lines = ["%s:" % name,
             "  listen: 127.0.0.1:%d" % port,
             "  hash: %s" % hsh,
             "  distribution: %s" % dist,
             "  auto_eject_hosts: false",
             "  preconnect: false",
             "  server_connections: 1",
             "  timeout: 5000",
             "  servers:"]
    if tag:
        lines.insert(4, '  hash_tag: "%s"' % tag)
    for (mport, w, sname) in servers:
        lines.append("   - 127.0.0.1:%d:%d%s" % (mport, w,
                                                 " " + sname if sname else ""))
    return "\n".join(lines) + "\n"


def holders(mc, idx, keys):
    """{key: server index} by asking the list's memcached directly."""
    out = {}
    for i in idx:
        c = mc[i]
        for at in range(0, len(keys), 16):
            chunk = keys[at:at + 16]
            c.send(b"get " + b" ".join(chunk) + b"\r\n")
            while True:
                ln = c.line()
                if ln == b"END":
                    break
                if not ln.startswith(b"VALUE "):
                    raise SystemExit("memcached said %r" % ln)
                k = ln.split(b" ")[1]
                c.line()  # the value
                if k in out:
                    raise SystemExit("key %r on two servers" % k)
                out[k] = i
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--full", action="store_true",
                    help="24 lists, 100 keys a pool (115,200 keys)")
    ap.add_argument("--lists", type=int, default=None)
    ap.add_argument("--keys", type=int, default=None)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    nlists = a.lists or (24 if a.full else 6)
    nkeys = a.keys or (100 if a.full else 24)
    atexit.register(stop_all)
    signal.signal(signal.SIGTERM, lambda *x: sys.exit(1))
    rnd = random.Random(a.seed)
    lists = server_lists(rnd, nlists, 100)
    nmc = max(len(l) for l in lists)
    mports = free_ports(nmc)
    for p in mports:
        start_memcached(p)
    mc = [Conn(wait_port(p, "memcached")) for p in mports]
    tmp = tempfile.mkdtemp(prefix="ks-nut-")
    ring = 0
    for li, spec in enumerate(lists):
        # the list's servers: distinct memcached, in a random order
        idx = rnd.sample(range(nmc), len(spec))
        servers = [(mports[i], w, nm) for i, (w, nm) in zip(idx, spec)]
        pools = [(d, h, t) for d in DISTS for h in HASHES for t in TAGS]
        lports = free_ports(len(pools) + 1)
        conf = os.path.join(tmp, "nutcracker-%d.yml" % li)
        with open(conf, "w") as f:
            for pi, (d, h, t) in enumerate(pools):
                f.write(conf_pool("p%d" % pi, lports[pi], d, h, t, servers))
        nut = subprocess.Popen(
            ["nutcracker", "-c", conf, "-s", str(lports[-1]), "-a",
             "127.0.0.1", "-v", "0", "-o", os.path.join(tmp, "nut.log"),
             "-p", os.path.join(tmp, "nut-%d.pid" % li)],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        procs.append(nut)
        for pi, (d, h, t) in enumerate(pools):
            keys = list(dict.fromkeys(random_key(rnd, t is not None)
                                      for _ in range(nkeys)))
            c = Conn(wait_port(lports[pi], "nutcracker"))
            c.send(b"".join(b"set " + k + b" 0 0 1\r\n1\r\n" for k in keys))
            for k in keys:
                r = c.line()
                if r != b"STORED":
                    raise SystemExit("nutcracker pool %s/%s said %r for %r"
                                     % (d, h, r, k))
            c.close()
            where = holders(mc, idx, keys)
            print("ring %d" % ring)
            print("pool %s %s %s" % (d, h, t or "-"))
            for (mport, w, nm) in servers:
                print("server 127.0.0.1:%d:%d %s" % (mport, w, nm or "-"))
            for k in keys:
                if k not in where:
                    raise SystemExit("key %r stored nowhere" % k)
                print("key %s %d" % (k.hex(), idx.index(where[k])))
            print("end")
            sys.stdout.flush()
            ring += 1
            for i in idx:
                mc[i].send(b"flush_all\r\n")
                if mc[i].line() != b"OK":
                    raise SystemExit("flush_all failed")
        nut.send_signal(signal.SIGTERM)
        nut.wait(timeout=10)
    return 0


if __name__ == "__main__":
    sys.exit(main())
