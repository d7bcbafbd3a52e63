"""ring_lookup.py - where keys live under a ring, as `agent ring lookup`
prints it (key TAB index TAB host:port a line: libmemcached's ketama, the
ring the datapath and libkeysteer use), for the Python clients placed by
it (tests/e2e/ks_ring_purge.py, tests/bench/scale_out.py)."""


def owners(path):
    """{key: "host:port"} from an `agent ring lookup` output file."""
    owner = {}
    with open(path) as f:
        for line in f:
            key, _idx, hp = line.rstrip("\n").split("\t")
            owner[key] = hp
    return owner
