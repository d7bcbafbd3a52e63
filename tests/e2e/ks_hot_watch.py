#!/usr/bin/python3
"""ks_hot_watch.py - a client of the fleet's hot-key table: watches
/keysteer/CLUSTER/hot/ through etcd's JSON gateway (the way a client library
would) and times how long a write to an armed hot key takes to show up as
its entry turning dirty, and then armed again.

  ks_hot_watch.py --etcd URL --cluster NAME --owner HOST:PORT --key KEY
                  [--writes N] [--timeout SEC] [--pause SEC] [--arm-timeout SEC]

It reads the prefix, watches it from the read's revision + 1 (one POST to
/v3/watch whose answer is a stream of JSON objects), and waits for KEY's
entry (matched by its "key" field: the owner publishes key bytes, the default) to be
"armed". Then N times: note time.monotonic(), set KEY over TCP on the owner
(one connection, "set KEY 0 0 LEN"; the request leaves this namespace for
the owner's interface within microseconds), wait for the watch to deliver
the entry with state "dirty" and a write_seq above the one armed, then for
"armed" again; --pause between writes. Prints one JSON object: the dirty
and re-armed latencies in ms (p50, p99, max, each sample), the writes that
timed out (of them "missed": stored on the owner, never seen dirty), the
writes the owner stored ("sent"), and every entry seen that did not parse
as JSON.
"""
import argparse
import base64
import json
import queue
import socket
import sys
import threading
import time
import urllib.request


def b64(s):
    return base64.b64encode(s.encode()).decode()


def prefix_end(p):
    b = bytearray(p.encode())
    b[-1] += 1
    return base64.b64encode(bytes(b)).decode()


def post(url, body, timeout):
    req = urllib.request.Request(url, data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    return urllib.request.urlopen(req, timeout=timeout)


def watch(url, prefix, rev, out, stop):
    body = {"create_request": {"key": b64(prefix), "range_end": prefix_end(prefix),
                               "start_revision": str(rev)}}
    resp = post(url + "/v3/watch", body, timeout=60)
    dec = json.JSONDecoder()
    buf = ""
    while not stop.is_set():
        chunk = resp.read1(65536) if hasattr(resp, "read1") else resp.read(1)
        if not chunk:
            break
        now = time.monotonic()
        buf += chunk.decode()
        while True:
            buf = buf.lstrip()
            if not buf:
                break
            try:
                msg, end = dec.raw_decode(buf)
            except ValueError:
                break
            buf = buf[end:]
            for ev in msg.get("result", {}).get("events", []):
                kv = ev.get("kv", {})
                val = base64.b64decode(kv.get("value", "")).decode("latin-1")
                out.put((now, ev.get("type", "PUT"), val))


def pct(xs, q):
    if not xs:
        return None
    xs = sorted(xs)
    i = min(len(xs) - 1, int(round(q * (len(xs) - 1))))
    return round(xs[i], 2)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--etcd", required=True)
    ap.add_argument("--cluster", default="default")
    ap.add_argument("--owner", required=True)
    ap.add_argument("--key", required=True)
    ap.add_argument("--writes", type=int, default=20)
    ap.add_argument("--timeout", type=float, default=3.0)
    ap.add_argument("--pause", type=float, default=0.05)
    # how long the key may take to be armed (at the start, and again before
    # each write): the agent's refill, which a loaded machine slows; apart
    # from --timeout, the bound on the dirty event that a control measures
    ap.add_argument("--arm-timeout", type=float)
    a = ap.parse_args()
    prefix = "/keysteer/%s/hot/" % a.cluster
    r = json.load(post(a.etcd + "/v3/kv/range",
                       {"key": b64(prefix), "range_end": prefix_end(prefix)}, 5))
    rev = int(r["header"]["revision"])
    q = queue.Queue()
    stop = threading.Event()
    th = threading.Thread(target=watch, args=(a.etcd, prefix, rev + 1, q, stop),
                          daemon=True)
    th.start()
    state = {"state": None, "write_seq": 0}
    bad = []
    for kv in r.get("kvs", []):
        try:
            d = json.loads(base64.b64decode(kv["value"]))
        except ValueError:
            continue
        if d.get("key") == a.key:
            state = d

    def wait_for(pred, deadline):
        nonlocal state
        while True:
            if pred(state):
                return True
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            try:
                t, typ, val = q.get(timeout=left)
            except queue.Empty:
                return False
            if typ != "PUT":
                continue
            try:
                d = json.loads(val)
            except ValueError:
                bad.append(val[:80])
                continue
            if d.get("key") == a.key:
                d["_t"] = t
                state = d

    res = {"armed_at_start": False, "dirty_ms": [], "rearmed_ms": [],
           "timeouts": 0, "sent": 0, "missed": 0, "unparsed": bad}
    arm = a.arm_timeout if a.arm_timeout is not None else 3 * a.timeout
    if not wait_for(lambda s: s.get("state") == "armed",
                    time.monotonic() + arm):
        res["last_state"] = state
        print(json.dumps(res))
        return 1
    res["armed_at_start"] = True
    host, port = a.owner.rsplit(":", 1)
    mc = socket.create_connection((host, int(port)), timeout=a.timeout)
    mc.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    for i in range(a.writes):
        if not wait_for(lambda s: s.get("state") == "armed",
                        time.monotonic() + arm):
            res["timeouts"] += 1
            continue
        seq = state.get("write_seq", 0)
        val = "w%d" % i
        t0 = time.monotonic()
        mc.sendall(("set %s 0 0 %d\r\n%s\r\n" % (a.key, len(val), val)).encode())
        ack = mc.recv(64)
        if not ack.startswith(b"STORED"):
            res["timeouts"] += 1
            continue
        res["sent"] += 1
        if not wait_for(lambda s: s.get("state") == "dirty" and
                        s.get("write_seq", 0) > seq, t0 + a.timeout):
            res["timeouts"] += 1
            res["missed"] += 1
            continue
        res["dirty_ms"].append((state["_t"] - t0) * 1000)
        if wait_for(lambda s: s.get("state") == "armed" and
                    s.get("write_seq", 0) > seq, t0 + a.timeout):
            res["rearmed_ms"].append((state["_t"] - t0) * 1000)
        time.sleep(a.pause)
    stop.set()
    for k in ("dirty_ms", "rearmed_ms"):
        xs = res[k]
        res[k] = {"n": len(xs), "p50": pct(xs, 0.5), "p99": pct(xs, 0.99),
                  "max": round(max(xs), 2) if xs else None,
                  "samples": [round(x, 2) for x in xs]}
    print(json.dumps(res))
    return 0


if __name__ == "__main__":
    sys.exit(main())
