#!/usr/bin/env bash
# plant_bugs.sh - does the differential fuzzer find real datapath bugs?
# Builds copies of the BPF object, each with one small bug planted (in a
# temporary folder: bpf/ itself is never touched), links dfuzz against each
# and runs it for a few seconds. Prints one line per mutant: found (with
# the finding's name and the executions it took) or MISSED.
#
#   tests/fuzz/plant_bugs.sh [SECONDS]     (default 15 per mutant; root)
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
SECS=${1:-15}
OUT=${OUT:-build}
ARCH=$(uname -m | sed 's/x86_64/x86/;s/aarch64/arm64/')
tmp=$(mktemp -d /tmp/ks_plant.XXXXXX)
trap 'rm -rf "$tmp"' EXIT

# name|file|sed expression (one edit each)
mutants=(
	"keys-per-req-off-by-one|ks_parse_mc.bpf.h|s/s->nkeys >= KS_MAX_KEYS_PER_REQ/s->nkeys > KS_MAX_KEYS_PER_REQ/"
	"digits-off-by-one|ks_parse_mc.bpf.h|s/i <= KS_MAX_DIGITS; i++/i < KS_MAX_DIGITS; i++/"
	"data-end-not-checked|ks_parse_mc.bpf.h|s/if (tail + 2 <= s->end \&\&/if (0 \&\& tail + 2 <= s->end \&\&/"
	"scan-reads-stale-bytes|ks_parse_mc.bpf.h|0,/return p < stop ? (int)p : -1;/s//return (int)p;/"
	"stale-key-bytes|ks_sample.bpf.h|s/if (i >= words \&\& i >= s->key_words)/if (i >= words)/"
	"cut-get-keys-not-counted|ks_parse_mc.bpf.h|s/if (s->state == KS_ST_KEYS \&\& s->nkeys)/if (0)/"
	"lf-only-line-end-refused|ks_parse_mc.bpf.h|s/if (c == '\\\\r' || c == '\\\\n') {/if (c == '\\\\r') {/"
)

for m in "${mutants[@]}"; do
	IFS='|' read -r name file expr <<<"$m"
	d=$tmp/$name
	mkdir -p "$d/build"
	cp -r bpf "$d/bpf"
	sed -i "$expr" "$d/bpf/$file"
	if cmp -s "bpf/$file" "$d/bpf/$file"; then
		echo "# $name: the edit did not apply (bpf/$file changed?)"
		continue
	fi
	if ! clang -g -O2 -target bpf -D__TARGET_ARCH_"$ARCH" -Wall -Wno-unused-function \
		-I"$d/build" -Ivmlinux/"$ARCH" -I"$d/bpf" -c "$d/bpf/keysteer.bpf.c" \
		-o "$d/build/keysteer.bpf.o" 2>"$d/cc.log" ||
		! bpftool gen skeleton "$d/build/keysteer.bpf.o" >"$d/build/keysteer.skel.h"; then
		echo "# $name: does not build: $(head -c 200 "$d/cc.log")"
		continue
	fi
	gcc -O2 -g -D_GNU_SOURCE -I"$d/build" -Ibpf -Iuser -Itests/lib -Itests/fuzz \
		tests/fuzz/dfuzz.c tests/fuzz/dfuzz_dp.c tests/fuzz/dfuzz_gen.c \
		tests/fuzz/ref_mc.c tests/lib/pkt.c user/names.c \
		-o "$d/dfuzz" -lbpf -lelf -lz || continue
	res=$("$d/dfuzz" --seconds "$SECS" --findings "$d/findings" --name "$name" 2>&1)
	if grep -q "^FAIL $name: cannot load" <<<"$res"; then
		echo "# $name: rejected by the verifier"
	elif grep -q "^FAIL" <<<"$res"; then
		# "#   SIG  N inputs, first at execution E: PATH", earliest first
		echo "found   $name: $(grep 'first at execution' <<<"$res" |
			grep -v ' note:' | sed 's/:$//;s/: .*//' |
			awk '{print $NF, $2}' | sort -n | awk '
			NR == 1 { first = $2 " at execution " $1 }
			END { printf "%s (%d kinds of mismatch)", first, NR }')"
	else
		echo "MISSED  $name"
	fi
done
