# shellcheck shell=bash
# fleet_lib.sh - set-up and checks the fleet's e2e tests share
# (test_fleet_ring.sh, test_fleet_faults.sh, test_fleet_roles.sh,
# test_fleet_lease.sh, test_fleet_member_stop.sh, test_fleet_hosts.sh,
# test_ring_change_ops.sh, test_ring_purge.sh). Source it after lib.sh; functions and one constant
# (FLEET_ETCD_ELECTION_MS).
#
#   fleet_etcd_up NS NAME URL SETUP
#       etcd in NS serving URL (peer port 2380, data and log under
#       $E2E_TMP/NAME.*), its pid in ETCD_PID; when it does not start, FAIL
#       SETUP with its log's tail and exit 1.
#   fleet_etcd_cleanup
#       the EXIT trap of a test with one agent (e2e_agent_start) and one
#       etcd (ETCD_PID): the agent, then etcd, each by its pid, then
#       e2e_cleanup.
#   fleet_ring_race DIR KEY GET SET_A SET_B
#       one round of two concurrent `agent ring set --if-revision R`. GET
#       is a command printing "REVISION DIGEST" of the ring in etcd now;
#       SET_A and SET_B are commands that run `agent ring set` (each its own
#       shard list) with "--if-revision R" appended to their arguments. Both
#       start from the same R: exactly one must exit 0 ("revision N digest
#       D ..."), the other 1 with one line naming the winner's revision and
#       digest, and etcd must then hold the winner's. 0 and the loser's line
#       in RACE_NOTE, or 1 and why in RACE_WHY. Output in DIR/race_[ab].*.
#   fleet_watch_start NS ENDPOINTS CLUSTER SHARD FILE
#       a test's own cluster set up and watched before its agent starts:
#       `agent ring set` of the one SHARD in CLUSTER through ENDPOINTS, an
#       `etcdctl watch --prefix /keysteer/CLUSTER/ -w json` from NS into
#       FILE (stderr FILE.err), its pid in WATCH_PID, and the watch
#       established: a put of /keysteer/CLUSTER/probe (a key nobody
#       reads) delivered to FILE (20 s). 0, or 1 and why in WHY.
#   fleet_watch_events FILE KEY KEY2 REV
#       "PUTS DELETES SEEN" of KEY in FILE (an `etcdctl watch -w json`),
#       SEEN 1 when the put of KEY2 at revision REV (a sentinel put after
#       what is counted) has been delivered: etcd delivers a watch's
#       events in revision order, so all before it are in the file.
#   fleet_put_revision CTL KEY VALUE
#       KEY put through CTL (the script's etcdctl wrapper); the put's
#       revision on stdout (the sentinel for fleet_lease_tally).
#   fleet_lease_tally FILE KEY KEY2 REV
#       waits (60 s) until the sentinel put of KEY2 at revision REV is in
#       the watch FILE, then sets PUTS and DELS (of KEY, fleet_watch_events)
#       and, from the agent's last -v line, LEASES, GAP_MS and TTL_S
#       (fleet_pub_field); 1 with WHY set when the sentinel never came.
#   fleet_stop_run NAME
#       the agent stopped and checked clean (e2e_agent_stop_clean NAME),
#       then the watch WATCH_PID; the agent's log kept as NAME.agent.out
#       (the next run's agent writes agent.out again).
#   fleet_pub_field FIELD [FILE]
#       the number before FIELD ("leases", "keepalives") in the agent's
#       last etcd -v line in FILE ($E2E_TMP/agent.out); "gap" and "ttl":
#       its longest time between renewals (ms) and the lease's TTL (s).
#   fleet_ns_put NS ENDPOINTS KEY VALUE
#       KEY put with etcdctl from NS; the put's revision on stdout, asked
#       again until etcd answers (60 s; 1 and nothing printed after that).
#   fleet_stamp_start NS ENDPOINTS PREFIX FILE
#       a watch of PREFIX (ending in /) with each line stamped as it
#       arrives (ks_watch_log.py stamp, at nice KS_NICE) into FILE (stderr
#       FILE.err), its pid in STAMP_PID, from the revision of a put of
#       PREFIXprobe (a key nobody reads), so every change after that put
#       is in FILE whenever the watch connects; and established: a second
#       put of the probe delivered (60 s), so that the stamps of what
#       follows are arrival times, not a replay's. 0, or 1 and why in WHY.
#       Read it with `ks_watch_log.py first-delete|first-put FILE SUFFIX
#       AFTER_MS`.
#   fleet_run_delay PID [SINCE]
#       what the threads of process PID waited for a CPU (schedstat's
#       run_delay, /proc/PID/task/TID/schedstat): with no SINCE, one
#       "TID NS" a line, a snapshot to keep; with SINCE (such a
#       snapshot), the most any thread waited since then, in ms, in all
#       (the sum of its waits, not the longest). A total under a lease's
#       TTL rules out a machine that starved a thread that long: a lease
#       lost then is the agent's; a total past it leaves either.
#   fleet_term_start CTL...
#   fleet_term_moved CTL...
#       etcd's raft term, the highest that the members answering
#       `CTL... endpoint status -w json` report (CTL: a command running
#       etcdctl with its endpoints). fleet_term_start sets TERM_NOW (and
#       TERM_MOVED_MS empty); fleet_term_moved returns 0 when the term rose
#       past TERM_NOW since the last call, TERM_NOW then the new term and
#       TERM_MOVED_MS the time (ms) it was first seen, else 1. Why a test
#       of a lease's expiry needs it: etcd 3.4's lessor re-arms every
#       lease when a member becomes leader, for its whole TTL plus the
#       election timeout (etcdserver's `lessor.Promote(electionTimeout)`
#       once the new leader applied its term's first entry; the TTL left
#       is not carried over, 3.4 checkpoints none by default). So after a
#       leader change a lease with no renewal lives until the change and
#       the TTL and FLEET_ETCD_ELECTION_MS, whatever the agent did; a
#       term rises at every election (an election that fails too: taken
#       as a change, the lenient side). The time it was seen is at or
#       after the change: a bound from it never fails a lease that etcd
#       expired as it promises.

# etcd's --election-timeout, its default: no etcd of the suite sets it
# (etcd_cluster.sh, ks_start_etcd). See fleet_term_moved.
# shellcheck disable=SC2034 # for the scripts that source this
FLEET_ETCD_ELECTION_MS=1000

fleet_etcd_up() {
	local ns=$1 name=$2 url=$3 setup=$4
	if ! e2e_etcd_start "$ns" "$name" "$url" 2380 >"$E2E_TMP/etcd_start.out"; then
		fail "$setup" "$(cat "$E2E_TMP/etcd_start.out")"
		exit 1
	fi
	ETCD_PID=$E2E_ETCD_PID
}

fleet_etcd_cleanup() {
	local rc=$?
	[ -n "$E2E_AGENT_PID" ] && e2e_agent_stop INT
	[ -n "${ETCD_PID:-}" ] && ks_stop_pid "$ETCD_PID" TERM 5
	(exit "$rc")
	e2e_cleanup
}

# shellcheck disable=SC2034 # RACE_NOTE and RACE_WHY are for the caller
fleet_ring_race() {
	local dir=$1 key=$2 get=$3 set_a=$4 set_b=$5 cur pa pb ra rb win lose
	local wrev wdig now
	RACE_NOTE='' RACE_WHY=''
	cur=$($get | awk '{print $1}')
	$set_a --if-revision "$cur" >"$dir/race_a.out" 2>"$dir/race_a.err" &
	pa=$!
	$set_b --if-revision "$cur" >"$dir/race_b.out" 2>"$dir/race_b.err" &
	pb=$!
	wait $pa
	ra=$?
	wait $pb
	rb=$?
	if [ $ra -eq 0 ] && [ $rb -eq 1 ]; then
		win=a lose=b
	elif [ $ra -eq 1 ] && [ $rb -eq 0 ]; then
		win=b lose=a
	else
		RACE_WHY="exits $ra and $rb from revision $cur, want 0 and 1: $(cat "$dir"/race_[ab].out "$dir"/race_[ab].err)"
		return 1
	fi
	# the last line; the ones before say what the change moves
	wrev=$(awk '/^revision / {print $2}' "$dir/race_$win.out")
	wdig=$(awk '/^revision / {print $4}' "$dir/race_$win.out")
	if ! grep -qE "^agent: ring not written: $key (is no longer at|changed since) revision $cur: revision $wrev by [^ ]+ pid [0-9]+ at [0-9T:Z-]+ won \([0-9]+ shards [a-z0-9-]+, digest $wdig\)" \
		"$dir/race_$lose.err"; then
		RACE_WHY="the refusal does not say who won ($wrev, $wdig): $(cat "$dir/race_$lose.err")"
		return 1
	fi
	now=$($get)
	if [ "$now" != "$wrev $wdig" ]; then
		RACE_WHY="etcd holds $now, the winner wrote $wrev $wdig"
		return 1
	fi
	RACE_NOTE=$(cat "$dir/race_$lose.err")
	return 0
}

fleet_watch_events() {
	"$PY" - "$1" "$2" "$3" "$4" "$E2E_DIR" <<'PYEOF'
import base64, sys
sys.path.insert(0, sys.argv[5])
from ks_watch_log import events
puts = dels = seen = 0
for ev in events(sys.argv[1]):
    key = base64.b64decode(ev["kv"]["key"]).decode()
    if key == sys.argv[2]:
        if ev.get("type") in (1, "DELETE"):
            dels += 1
        else:
            puts += 1
    elif key == sys.argv[3] and int(ev["kv"]["mod_revision"]) == int(sys.argv[4]):
        seen = 1
print(puts, dels, seen)
PYEOF
}

fleet_pub_field() {
	local line
	line=$(grep '^keysteer: #[0-9]* etcd: .* lease ' "${2:-$E2E_TMP/agent.out}" | tail -n 1)
	case $1 in
	gap) sed -n 's/.*longest between renewals \([0-9]*\) ms of [0-9]* s.*/\1/p' <<<"$line" ;;
	ttl) sed -n 's/.*longest between renewals [0-9]* ms of \([0-9]*\) s.*/\1/p' <<<"$line" ;;
	*) sed -n "s/.* \([0-9]*\) $1, .*/\1/p" <<<"$line" ;;
	esac
}

# shellcheck disable=SC2034 # PUTS DELS LEASES GAP_MS TTL_S WHY are for the caller
fleet_lease_tally() {
	local i seen=0
	for ((i = 0; i < 300; i++)); do
		read -r PUTS DELS seen <<<"$(fleet_watch_events "$@")"
		[ "$seen" = 1 ] && break
		sleep 0.2
	done
	if [ "$seen" != 1 ]; then
		WHY="the sentinel at revision ${4:-?} never reached the watch (60 s)"
		return 1
	fi
	LEASES=$(fleet_pub_field leases)
	GAP_MS=$(fleet_pub_field gap)
	TTL_S=$(fleet_pub_field ttl)
}

fleet_stop_run() {
	e2e_agent_stop_clean "$1"
	cp "$E2E_TMP/agent.out" "$E2E_TMP/$1.agent.out" 2>/dev/null
	ks_stop_pid "$WATCH_PID" TERM 3
	WATCH_PID=
}

fleet_etcd_term() {
	"$@" endpoint status -w json 2>/dev/null | "$PY" -c 'import json,sys
try:
    st = json.load(sys.stdin)
except ValueError:
    sys.exit(0)
terms = [e["Status"]["raftTerm"] for e in st if "Status" in e]
if terms:
    print(max(terms))' 2>/dev/null
}

# shellcheck disable=SC2034 # TERM_NOW TERM_MOVED_MS are for the caller
fleet_term_start() {
	TERM_NOW=$(fleet_etcd_term "$@")
	TERM_MOVED_MS=
}

# shellcheck disable=SC2034 # TERM_MOVED_MS is for the caller
fleet_term_moved() {
	local t
	t=$(fleet_etcd_term "$@")
	[ -n "$t" ] && [ "$t" -gt "${TERM_NOW:-0}" ] || return 1
	TERM_NOW=$t
	TERM_MOVED_MS=$(($(date +%s%N) / 1000000))
	return 0
}

# shellcheck disable=SC2034 # WATCH_PID WHY are for the caller
fleet_watch_start() {
	local ns=$1 eps=$2 cluster=$3 shard=$4 file=$5 out rev i probe
	probe=/keysteer/$cluster/probe
	out=$(e2e_agent ring set --etcd "$eps" --cluster "$cluster" --shards "$shard" 2>&1)
	if ! grep -q '^revision [0-9]* digest ' <<<"$out"; then
		WHY="ring set: $out"
		return 1
	fi
	ks_in_ns_bg "$ns" etcdctl --endpoints "$eps" watch --prefix "/keysteer/$cluster/" \
		-w json </dev/null >"$file" 2>"$file.err"
	WATCH_PID=$KS_BG_PID
	for ((i = 0; i < 100; i++)); do
		rev=$(ks_in_ns "$ns" etcdctl --endpoints "$eps" --command-timeout 5s \
			put "$probe" up -w json 2>/dev/null |
			"$PY" -c 'import json,sys; print(json.load(sys.stdin)["header"]["revision"])' 2>/dev/null)
		[ -n "$rev" ] &&
			[ "$(fleet_watch_events "$file" "/keysteer/$cluster/members/$shard" "$probe" "$rev" |
				cut -d' ' -f3)" = 1 ] &&
			return 0
		sleep 0.2
	done
	WHY="the watch of /keysteer/$cluster/ never delivered a put: $(head -c 300 "$file.err")"
	return 1
}

# fleet_put_revision CTL KEY VALUE: KEY put through CTL (the script's own
# etcdctl wrapper), the revision etcd gave the put on stdout
fleet_put_revision() {
	"$1" put "$2" "$3" -w json 2>/dev/null |
		"$PY" -c 'import json,sys; print(json.load(sys.stdin)["header"]["revision"])' 2>/dev/null
}

fleet_ns_put() {
	local t0=$SECONDS rev
	while [ $((SECONDS - t0)) -lt 60 ]; do
		rev=$(ks_in_ns "$1" etcdctl --endpoints "$2" --command-timeout 5s \
			put "$3" "$4" -w json 2>/dev/null |
			"$PY" -c 'import json,sys; print(json.load(sys.stdin)["header"]["revision"])' 2>/dev/null)
		[ -n "$rev" ] && echo "$rev" && return 0
		sleep 0.5 # a pace: the next try
	done
	return 1
}

# shellcheck disable=SC2034 # STAMP_PID WHY are for the caller
fleet_stamp_start() {
	local ns=$1 eps=$2 pfx=$3 file=$4 rev t0
	STAMP_PID=
	if ! rev=$(fleet_ns_put "$ns" "$eps" "${pfx}probe" before); then
		WHY="etcd at $eps took no put in 60 s"
		return 1
	fi
	ks_in_ns_bg "$ns" nice -n "$KS_NICE" "$PY" "$E2E_DIR/ks_watch_log.py" stamp \
		"$eps" "$pfx" "$rev" >"$file" 2>"$file.err"
	STAMP_PID=$KS_BG_PID
	if ! rev=$(fleet_ns_put "$ns" "$eps" "${pfx}probe" up); then
		WHY="etcd at $eps took no put in 60 s"
		return 1
	fi
	t0=$SECONDS
	while [ $((SECONDS - t0)) -lt 60 ]; do
		[ "$(fleet_watch_events "$file" - "${pfx}probe" "$rev" | cut -d' ' -f3)" = 1 ] &&
			return 0
		sleep 0.1
	done
	WHY="the stamped watch of $pfx never delivered the probe's put at revision $rev (60 s): $(head -c 300 "$file.err")"
	return 1
}

fleet_run_delay() {
	local pid=$1 since=${2:-} f
	if [ -z "$since" ]; then
		for f in /proc/"$pid"/task/*/schedstat; do
			[ -r "$f" ] || continue
			f=${f%/schedstat}
			echo "${f##*/} $(cut -d' ' -f2 "$f/schedstat" 2>/dev/null)"
		done
		return
	fi
	fleet_run_delay "$pid" | awk -v since="$since" '
		BEGIN { n = split(since, l, "\n"); for (i = 1; i <= n; i++) { split(l[i], f, " "); was[f[1]] = f[2] } }
		NF == 2 { d = $2 - was[$1]; if (d > max) max = d }
		END { printf "%d\n", max / 1000000 }'
}
