#!/usr/bin/env bash
# slog_control.sh - the control of the sample log's program tests
# (tests/prog/t_slog.c): builds copies of the tree, each with the sample
# log's fallback broken one way (in a temporary folder: bpf/ itself is
# never touched), runs `prog_test -g slog -g dedicated` against each and
# prints one line per mutant: "caught NAME (N tests failed)" when the
# tests see the violation, "MISSED NAME" when they pass regardless. Exit
# status 0 only when every mutant is caught. Root (loads BPF); a few
# minutes a mutant on a loaded machine (each copy rebuilds what the BPF
# object reaches).
#
#   tests/prog/slog_control.sh [NAME]   (NAME: that mutant alone)
#
# Mutants:
#   full-drops-sample     a full log neither logs nor sketches the key
#                         (a sample lost)
#   logged-and-sketched   a logged key also goes to the sketch (counted
#                         twice)
#   no-fallback           the log never seen full: records overwrite
#                         ones the agent has not read (tail ignored)
#   record-key-cut        the record keeps 32 of its 48 key bytes
#   express-uncounted     the express path's sampled lone get logged but
#                         not counted in KS_PKT_SLOG
#   express-key-unshifted the express path's record keeps the bytes
#                         before a key's last partial word
#   express-seq-lost      the express path's record without the epoch
#   express-ring-ignored  the express path logs a key while a ring is
#                         loaded without placing it (its shard never
#                         counts it)
#   express-client-lost   the express path places a misdirected key with
#                         no client port (ks_misdirect not the packet's)
#   express-key-stale     the express path places a key without its
#                         words in the scratch (another key's shard)
#   express-trace-ignored the express path logs a traced key (no event)
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
ONLY=${1:-}
. tests/lib/mutants.sh
# name|file|sed expression (one edit each)
mutants=(
	"full-drops-sample|ks_sample.bpf.h|/r = ks_slog_slot(\&pos, \&head, true);/,/return 0;/ s/return 0;/return 1;/"
	"logged-and-sketched|ks_sample.bpf.h|s/ks_slog_put(s, hash, len, cls)))/ks_slog_put(s, hash, len, cls) \&\& 0))/"
	"no-fallback|ks_sample.bpf.h|s/if (\*head - tail >= KS_SLOG_RECS) {/if (*head - tail >= KS_SLOG_RECS \&\& 0) {/"
	"record-key-cut|ks_sample.bpf.h|s/for (i = 0; i < KS_SLOG_KEY \/ 8; i++)/for (i = 0; i < 4; i++)/"
	"express-uncounted|ks_fast_sample.bpf.h|s/pc->n\[KS_PKT_SLOG\]++;//"
	"express-key-unshifted|ks_fast_sample.bpf.h|s/^\t\t\t\tw = \*(__u64 \*)q >> ((8 - rem) \* 8);/\t\t\t\tw = *(__u64 *)q;/"
	"express-seq-lost|ks_fast_sample.bpf.h|s/r->seq = (__u16)cfg->seq;/r->seq = 0;/"
	"express-ring-ignored|ks_fast_sample.bpf.h|s/ringed = rh \&\& rh->meta.nshards;/ringed = rh \&\& rh->meta.nshards \&\& 0;/"
	"express-client-lost|ks_fast_sample.bpf.h|s/s->sport = bpf_ntohs(\*l4);/s->sport = 0;/"
	"express-key-stale|ks_fast_sample.bpf.h|s/^\t\t\ts->key\[i\] = r->key\[i\];/\t\t\ts->key[i] = 0;/"
	"express-trace-ignored|ks_fast_sample.bpf.h|s/(cfg->flags \& KS_CFG_SLOG) \&\& !cfg->trace \&\&/(cfg->flags \& KS_CFG_SLOG) \&\&/"
)

# the slog group, and the dedicated group (its test of the express path
# under shard rules)
mutant_run "$ONLY" -g slog -g dedicated
