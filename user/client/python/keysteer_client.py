"""keysteer_client - pymemcache-style access to memcached through
libkeysteer (docs/client.md), over the library's C code with ctypes: the
view of the fleet, where a read goes and what a write invalidates exist
once, in C.

    from keysteer_client import Client
    c = Client(etcd="http://10.0.0.9:2379", cluster="web")
    c.set(b"user:42", b"hello", expire=60)
    c.set_many({b"a": b"1", b"b": b"2"})  # [] or the keys over their rate limit
    c.get(b"user:42")        # b"hello", from a copy if the key is armed
    c.get_or_fill(b"user:7", lambda: db_read(7), expire=60)  # one fill per miss, fleet-wide
    c.delete(b"user:42")
    c.stats()["copy_reads"]
    c.incr("votes:1", 1)     # the new value; None for a split counter
    c.counter("votes:1")     # a counter's total, split or not

Like pymemcache's Client: keys are bytes or str (UTF-8), values bytes;
get returns None on a miss; errors raise KeysteerError (an OSError with
errno and the library's one-line message), and a call of a key over its
rate limit (the fleet's `limit` rules, docs/limits.md) raises
RateLimited, a KeysteerError with errno EDQUOT (KEYSTEER_ELIMIT). A Client is for one thread
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


# KEYSTEER_ELIMIT (libkeysteer.h): a key over its rate limit, not sent
ELIMIT = _errno.EDQUOT


class RateLimited(KeysteerError):
    """A call of a key over its rate limit: nothing was sent."""


class StaleValue(bytes):
    """A value get_or_fill served while marked stale (allow_stale=True)."""
    stale = True


class _Stats(ctypes.Structure):
    _fields_ = [(n, ctypes.c_uint64) for n in (
        "gets", "hits", "copy_reads", "owner_reads", "fallbacks", "sets",
        "deletes", "invalidations", "inval_errors", "errors")] + [
        ("view_revision", ctypes.c_int64), ("ring_revision", ctypes.c_int64),
        ("hot_keys", ctypes.c_uint64), ("armed_keys", ctypes.c_uint64),
        ("view_updates", ctypes.c_uint64), ("view_refused", ctypes.c_uint64),
        ("view_up", ctypes.c_int32), ("owners_only", ctypes.c_int32),
        ("view_age_ms", ctypes.c_uint64)] + [
        # batches, the L1
        (n, ctypes.c_uint64) for n in (
            "batches", "batch_keys", "l1_hits", "l1_misses", "l1_drops",
            "l1_write_drops", "l1_flushes", "l1_evictions", "l1_expired",
            "l1_keys", "l1_bytes")] + [
        # split counters
        (n, ctypes.c_uint64) for n in (
            "incrs", "decrs", "subkey_writes", "counter_reads",
            "counter_retries", "folds", "folded", "split_refused")] + [
        # ring changes
        (n, ctypes.c_uint64) for n in (
            "ring_changes", "ring_old_reads", "ring_warmups",
            "ring_warm_undone", "ring_invals", "ring_inval_errors",
            "ring_grace_ms", "ring_catchups", "ring_catchup_missed")] + [
        # read-through (keysteer_fetch, get_or_fill)
        (n, ctypes.c_uint64) for n in (
            "fetches", "fills", "fill_errors", "lease_wins", "lease_waits",
            "shared_fills", "stale_serves", "fetch_timeouts", "refreshes")] + [
        # stale-while-revalidate (keysteer_delete_stale)
        (n, ctypes.c_uint64) for n in (
            "stale_marks", "stale_misses", "hand_backs")] + [
        # one view per process; rate limits
        (n, ctypes.c_uint64) for n in (
            "view_handles", "view_skipped", "limit_allowed", "limit_refused",
            "limit_rules", "limit_keys", "limit_no_room", "limit_reg_puts",
            "limit_reg_dels", "limit_reg_errors")]


class _LimitStat(ctypes.Structure):
    _fields_ = [("rate", ctypes.c_uint32), ("burst", ctypes.c_uint32),
                ("allowed", ctypes.c_uint64), ("refused", ctypes.c_uint64),
                ("prefix_rule", ctypes.c_int), ("share", ctypes.c_uint32)]


class _Item(ctypes.Structure):
    # struct keysteer_item (libkeysteer.h)
    _fields_ = [("key", ctypes.c_char_p), ("klen", ctypes.c_size_t),
                ("value", ctypes.c_char_p), ("len", ctypes.c_size_t),
                ("flags", ctypes.c_uint32), ("exptime", ctypes.c_uint32),
                ("result", ctypes.c_int)]


class _FetchOpts(ctypes.Structure):
    _fields_ = [("exptime", ctypes.c_uint32), ("flags", ctypes.c_uint32),
                ("lease_s", ctypes.c_uint32), ("wait_ms", ctypes.c_uint32),
                ("allow_stale", ctypes.c_int), ("refresh_s", ctypes.c_uint32)]


# int fill(void *arg, const void *key, size_t klen, void **value, size_t *len)
_FILL = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p,
                         ctypes.c_size_t, ctypes.POINTER(ctypes.c_void_p),
                         ctypes.POINTER(ctypes.c_size_t))


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
        l.keysteer_delete_stale.argtypes = [vp, ctypes.c_char_p, sz, u32]
        l.keysteer_free.argtypes = [vp]
        l.keysteer_stats.argtypes = [vp, ctypes.POINTER(_Stats), sz]
        l.keysteer_limit_stat.argtypes = [vp, ctypes.c_char_p, sz,
                                          ctypes.POINTER(_LimitStat), sz]
        l.keysteer_strerror.argtypes = [ctypes.c_int]
        l.keysteer_strerror.restype = ctypes.c_char_p
        u64 = ctypes.c_uint64
        for f in (l.keysteer_incr, l.keysteer_decr):
            f.argtypes = [vp, ctypes.c_char_p, sz, u64, ctypes.POINTER(u64)]
        l.keysteer_counter_get.argtypes = [vp, ctypes.c_char_p, sz,
                                           ctypes.POINTER(ctypes.c_int64)]
        l.keysteer_counter_fold.argtypes = [vp, ctypes.c_char_p, sz, u32]
        l.keysteer_set_many.argtypes = [vp, ctypes.POINTER(_Item), sz]
        l.keysteer_fetch.argtypes = [vp, ctypes.c_char_p, sz, _FILL, vp,
                                     ctypes.POINTER(_FetchOpts),
                                     ctypes.POINTER(vp), ctypes.POINTER(sz),
                                     ctypes.POINTER(u32)]
        # the fill's buffer is freed by the library with free()
        libc = ctypes.CDLL(None)
        libc.malloc.argtypes = [sz]
        libc.malloc.restype = vp
        l.ks_malloc = libc.malloc
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
            raise (RateLimited if -rc == ELIMIT else KeysteerError)(
                -rc, self._msg())
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

    def set_many(self, values, expire=0, flags=0):
        """Writes a dict (or (key, value) pairs) in one batch
        (keysteer_set_many). Like pymemcache's, returns the keys not
        written: those over their rate limit (each item decided alone,
        the rest written); any other failure raises KeysteerError."""
        pairs = list(values.items() if hasattr(values, "items") else values)
        arr = (_Item * max(len(pairs), 1))()
        keep = []
        for i, (k, v) in enumerate(pairs):
            kb = _key(k)
            vb = v.encode() if isinstance(v, str) else bytes(v)
            keep += [kb, vb]
            arr[i] = _Item(kb, len(kb), vb, len(vb), flags, expire, 0)
        rc = self._l.keysteer_set_many(self._h, arr, len(pairs))
        if rc < 0 and -rc != ELIMIT:
            self._check(rc)
        return [k for i, (k, _) in enumerate(pairs)
                if arr[i].result == -ELIMIT]

    def get_or_fill(self, key, fill, expire=0, flags=0, lease=0,
                    wait_ms=0, allow_stale=False, refresh=0):
        """The value of key, read through (libkeysteer.h keysteer_fetch):
        on a miss exactly one caller across the fleet runs fill() (a
        callable returning bytes) and stores its value for expire
        seconds; the others wait at most wait_ms (default lease + 1 s)
        for it. An exception raised by fill reaches this caller and
        releases the lease, so the next caller fills. lease: seconds a
        hung or dead filler holds the key (default 3). allow_stale: a
        value marked stale may come back at once; then the result is a
        StaleValue (bytes with .stale = True), never plain bytes.
        refresh: seconds; a value with less left is refilled by one
        caller before it expires (reads then go to the key's owner)."""
        k = _key(key)
        raised = []

        def cb(_arg, _key, _klen, value, length):
            try:
                v = fill()
                v = v.encode() if isinstance(v, str) else bytes(v)
                buf = self._l.ks_malloc(max(len(v), 1))
                if not buf:
                    return -_errno.ENOMEM
                ctypes.memmove(buf, v, len(v))
                value[0] = buf
                length[0] = len(v)
                return 0
            except BaseException as e:  # handed to this caller below
                raised.append(e)
                return -_errno.ECANCELED

        o = _FetchOpts(expire, flags, lease, wait_ms, 1 if allow_stale else 0,
                       refresh)
        v, n, f = ctypes.c_void_p(), ctypes.c_size_t(), ctypes.c_uint32()
        rc = self._l.keysteer_fetch(self._h, k, len(k), _FILL(cb), None,
                                    ctypes.byref(o), ctypes.byref(v),
                                    ctypes.byref(n), ctypes.byref(f))
        if raised:
            raise raised[0]
        self._check(rc)
        try:
            out = ctypes.string_at(v, n.value)
        finally:
            self._l.keysteer_free(v)
        return StaleValue(out) if rc == 2 else out

    def delete(self, key, max_stale=0):
        """Deletes key. With max_stale (seconds), for a write to the
        database behind the cache: the old value stays, marked stale, for
        at most max_stale s, served only by get_or_fill(allow_stale=True)
        as a StaleValue while one caller refills it; get() misses it
        (libkeysteer.h keysteer_delete_stale)."""
        k = _key(key)
        if max_stale:
            self._check(self._l.keysteer_delete_stale(self._h, k, len(k),
                                                      int(max_stale)))
        else:
            self._check(self._l.keysteer_delete(self._h, k, len(k)))
        return True

    def _count(self, fn, key, value):
        k, v = _key(key), ctypes.c_uint64()
        if not 0 <= int(value) < 1 << 64:
            raise KeysteerError(_errno.EINVAL, "a delta is 0..2^64-1, got %r" % value)
        rc = self._check(fn(self._h, k, len(k), int(value), ctypes.byref(v)))
        return v.value if rc == 0 else None

    def incr(self, key, value=1):
        """Adds value to a counter (created at value when missing): its
        new value, or None when the key is a split counter (the delta
        went to one of its parts: read the total with counter())."""
        return self._count(self._l.keysteer_incr, key, value)

    def decr(self, key, value=1):
        """Subtracts value (a plain counter clamps at 0, memcached's way;
        a split counter does not): as incr."""
        return self._count(self._l.keysteer_decr, key, value)

    def counter(self, key, default=0):
        """A counter's value, split or not (the base plus every sub-key);
        default when no part of it exists."""
        k, v = _key(key), ctypes.c_int64()
        rc = self._check(self._l.keysteer_counter_get(self._h, k, len(k), ctypes.byref(v)))
        return v.value if rc else default

    def fold(self, key, all=False):
        """Folds a split counter's unused sub-keys (all=True: every one)
        into its base now."""
        k = _key(key)
        self._check(self._l.keysteer_counter_fold(self._h, k, len(k), 1 if all else 0))
        return True

    def stats(self):
        st = _Stats()
        self._check(self._l.keysteer_stats(self._h, ctypes.byref(st), ctypes.sizeof(st)))
        return {n: getattr(st, n) for n, _ in _Stats._fields_}

    def limit_stat(self, key):
        """The key's rate-limit bucket in this handle's view (shared by
        the process's handles on it): a dict of rate, burst, allowed,
        refused, prefix_rule, share (the views the rate is split over);
        None when no bucket holds the key."""
        st, k = _LimitStat(), _key(key)
        if not self._check(self._l.keysteer_limit_stat(
                self._h, k, len(k), ctypes.byref(st), ctypes.sizeof(st))):
            return None
        return {n: getattr(st, n) for n, _ in _LimitStat._fields_}

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
