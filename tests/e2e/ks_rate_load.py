#!/usr/bin/python3
"""ks_rate_load.py - a paced load of one key for test_sample_auto.sh.

  ks_rate_load.py HOST PORT set KEY
  ks_rate_load.py HOST PORT load KEY COPIES PER_S
  ks_rate_load.py HOST PORT cmd_get

set stores KEY; load sends "get KEY KEY ..." (COPIES copies, one request)
PER_S times a second over one TCP connection, each reply read whole, until
SIGTERM, then prints {"requests": R, "keys": K} (K = R * COPIES: the keys
memcached was asked for); cmd_get prints memcached's own cmd_get (every
key of every get it served since it started).
"""
import json
import signal
import socket
import sys
import time

stop = False


def on_term(_sig, _frm):
    global stop
    stop = True


def conn(host, port):
    s = socket.create_connection((host, int(port)), timeout=10)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return s


def read_until(s, end):
    buf = b''
    while not buf.endswith(end):
        chunk = s.recv(65536)
        if not chunk:
            raise RuntimeError('memcached closed the connection')
        buf += chunk
    return buf


def main():
    host, port, what = sys.argv[1:4]
    s = conn(host, port)
    if what == 'set':
        key = sys.argv[4].encode()
        s.sendall(b'set %s 0 0 1\r\nx\r\n' % key)
        if read_until(s, b'\r\n') != b'STORED\r\n':
            return 1
        return 0
    if what == 'cmd_get':
        s.sendall(b'stats\r\n')
        for line in read_until(s, b'END\r\n').split(b'\r\n'):
            p = line.split()
            if len(p) == 3 and p[1] == b'cmd_get':
                print(int(p[2]))
                return 0
        return 1
    key, copies, per_s = sys.argv[4].encode(), int(sys.argv[5]), float(sys.argv[6])
    req = b'get ' + b' '.join([key] * copies) + b'\r\n'
    signal.signal(signal.SIGTERM, on_term)
    n, t0 = 0, time.monotonic()
    while not stop:
        s.sendall(req)
        # every copy is a VALUE block, then one END
        read_until(s, b'END\r\n')
        n += 1
        ahead = t0 + n / per_s - time.monotonic()
        if ahead > 0:
            time.sleep(ahead)
    print(json.dumps({'requests': n, 'keys': n * copies}))
    return 0


if __name__ == '__main__':
    sys.exit(main())
