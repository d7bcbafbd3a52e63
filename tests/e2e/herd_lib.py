"""herd_lib.py - what the drivers of one hot key's callers share
(ks_herd.py, ks_swr.py): threads with a keysteer_client.Client each,
started together (within a process by a barrier, across processes by
ready and go files), their stats summed, and a file "database".
"""
import os
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "user", "client", "python"))
from keysteer_client import Client, KeysteerError  # noqa: E402,F401


class Callers:
    """N threads, a handle each, that start reading together. A thread
    body calls open(i) first: its handle (None when it could not be
    opened), returned once every thread has tried and the run began."""

    def __init__(self, spec, n):
        self.spec = spec
        self.clients = [None] * n
        self.opened = threading.Barrier(n + 1)
        self.started = threading.Event()
        self.t0 = 0.0

    def open(self, i):
        try:
            self.clients[i] = Client(self.spec)
        finally:
            self.opened.wait()
        self.started.wait()
        return self.clients[i]

    def handles(self):
        return sum(c is not None for c in self.clients)

    def run(self, bodies, ready=None, go=None, before=None):
        """Runs bodies[i](i) in thread i; writes READY (the handles
        opened) once every thread has its handle, then waits for GO to
        exist, so that processes start together. before(self), if given,
        runs once the handles are open and before READY."""
        ths = [threading.Thread(target=b, args=(i,))
               for i, b in enumerate(bodies)]
        for t in ths:
            t.start()
        self.opened.wait()
        if before:
            before(self)
        if ready:
            with open(ready, "w") as f:
                f.write("%d\n" % self.handles())
        if go:
            while not os.path.exists(go):
                time.sleep(0.01)
        self.t0 = time.monotonic()
        self.started.set()
        for t in ths:
            t.join()

    def close(self, keep=None):
        """The library's integer stats summed over the handles (only the
        names in KEEP, when given); closes the handles."""
        st = {}
        for c in self.clients:
            if c is None:
                continue
            for k, v in c.stats().items():
                if isinstance(v, int) and (keep is None or k in keep):
                    st[k] = st.get(k, 0) + v
            c.close()
        return st


def db_write(path, version, fill_ms):
    """The "database": one file "VERSION FILL_MS", replaced whole."""
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write("%d %d\n" % (version, fill_ms))
    os.replace(tmp, path)


def db_read(path):
    with open(path) as f:
        v, ms = f.read().split()
    return int(v), int(ms)
