"""keysteer_client - pymemcache-style access to memcached through
libkeysteer (docs/client.md), over the library's C code with ctypes: the
view of the fleet, where a read goes and what a write invalidates exist
once, in C.

    from keysteer_client import Client
    c = Client(etcd="http://10.0.0.9:2379", cluster="web")
    c.set(b"user:42", b"hello", expire=60)
    c.get(b"user:42")        # b"hello", from a copy if the key is armed
    c.delete(b"user:42")
    c.stats()["copy_reads"]

Like pymemcache's Client: keys are bytes or str (UTF-8), values bytes;
get returns None on a miss; errors raise KeysteerError (an OSError with
errno and the library's one-line message). A Client is for one thread
(as the C handle is).

The library is found as KEYSTEER_LIB (a path) if set, else libkeysteer.so
next to this file's build tree, else by the dynamic linker.
"""
import ctypes
import ctypes.util
import errno as _errno
import os


class KeysteerError(OSError):
    pass


class _Stats(ctypes.Structure):
    _fields_ = [(n, ctypes.c_uint64) for n in (
        "gets", "hits", "copy_reads", "owner_reads", "fallbacks", "sets",
        "deletes", "invalidations", "inval_errors", "errors")] + [
        ("view_revision", ctypes.c_int64), ("ring_revision", ctypes.c_int64),
        ("hot_keys", ctypes.c_uint64), ("armed_keys", ctypes.c_uint64),
        ("view_updates", ctypes.c_uint64), ("view_refused", ctypes.c_uint64),
        ("view_up", ctypes.c_int32), ("owners_only", ctypes.c_int32),
        ("view_age_ms", ctypes.c_uint64)]


def _load():
    cands = [os.environ.get("KEYSTEER_LIB")]
    here = os.path.dirname(os.path.abspath(__file__))
    cands.append(os.path.join(here, "..", "..", "..",
                              os.environ.get("OUT", "build"), "libkeysteer.so"))
    cands.append(ctypes.util.find_library("keysteer"))
    for c in cands:
        if c and (os.path.exists(c) or not os.path.sep in c):
            try:
                return ctypes.CDLL(c)
            except OSError:
                continue
    raise KeysteerError(_errno.ENOENT, "libkeysteer.so not found; set KEYSTEER_LIB")


_lib = None


def _api():
    global _lib
    if _lib is None:
        l = _load()
        vp, sz, u32 = ctypes.c_void_p, ctypes.c_size_t, ctypes.c_uint32
        l.keysteer_open.argtypes = [ctypes.POINTER(vp), ctypes.c_char_p]
        l.keysteer_close.argtypes = [vp]
        l.keysteer_errmsg.argtypes = [vp]
        l.keysteer_errmsg.restype = ctypes.c_char_p
        l.keysteer_get.argtypes = [vp, ctypes.c_char_p, sz, ctypes.POINTER(vp),
                                   ctypes.POINTER(sz), ctypes.POINTER(u32)]
        l.keysteer_set.argtypes = [vp, ctypes.c_char_p, sz, ctypes.c_char_p, sz,
                                   u32, u32]
        l.keysteer_delete.argtypes = [vp, ctypes.c_char_p, sz]
        l.keysteer_free.argtypes = [vp]
        l.keysteer_stats.argtypes = [vp, ctypes.POINTER(_Stats), sz]
        _lib = l
    return _lib


def _key(k):
    return k.encode() if isinstance(k, str) else bytes(k)


class Client:
    """One handle of libkeysteer. Words of the C spec as keyword
    arguments: etcd=, cluster=, servers=, replicas=, distribution=,
    timeout_ms=, ... (see libkeysteer.h); or spec="NAME=VALUE ..."."""

    def __init__(self, spec=None, **words):
        parts = [spec] if spec else []
        parts += ["%s=%s" % (k, v) for k, v in words.items()]
        self._l = _api()
        self._h = ctypes.c_void_p()
        rc = self._l.keysteer_open(ctypes.byref(self._h), " ".join(parts).encode())
        if rc < 0:
            msg = self._msg()
            self.close()
            raise KeysteerError(-rc, msg)

    def _msg(self):
        m = self._l.keysteer_errmsg(self._h)
        return m.decode(errors="replace") if m else ""

    def _check(self, rc):
        if rc < 0:
            raise KeysteerError(-rc, self._msg())
        return rc

    def get(self, key, default=None):
        v, n, f = ctypes.c_void_p(), ctypes.c_size_t(), ctypes.c_uint32()
        k = _key(key)
        rc = self._check(self._l.keysteer_get(self._h, k, len(k), ctypes.byref(v),
                                              ctypes.byref(n), ctypes.byref(f)))
        if rc == 0:
            return default
        try:
            return ctypes.string_at(v, n.value)
        finally:
            self._l.keysteer_free(v)

    def set(self, key, value, expire=0, flags=0):
        k = _key(key)
        v = value.encode() if isinstance(value, str) else bytes(value)
        self._check(self._l.keysteer_set(self._h, k, len(k), v, len(v), flags, expire))
        return True

    def delete(self, key):
        k = _key(key)
        self._check(self._l.keysteer_delete(self._h, k, len(k)))
        return True

    def stats(self):
        st = _Stats()
        self._check(self._l.keysteer_stats(self._h, ctypes.byref(st), ctypes.sizeof(st)))
        return {n: getattr(st, n) for n, _ in _Stats._fields_}

    def close(self):
        if getattr(self, "_h", None):
            self._l.keysteer_close(self._h)
            self._h = ctypes.c_void_p()

    def __enter__(self):
        return self

    def __exit__(self, *a):
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass
