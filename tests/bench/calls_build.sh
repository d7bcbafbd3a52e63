#!/usr/bin/env bash
# calls_build.sh - BPF-to-BPF calls and bpf_loop callbacks per packet of
# each `make bench` scenario (issue 27): a build of this tree (its working
# files, copied to DIR/src) whose every function that stays a function
# after clang counts its entries (tests/bench/calls_instrument.py), then
# its `bench --calls`. The tree itself is never changed.
#
#   tests/bench/calls_build.sh DIR [bench options, e.g. --only get16]
#
# Prints, per scenario, the calls per packet in all and by function. The
# counting build's times mean nothing (every call also counts); time with
# `make bench` on the ordinary build.
set -eu
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
[ $# -ge 1 ] || { sed -n '2,/^set -eu/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 2; }
DIR=$1
shift
rm -rf "$DIR/src"
mkdir -p "$DIR/src"
(cd "$ROOT" && cp -a Makefile bpf user tests vmlinux "$DIR/src/")
/usr/bin/python3 "$ROOT/tests/bench/calls_instrument.py" "$DIR/src/bpf" "$DIR/calls.names"
make -s -C "$DIR/src" OUT=build build/tests/bench >/dev/null
"$DIR/src/build/tests/bench" --calls "$DIR/calls.names" --packets 2000 --runs 1 "$@"
