#!/usr/bin/python3
"""ks_send.py - send a few known memcached requests, for the small e2e tests.

    ks_send.py [--server A] [--port P] gets PREFIX COUNT [--keys K] [--over S]
    ks_send.py [--server A] [--port P] set KEY
    ks_send.py [--server A] [--port P] udp-gets PREFIX COUNT

gets and set go over TCP with pymemcache; udp-gets builds memcached's UDP
frames itself. Keys are PREFIX0 .. PREFIX<K-1> (K = COUNT unless --keys),
taken in turn; --over spreads the gets evenly over S seconds. Exits
non-zero if memcached does not answer, so a test knows its traffic really
reached the server.
Runs with Debian's /usr/bin/python3 and python3-pymemcache.
"""
import argparse
import socket
import struct
import sys
import time

from pymemcache.client.base import Client


def tcp_client(args):
    return Client((args.server, args.port), no_delay=True,
                  default_noreply=False, connect_timeout=5, timeout=5)


def cmd_gets(args):
    client = tcp_client(args)
    nkeys = args.keys or args.count
    start = time.monotonic()
    for i in range(args.count):
        if args.over:
            wait = start + i * args.over / args.count - time.monotonic()
            if wait > 0:
                time.sleep(wait)
        client.get("%s%d" % (args.prefix, i % nkeys))
    client.close()


def cmd_set(args):
    client = tcp_client(args)
    if not client.set(args.key, b"value"):
        sys.exit("ks_send: set %s was not stored" % args.key)
    client.close()


def cmd_udp_gets(args):
    """memcached's UDP protocol: an 8-byte frame header (request id,
    sequence number, datagram count, reserved) before the text command.
    pymemcache has no UDP client, so the frame is built here."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.settimeout(2)
    answered = 0
    for i in range(args.count):
        req_id = 0x4b00 + i
        frame = struct.pack("!HHHH", req_id, 0, 1, 0)
        sock.sendto(frame + b"get %s%d\r\n" % (args.prefix.encode(), i),
                    (args.server, args.port))
        try:
            reply, _ = sock.recvfrom(65536)
        except socket.timeout:
            continue
        if struct.unpack("!H", reply[:2])[0] == req_id and \
                reply.rstrip().endswith(b"END"):
            answered += 1
    sock.close()
    if answered != args.count:
        sys.exit("ks_send: memcached answered %d of %d UDP gets"
                 % (answered, args.count))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--server", default="198.18.0.2")
    ap.add_argument("--port", type=int, default=11211)
    sub = ap.add_subparsers(dest="cmd", required=True)
    for name in ("gets", "udp-gets"):
        p = sub.add_parser(name)
        p.add_argument("prefix")
        p.add_argument("count", type=int)
        if name == "gets":
            p.add_argument("--keys", type=int, default=0)
            p.add_argument("--over", type=float, default=0.0)
    p = sub.add_parser("set")
    p.add_argument("key")
    args = ap.parse_args()
    {"gets": cmd_gets, "set": cmd_set, "udp-gets": cmd_udp_gets}[args.cmd](args)


if __name__ == "__main__":
    main()
