#!/usr/bin/python3
"""pymemcache_ref.py - where Debian's pymemcache HashClient (its default
RendezvousHash) puts keys, as vectors for tests/compat/ring_compat.c.

    /usr/bin/python3 tests/compat/pymemcache_ref.py          the sample
    /usr/bin/python3 tests/compat/pymemcache_ref.py --full   every key
    ... --seed N                                               other rings

Prints, per server list:
    ring N
    server HOST:PORT                 one per server, in order
    key HEX STR BYTES                the key's bytes on the wire in hex;
                                     the index of the server the real
                                     HashClient._get_client() picks for
                                     the key as a str (-1 when the bytes
                                     are not UTF-8) and as bytes
    end
The owners come from pymemcache's own code (no reimplementation here):
HashClient._get_client(key).server, looked up in the list.
"""
import random
import sys

from pymemcache.client.hash import HashClient

SIZES = [1, 2, 3, 4, 5, 7, 8, 10, 13, 16, 20, 25, 32, 40, 47, 50, 64, 71,
         80, 90, 100]
ALPHABET = ("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
            ":_-./|#@!$%^&*()[]{}'\"\\`~+=,;<>?")
# code point ranges for UTF-8 keys: 2-, 3- and 4-byte sequences
RANGES = [(0xa0, 0x7ff), (0x800, 0xd7ff), (0xe000, 0xfffd),
          (0x10000, 0x10ffff)]


def server_list(rnd, n, kind):
    servers = []
    used = set()
    while len(servers) < n:
        if kind == 0:
            host = "10.%d.%d.%d" % (len(servers) // 250, len(servers) % 250,
                                    rnd.randint(1, 254))
        else:
            host = "cache-%d.%s.example" % (rnd.randint(0, 9999),
                                            rnd.choice(["eu", "us", "ap"]))
        port = 11211 if rnd.random() < 0.4 else rnd.randint(1, 65535)
        if (host, port) in used:
            continue
        used.add((host, port))
        servers.append((host, port))
    return servers


def random_key(rnd):
    """Wire bytes of a key pymemcache accepts: 1..250 bytes, no ASCII
    whitespace, no NUL."""
    r = rnd.random()
    if r < 0.3:  # short ASCII
        n = rnd.randint(1, 12)
        return "".join(rnd.choice(ALPHABET) for _ in range(n)).encode()
    if r < 0.5:  # long ASCII, up to 250
        n = rnd.choice([rnd.randint(13, 250), 250, 249, 248, 247])
        return "".join(rnd.choice(ALPHABET) for _ in range(n)).encode()
    if r < 0.8:  # UTF-8, mixed with ASCII
        out = b""
        limit = rnd.choice([rnd.randint(1, 40), 250])
        while True:
            if rnd.random() < 0.3:
                c = rnd.choice(ALPHABET)
            else:
                lo, hi = rnd.choice(RANGES)
                c = chr(rnd.randint(lo, hi))
                if c.isspace():
                    continue
            b = c.encode()
            if len(out) + len(b) > limit:
                break
            out += b
        return out or b"k"
    # binary: any byte but whitespace and NUL, often not UTF-8
    n = rnd.choice([rnd.randint(1, 16), rnd.randint(17, 250)])
    bad = set(b" \t\n\r\x0b\x0c\x00")
    return bytes(rnd.choice([b for b in range(256) if b not in bad])
                 for _ in range(n))


def main():
    full = "--full" in sys.argv
    seed = 15
    if "--seed" in sys.argv:
        seed = int(sys.argv[sys.argv.index("--seed") + 1])
    rnd = random.Random(seed)
    sizes = SIZES + [rnd.randint(1, 100) for _ in range(3)]
    per_ring = 5000 if full else 600
    out = sys.stdout
    for ring, n in enumerate(sizes):
        servers = server_list(rnd, n, ring % 2)
        index = {s: i for i, s in enumerate(servers)}
        client = HashClient(servers, allow_unicode_keys=True)
        out.write("ring %d\n" % ring)
        for host, port in servers:
            out.write("server %s:%d\n" % (host, port))
        for _ in range(per_ring):
            key = random_key(rnd)
            try:
                text = key.decode("utf-8")
                str_owner = index[client._get_client(text).server]
            except UnicodeDecodeError:
                str_owner = -1
            bytes_owner = index[client._get_client(key).server]
            out.write("key %s %d %d\n" % (key.hex(), str_owner, bytes_owner))
        out.write("end\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
