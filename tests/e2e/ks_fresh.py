#!/usr/bin/python3
"""ks_fresh.py - freshness of a hot key under steering: no read may return a
value older than a write that was acknowledged before the read was sent.

  ks_fresh.py --owner HOST:PORT|[IPV6]:PORT --key KEY [--duration SEC] [--readers R]
              [--write-interval SEC] [--rate READS_PER_S] [--value-size B]
              [--timeout SEC] [--examples N]
              [--tcp-writer set|set-many] [--batch K] [--filler-size MIN:MAX]
              [--udp-write-interval SEC] [--udp-size MIN:MAX] [--seed S]

A writer sets KEY over TCP on the owner to "v<N>-<padding>" for N = 1, 2, ...
every --write-interval seconds and notes (time.monotonic) when each set was
acknowledged (STORED). R readers send UDP "get KEY" to the owner (memcached's
8-byte frame header, a fresh request id each, unconnected sockets so a reply
is taken from whatever address sends it: a replica when the shard's XDP
program steered the request) and note the send time, the N they got and
whether the reply came from another address than the owner (steered).
Multi-datagram replies are put together by their frame sequence numbers.

Pipelined writers (tests/e2e/test_fresh_pipeline.sh):
- --tcp-writer set-many: each write is one pymemcache set_many over TCP (one
  buffer, one sendall, then every STORED) of --batch keys with --filler-size
  values (default 1:16384 bytes), KEY's set in the middle. KEY's own value
  is --value-size bytes (B or MIN:MAX, up to 16384; default 32). Every
  other batch sizes the filler before KEY so that KEY's request line
  straddles a TCP segment boundary (MSS from TCP_MAXSEG, segments counted
  from the batch's start: the connection is idle between batches); the
  others leave it where the random sizes put it. Each write records where
  KEY's line fell (segment, offset, straddling or not).
- --udp-write-interval SEC adds a UDP writer: one datagram (frame header,
  "set KEY 0 0 LEN", the value) of --udp-size bytes (default 1600:12000,
  above a 1500 MTU, so IP fragments it), acknowledged by memcached's
  STORED in a reply with the same request id.
Writes are serialized (one in flight at a time over both writers), so the
value memcached holds after the ack of N is N until the next write.
Values are "v<N>-" then a letter of N repeated to a size that follows
from N and --seed: a read whose bytes are not exactly N's value (a torn or
wrong copy) counts in corrupt_reads.

A read is stale if its N is below the highest N acknowledged before it was
sent. Each stale example names the first write it missed (N + 1: its kind,
size, where its line fell in the segments); stale_by_missed_write sums the
stale reads by that write's kind and position. For every write, rearm_ms
is the time from its ack to the first steered reply carrying that value or
a newer one (null if none came): how long the datapath kept the key's reads
on the owner after the write. first_steered_ms is the time from the start
to the first steered reply; rearm_ms_percentiles_after_first_steered
leaves out the writes acknowledged before it (the agent's first arming of
the key is not a re-arm).

Prints one JSON document; exit 0 when no read was stale, 1 when one was, 2
when the run could not start. Run it in the client namespace. Standard
library only, plus pymemcache for --tcp-writer set-many.
"""
import argparse
import json
import random
import re
import socket
import struct
import sys
import threading
import time

VALUE_N = re.compile(rb"^VALUE \S+ \d+ (\d+)(?: \d+)?\r\nv(\d+)-")
FRAG_MAX = 16384  # the largest value of the pipelined writers


def split_addr(hostport):
    """HOST:PORT or [IPV6]:PORT as an address tuple (host, port)."""
    host, _, port = hostport.rpartition(":")
    if not host or not port.isdigit():
        raise SystemExit("ks_fresh.py: '%s' is not HOST:PORT; give e.g. 198.18.2.11:11211"
                         " or [2001:2::11]:11211" % hostport)
    if host.startswith("[") and host.endswith("]"):
        socket.inet_pton(socket.AF_INET6, host[1:-1])
        return host[1:-1], int(port)
    return socket.gethostbyname(host), int(port)


def family(addr):
    return socket.AF_INET6 if ":" in addr[0] else socket.AF_INET


class Shared:
    """What the writers publish to the readers, the write lock and the stop
    flag."""

    def __init__(self):
        self.highest_acked = 0  # one int assignment: atomic under the GIL
        self.stop = False
        self.lock = threading.Lock()  # one write in flight, N in order
        self.next_n = 0
        self.writes = {}  # N -> what was written and where its line fell

    def take_n(self):
        self.next_n += 1
        return self.next_n


def size_of(args, n):
    """KEY's value size for write N: fixed, or from --value-size MIN:MAX by
    a generator seeded with N (the readers compute it too)."""
    lo, hi = args.value_size
    if lo == hi:
        return lo
    return random.Random(args.seed * 1000003 + n).randint(lo, hi)


def value_of(n, size):
    head = b"v%d-" % n
    return head + bytes([97 + n % 26]) * max(0, size - len(head))


def recv_line(sock, buf):
    while b"\r\n" not in buf:
        data = sock.recv(4096)
        if not data:
            raise OSError("connection closed")
        buf += data
    line, _, rest = buf.partition(b"\r\n")
    return line, rest


def publish(shared, acks, n, t_ack, first_ack):
    acks.append((n, t_ack))
    shared.highest_acked = n
    first_ack.set()


def paced(shared, t_end, interval, step):
    """Calls step() every interval seconds until the end or the stop flag;
    step returns False to stop."""
    next_t = time.monotonic()
    while not shared.stop and time.monotonic() < t_end:
        if not step():
            return
        next_t += interval
        delay = next_t - time.monotonic()
        if delay > 0:
            time.sleep(delay)


def writer(args, owner, shared, acks, t_end, first_ack):
    """acks[i] = (N, ack time) in order; the first set is made before the
    readers start (first_ack is set then), so every read can find a value."""
    try:
        sock = socket.create_connection(owner, timeout=args.timeout * 4)
    except OSError as e:
        acks.append(("error", str(e)))
        first_ack.set()
        return
    state = {"buf": b""}

    def step():
        with shared.lock:
            n = shared.take_n()
            val = value_of(n, size_of(args, n))
            shared.writes[n] = {"kind": "tcp-set", "size": len(val)}
            try:
                sock.sendall(b"set %s 0 0 %d\r\n%s\r\n" % (args.key.encode(), len(val), val))
                line, state["buf"] = recv_line(sock, state["buf"])
            except OSError as e:
                acks.append(("error", "set %d: %s" % (n, e)))
                return False
            t_ack = time.monotonic()
            if line != b"STORED":
                acks.append(("error", "set %d: %r" % (n, line)))
                return False
            publish(shared, acks, n, t_ack, first_ack)
        return True

    with sock:
        paced(shared, t_end, args.write_interval, step)
    first_ack.set()


def set_line(key, size):
    return b"set %s 0 0 %d\r\n" % (key, size)


def plan_batch(args, rng, batch_no, mss, hot_size):
    """The keys and value sizes of one set_many batch, KEY in the middle,
    and where KEY's line falls. On odd batches the filler just before KEY
    is sized so that KEY's line crosses a segment boundary, by 1 .. len-1
    bytes in turn."""
    key = args.key.encode()
    mid = args.batch // 2
    lo, hi = args.filler_size
    fill = [(b"fresh:fill:%d" % i, rng.randint(lo, hi)) for i in range(args.batch - 1)]
    before = fill[:mid]
    line = set_line(key, hot_size)

    def hot_offset():
        return sum(len(set_line(k, n)) + n + 2 for k, n in before)

    mode = "random"
    if batch_no % 2 and before and mss:
        cut = 1 + (batch_no // 2) % (len(line) - 1)  # bytes of the line in the first segment
        want = (mss - cut) % mss
        k, n = before[-1]
        delta = (want - hot_offset()) % mss
        n2 = n + delta if n + delta <= hi else n + delta - mss
        if lo <= n2 <= hi:
            before[-1] = (k, n2)
            mode = "line-straddles"
    off = hot_offset()
    seg, at = (off // mss, off % mss) if mss else (0, off)
    data_end = at + len(line) + hot_size + 2
    if at == 0:
        where = "line-at-segment-start"
    elif at + len(line) > mss:
        where = "line-straddles"
    elif data_end > mss:
        where = "line-mid-segment-data-straddles"
    else:
        where = "line-mid-segment"
    return before, fill[mid:], {"kind": "tcp-set-many", "batch": batch_no,
                                "hot_offset": off, "segment": seg, "offset_in_segment": at,
                                "where": where, "planned": mode, "line_len": len(line),
                                "batch_bytes": off + sum(len(set_line(k, n)) + n + 2
                                                         for k, n in fill[mid:])
                                + len(line) + hot_size + 2}


def writer_set_many(args, owner, shared, acks, t_end, first_ack):
    """The same acks as writer(), each write one pymemcache set_many."""
    from pymemcache.client.base import Client
    c = Client(owner, connect_timeout=args.timeout * 4, timeout=args.timeout * 4,
               default_noreply=False)
    try:
        c._connect()  # to read the MSS before the first batch
        mss = c.sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_MAXSEG)
    except (OSError, AttributeError) as e:
        acks.append(("error", "connect: %s" % e))
        first_ack.set()
        return
    rng = random.Random(args.seed)
    state = {"batch": 0}

    def step():
        with shared.lock:
            n = shared.take_n()
            hot = value_of(n, size_of(args, n))
            before, after, info = plan_batch(args, rng, state["batch"], mss, len(hot))
            state["batch"] += 1
            info.update(size=len(hot), mss=mss)
            shared.writes[n] = info
            values = dict((k, b"f" * sz) for k, sz in before)
            values[args.key.encode()] = hot
            values.update((k, b"f" * sz) for k, sz in after)
            try:
                failed = c.set_many(values, noreply=False)
            except Exception as e:  # pymemcache raises its own types too
                acks.append(("error", "set_many %d: %s" % (n, e)))
                return False
            t_ack = time.monotonic()
            if failed:
                acks.append(("error", "set_many %d: not stored %r" % (n, failed[:3])))
                return False
            publish(shared, acks, n, t_ack, first_ack)
        return True

    try:
        paced(shared, t_end, args.write_interval, step)
    finally:
        c.close()
        first_ack.set()


def udp_writer(args, owner, shared, acks, t_end, first_ack):
    """Sets of KEY in one UDP datagram each, larger than the MTU (IP
    fragments it); acknowledged by STORED with the same request id."""
    sock = socket.socket(family(owner), socket.SOCK_DGRAM)
    rng = random.Random(args.seed + 1)
    key = args.key.encode()
    state = {"req": 0x8000}

    def step():
        with shared.lock:
            n = shared.take_n()
            want = rng.randint(*args.udp_size)
            line = set_line(key, 0)
            size = max(1, want - 8 - len(line) - 2 - 4)
            val = value_of(n, size)
            state["req"] = (state["req"] + 1) & 0xFFFF
            req = state["req"]
            dgram = struct.pack("!HHHH", req, 0, 1, 0) + set_line(key, len(val)) + val + b"\r\n"
            shared.writes[n] = {"kind": "udp-set", "size": len(val), "datagram": len(dgram)}
            sock.sendto(dgram, owner)
            deadline = time.monotonic() + args.timeout
            while True:
                left = deadline - time.monotonic()
                if left <= 0:
                    shared.writes[n]["timeout"] = True
                    return True  # not acknowledged: no bar for the readers
                sock.settimeout(left)
                try:
                    data, _ = sock.recvfrom(65536)
                except socket.timeout:
                    continue
                if len(data) >= 8 and struct.unpack("!H", data[:2])[0] == req:
                    break
            t_ack = time.monotonic()
            if data[8:] != b"STORED\r\n":
                acks.append(("error", "udp set %d: %r" % (n, data[8:40])))
                return False
            publish(shared, acks, n, t_ack, first_ack)
        return True

    with sock:
        paced(shared, t_end, args.udp_write_interval, step)


def read_one(sock, owner, req, key_cmd, timeout):
    """One UDP get: (payload, source) or (None, None) on timeout. The reply's
    datagrams are put in order by their sequence numbers; datagrams of other
    ids (late replies to timed-out reads) are skipped."""
    sock.sendto(struct.pack("!HHHH", req, 0, 1, 0) + key_cmd, owner)
    deadline = time.monotonic() + timeout
    parts, total, source = {}, None, None
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            return None, None
        sock.settimeout(left)
        try:
            data, src = sock.recvfrom(65536)
        except socket.timeout:
            return None, None
        if len(data) < 8:
            continue
        rid, seq, tot, _ = struct.unpack("!HHHH", data[:8])
        if rid != req:
            continue
        if source is None:
            source = src[:2]  # an IPv6 source has flow info and scope too
        parts[seq] = data[8:]
        total = tot
        if total and len(parts) >= total:
            return b"".join(parts[i] for i in sorted(parts)), source


def reader(idx, args, owner, shared, out, t_end):
    """out gets (send time, reply time, N or None for a miss, highest acked
    at send, source, corrupt) per read, or ("timeout",) / ("error", payload)."""
    sock = socket.socket(family(owner), socket.SOCK_DGRAM)
    key_cmd = b"get %s\r\n" % args.key.encode()
    req = (idx * 7919) & 0x7FFF
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
            req = (req + 1) & 0x7FFF  # the UDP writer's ids have the top bit
            hi = shared.highest_acked  # before the send: the stale bar
            t_send = time.monotonic()
            payload, src = read_one(sock, owner, req, key_cmd, args.timeout)
            t_recv = time.monotonic()
            if payload is None:
                out.append(("timeout",))
                continue
            if payload.startswith(b"END"):
                out.append((t_send, t_recv, None, hi, src, False))
                continue
            m = VALUE_N.match(payload)
            if not m:
                out.append(("error", payload[:80]))
                continue
            n, size = int(m.group(2)), int(m.group(1))
            data = payload[payload.index(b"\r\n") + 2:][:size]
            w = shared.writes.get(n)
            corrupt = data != value_of(n, size) or \
                (w is not None and w.get("size", size) != size)
            out.append((t_send, t_recv, n, hi, src, corrupt))


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
    return ("[%s]:%d" if ":" in addr[0] else "%s:%d") % addr[:2]


def missed_label(w):
    if not w:
        return "unknown"
    return w["kind"] + ("/" + w["where"] if "where" in w else "")


def report(args, owner, acks, results, t0, writes):
    reads = [r for r in results if len(r) == 6]
    steered = [r for r in reads if r[4] != owner]
    stale = [r for r in reads if r[2] is not None and r[2] < r[3]]
    by_source = {}
    for r in reads:
        by_source[name(r[4])] = by_source.get(name(r[4]), 0) + 1
    good_acks = [a for a in acks if a[0] != "error"]
    ack_t = dict(good_acks)
    rearm = rearm_times(good_acks, sorted((r[1], r[2]) for r in steered if r[2] is not None))
    first_steered = min((r[1] for r in steered), default=None)
    # Writes acknowledged once steering had begun: the re-arm delay of a
    # key that stays hot, without the agent's first arming of it.
    steady = [x for x, a in zip(rearm, good_acks)
              if first_steered is not None and a[1] > first_steered and x is not None]
    ms = lambda t: round((t - t0) * 1000, 3)
    # Each stale read missed write got+1 first: which write was it?
    by_missed, missed_ns = {}, {}
    for r in stale:
        w = writes.get(r[2] + 1)
        lab = missed_label(w)
        by_missed[lab] = by_missed.get(lab, 0) + 1
        missed_ns.setdefault(r[2] + 1, 0)
        missed_ns[r[2] + 1] += 1
    examples, seen = [], set()
    # the first stale read of each missed write, then more of the same
    firsts = [r for r in stale if not (r[2] + 1 in seen or seen.add(r[2] + 1))]
    for r in (firsts + [r for r in stale if r not in firsts])[:args.examples]:
        mn = r[2] + 1
        ex = {"sent_ms": ms(r[0]), "got": r[2], "acked_before_send": r[3],
              "source": name(r[4]), "missed_write": mn}
        if mn in writes:
            ex["missed_write_info"] = dict(writes[mn])
        if mn in ack_t:
            ex["missed_write_acked_ms"] = ms(ack_t[mn])
        examples.append(ex)
    kinds = {}
    for n, w in writes.items():
        if n in ack_t:
            lab = missed_label(w)
            kinds[lab] = kinds.get(lab, 0) + 1
    return {
        "owner": name(owner), "key": args.key, "duration_s": args.duration,
        "readers": args.readers, "write_interval_s": args.write_interval,
        "tcp_writer": args.tcp_writer,
        "udp_write_interval_s": args.udp_write_interval or None,
        "reads": len(reads), "steered_reads": len(steered), "stale_reads": len(stale),
        "steered_share": round(len(steered) / len(reads), 4) if reads else 0,
        "stale_examples": examples,
        "stale_by_missed_write": by_missed,
        "missed_writes": len(missed_ns),
        "missed_write_list": sorted(missed_ns)[:50],
        "corrupt_reads": sum(1 for r in reads if r[5]),
        "misses": sum(1 for r in reads if r[2] is None),
        "timeouts": sum(1 for r in results if r[0] == "timeout"),
        "errors": [r[1].decode(errors="replace") for r in results if r[0] == "error"][:5]
        + [a[1] for a in acks if a[0] == "error"],
        "writes": len(good_acks),
        "writes_by_kind": kinds,
        "udp_write_timeouts": sum(1 for w in writes.values() if w.get("timeout")),
        "reads_by_source": by_source,
        "rearm_ms": rearm,
        "rearm_ms_percentiles": percentiles([x for x in rearm if x is not None]),
        "first_steered_ms": None if first_steered is None else ms(first_steered),
        "rearm_ms_percentiles_after_first_steered": percentiles(steady),
        "writes_never_rearmed": sum(1 for x in rearm if x is None),
    }


def size_range(text, lo, hi, what, p):
    a, _, b = text.partition(":")
    try:
        r = (int(a), int(b or a))
    except ValueError:
        p.error("%s '%s' is not B or MIN:MAX" % (what, text))
    if not lo <= r[0] <= r[1] <= hi:
        p.error("%s '%s' out of range: %d <= MIN <= MAX <= %d" % (what, text, lo, hi))
    return r


def main():
    p = argparse.ArgumentParser(prog="ks_fresh.py", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--owner", required=True, metavar="HOST:PORT")
    p.add_argument("--key", required=True)
    p.add_argument("--duration", type=float, default=5)
    p.add_argument("--readers", type=int, default=4)
    p.add_argument("--write-interval", type=float, default=0.1)
    p.add_argument("--rate", type=float, default=0, help="reads/s over all readers; 0: max")
    p.add_argument("--value-size", default="32", help="B or MIN:MAX")
    p.add_argument("--timeout", type=float, default=0.5)
    p.add_argument("--examples", type=int, default=5)
    p.add_argument("--tcp-writer", choices=("set", "set-many"), default="set")
    p.add_argument("--batch", type=int, default=9)
    p.add_argument("--filler-size", default="1:16384", help="MIN:MAX")
    p.add_argument("--udp-write-interval", type=float, default=0,
                   help="seconds between UDP sets; 0: no UDP writer")
    p.add_argument("--udp-size", default="1600:12000", help="datagram bytes, MIN:MAX")
    p.add_argument("--seed", type=int, default=1)
    args = p.parse_args()
    pipelined = args.tcp_writer == "set-many" or args.udp_write_interval
    args.value_size = size_range(args.value_size, 1, FRAG_MAX if pipelined else 1000,
                                 "--value-size", p)
    args.filler_size = size_range(args.filler_size, 1, FRAG_MAX, "--filler-size", p)
    args.udp_size = size_range(args.udp_size, 300, 65000, "--udp-size", p)
    if not 0 < args.duration <= 600 or not 1 <= args.readers <= 64 or \
            args.write_interval <= 0 or args.timeout <= 0 or args.rate < 0 or \
            not 1 <= args.batch <= 100 or args.udp_write_interval < 0:
        p.error("out of range: duration 0..600, readers 1..64, batch 1..100, "
                "write-interval, timeout > 0, rate, udp-write-interval >= 0")
    if len(args.key) > 250 or any(c.isspace() for c in args.key):
        p.error("--key must be a memcached key (<= 250 bytes, no white space)")
    owner = split_addr(args.owner)
    shared = Shared()
    acks, results = [], []  # list.append is atomic under the GIL
    t0 = time.monotonic()
    t_end = t0 + args.duration
    first_ack = threading.Event()
    wfun = writer_set_many if args.tcp_writer == "set-many" else writer
    ws = [threading.Thread(target=wfun, args=(args, owner, shared, acks, t_end, first_ack))]
    ws[0].start()
    first_ack.wait(args.timeout * 8)
    if not shared.highest_acked:
        shared.stop = True
        ws[0].join()
        sys.stderr.write("ks_fresh.py: the first set to %s failed: %s; is memcached "
                         "running there?\n" % (args.owner, acks[-1][1] if acks else "no reply"))
        return 2
    if args.udp_write_interval:
        ws.append(threading.Thread(target=udp_writer,
                                   args=(args, owner, shared, acks, t_end, first_ack)))
        ws[-1].start()
    rs = [threading.Thread(target=reader, args=(i, args, owner, shared, results, t_end))
          for i in range(args.readers)]
    for r in rs:
        r.start()
    for r in rs:
        r.join()
    shared.stop = True
    for w in ws:
        w.join()
    acks.sort(key=lambda a: (a[0] == "error", a[0] if a[0] != "error" else 0))
    doc = report(args, owner, acks, results, t0, shared.writes)
    json.dump(doc, sys.stdout)
    print()
    return 1 if doc["stale_reads"] else 0


if __name__ == "__main__":
    sys.exit(main())
