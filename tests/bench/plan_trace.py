#!/usr/bin/python3
"""plan_trace.py - what `agent ring plan` reads against what memcached
counts, one line a second (make bench-plan, docs/placement.md).

  plan_trace.py --etcd URL --cluster NAME --out FILE HOST:PORT...

Until SIGTERM, once a second: every load document under
/keysteer-load/NAME/ (its etcd mod_revision and its shard object: the
rates and, from agents that write them, the counters) and each server's
cmd_get, appended to FILE as one JSON line. The bench sets it beside each
window so that how often each agent rewrote its document, and how far
the documents' rates were from memcached's own counts second by second,
can be read afterwards (plan_trace.py --report FILE). Standard library
only; run it where etcd and the servers are reachable.
"""
import argparse
import base64
import json
import os
import signal
import sys
import time
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../user/scripts"))
import mc_stats  # noqa: E402


def load_docs(url, cluster):
    prefix = ("/keysteer-load/%s/" % cluster).encode()
    end = prefix[:-1] + bytes([prefix[-1] + 1])
    body = json.dumps({"key": base64.b64encode(prefix).decode(),
                       "range_end": base64.b64encode(end).decode()}).encode()
    req = urllib.request.Request(url + "/v3/kv/range", data=body,
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=5) as r:
        res = json.load(r)
    out = {}
    for kv in res.get("kvs", []):
        self = base64.b64decode(kv["key"])[len(prefix):].decode()
        try:
            doc = json.loads(base64.b64decode(kv["value"]))
        except ValueError:
            continue
        sh = doc.get("shard") if isinstance(doc.get("shard"), dict) else {}
        out[self] = {"rev": int(kv["mod_revision"]), "ring": doc.get("ring_revision"),
                     "shard": sh.get("name"), "served": sh.get("served_per_s", 0),
                     "writes": sh.get("writes_per_s", 0), "totals": sh.get("totals"),
                     # the keys on copies it owns, and what their owner
                     # still serves of them
                     "hot": {h.get("hash"): round(h.get("reads_per_s", 0)) for h in doc.get("hot", [])
                             if isinstance(h, dict)}}
    return out


def trace(a):
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    nxt = time.monotonic()
    with open(a.out, "a") as f:
        while not stop:
            line = {"t": time.time()}
            try:
                line["docs"] = load_docs(a.etcd, a.cluster)
                line["mc"] = {hp: mc_stats.stats(hp, 5).get("cmd_get", 0) for hp in a.servers}
            except (OSError, ValueError) as e:
                line["error"] = str(e)
            f.write(json.dumps(line) + "\n")
            f.flush()
            nxt += 1
            time.sleep(max(0, nxt - time.monotonic()))
    return 0


def report(path):
    """Per shard over the traced window: document versions seen, and the
    mean of the documents' served+writes (what `ring plan` averages)
    against memcached's count, both as shares of their mean."""
    lines = [json.loads(x) for x in open(path) if x.strip()]
    lines = [x for x in lines if "docs" in x]
    if len(lines) < 2:
        return {}
    first, last = lines[0], lines[-1]
    secs = last["t"] - first["t"]
    shards = {}
    for x in lines:
        for d in x["docs"].values():
            if d["shard"] in last["mc"]:
                s = shards.setdefault(d["shard"], {"revs": set(), "sum": 0.0, "n": 0})
                s["revs"].add(d["rev"])
                s["sum"] += d["served"] + d["writes"]
                s["n"] += 1
    rows = {}
    for hp, s in shards.items():
        rows[hp] = {"versions": len(s["revs"]), "docs_mean": s["sum"] / s["n"],
                    "memcached": (last["mc"][hp] - first["mc"][hp]) / secs}
        # the agent's counters: first and last document of one base
        tt = [d["totals"] for x in lines for d in x["docs"].values()
              if d["shard"] == hp and isinstance(d.get("totals"), dict)]
        tt = [t for t in tt if t["base"] == tt[-1]["base"]] if tt else []
        if len(tt) > 1 and tt[-1]["ms"] > tt[0]["ms"]:
            def load(t):  # what its memcached answered (core/host_doc.h)
                return t["served"] + t["writes"] + t.get("fills", 0)
            rows[hp]["counted"] = (load(tt[-1]) - load(tt[0])) * 1000.0 / (tt[-1]["ms"] - tt[0]["ms"])
            rows[hp]["counted_s"] = (tt[-1]["ms"] - tt[0]["ms"]) / 1000.0
    md = sum(r["docs_mean"] for r in rows.values()) / len(rows)
    mm = sum(r["memcached"] for r in rows.values()) / len(rows)
    for r in rows.values():
        r["error"] = r["docs_mean"] / md - r["memcached"] / mm
    out = {}
    if all("counted" in r for r in rows.values()):
        mt = sum(r["counted"] for r in rows.values()) / len(rows)
        for r in rows.values():
            r["counted_error"] = r["counted"] / mt - r["memcached"] / mm
        out["largest_counted_error"] = max(abs(r["counted_error"]) for r in rows.values())
    return dict(out, **{"seconds": round(secs, 1), "reads": len(lines),
            "largest_error": max(abs(r["error"]) for r in rows.values()),
            "versions_min": min(r["versions"] for r in rows.values()),
            "versions_max": max(r["versions"] for r in rows.values()), "shards": rows})


def main():
    p = argparse.ArgumentParser(prog="plan_trace.py", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--etcd")
    p.add_argument("--cluster")
    p.add_argument("--out")
    p.add_argument("--report", metavar="FILE", help="summarise a trace as JSON")
    p.add_argument("servers", nargs="*", metavar="HOST:PORT")
    a = p.parse_args()
    if a.report:
        json.dump(report(a.report), sys.stdout, indent=1, default=list)
        print()
        return 0
    if not (a.etcd and a.cluster and a.out and a.servers):
        p.error("give --etcd, --cluster, --out and HOST:PORT... (or --report FILE)")
    return trace(a)


if __name__ == "__main__":
    sys.exit(main())
