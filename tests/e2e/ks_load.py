#!/usr/bin/python3
"""ks_load.py - the e2e tests' memcached client: a known, skewed, paced load.

    ks_load.py preload --server ADDR [--port P] [--keys K]
    ks_load.py run --server ADDR [--port P] [--seconds F] [--out FILE]
                   [--seq-map PIN [--until-intervals N --max-seconds M]] ...
    ks_load.py plan [...]             print the frame's statistics, send nothing

The load is one "frame" of requests, built once from a fixed seed and sent F
times, each time paced evenly over one period (1 s), so every key's count
per period is an exact, known integer and the load is spread evenly over
the agent's intervals. The pacing is not what the tests' truth rests on (a
busy machine can hold the client up): that is --seq-map, below.

A frame mixes single gets, multi-gets of distinct keys and sets, keys drawn
from a Zipf distribution over K keys; several connections (threads) share
it, each sending its share of the requests at their due times.

Writes a JSON summary with the exact per-period counts per key, the wall-clock
start and end of the paced phase, and how well the pacing held.

With --seq-map PIN (a datapath's pinned ks_config), it also writes what it
sent in each of the datapath's intervals, exactly, whatever its pacing:
the datapath files a request under the interval number (ks_config.seq) it
reads when the request goes by, which is after the client sent it and
before the reply came. Each connection reads that number just before a
send and just after the reply: equal, the request is in that interval
for certain; different (a flip while it was in flight), it is in one of
the intervals between, and is listed as such ("straddled").

With --until-intervals N as well, the load goes on past its F periods, a
period at a time, until the datapath's interval number has moved N + 1
times since the start (so the load spans N of its intervals whole), up to
M periods: what a caller needs is intervals, and an agent held up by a
loaded machine makes them longer than the period (4 in 22 s once, beside
stress-ng at load 19).
Runs with Debian's /usr/bin/python3 and python3-pymemcache.
"""
import argparse
import bisect
import ctypes
import itertools
import json
import os
import random
import re
import struct
import sys
import threading
import time

from pymemcache.client.base import Client

VALUE = b"v" * 32
BLOCKS = 100  # per frame; see period_orders
LATE_S = 0.002  # lateness worth recording: 0.2% of a 1 s window


REPO = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
SYS_BPF = 321  # x86_64
BPF_MAP_LOOKUP_ELEM, BPF_OBJ_GET = 1, 7
C_TYPES = {"__u8": 1, "__u16": 2, "__u32": 4, "__u64": 8}


def config_layout():
    """(offset of seq, size) of struct ks_config, from bpf/keysteer.h, so a
    change there cannot leave this reading the wrong bytes."""
    src = open(os.path.join(REPO, "bpf", "keysteer.h")).read()
    consts = {m.group(1): int(m.group(2)) for m in
              re.finditer(r"#define (\w+)\s+(\d+)", src)}
    body = re.search(r"struct ks_config \{(.*?)\};", src, re.S).group(1)
    body = re.sub(r"/\*.*?\*/", "", body, flags=re.S)
    off = align = 0
    seq = None
    for m in re.finditer(r"(__u\d+)\s+(\w+)(?:\[(\w+)\])?;", body):
        size = C_TYPES[m.group(1)]
        n = m.group(3)
        n = 1 if n is None else int(consts.get(n, n))
        off = -(-off // size) * size
        if m.group(2) == "seq":
            seq = off
        off += size * n
        align = max(align, size)
    if seq is None:
        raise SystemExit("ks_load: no seq in struct ks_config")
    return seq, -(-off // align) * align


class EpochReader:
    """The interval number the datapath files requests under: ks_config.seq,
    read from the pinned map with one bpf(2) call."""

    def __init__(self, pin):
        self.libc = ctypes.CDLL(None, use_errno=True)
        self.off, size = config_layout()
        path = ctypes.create_string_buffer(pin.encode())
        attr = ctypes.create_string_buffer(
            struct.pack("=QII", ctypes.addressof(path), 0, 0), 128)
        fd = self.libc.syscall(SYS_BPF, BPF_OBJ_GET, attr, 128)
        if fd < 0:
            raise SystemExit("ks_load: %s: %s"
                             % (pin, os.strerror(ctypes.get_errno())))
        self.key = ctypes.c_uint32(0)
        self.val = ctypes.create_string_buffer(size)
        self.attr = ctypes.create_string_buffer(struct.pack(
            "=IIQQQ", fd, 0, ctypes.addressof(self.key),
            ctypes.addressof(self.val), 0), 128)

    def seq(self):
        if self.libc.syscall(SYS_BPF, BPF_MAP_LOOKUP_ELEM, self.attr, 128):
            raise OSError(ctypes.get_errno(), "reading ks_config")
        return struct.unpack_from("=I", self.val.raw, self.off)[0]


class EpochTally:
    """What one connection sent, by the datapath interval it fell in."""

    def __init__(self):
        self.epochs = {}     # seq -> counts, for requests certainly in it
        self.straddled = []  # [seq before, seq after, op, keys]

    def add(self, before, after, op, keys):
        if before != after:
            self.straddled.append([before, after, op, keys])
            return
        e = self.epochs.setdefault(before, {
            "reads": {}, "writes": {}, "read_requests": 0, "read_keys": 0,
            "write_requests": 0, "write_keys": 0})
        cls = "write" if op == "set" else "read"
        e[cls + "_requests"] += 1
        e[cls + "_keys"] += len(keys)
        table = e[cls + "s"]
        for k in keys:
            table[k] = table.get(k, 0) + 1

    @staticmethod
    def merge(tallies):
        epochs, straddled = {}, []
        for t in tallies:
            straddled += t.straddled
            for seq, e in t.epochs.items():
                m = epochs.setdefault(str(seq), {
                    "reads": {}, "writes": {}, "read_requests": 0,
                    "read_keys": 0, "write_requests": 0, "write_keys": 0})
                for f in ("reads", "writes"):
                    for k, n in e[f].items():
                        m[f][k] = m[f].get(k, 0) + n
                for f in ("read_requests", "read_keys", "write_requests",
                          "write_keys"):
                    m[f] += e[f]
        return epochs, straddled


def key_name(rank):
    """Rank 1 is the most popular key."""
    return "ks:%05d" % rank


def zipf_cum_weights(nkeys, s):
    return list(itertools.accumulate((r ** -s for r in range(1, nkeys + 1))))


def build_frame(args):
    """The list of requests sent every period: ("get"|"mget"|"set", [keys])."""
    rng = random.Random(args.seed)
    cum = zipf_cum_weights(args.keys, args.zipf)
    total = cum[-1]

    def draw():
        return key_name(bisect.bisect_left(cum, rng.random() * total) + 1)

    ops = [("get", [draw()]) for _ in range(args.gets)]
    for _ in range(args.mgets):
        # A client asks for each key once: duplicates are dropped.
        keys = list(dict.fromkeys(draw() for _ in range(args.mget_size)))
        ops.append(("mget", keys))
    ops += [("set", [draw()]) for _ in range(args.sets)]
    rng.shuffle(ops)
    return ops


def period_orders(args, ops):
    """The order in which each period sends the frame's requests.

    The frame is cut into BLOCKS consecutive blocks, and each period shuffles
    the requests within every block afresh (from the seed: the same every
    run). Every period holds exactly the frame's requests, and a window of
    one period, whatever its phase, differs from the frame only inside the
    one block its edges cut (~1% of the requests). A 1-in-N countdown,
    though, meets different keys at its sample points every period, so the
    samples of successive intervals are independent and averaging them
    helps. (With the same order every period, the countdown could hit the
    same positions period after period and repeat one sample's error.)
    """
    size = -(-len(ops) // BLOCKS)
    orders = []
    for f in range(max(args.seconds, args.max_seconds or 0)):
        rng = random.Random(args.seed * 1000003 + f)
        order = []
        for b in range(0, len(ops), size):
            block = ops[b:b + size]
            rng.shuffle(block)
            order += block
        orders.append(order)
    return orders


def frame_counts(ops):
    reads, writes = {}, {}
    for op, keys in ops:
        table = writes if op == "set" else reads
        for k in keys:
            table[k] = table.get(k, 0) + 1
    return reads, writes


def summary(args, ops):
    reads, writes = frame_counts(ops)
    both = {k: reads.get(k, 0) + writes.get(k, 0) for k in set(reads) | set(writes)}
    ranked = sorted(both, key=lambda k: (-both[k], k))
    return {
        "seed": args.seed,
        "keys": args.keys,
        "zipf_s": args.zipf,
        "period_s": args.period,
        "requests_per_period": len(ops),
        "read_requests_per_period": sum(1 for op, _ in ops if op != "set"),
        "write_requests_per_period": sum(1 for op, _ in ops if op == "set"),
        "keys_per_period": sum(len(k) for _, k in ops),
        "read_keys_per_period": sum(reads.values()),
        "write_keys_per_period": sum(writes.values()),
        "distinct_keys_per_period": len(both),
        "reads": reads,
        "writes": writes,
        "ranked": ranked[:64],
    }


def connect(args):
    # no_delay: every request leaves in its own segment at once, as a
    # latency-minded client sends it; waiting for each reply (noreply off)
    # keeps requests from being merged in one segment by the kernel.
    return Client((args.server, args.port), no_delay=True,
                  default_noreply=False, connect_timeout=5, timeout=5)


def cmd_preload(args):
    client = connect(args)
    for rank in range(1, args.keys + 1):
        client.set(key_name(rank), VALUE)
    client.close()
    print("ks_load: preloaded %d keys" % args.keys)


def send(client, op, keys):
    if op == "get":
        client.get(keys[0])
    elif op == "mget":
        client.get_many(keys)
    else:
        client.set(keys[0], VALUE)


class Connection(threading.Thread):
    """One client connection sending every conns-th request of each frame
    at its due time. Several connections overlap their round trips, so the
    load does not hinge on one connection's latency (high in a VM whose
    idle CPUs are slow to wake)."""

    def __init__(self, args, orders, first, t0, wall0, stop):
        super().__init__(daemon=True)
        # stop[0]: the number of periods to send, once the main thread
        # has decided it (--until-intervals); None: all of orders
        self.stop, self.periods = stop, 0
        self.args, self.orders, self.first = args, orders, first
        self.t0, self.wall0 = t0, wall0
        self.client = connect(args)
        self.client.version()  # connected before the clock starts
        self.epoch = EpochReader(args.seq_map) if args.seq_map else None
        self.tally = EpochTally()
        # Spells in which this connection ran late, [first due, caught up,
        # worst lag] in wall-clock time, and the worst lag per frame.
        self.late, self.worst = [], []
        self.error = None

    def run(self):
        try:
            self.pace()
        except Exception as e:  # reported by the main thread
            self.error = e
        finally:
            self.client.close()

    def pace(self):
        args, t0 = self.args, self.t0
        step = args.period / len(self.orders[0])
        spell = None
        for f, ops in enumerate(self.orders):
            # undecided (--until-intervals): go on, paced
            if self.stop[0] is not None and f >= self.stop[0]:
                break
            self.periods = f + 1
            base = t0 + f * args.period
            worst = 0.0
            for i in range(self.first, len(ops), args.conns):
                due = base + i * step
                now = time.monotonic()
                if due - now > 0.001:
                    # Sleep only when well ahead: a sleep per request would
                    # cost more than the gap between requests.
                    time.sleep(due - now)
                if now - due > LATE_S:
                    worst = max(worst, now - due)
                    if spell is None:
                        spell = [self.wall0 + (due - t0), 0.0, 0.0]
                        self.late.append(spell)
                    spell[1] = self.wall0 + (now - t0) + LATE_S
                    spell[2] = max(spell[2], now - due)
                else:
                    spell = None
                if self.epoch:
                    before = self.epoch.seq()
                    send(self.client, *ops[i])
                    self.tally.add(before, self.epoch.seq(), *ops[i])
                else:
                    send(self.client, *ops[i])
            self.worst.append(worst)


def until_intervals(args, t0, stop):
    """stop[0] set to the periods to send: F, or, once the datapath's
    interval number has moved N + 1 times since the start, the period
    after the next (a connection may just have begun the next: they are
    paced, none is further ahead), at most M."""
    epoch = EpochReader(args.seq_map)
    seq0 = epoch.seq()
    while True:
        frame = int((time.monotonic() - t0) // args.period)
        if epoch.seq() - seq0 >= args.until_intervals + 1:
            stop[0] = min(max(args.seconds, frame + 2), args.max_seconds)
            return
        if frame + 1 >= args.max_seconds:
            stop[0] = args.max_seconds
            return
        time.sleep(0.05)


def cmd_run(args):
    ops = build_frame(args)
    out = summary(args, ops)
    orders = period_orders(args, ops)
    # Pacing runs on the monotonic clock; wall0 maps it to the wall clock
    # that the report poller stamps its reads with.
    t0 = time.monotonic() + 0.2
    wall0 = time.time() + (t0 - time.monotonic())
    stop = [None if args.until_intervals else args.seconds]
    conns = [Connection(args, orders, i, t0, wall0, stop)
             for i in range(args.conns)]
    for c in conns:
        c.start()
    if args.until_intervals:
        until_intervals(args, t0, stop)
    for c in conns:
        c.join()
    periods = conns[0].periods
    if any(c.periods != periods for c in conns):
        sys.exit("ks_load: the connections sent %s periods"
                 % [c.periods for c in conns])
    t_end_mono = time.monotonic()
    for c in conns:
        if c.error:
            sys.exit("ks_load: %s: %s" % (type(c.error).__name__, c.error))
    lags = [max(w) for w in zip(*(c.worst for c in conns))]
    if args.seq_map:
        out["epochs"], out["straddled"] = EpochTally.merge(
            c.tally for c in conns)
    # Every request of every period was sent (a failed one ends the run).
    out["sent"] = {f: periods * out[f + "_per_period"] for f in
                   ("read_requests", "read_keys", "write_requests",
                    "write_keys")}
    out.update({
        "periods": periods,
        "connections": args.conns,
        "requests_sent": periods * len(ops),
        "t_start": wall0,
        "t_end": wall0 + (t_end_mono - t0),
        "frame_max_lag_s": lags,
        "max_lag_s": max(lags) if lags else 0.0,
        "late_s": LATE_S,
        "late": sorted(spell for c in conns for spell in c.late),
        # Time the load took over the nominal time: above 1 the client
        # could not keep the pace.
        "overrun": (t_end_mono - t0) / (periods * args.period),
    })
    with open(args.out, "w") as fh:
        json.dump(out, fh)
    print("ks_load: sent %d requests (%d keys) in %.2f s over %d "
          "connections, max lag %.1f ms"
          % (out["requests_sent"], periods * out["keys_per_period"],
             t_end_mono - t0, args.conns, 1000 * out["max_lag_s"]))


def cmd_plan(args):
    out = summary(args, build_frame(args))
    both = lambda k: out["reads"].get(k, 0) + out["writes"].get(k, 0)
    r = out["ranked"]
    print(json.dumps({k: v for k, v in out.items()
                      if k not in ("reads", "writes", "ranked")}))
    for i, k in enumerate(r[:12]):
        print("%2d %s reads %d writes %d" % (i + 1, k, out["reads"].get(k, 0),
                                             out["writes"].get(k, 0)))
    print("gap rank10/rank11: %.3f" % (both(r[9]) / both(r[10]) - 1))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("cmd", choices=("preload", "run", "plan"))
    ap.add_argument("--server", default="198.18.0.2")
    ap.add_argument("--port", type=int, default=11211)
    ap.add_argument("--keys", type=int, default=3000)
    ap.add_argument("--zipf", type=float, default=1.3)
    ap.add_argument("--seed", type=int, default=54)
    ap.add_argument("--gets", type=int, default=1500,
                    help="single gets per period")
    ap.add_argument("--mgets", type=int, default=2000,
                    help="multi-gets per period")
    ap.add_argument("--mget-size", type=int, default=64,
                    help="keys drawn per multi-get (before dropping repeats)")
    ap.add_argument("--sets", type=int, default=400, help="sets per period")
    ap.add_argument("--period", type=float, default=1.0)
    ap.add_argument("--conns", type=int, default=2,
                    help="connections sharing the load")
    ap.add_argument("--seconds", type=int, default=10,
                    help="periods to send")
    ap.add_argument("--out", default="/dev/null")
    ap.add_argument("--seq-map", metavar="PIN",
                    help="a datapath's pinned ks_config: write what was "
                    "sent in each of its intervals")
    ap.add_argument("--until-intervals", type=int, metavar="N",
                    help="with --seq-map: go on past --seconds until the "
                    "load spans N of the datapath's intervals whole")
    ap.add_argument("--max-seconds", type=int, metavar="M",
                    help="with --until-intervals: at most M periods")
    args = ap.parse_args()
    if args.seconds < 1 or args.seconds > 120:
        ap.error("--seconds must be 1..120 (the load is bounded)")
    if args.until_intervals is not None and (
            not args.seq_map or args.until_intervals < 1 or
            not args.max_seconds or
            not args.seconds <= args.max_seconds <= 120):
        ap.error("--until-intervals N needs --seq-map and --max-seconds M, "
                 "--seconds <= M <= 120, N >= 1")
    if not 1 <= args.conns <= 8:
        ap.error("--conns must be 1..8")
    {"preload": cmd_preload, "run": cmd_run, "plan": cmd_plan}[args.cmd](args)


if __name__ == "__main__":
    sys.exit(main())
