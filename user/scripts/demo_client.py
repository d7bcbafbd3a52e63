#!/usr/bin/python3
"""demo_client.py - the demo's application host: a skewed memcached load.

    demo_client.py preload --server ADDR [--port P]
    demo_client.py run --server ADDR [--port P] [--seconds S] [--rate R]

Keys follow a Zipf distribution (s = 0.99) over 100,000 keys, and one
flash-sale key takes about a quarter of all requests on top. Requests mix
single gets and multi-gets over TCP (pymemcache), sets, and gets over UDP.
pymemcache has no UDP client, so those are memcached UDP frames built here:
an 8-byte header (request id, sequence number, datagram count, reserved)
before the text command. The load is paced to --rate requests per second
and stops after --seconds, so the demo stays bounded and the machine usable.
Runs with Debian's /usr/bin/python3 and python3-pymemcache.
"""
import argparse
import bisect
import itertools
import random
import signal
import socket
import struct
import sys
import time

from pymemcache.client.base import Client

NKEYS = 100_000
ZIPF_S = 0.99
FLASH_KEY = "flash-sale:item:1"
FLASH_SHARE = 0.25
VALUE = b"x" * 100
# Share of requests per kind; the rest are single TCP gets.
UDP_SHARE, MGET_SHARE, SET_SHARE = 0.15, 0.15, 0.10
MGET_KEYS = 10
STOP = False  # set by SIGTERM: finish the request, print the summary


def on_sigterm(*_):
    global STOP
    STOP = True


def key_name(rank):
    return "item:%06d" % rank


class Keys:
    """Draws keys: the flash-sale key, or a Zipf-ranked item key."""

    def __init__(self, rng):
        self.rng = rng
        self.cum = list(itertools.accumulate(
            r ** -ZIPF_S for r in range(1, NKEYS + 1)))

    def one(self):
        if self.rng.random() < FLASH_SHARE:
            return FLASH_KEY
        rank = bisect.bisect_left(self.cum, self.rng.random() * self.cum[-1])
        return key_name(rank + 1)

    def many(self, n):
        """A multi-get holds the flash key as often as any request does
        (FLASH_SHARE), plus distinct Zipf-ranked items."""
        keys = [FLASH_KEY] if self.rng.random() < FLASH_SHARE else []
        while len(keys) < n:
            rank = bisect.bisect_left(self.cum,
                                      self.rng.random() * self.cum[-1])
            keys.append(key_name(rank + 1))
        return list(dict.fromkeys(keys))


class UdpGets:
    def __init__(self, server, port):
        self.addr = (server, port)
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.settimeout(0.2)
        self.req_id = 0

    def get(self, key):
        self.req_id = (self.req_id + 1) & 0xFFFF
        frame = struct.pack("!HHHH", self.req_id, 0, 1, 0)
        self.sock.sendto(frame + b"get " + key.encode() + b"\r\n", self.addr)
        try:
            self.sock.recvfrom(65536)
        except socket.timeout:
            pass  # UDP may drop; the demo goes on


def connect(args):
    return Client((args.server, args.port), no_delay=True,
                  default_noreply=False, connect_timeout=5, timeout=5)


def cmd_preload(args):
    client = connect(args)
    batch = {}
    for rank in range(1, NKEYS + 1):
        batch[key_name(rank)] = VALUE
        if len(batch) == 500:
            client.set_many(batch)
            batch = {}
    batch[FLASH_KEY] = VALUE
    client.set_many(batch)
    client.close()


def cmd_run(args):
    rng = random.Random(args.seed)
    keys = Keys(rng)
    client = connect(args)
    udp = UdpGets(args.server, args.port)
    sent = {"get": 0, "mget": 0, "set": 0, "udp get": 0}
    start = time.monotonic()
    end = start + args.seconds
    n = 0
    while not STOP:
        now = time.monotonic()
        if now >= end:
            break
        due = start + n / args.rate
        if due - now > 0.002:
            time.sleep(due - now)
        n += 1
        pick = rng.random()
        if pick < UDP_SHARE:
            udp.get(keys.one())
            sent["udp get"] += 1
        elif pick < UDP_SHARE + MGET_SHARE:
            client.get_many(keys.many(MGET_KEYS))
            sent["mget"] += 1
        elif pick < UDP_SHARE + MGET_SHARE + SET_SHARE:
            client.set(keys.one(), VALUE)
            sent["set"] += 1
        else:
            client.get(keys.one())
            sent["get"] += 1
    client.close()
    print("demo client: sent %s in %.0f s" % (
        ", ".join("%d %ss" % (v, k) for k, v in sent.items()),
        time.monotonic() - start))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("cmd", choices=("preload", "run"))
    ap.add_argument("--server", required=True)
    ap.add_argument("--port", type=int, default=11211)
    ap.add_argument("--seconds", type=float, default=25)
    ap.add_argument("--rate", type=float, default=3000,
                    help="requests per second")
    ap.add_argument("--seed", type=int, default=7)
    args = ap.parse_args()
    if not 0 < args.seconds <= 3600 or not 0 < args.rate <= 100000:
        ap.error("--seconds must be in (0, 3600], --rate in (0, 100000]")
    # Stopped by the demo with SIGTERM: leave quietly, no traceback.
    signal.signal(signal.SIGTERM, on_sigterm)
    try:
        {"preload": cmd_preload, "run": cmd_run}[args.cmd](args)
    except KeyboardInterrupt:
        pass
    except (OSError, Exception) as e:  # pymemcache raises its own errors too
        sys.exit("demo client: %s: %s" % (type(e).__name__, e))


if __name__ == "__main__":
    main()
