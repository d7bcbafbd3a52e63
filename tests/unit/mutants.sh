#!/usr/bin/env bash
# mutants.sh - the control of the unit tests of the agent's deciding
# logic (user/core/): builds copies of the tree, each with one decision
# broken one way (in a temporary folder: user/ itself is never touched),
# runs the unit tier (`unit_test`, every group: a fault in one module
# reaches the tests of the modules built on it) against each and prints
# one line per mutant: "caught NAME (N tests failed: ...)" when the tests
# see the fault, "MISSED NAME" when they pass regardless. Exit status 0
# only when every mutant is caught. No root; about 15 s a mutant (one
# file compiled, unit_test linked and run), some 15 minutes in all.
#
#   tests/unit/mutants.sh [NAME]   (NAME: that mutant alone)
#   make unit-mutants              (the same, pinned to CPU 0 at nice 19)
#
# Each mutant is a wrong decision an operator would pay for; the list,
# what each breaks, and the mutants left out as equivalent (such as
# limits.c's "explicit rules win" return in want(), which no automatic
# want reaches: ks_limits_plan() retires a rule's row whose rule is gone
# before it places the automatic caps, and skips a cap a rule names) are
# in docs/testing.md, "The unit tests' planted faults".
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
ONLY=${1:-}
MUTANT_SRC=user/core
MUTANT_BIN=tests/unit_test
MUTANT_TIMEOUT=${MUTANT_TIMEOUT:-300}
MUTANT_BASELINE=1
. tests/lib/mutants.sh

# name|file|sed expression (one edit each, of one line)
mutants=(
	# hotkeys.c: what is hot, how many copies, what a rule pins
	"hot-enter-smoothed-only|hotkeys.c|s/double rate_r = fmax(raw_r, e->reads_ps);/double rate_r = e->reads_ps;/"
	"hot-read-no-hysteresis|hotkeys.c|s/e->read_hot = e->reads_ps >= p->leave_ratio \* rt;/e->read_hot = e->reads_ps >= rt;/"
	"hot-write-no-hysteresis|hotkeys.c|s/e->write_hot = keep_w >= p->leave_ratio \* wt;/e->write_hot = keep_w >= wt;/"
	"hot-write-newcomer-dropped|hotkeys.c|s/^\t\t    w < ks_hot_write_threshold(p))/\t\t    1)/"
	"copies-min-one|hotkeys.c|s/^\t\tc = 2;/\t\tc = 1;/"
	"copies-uncapped|hotkeys.c|s/return c > cap_copies(p) ? cap_copies(p) : c;/return c;/"
	"subkeys-min-one|hotkeys.c|s/return c < 2 ? 2 : c;/return c;/"
	"rule-copies-uncapped|hotkeys.c|s/e->copies = rule->count < cap ? rule->count : cap;/e->copies = rule->count;/"
	"split-sized-on-base|hotkeys.c|s/return fmax(whole, e->split_ps);/return fmax(raw_w, e->split_ps);/"
	"evict-pinned|hotkeys.c|s/if (e->state == KS_HOT_PINNED)$/if (0)/"
	"pin-matches-prefix|hotkeys.c|s/if (r->len == len \&\& !memcmp(r->key, key, len))/if (r->len <= len \&\& !memcmp(r->key, key, r->len))/"

	# steer_fsm.c: when a copy may be read (no stale read after an
	# acknowledged write), when it is given up
	"arm-after-write-in-copy|steer_fsm.c|s/if (observe(f, r->slot, now) != r->seq) {/if (observe(f, r->slot, now) != r->seq \&\& 0) {/"
	"copy-before-settle|steer_fsm.c|s/if (now < ready) {/if (now < ready \&\& 0) {/"
	"settle-from-last-write-only|steer_fsm.c|s/(last > sl->obs_ns ? last : sl->obs_ns) +/last +/"
	"cas-one-write-short|steer_fsm.c|s/sl->cas_changes >= r->seq - sl->cas_seq/sl->cas_changes + 1 >= r->seq - sl->cas_seq/"
	"cas-quiet-no-wait|steer_fsm.c|s/sl->job_ns >= sl->job_last_ns + KS_STEER_APPLY_QUIET_NS))/sl->job_ns >= sl->job_last_ns))/"
	"raced-not-disarmed|steer_fsm.c|/a write invalidated a copy under the fill/,/f->raced++;/ s/act_slot(f, KS_ACT_DISARM, r->slot);//"
	"failed-not-disarmed|steer_fsm.c|/some replica may not hold the value/,/act_slot/ s/act_slot(f, KS_ACT_DISARM, r->slot);//"
	"poll-ignores-write-seq|steer_fsm.c|s/if (LOAD(f->dp\[i\].write_seq) != sl->armed_seq) {/if (LOAD(f->dp[i].write_seq) != sl->armed_seq \&\& 0) {/"
	"arm-never-expires|steer_fsm.c|s/a->expires_ns = now + f->ttl_ns;/a->expires_ns = ~0ULL;/"
	"stale-result-by-seq|steer_fsm.c|s/^\t    sl->job_seq != r->seq) {/\t    0) {/"
	"stale-result-by-gen|steer_fsm.c|s/if (sl->gen != r->gen ||/if (0 ||/"
	"grace-too-early|steer_fsm.c|s/if (sl->grace_ticket > ticket)/if (sl->grace_ticket > ticket + 1)/"
	"recopy-not-disarmed|steer_fsm.c|/new copies: no packet may pick/,/leave_copies/ s/act_slot(f, KS_ACT_DISARM, i);//"
	"adopt-armed-after-write|steer_fsm.c|s/LOAD(hs->armed_seq) == LOAD(hs->write_seq)) {/1) {/"

	# estimate.c: the sketch to rates and their bounds
	"merge-no-saturation|estimate.c|s/dst\[i\] = sum > ~0U ? ~0U : (__u32)sum;/dst[i] = (__u32)sum;/"
	"merge-unweighted|estimate.c|s/__u64 w = n \&\& n\[cpu\] ? n\[cpu\] : 1;/__u64 w = 1;/"
	"stream-len-min|estimate.c|s/return implied > most ? implied : most;/return implied < most ? implied : most;/"
	"err-ignores-rate-max|estimate.c|s/bn = iv->rate_max ? iv->rate_max : iv->sample_n;/bn = iv->sample_n;/"
	"err-cms-unscaled|estimate.c|s/out->err_ps = (cm \* n + samp) \/ secs;/out->err_ps = (cm + samp) \/ secs;/"
	"dedup-keeps-lighter|estimate.c|s/^\treturn c\[i\].count > c\[j\].count;$/\treturn c[i].count < c[j].count;/"
	"twins-kept|estimate.c|s/twin\[i\] = !twin\[i\];/twin[i] = 0;/"
	"top-heap-inverted|estimate.c|s/} else if (top_ahead(\&r, \&o\[0\])) {/} else if (top_ahead(\&o[0], \&r)) {/"

	# sample_rate.c: the per-CPU rate controller
	"rate-no-down-headroom|sample_rate.c|s/(double)target \* KS_RATE_DOWN_PCT \/ 100.0))/(double)target))/"
	"rate-over-target-fits|sample_rate.c|s/\/ n <= limit;/\/ n < limit * 2;/"
	"rate-floor-unbounded|sample_rate.c|s/while (up < KS_RATE_MAX_N \&\&/while (up < 2 * KS_RATE_MAX_N \&\&/"
	"place-p-for-the-old-rate|sample_rate.c|s/\tif (was == next)/\tif (1)/"

	# limits.c and limit_auto.c: the runaway key cap
	"limit-evict-busiest-auto|limits.c|s/(!best || e->residual_ps < best->residual_ps))/(!best || e->residual_ps > best->residual_ps))/"
	"limit-evicted-entry-kept|limits.c|s/old = best->state == KS_LIMIT_DIRTY \&\& best->fresh ? 0 : best->hash;/old = 0;/"
	"limit-retired-entry-kept|limits.c|s/e->old_hash = e->hash;/e->old_hash = 0;/"
	"limit-rate-change-ignored|limits.c|s/if (e->rate == w->rate)/if (1)/"
	"auto-caps-first-spike|limit_auto.c|s/k->over >= KS_LIMIT_AUTO_ENTER/k->over >= 1/"
	"auto-releases-at-once|limit_auto.c|s/k->under >= KS_LIMIT_AUTO_LEAVE/k->under >= 1/"
	"auto-no-leave-hysteresis|limit_auto.c|s/res < KS_LIMIT_AUTO_LEAVE_RATIO \* a->line/res < a->line/"
	"auto-over-rule|limit_auto.c|s/if (rules \&\& ks_limit_rule_match(rules, r->key, len)) {/if (0) {/"
	"auto-tcp-steered|limit_auto.c|s/udp = reads - d->tcp_ps;/udp = reads;/"
	"auto-grace-every-interval|limit_auto.c|s/(rem \& ~k->graced)) {/rem) {/"

	# purge.c: what goes at a ring change
	"purge-owned-inverted|purge.c|s/return ks_ring_lookup(r, key, len) == self;/return ks_ring_lookup(r, key, len) != self;/"
	"purge-gate-always|purge.c|s/g->allowed = forced ||/g->allowed = 1 ||/"
	"pace-no-remainder|purge.c|s/done % rate \* 1000000000ULL \/ rate;/0;/"
	"metadump-short-escape|purge.c|s/if (i + 2 >= n)/if (i + 2 > n)/"

	# balance.c: the busiest shard's threshold
	"balance-own-twice|balance.c|s/if (!own)$/if (1)/"
	"balance-over-mean|balance.c|s/if (own_ps > (1 + b->over) \* mean_ps) {/if (own_ps > mean_ps) {/"
	"balance-step-unbounded|balance.c|s/if (next < cur \* KS_BALANCE_STEP)/if (0)/"
	"balance-copies-on-lowered|balance.c|s/out->per_copy_budget_ops = ks_hot_copy_budget(p);/;/"

	# ring.c, ring_points.c: where a key is placed
	"ring-digest-no-owner|ring.c|s/d = fnv_u32(d, h->points\[i\].shard);/;/"
	"ketama-ceil-points|ring.c|s/return (__u32)(floor(t) \* 4);/return (__u32)(ceil(t) * 4);/"
	"rendezvous-tie-lesser|ring.c|s/strcmp(nd->name, r->rdv\[best\].name) > 0)) {/strcmp(nd->name, r->rdv[best].name) < 0)) {/"
	"modula-slot-off-by-one|ring.c|s/ks_ring_add_point(b, cum - 1, order\[k\]);/ks_ring_add_point(b, cum, order[k]);/"
	"twemproxy-order-bytewise|ring.c|s/if (la != lb)/if (0)/"
	"points-shard-out-of-range|ring_points.c|s/if (pts\[i\].shard >= bm->nshards) {/if (pts[i].shard > bm->nshards) {/"

	# shard_rates.c: the per-shard report
	"shard-busiest-tie-higher|shard_rates.c|s/if (load > best) {/if (load >= best) {/"
	"shard-counter-reset|shard_rates.c|s/return cur >= prev ? cur - prev : 0;/return cur - prev;/"
	"shard-ratio-not-to-mean|shard_rates.c|s/(double)(dr + dw) \* n \*/(double)(dr + dw) */"
	# the +/- of a shard's load (issue 27): the placements' P left out
	# of the variance (as if every sampled key were placed), and the
	# score term for few placements dropped
	"shard-err-without-p|shard_rates.c|s/w = nc \* rate_of(p, c);/w = nc;/"
	"shard-err-no-room-unplaced|shard_rates.c|s/return z \* sqrt(var + half \* half) + z \* half;/return z * sqrt(var) + 0 * half;/"
)

mutant_run "$ONLY"
