#!/usr/bin/python3
"""ks_hostview.py - libkeysteer handles for test_client_hostview.sh, through
the Python adapter (user/client/python), so the view, the schedule and the
invalidations are the library's own:

    ks_hostview.py hash KEY                     ks_key_hash, 16 hex digits
    ks_hostview.py open SPEC                    "OK" or the open's message
    ks_hostview.py monitor SPEC OUT             a JSON line per change of the
                                                handle's view stats, until TERM
    ks_hostview.py latency URL CLUSTER N SPEC...  N hot/ puts; per SPEC the ms
                                                until its handle's view has each
    ks_hostview.py wait OUT SINCE EXPR SECONDS  the first time from SINCE on
                                                when EXPR held in monitor's
                                                lines (its names: the stats;
                                                a line holds until the next),
                                                or exit 1
    ks_hostview.py fresh READER WRITER KEY OWNER REPLICA ROUNDS
                                                copies made as a fill makes them,
                                                writes through WRITER, reads
                                                through READER: stale reads
    ks_hostview.py populate URL CLUSTER HOSTS HOT  HOSTS hosts/ documents
                                                (about 1 KB each) and HOT
                                                hot/ entries
    ks_hostview.py churn URL CLUSTER HOSTS RATE SECONDS  hosts/ rewritten
                                                at RATE puts/s (load updates)
    ks_hostview.py mem N SPEC [SECONDS]         N handles in this process:
                                                RSS per handle, open time;
                                                held SECONDS (default 1)
Times are time.time() (one clock with the script's `date`)."""
import base64
import json
import signal
import socket
import sys
import time
import urllib.request

from keysteer_client import Client, KeysteerError

M64 = (1 << 64) - 1
SEED, MUL, MUL2 = 0x9e3779b97f4a7c15, 0xff51afd7ed558ccd, 0xc4ceb9fe1a85ec53


def key_hash(key):
    """bpf/keysteer.h ks_key_hash: 8 bytes a round, little-endian."""
    h = SEED ^ ((len(key) * MUL2) & M64)
    for i in range(0, len(key), 8):
        w = int.from_bytes(key[i:i + 8], "little")
        h = ((h ^ w) * MUL) & M64
        h = ((h << 31) | (h >> 33)) & M64
    h ^= h >> 33
    h = (h * MUL) & M64
    h ^= h >> 33
    h = (h * MUL2) & M64
    h ^= h >> 33
    return h or 1


def hot_doc(key, owner, replicas, state, seq):
    return json.dumps({
        "schema": 1, "hash": "%016x" % key_hash(key), "key": key.decode(),
        "owner": owner, "read_hot": True, "write_hot": False,
        "pinned": False, "copies": 1 + len(replicas), "replicas": replicas,
        "subkeys": 1, "state": state, "write_seq": seq,
        "reads_per_s": 1000.0, "writes_per_s": 0.0}, separators=(",", ":"))


def etcd_put(url, key, val):
    body = json.dumps({"key": base64.b64encode(key.encode()).decode(),
                       "value": base64.b64encode(val.encode()).decode()})
    req = urllib.request.Request(url + "/v3/kv/put", body.encode(),
                                 {"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=10) as r:
        return int(json.load(r)["header"]["revision"])


VIEW = ("view_up", "owners_only", "view_revision", "ring_revision",
        "hot_keys", "armed_keys", "view_refused")


def monitor(spec, out):
    stop = []
    signal.signal(signal.SIGTERM, lambda *a: stop.append(1))
    with open(out, "a", buffering=1) as f:
        try:
            c = Client(spec=spec)
        except KeysteerError as e:
            f.write(json.dumps({"t": time.time(), "error": str(e)}) + "\n")
            return 1
        last = None
        while not stop:
            s = c.stats()
            now = {k: s[k] for k in VIEW}
            if now != last:
                now["t"] = time.time()
                f.write(json.dumps(now) + "\n")
                now.pop("t")
                last = now
            time.sleep(0.01)
        c.close()
    return 0


def wait(out, since, expr, secs):
    end = time.time() + secs
    last = None
    while time.time() < end:
        try:
            with open(out) as f:
                lines = [json.loads(x) for x in f if x.endswith("\n")]
        except (OSError, ValueError):
            lines = []
        # the state at since is the last line before it
        before = [d for d in lines if d["t"] < since][-1:]
        for d in before + [d for d in lines if d["t"] >= since]:
            last = d
            if "error" not in d and eval(expr, {}, dict(d)):
                print("%.3f" % max(d["t"], since))
                return 0
        time.sleep(0.05)
    print("never within %.0f s; last: %s" % (secs, json.dumps(last)))
    return 1


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100.0 * (len(xs) - 1))))]


def latency(url, cluster, n, specs):
    hs = [Client(spec=s) for s in specs]
    lat = [[] for _ in hs]
    key = b"lat:1"
    path = "/keysteer/%s/hot/%016x" % (cluster, key_hash(key))
    for i in range(n):
        doc = hot_doc(key, "127.0.0.1:1", [], "counting", i + 1)
        t0 = time.monotonic()
        rev = etcd_put(url, path, doc)
        seen = [None] * len(hs)
        while None in seen and time.monotonic() - t0 < 30:
            for j, h in enumerate(hs):
                if seen[j] is None and h.stats()["view_revision"] >= rev:
                    seen[j] = (time.monotonic() - t0) * 1000.0
            time.sleep(0.0002)
        for j in range(len(hs)):
            lat[j].append(seen[j] if seen[j] is not None else 30000.0)
        time.sleep(0.02)
    print(json.dumps([{"spec": s, "n": n, "p50_ms": round(pct(l, 50), 2),
                       "p99_ms": round(pct(l, 99), 2),
                       "max_ms": round(max(l), 2)}
                      for s, l in zip(specs, lat)]))
    return 0


def host_doc(i, n):
    top = [{"hash": "%016x" % key_hash(b"k%d:%d" % (i, j)),
            "reads_per_s": 100.0 + j + n, "writes_per_s": 1.0}
           for j in range(10)]
    return json.dumps({"schema": 1, "self": "10.1.%d.%d:11211" % (i // 250, i % 250),
                       "agent_version": "0.1", "pid": 1000 + i,
                       "ifname": "eth1", "ring_revision": 0,
                       "interval_ms": 1000, "sample_n": 16,
                       "class_rates": {"read": 1000.0 + n, "write": 10.0,
                                       "other": 0.0},
                       "shard": None, "top": top,
                       "replicas": ["10.2.%d.%d:11211" % (i // 250, i % 250)],
                       "updated_at": "2026-12-02T00:00:00Z"},
                      separators=(",", ":"))


def populate(url, cluster, hosts, hot):
    for i in range(hosts):
        etcd_put(url, "/keysteer/%s/hosts/10.1.%d.%d:11211"
                 % (cluster, i // 250, i % 250), host_doc(i, 0))
    for i in range(hot):
        k = b"hot:%d" % i
        etcd_put(url, "/keysteer/%s/hot/%016x" % (cluster, key_hash(k)),
                 hot_doc(k, "10.1.0.%d:11211" % (i % 4), ["10.2.0.1:11211"],
                         "armed", 1))
    return 0


def churn(url, cluster, hosts, rate, secs):
    end, n, t = time.monotonic() + secs, 0, time.monotonic()
    while time.monotonic() < end:
        i = n % hosts
        etcd_put(url, "/keysteer/%s/hosts/10.1.%d.%d:11211"
                 % (cluster, i // 250, i % 250), host_doc(i, n))
        n += 1
        t += 1.0 / rate
        d = t - time.monotonic()
        if d > 0:
            time.sleep(d)
    print(json.dumps({"puts": n, "seconds": secs}))
    return 0


def rss_kb():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS"):
                return int(line.split()[1])
    return 0


def mem(n, spec, hold=1.0):
    Client(spec=spec).close()  # the library loaded, its first costs paid
    r0, t0 = rss_kb(), time.monotonic()
    hs = [Client(spec=spec) for _ in range(n)]
    t1 = time.monotonic()
    time.sleep(hold)
    r1 = rss_kb()
    print(json.dumps({"handles": n, "rss_before_kb": r0, "rss_after_kb": r1,
                      "kb_per_handle": round((r1 - r0) / float(n), 1),
                      "open_ms_per_handle":
                      round((t1 - t0) * 1000.0 / n, 2)}))
    for h in hs:
        h.close()
    return 0


def mc(addr, line):
    host, port = addr.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=5) as s:
        s.sendall(line)
        buf = b""
        while not (buf.endswith(b"\r\n") and
                   (buf.startswith((b"STORED", b"HD", b"NS", b"EX", b"NF",
                                    b"EN", b"ERROR", b"CLIENT", b"SERVER"))
                    or buf.endswith(b"END\r\n"))):
            d = s.recv(65536)
            if not d:
                break
            buf += d
        return buf


def fresh(reader_spec, writer_spec, key, owner, replica, rounds):
    """Each round: the owner's value copied to the replica as a fresh item
    (what a fill stores), the reader reads it from the copy, then the
    writer writes a new value through the library and the reader reads
    again: anything but the new value is a stale read."""
    r, w = Client(spec=reader_spec), Client(spec=writer_spec)
    k = key.encode()
    stale = copy_first = 0
    for i in range(rounds):
        old = b"v%d" % i
        w.set(k, old)
        # the fill: a fresh copy of the owner's value on the replica
        mc(replica, b"set %s 0 60 %d\r\n%s\r\n" % (k, len(old), old))
        c0 = r.stats()["copy_reads"]
        got = r.get(k)
        if r.stats()["copy_reads"] > c0 and got == old:
            copy_first += 1
        new = b"n%d" % i
        w.set(k, new)
        for _ in range(4):
            if r.get(k) != new:
                stale += 1
    ws = w.stats()
    print(json.dumps({"rounds": rounds, "copy_reads_before": copy_first,
                      "stale": stale, "writer_invalidations":
                      ws["invalidations"], "reader_armed":
                      r.stats()["armed_keys"]}))
    return 0


def main(a):
    if a[0] == "hash":
        print("%016x" % key_hash(a[1].encode()))
        return 0
    if a[0] == "open":
        try:
            Client(spec=a[1]).close()
            print("OK")
            return 0
        except KeysteerError as e:
            print(str(e))
            return 1
    if a[0] == "monitor":
        return monitor(a[1], a[2])
    if a[0] == "latency":
        return latency(a[1], a[2], int(a[3]), a[4:])
    if a[0] == "wait":
        return wait(a[1], float(a[2]), a[3], float(a[4]))
    if a[0] == "fresh":
        return fresh(a[1], a[2], a[3], a[4], a[5], int(a[6]))
    if a[0] == "populate":
        return populate(a[1], a[2], int(a[3]), int(a[4]))
    if a[0] == "churn":
        return churn(a[1], a[2], int(a[3]), float(a[4]), float(a[5]))
    if a[0] == "mem":
        return mem(int(a[1]), a[2], float(a[3]) if len(a) > 3 else 1.0)
    if a[0] == "hotdoc":
        print(hot_doc(a[1].encode(), a[2], [x for x in a[3].split(",") if x],
                      a[4], int(a[5])))
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
