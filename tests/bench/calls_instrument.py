#!/usr/bin/python3
"""calls_instrument.py - for tests/bench/calls_build.sh: puts a call counter
at the top of every function of the datapath that stays a function of its
own after clang (each __noinline function, each bpf_loop callback), in a
scratch copy of bpf/, and writes the counters' names one a line in slot
order (what `bench --calls NAMES` reads).

    calls_instrument.py BPF_DIR NAMES_FILE

The counter is a declaration (a statement before the function's own
declarations would not build), so the rest of each body is untouched.
"""
import re
import sys

FUNC = re.compile(r"^(__noinline\s+[\w\s\*]+?\b(ks_\w+)\(|static long (ks_\w+)\(__u32 \w+, void \*ctx\)$)")
COUNTER = """
/* calls_build.sh: entries of each function, per CPU */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 128);
	__type(key, __u32);
	__type(value, __u64);
} ks_callcount SEC(".maps");

static __always_inline __u32 ks_callcount_hit(__u32 slot)
{
	__u64 *c = bpf_map_lookup_elem(&ks_callcount, &slot);

	if (c)
		(*c)++;
	return 0;
}
"""


def main():
    bpf, names_out = sys.argv[1], sys.argv[2]
    names = []
    files = ["ks_flow.bpf.h", "ks_fastpath.bpf.h", "ks_hot.bpf.h",
             "ks_parse_mc.bpf.h", "ks_reply.bpf.h", "ks_ring.bpf.h",
             "ks_ring_cache.bpf.h", "ks_sample.bpf.h", "ks_steer.bpf.h",
             "ks_stream.bpf.h", "ks_limit.bpf.h"]
    for fn in files:
        path = f"{bpf}/{fn}"
        try:
            lines = open(path).read().split("\n")
        except FileNotFoundError:
            continue
        out, want = [], None
        for ln in lines:
            out.append(ln)
            m = FUNC.match(ln)
            if m:
                want = m.group(2) or m.group(3)
                continue
            if want and ln == "{":
                out.append(f"\t__u32 __attribute__((unused)) ks_cc_ = "
                           f"ks_callcount_hit({len(names)});")
                names.append(want)
                want = None
        open(path, "w").write("\n".join(out))
    main_c = f"{bpf}/keysteer.bpf.c"
    src = open(main_c).read()
    anchor = "#include <bpf/bpf_endian.h>\n"
    if anchor not in src or len(names) > 128:
        sys.exit("calls_instrument.py: keysteer.bpf.c has no bpf_endian.h "
                 "include, or more than 128 functions")
    open(main_c, "w").write(src.replace(anchor, anchor + COUNTER, 1))
    open(names_out, "w").write("".join(n + "\n" for n in names))
    print(f"calls_instrument.py: {len(names)} functions counted")


main()
