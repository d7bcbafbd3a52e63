#!/usr/bin/python3
"""ks_fresh.py - freshness of a hot key under steering: no read may return a
value older than a write that was acknowledged before the read was sent.

  ks_fresh.py --owner HOST:PORT --key KEY [--duration SEC] [--readers R]
              [--write-interval SEC] [--rate READS_PER_S] [--value-size B]
              [--timeout SEC] [--examples N]

A writer sets KEY over TCP on the owner to "v<N>-<padding>" for N = 1, 2, ...
every --write-interval seconds and notes (time.monotonic) when each set was
acknowledged (STORED). R readers send UDP "get KEY" to the owner (memcached's
8-byte frame header, a fresh request id each, unconnected sockets so a reply
is taken from whatever address sends it: a replica when the shard's XDP
program steered the request) and note the send time, the N they got and
whether the reply came from another address than the owner (steered).

A read is stale if its N is below the highest N acknowledged before it was
sent. For every write, rearm_ms is the time from its ack to the first
steered reply carrying that value or a newer one (null if none came): how
long the datapath kept the key's reads on the owner after the write.
first_steered_ms is the time from the start to the first steered reply;
rearm_ms_percentiles_after_first_steered leaves out the writes acknowledged
before it (the agent's first arming of the key is not a re-arm).

Prints one JSON document; exit 0 when no read was stale, 1 when one was, 2
when the run could not start. Run it in the client namespace. Standard
library only.
"""
import argparse
import json
import re
import socket
import struct
import sys
import threading
import time

VALUE_N = re.compile(rb"^VALUE \S+ \d+ (\d+)(?: \d+)?\r\nv(\d+)-")


def split_addr(hostport):
    host, _, port = hostport.rpartition(":")
    if not host or not port.isdigit():
        raise SystemExit("ks_fresh.py: '%s' is not HOST:PORT; give e.g. 198.18.2.11:11211"
                         % hostport)
    return socket.gethostbyname(host), int(port)


class Shared:
    """What the writer publishes to the readers, and the stop flag."""

    def __init__(self):
        self.highest_acked = 0  # one int assignment: atomic under the GIL
        self.stop = False


def value_of(n, size):
    head = b"v%d-" % n
    return head + b"x" * max(0, size - len(head))


def recv_line(sock, buf):
    while b"\r\n" not in buf:
        data = sock.recv(4096)
        if not data:
            raise OSError("connection closed")
        buf += data
    line, _, rest = buf.partition(b"\r\n")
    return line, rest


def writer(args, owner, shared, acks, t_end, first_ack):
    """acks[i] = (N, ack time) in order; the first set is made before the
    readers start (first_ack is set then), so every read can find a value."""
    try:
        sock = socket.create_connection(owner, timeout=args.timeout * 4)
    except OSError as e:
        acks.append(("error", str(e)))
        first_ack.set()
        return
    buf = b""
    n = 0
    next_t = time.monotonic()
    with sock:
        while not shared.stop and time.monotonic() < t_end:
            n += 1
            val = value_of(n, args.value_size)
            try:
                sock.sendall(b"set %s 0 0 %d\r\n%s\r\n" % (args.key.encode(), len(val), val))
                line, buf = recv_line(sock, buf)
            except OSError as e:
                acks.append(("error", "set %d: %s" % (n, e)))
                break
            t_ack = time.monotonic()
            if line != b"STORED":
                acks.append(("error", "set %d: %r" % (n, line)))
                break
            acks.append((n, t_ack))
            shared.highest_acked = n
            first_ack.set()
            next_t += args.write_interval
            delay = next_t - time.monotonic()
            if delay > 0:
                time.sleep(delay)
    first_ack.set()


def read_one(sock, owner, req, key_cmd, timeout):
    """One UDP get: (payload, source) or (None, None) on timeout. Datagrams
    of other ids (late replies to timed-out reads) are skipped."""
    sock.sendto(struct.pack("!HHHH", req, 0, 1, 0) + key_cmd, owner)
    deadline = time.monotonic() + timeout
    payload, source = b"", None
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            return None, None
        sock.settimeout(left)
        try:
            data, src = sock.recvfrom(65536)
        except socket.timeout:
            return None, None
        if len(data) < 8 or struct.unpack("!H", data[:2])[0] != req:
            continue
        if source is None:
            source = src
        payload += data[8:]
        if payload.endswith(b"END\r\n") or payload.startswith((b"ERROR", b"SERVER_ERROR")):
            return payload, source


def reader(idx, args, owner, shared, out, t_end):
    """out gets (send time, reply time, N or None for a miss, highest acked
    at send, source) per read, or ("timeout",) / ("error", payload)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    key_cmd = b"get %s\r\n" % args.key.encode()
    req = (idx * 7919) & 0xFFFF
    period = args.readers / args.rate if args.rate else 0
    next_t = time.monotonic() + period * idx / args.readers
    with sock:
        while not shared.stop:
            if period:
                delay = next_t - time.monotonic()
                if delay > 0:
                    time.sleep(delay)
                next_t += period
            if time.monotonic() >= t_end:
                break
            req = (req + 1) & 0xFFFF
            hi = shared.highest_acked  # before the send: the stale bar
            t_send = time.monotonic()
            payload, src = read_one(sock, owner, req, key_cmd, args.timeout)
            t_recv = time.monotonic()
            if payload is None:
                out.append(("timeout",))
                continue
            if payload.startswith(b"END"):
                out.append((t_send, t_recv, None, hi, src))
                continue
            m = VALUE_N.match(payload)
            if not m:
                out.append(("error", payload[:80]))
                continue
            out.append((t_send, t_recv, int(m.group(2)), hi, src))


def percentiles(vals):
    if not vals:
        return None
    s = sorted(vals)
    pick = lambda q: s[min(len(s) - 1, int(q * len(s)))]
    return {"p50": pick(0.5), "p90": pick(0.9), "p99": pick(0.99), "max": s[-1],
            "n": len(s)}


def rearm_times(acks, steered):
    """acks: [(N, t_ack)] in order; steered: [(t_recv, N)] sorted by time.
    The writes not yet re-armed are always a suffix (a read that re-arms
    write N re-arms every older one too), so one pass over both does it."""
    out = [None] * len(acks)
    nxt = 0
    for t_recv, n in steered:
        while nxt < len(acks) and acks[nxt][0] <= n and acks[nxt][1] <= t_recv:
            out[nxt] = round((t_recv - acks[nxt][1]) * 1000, 3)
            nxt += 1
    return out


def name(addr):
    return "%s:%d" % addr


def report(args, owner, acks, results, t0):
    reads = [r for r in results if len(r) == 5]
    steered = [r for r in reads if r[4] != owner]
    stale = [r for r in reads if r[2] is not None and r[2] < r[3]]
    by_source = {}
    for r in reads:
        by_source[name(r[4])] = by_source.get(name(r[4]), 0) + 1
    good_acks = [a for a in acks if a[0] != "error"]
    rearm = rearm_times(good_acks, sorted((r[1], r[2]) for r in steered if r[2] is not None))
    first_steered = min((r[1] for r in steered), default=None)
    # Writes acknowledged once steering had begun: the re-arm delay of a
    # key that stays hot, without the agent's first arming of it.
    steady = [x for x, a in zip(rearm, good_acks)
              if first_steered is not None and a[1] > first_steered and x is not None]
    return {
        "owner": name(owner), "key": args.key, "duration_s": args.duration,
        "readers": args.readers, "write_interval_s": args.write_interval,
        "reads": len(reads), "steered_reads": len(steered), "stale_reads": len(stale),
        "stale_examples": [{"sent_ms": round((r[0] - t0) * 1000, 3), "got": r[2],
                            "acked_before_send": r[3], "source": name(r[4])}
                           for r in stale[:args.examples]],
        "misses": sum(1 for r in reads if r[2] is None),
        "timeouts": sum(1 for r in results if r[0] == "timeout"),
        "errors": [r[1].decode(errors="replace") for r in results if r[0] == "error"][:5]
        + [a[1] for a in acks if a[0] == "error"],
        "writes": len(good_acks),
        "reads_by_source": by_source,
        "rearm_ms": rearm,
        "rearm_ms_percentiles": percentiles([x for x in rearm if x is not None]),
        "first_steered_ms": None if first_steered is None else round((first_steered - t0) * 1000, 3),
        "rearm_ms_percentiles_after_first_steered": percentiles(steady),
        "writes_never_rearmed": sum(1 for x in rearm if x is None),
    }


def main():
    p = argparse.ArgumentParser(prog="ks_fresh.py", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--owner", required=True, metavar="HOST:PORT")
    p.add_argument("--key", required=True)
    p.add_argument("--duration", type=float, default=5)
    p.add_argument("--readers", type=int, default=4)
    p.add_argument("--write-interval", type=float, default=0.1)
    p.add_argument("--rate", type=float, default=0, help="reads/s over all readers; 0: max")
    p.add_argument("--value-size", type=int, default=32)
    p.add_argument("--timeout", type=float, default=0.5)
    p.add_argument("--examples", type=int, default=5)
    args = p.parse_args()
    if not 0 < args.duration <= 600 or not 1 <= args.readers <= 64 or \
            args.write_interval <= 0 or args.timeout <= 0 or \
            not 1 <= args.value_size <= 1000 or args.rate < 0:
        p.error("out of range: duration 0..600, readers 1..64, value-size 1..1000, "
                "write-interval, timeout > 0, rate >= 0")
    if len(args.key) > 250 or any(c.isspace() for c in args.key):
        p.error("--key must be a memcached key (<= 250 bytes, no white space)")
    owner = split_addr(args.owner)
    shared = Shared()
    acks, results = [], []  # list.append is atomic under the GIL
    t0 = time.monotonic()
    t_end = t0 + args.duration
    first_ack = threading.Event()
    w = threading.Thread(target=writer, args=(args, owner, shared, acks, t_end, first_ack))
    w.start()
    first_ack.wait(args.timeout * 8)
    if not shared.highest_acked:
        shared.stop = True
        w.join()
        sys.stderr.write("ks_fresh.py: the first set to %s failed: %s; is memcached "
                         "running there?\n" % (args.owner, acks[-1][1] if acks else "no reply"))
        return 2
    rs = [threading.Thread(target=reader, args=(i, args, owner, shared, results, t_end))
          for i in range(args.readers)]
    for r in rs:
        r.start()
    for r in rs:
        r.join()
    shared.stop = True
    w.join()
    doc = report(args, owner, acks, results, t0)
    json.dump(doc, sys.stdout)
    print()
    return 1 if doc["stale_reads"] else 0


if __name__ == "__main__":
    sys.exit(main())
