#!/usr/bin/python3
"""twemproxy_ref.py - a second, independent implementation of nutcracker's
ketama distribution (src/hashkit/nc_ketama.c, nc_fnv.c, nc_md5.c, the point
naming of nc_conf.c and the key hash of nc_server.c), written from its
source in Python with hashlib, to derive the vectors that tests/unit/t_ring.c
holds keysteer's C builder to. There is no twemproxy library in Debian to
test against; two implementations from one reading catch slips in either.

    /usr/bin/python3 tests/compat/twemproxy_ref.py            the vectors
    /usr/bin/python3 tests/compat/twemproxy_ref.py --vectors  many rings

--vectors prints, for rings of random servers (1 to 100, weights, ports,
names), "ring N", one "server host:port:weight [name]" line per server,
then "key HEX FNV MD5" lines (the key in hex, its server index under
hash: fnv1a_64 and hash: md5), then "end"; tests/compat/ring_compat.c
compares keysteer's answers with them.
"""
import hashlib
import math
import random
import struct
import sys


def f32(x):
    """Rounds to a C float: nutcracker computes the point count in float."""
    return struct.unpack('f', struct.pack('f', x))[0]


def fnv1a_64(key):
    """hash_fnv1a_64: 32 bits of state; each byte widened through a plain
    char, which is signed on x86-64, so bytes >= 0x80 are sign-extended."""
    h = 0xcbf29ce484222325 & 0xffffffff
    for c in key:
        h ^= c if c < 0x80 else 0xffffff00 | c
        h = (h * (0x100000001b3 & 0xffffffff)) & 0xffffffff
    return h


def md5_word(data, a=0):
    """Digest bytes 4a..4a+3 read little-endian (ketama_hash, hash_md5)."""
    return struct.unpack('<I', hashlib.md5(data).digest()[4 * a:4 * a + 4])[0]


def continuum(servers):
    """servers: (host, port, weight, name or None) in config order."""
    total = sum(s[2] for s in servers)
    n = len(servers)
    points = []
    for idx, (host, port, weight, name) in enumerate(servers):
        pct = f32(f32(weight) / f32(total))
        t = f32(f32(f32(pct * 160) / 4) * f32(n))
        per_server = int(math.floor(f32(t + 0.0000000001))) * 4
        base = name or (host if port == 11211 else '%s:%d' % (host, port))
        for i in range(per_server // 4):
            label = ('%s-%d' % (base, i)).encode()
            points += [(md5_word(label, a), idx) for a in range(4)]
    points.sort(key=lambda p: p[0])  # stable, as glibc's qsort: ties keep order
    return points


def dispatch(points, h):
    lo, hi = 0, len(points)
    while lo < hi:
        mid = (lo + hi) // 2
        if points[mid][0] < h:
            lo = mid + 1
        else:
            hi = mid
    return points[lo if lo < len(points) else 0][1]


def lookup(servers, key, hashf):
    if len(servers) == 1:
        return 0
    return dispatch(continuum(servers), hashf(key) if key else 0)


SERVERS = [('10.0.0.1', 11211, 1, None), ('10.0.0.2', 11212, 2, None),
           ('cache-c.example.com', 11211, 3, 'shard-c'),
           ('10.0.0.4', 22122, 1, 'd'), ('10.0.0.5', 11211, 5, None)]
KEYS = [b'a', b'foo', b'user:42', b'cart:7', 'ключ:1'.encode(),
        '\U0001f511'.encode(), b'\xff\xfe', b'session:abcdef0123456789', b'k',
        b'x' * 250]

def dispatch_hash(points, n, key, hashf):
    if n == 1:
        return 0
    return dispatch(points, hashf(key) if key else 0)


def random_key(rnd, i):
    kind = i % 4
    if kind == 0:
        return ('user:%d' % i).encode()
    if kind == 1:
        return ('%s:%d' % (rnd.choice(['ключ', 'キー', 'clé', '\U0001f511']), i)).encode()
    n = 250 if kind == 2 else rnd.randint(1, 250)
    return bytes(rnd.randint(0x21, 0xfe) for _ in range(n))


def vectors(rings=60, keys=400):
    rnd = random.Random(20240611)
    for r in range(rings):
        n = 1 + (r * 37) % 100 if r else 1
        servers = []
        for i in range(n):
            host = rnd.choice(['10.%d.%d.%d' % (i // 250, i % 250, rnd.randint(1, 254)),
                               'cache-%d.example.com' % i])
            port = rnd.choice([11211, 11211, rnd.randint(1024, 65535)])
            weight = rnd.choice([1, 1, rnd.randint(1, 10), rnd.randint(1, 1000)])
            name = rnd.choice([None, None, 'shard-%d-%d' % (r, i)])
            servers.append((host, port, weight, name))
        points = continuum(servers)
        print('ring %d' % r)
        for host, port, weight, name in servers:
            print('server %s:%d:%d%s' % (host, port, weight, ' ' + name if name else ''))
        for i in range(keys):
            k = random_key(rnd, i)
            print('key %s %d %d' % (k.hex(), dispatch_hash(points, n, k, fnv1a_64),
                                    dispatch_hash(points, n, k, md5_word)))
        print('end')


if __name__ == '__main__' and sys.argv[1:] == ['--vectors']:
    vectors()
elif __name__ == '__main__':
    ring = continuum(SERVERS)
    print('points', len(ring),
          [sum(1 for p in ring if p[1] == i) for i in range(len(SERVERS))])
    for k in KEYS:
        print('key %-32r fnv1a_64 -> %d  md5 -> %d' %
              (k[:24], lookup(SERVERS, k, fnv1a_64), lookup(SERVERS, k, md5_word)))
    for s in [b'', b'a', b'foobar', b'\xff', 'é'.encode(), 'ключ'.encode()]:
        print('fnv1a_64 %-24r 0x%08x' % (s, fnv1a_64(s)))
