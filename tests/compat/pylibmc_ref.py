#!/usr/bin/python3
"""pylibmc_ref.py - pylibmc (python3-pylibmc, libmemcached underneath) as
the oracle of where a key lives: real memcached processes on loopback,
every key set through a pylibmc client with the ring behaviour under test,
then each memcached asked directly which keys it holds.

  pylibmc_ref.py [--lists N] [--keys K] [--behaviour NAME]

Prints, for ring_compat.c (the same line format as the other references):
  ring I            a new server list follows
  server HOST:PORT  one line per server, in the client's order
  key HEX INDEX     a key (hex of its bytes) and the index of the server
                    pylibmc stored it on
  end               the end of a list's keys
behaviour: ketama_weighted (pylibmc's {"ketama_weighted": True}: what
keysteer's `ketama` models), ketama (plain {"ketama": True}: keysteer's
`ketama-plain`) or default (no behaviours: modula, keysteer's
`modula-oaat`).
The memcached processes are this script's own, on 127.0.0.1, stopped by
their pids on every exit path.
"""
import argparse
import atexit
import os
import random
import signal
import socket
import subprocess
import sys
import time

import pylibmc

NSERVERS = 8
procs = []


def stop_all():
    for p in procs:
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
    for p in procs:
        try:
            p.wait(timeout=5)
        except subprocess.TimeoutExpired:
            p.kill()


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def start(port):
    args = ["memcached", "-l", "127.0.0.1", "-p", str(port), "-U", "0",
            "-m", "64"]
    if os.geteuid() == 0:
        args += ["-u", "nobody"]
    procs.append(subprocess.Popen(args, stdout=subprocess.DEVNULL,
                                  stderr=subprocess.DEVNULL))
    for _ in range(100):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            time.sleep(0.05)
    raise SystemExit("memcached on port %d did not start" % port)


def holders(servers, keys):
    """{key: index of the server holding it} by asking each directly."""
    out = {}
    for i, s in enumerate(servers):
        c = pylibmc.Client([s])
        got = c.get_multi(keys)
        for k in got:
            out[k] = i
        c.disconnect_all()
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lists", type=int, default=20)
    ap.add_argument("--keys", type=int, default=500)
    ap.add_argument("--behaviour", default="ketama_weighted",
                    choices=("ketama_weighted", "ketama", "default"))
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    atexit.register(stop_all)
    signal.signal(signal.SIGTERM, lambda *x: sys.exit(1))
    ports = []
    while len(ports) < NSERVERS:  # distinct: a closed port may come back
        p = free_port()
        if p not in ports:
            ports.append(p)
    for p in ports:
        start(p)
    rnd = random.Random(a.seed)
    alphabet = "abcdefghijklmnopqrstuvwxyz0123456789:_-."
    for li in range(a.lists):
        n = 1 + li % NSERVERS
        servers = ["127.0.0.1:%d" % p for p in rnd.sample(ports, n)]
        flush = pylibmc.Client(servers)
        flush.flush_all()
        flush.disconnect_all()
        behaviors = {} if a.behaviour == "default" else {a.behaviour: True}
        c = pylibmc.Client(servers, behaviors=behaviors)
        keys = []
        for i in range(a.keys):
            ln = rnd.choice((1, 8, 16, 40, 100, 250))
            k = "".join(rnd.choice(alphabet) for _ in range(ln))
            keys.append(k)
        keys = list(dict.fromkeys(keys))
        for k in keys:
            c.set(k, "1")
        c.disconnect_all()
        where = holders(servers, keys)
        print("ring %d" % li)
        for s in servers:
            print("server %s" % s)
        for k in keys:
            if k in where:
                print("key %s %d" % (k.encode().hex(), where[k]))
        print("end")
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
