#!/usr/bin/python3
"""ks_pub_news.py - whether every document an agent wrote to etcd between
two revisions was news (docs/fleet.md "When it is written").

  ks_pub_news.py --etcd URL --prefix P rev
      prints etcd's current revision
  ks_pub_news.py --etcd URL --prefix P news --from R0 --to R1

news reads every key under P as it stood at R0 (etcd's gateway), replays
the puts of (R0, R1] with a watch from R0 + 1, and compares each document
with the one before it: news is a field changed (other than updated_at),
or a rate (a *_per_s field or one of class_rates) that could have moved
by more than a tenth of itself and 1/s (each figure read as the widest
rate its 3 significant digits stand for). Only the agents' documents
count (hosts/, hot/), not the ring an operator wrote. Prints one JSON
object: the puts, and those that were not news (key, revision, the two documents). A rate's noise below
the rule's threshold must write nothing; the owner's own changes may.
"""
import argparse
import base64
import json
import math
import sys
import time
import urllib.error

from ks_hot_watch import b64, prefix_end
from ks_hot_watch import post as post_once

MOVE = 0.10  # KS_HOT_DOC_MOVE


def post(url, body, timeout):
    """post_once, again while etcd's gateway answers 503 (its backend busy
    on a loaded machine), for up to 20 s."""
    deadline = time.monotonic() + 20
    while True:
        try:
            return post_once(url, body, timeout)
        except urllib.error.HTTPError as e:
            if e.code != 503 or time.monotonic() > deadline:
                raise
        time.sleep(0.2)


def half_unit(v):
    """Half a unit of the third significant digit of v: how far the rate
    behind a document's figure (ks_rate3: "%.3g") may be from it."""
    return 0.5 * 10 ** (math.floor(math.log10(abs(v))) - 2) if v else 0.0


def moved(a, b):
    """Whether the rates behind figures a (published) and b (the next
    document) could have moved by the agent's rule (ks_rate_moved: by more
    than MOVE of the published rate and 1/s). The agent decides on its
    rates before rounding, the documents hold them to 3 significant
    digits: 995 then 1094.6 moved by 99.6, over 99.5, and was written,
    as 995 then 1090, 95 apart; judged on the figures it was a put
    without news. So the figures' widest reading: a at the end of its
    rounding away from b, b at the end of its rounding away from a."""
    if b >= a:
        ra, rb = a - half_unit(a), b + half_unit(b)
    else:
        ra, rb = a + half_unit(a), b - half_unit(b)
    d = abs(rb - ra)
    return d > 1.0 and d > MOVE * ra


def news(a, b, rate=False):
    """Whether document b says something a did not."""
    if isinstance(a, dict) and isinstance(b, dict):
        if set(a) != set(b):
            return True
        return any(news(a[k], b[k], rate or k.endswith("_per_s") or
                        k == "class_rates")
                   for k in a if k != "updated_at")
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return True
        if all(isinstance(x, dict) and "hash" in x for x in a + b):
            ka = {x["hash"]: x for x in a}
            kb = {x["hash"]: x for x in b}
            return set(ka) != set(kb) or any(news(ka[h], kb[h]) for h in ka)
        return any(news(x, y, rate) for x, y in zip(a, b))
    if rate and isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return moved(a, b)
    return a != b


def revision(url, prefix):
    r = json.load(post(url + "/v3/kv/range",
                       {"key": b64(prefix), "range_end": prefix_end(prefix),
                        "count_only": True}, 10))
    return int(r["header"]["revision"])


def docs_at(url, prefix, rev):
    r = json.load(post(url + "/v3/kv/range",
                       {"key": b64(prefix), "range_end": prefix_end(prefix),
                        "revision": str(rev)}, 10))
    return {base64.b64decode(kv["key"]).decode():
            base64.b64decode(kv.get("value", "")).decode("latin-1")
            for kv in r.get("kvs", [])}


def events(url, prefix, r0, r1, timeout):
    """(key, mod_revision, type, value) of every event in (r0, r1]."""
    out = []
    if r1 <= r0:
        return out
    # r1 is the store's revision, and the last write up to it may be
    # outside the prefix (a load document): a put of an end mark under it,
    # after r1, is the event that says the watch has delivered all of
    # (r0, r1] (no agent or client reads the key)
    json.load(post(url + "/v3/kv/put",
                   {"key": b64(prefix + "ks-pub-news-end"),
                    "value": b64("1")}, 10))
    body = {"create_request": {"key": b64(prefix),
                               "range_end": prefix_end(prefix),
                               "start_revision": str(r0 + 1)}}
    resp = post(url + "/v3/watch", body, timeout=timeout)
    dec, buf = json.JSONDecoder(), ""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        chunk = resp.read1(65536)
        if not chunk:
            break
        buf += chunk.decode()
        while True:
            buf = buf.lstrip()
            try:
                msg, end = dec.raw_decode(buf)
            except ValueError:
                break
            buf = buf[end:]
            for ev in msg.get("result", {}).get("events", []):
                kv = ev.get("kv", {})
                rev = int(kv.get("mod_revision", 0))
                if rev > r1:
                    return out
                out.append((base64.b64decode(kv["key"]).decode(), rev,
                            ev.get("type", "PUT"),
                            base64.b64decode(kv.get("value", "")).decode(
                                "latin-1")))
                if rev == r1:
                    return out
    raise SystemExit("the watch did not deliver revision %d in %d s" %
                     (r1, timeout))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--etcd", required=True)
    ap.add_argument("--prefix", required=True)
    ap.add_argument("what", choices=["rev", "news"])
    ap.add_argument("--from", dest="r0", type=int)
    ap.add_argument("--to", dest="r1", type=int)
    ap.add_argument("--timeout", type=float, default=30)
    a = ap.parse_args()
    if a.what == "rev":
        print(revision(a.etcd, a.prefix))
        return
    last = docs_at(a.etcd, a.prefix, a.r0)
    puts, stale = 0, []
    for key, rev, typ, val in events(a.etcd, a.prefix, a.r0, a.r1,
                                     a.timeout):
        if typ == "DELETE":
            last.pop(key, None)
            continue
        if "/hosts/" not in key and "/hot/" not in key:
            continue
        puts += 1
        old = last.get(key)
        last[key] = val
        try:
            if old is not None and not news(json.loads(old), json.loads(val)):
                stale.append({"key": key, "rev": rev, "was": old, "now": val})
        except ValueError:
            pass  # not a document of ours (the ring's text)
    json.dump({"puts": puts, "not_news": stale}, sys.stdout)
    print()


if __name__ == "__main__":
    main()
