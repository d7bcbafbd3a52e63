#!/usr/bin/env bash
# test_ring_cli.sh - `agent ring lookup` and `agent ring diff` as an operator
# runs them: the exact output lines, keys from arguments and from stdin, a
# shard file, the movement figures of 4 -> 5 shards, and refusals with
# "agent: <what>; <what to do>" and exit 2. No network, no BPF.
set -u
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
e2e_init ring_cli

S4=10.0.0.1:11211,10.0.0.2:11211,10.0.0.3:11211,10.0.0.4:11211
S5=$S4,10.0.0.5:11211

# lookup lines are exactly key<TAB>index<TAB>host:port, one per key, in
# order, and the index names the host:port given at that position
out=$("$AGENT" ring lookup --shards "$S4" user:1 cart:2 "ключ:3" 2>"$E2E_TMP/err")
rc=$?
good=$(printf '%s\n' "$out" | grep -cP '^[^\t]+\t[0-3]\t10\.0\.0\.[1-4]:11211$')
keys=$(printf '%s\n' "$out" | cut -f1 | tr '\n' ' ')
if [ "$rc" -ne 0 ] || [ -s "$E2E_TMP/err" ]; then
	fail ring_lookup_args "exit $rc: $(head -c 200 "$E2E_TMP/err")"
elif [ "$good" -ne 3 ] || [ "$(printf '%s\n' "$out" | wc -l)" -ne 3 ]; then
	fail ring_lookup_args "want 3 lines key<TAB>index<TAB>host:port, got: $out"
elif [ "$keys" != "user:1 cart:2 ключ:3 " ]; then
	fail ring_lookup_args "keys out of order: $keys"
elif ! printf '%s\n' "$out" |
	awk -F'\t' '$3 != "10.0.0." ($2 + 1) ":11211" { bad = 1 } END { exit bad }'; then
	fail ring_lookup_args "index and host:port disagree: $out"
else
	pass ring_lookup_args
fi

# stdin gives the same answers as arguments; CRLF and blank lines tolerated
printf 'user:1\r\n\ncart:2\nключ:3\n' >"$E2E_TMP/keys"
out2=$("$AGENT" ring lookup --shards "$S4" <"$E2E_TMP/keys" 2>"$E2E_TMP/err")
if [ "$out2" = "$out" ] && [ ! -s "$E2E_TMP/err" ]; then
	pass ring_lookup_stdin
else
	fail ring_lookup_stdin "stdin gave: $out2 (stderr: $(head -c 200 "$E2E_TMP/err"))"
fi

# a shard file with comments, weights and names gives the list's answers
cat >"$E2E_TMP/shards.txt" <<'EOF'
# four shards
10.0.0.1:11211
10.0.0.2:11211:1   b   # weight 1 is the default
- 10.0.0.3:11211 c

10.0.0.4:11211
EOF
out3=$("$AGENT" ring lookup --shards-file "$E2E_TMP/shards.txt" user:1 cart:2 "ключ:3" 2>&1)
if [ "$out3" = "$out" ]; then
	pass ring_lookup_file
else
	fail ring_lookup_file "file gave: $out3"
fi

# twemproxy names points by name: naming shards b and c (1 and 2) moves
# keys to or from them, and only them; both lookups must succeed, answer
# the same 200 keys in order and agree on every key the names cannot move
"$AGENT" ring lookup --shards-file "$E2E_TMP/shards.txt" --distribution twemproxy \
	$(seq -f 'k%g' 1 200) >"$E2E_TMP/tw_named" 2>"$E2E_TMP/tw_named.err"
rc_a=$?
"$AGENT" ring lookup --shards "$S4" --distribution twemproxy \
	$(seq -f 'k%g' 1 200) >"$E2E_TMP/tw_plain" 2>"$E2E_TMP/tw_plain.err"
rc_b=$?
moved=$(paste "$E2E_TMP/tw_named" "$E2E_TMP/tw_plain" | awk -F'\t' '
	NF != 6 || $1 != $4 || $1 != "k" NR { bad = 1 }
	$2 != $5 { n++; if ($2 != 1 && $2 != 2 && $5 != 1 && $5 != 2) bad = 1 }
	END { print (bad || NR != 200) ? "bad" : n + 0 }')
if [ "$rc_a" -ne 0 ] || [ "$rc_b" -ne 0 ] || [ -s "$E2E_TMP/tw_named.err" ] ||
	[ -s "$E2E_TMP/tw_plain.err" ]; then
	fail ring_lookup_twemproxy_names "exit $rc_a, $rc_b: $(head -c 200 "$E2E_TMP/tw_named.err") $(head -c 200 "$E2E_TMP/tw_plain.err")"
elif [ "$moved" = bad ]; then
	fail ring_lookup_twemproxy_names "the lookups disagree beyond the named shards: $(paste "$E2E_TMP/tw_named" "$E2E_TMP/tw_plain" | head -5)"
elif [ "$moved" -eq 0 ]; then
	fail ring_lookup_twemproxy_names "names did not change twemproxy's ring"
else
	pass ring_lookup_twemproxy_names
	note "naming shards b and c moved $moved of 200 keys, all to or from them"
fi

# diff 4 -> 5: a ring moves about 1/5 of the keys, all to the new shard;
# hash % N about 4/5
diff_moved() { # prints the moved percentage of `ring diff` for $1
	"$AGENT" ring diff --from "$S4" --to "$S5" --distribution "$1" |
		sed -n 's/^moved [0-9]* of 100000 keys (\([0-9.]*\)%)$/\1/p'
}
for d in ketama twemproxy twemproxy-md5 vnode; do
	m=$(diff_moved "$d")
	if [ -n "$m" ] && awk -v m="$m" 'BEGIN { exit !(m > 12 && m < 28) }'; then
		pass "ring_diff_moves_a_fifth_$d"
	else
		fail "ring_diff_moves_a_fifth_$d" "moved '$m'%, want about 20%"
	fi
done
m=$(diff_moved modula)
if [ -n "$m" ] && awk -v m="$m" 'BEGIN { exit !(m > 75 && m < 85) }'; then
	pass ring_diff_modula_moves_most
else
	fail ring_diff_modula_moves_most "moved '$m'%, want about 80%"
fi
# on a ring every moved key goes to the new shard
if "$AGENT" ring diff --from "$S4" --to "$S5" |
	awk '/^  [^ ]+ -> [^ ]+\t/ { if ($3 != "10.0.0.5:11211") bad = 1; n++ } END { exit bad || n != 4 }'; then
	pass ring_diff_moves_only_to_new_shard
else
	fail ring_diff_moves_only_to_new_shard "a key moved between old shards"
fi

# refusals: exit 2 and one line "agent: <what>; <what to do>"
refuse() { # NAME PATTERN ARGS...
	local name=$1 pattern=$2 rc
	shift 2
	"$AGENT" "$@" >/dev/null 2>"$E2E_TMP/err" </dev/null
	rc=$?
	if [ "$rc" -ne 2 ]; then
		fail "$name" "exit $rc, want 2"
	elif [ "$(wc -l <"$E2E_TMP/err")" -ne 1 ] || ! grep -q '^agent: .*; ' "$E2E_TMP/err"; then
		fail "$name" "want one line 'agent: <what>; <what to do>': $(head -c 200 "$E2E_TMP/err")"
	elif ! grep -qF -- "$pattern" "$E2E_TMP/err"; then
		fail "$name" "message does not say '$pattern': $(cat "$E2E_TMP/err")"
	else
		pass "$name"
	fi
}
printf '10.0.0.1:11211\n10.0.0.2:11211\n10.0.0.3:70000\n' >"$E2E_TMP/bad.txt"
refuse ring_refuse_bad_port_line "bad.txt:3: port 70000 out of range 1..65535" \
	ring lookup --shards-file "$E2E_TMP/bad.txt" k
refuse ring_refuse_no_shards "--shards" ring lookup k
refuse ring_refuse_unknown_dist "unknown distribution 'crc'" \
	ring lookup --shards "$S4" --distribution crc k
refuse ring_refuse_self_unknown "--self 10.9.9.9:11211 is not in" \
	ring lookup --shards "$S4" --self 10.9.9.9:11211 k
refuse ring_refuse_diff_keys "--keys" ring diff --from "$S4" --to "$S5" --keys 0
refuse ring_refuse_unknown_sub "unknown ring command 'frob'" ring frob

# --client NAME is the distribution its client really uses: the presets of
# one ring agree key for key, and with the --distribution they name
k200=$(seq -f 'k%g' 1 200)
# shellcheck disable=SC2086 # one argument per key
a=$("$AGENT" ring lookup --shards "$S4" --client dalli $k200 | md5sum)
# shellcheck disable=SC2086
b=$("$AGENT" ring lookup --shards "$S4" --distribution dalli $k200 | md5sum)
# shellcheck disable=SC2086
c=$("$AGENT" ring lookup --shards "$S4" --distribution ketama $k200 | md5sum)
if [ "$a" = "$b" ] && [ "$a" != "$c" ]; then
	pass ring_lookup_client_preset
else
	fail ring_lookup_client_preset "--client dalli: $a, dalli: $b, ketama: $c"
fi

# diff across distributions on one list: pylibmc's ketama and PHP's
# DISTRIBUTION_CONSISTENT are one ring (nothing moves); modula -> ketama
# on 4 shards reassigns about 3/4 of the keys, and every shard's out and
# in add up to the moved total
diff_field() { # ARGS...: the N of "moved N of" that ring diff prints
	"$AGENT" ring diff "$@" | sed -n 's/^moved \([0-9]*\) of [0-9]* keys.*/\1/p'
}
m=$(diff_field --shards "$S4" --from-client pylibmc-ketama --to-client php-memcached-consistent --keys 20000)
if [ "$m" = 0 ]; then
	pass ring_diff_same_ring_other_client
else
	fail ring_diff_same_ring_other_client "moved '$m' keys, want 0"
fi
out=$("$AGENT" ring diff --shards "$S4" --from-distribution modula --to-distribution ketama --keys 20000)
m=$(printf '%s\n' "$out" | sed -n 's/^moved \([0-9]*\) of 20000 keys.*/\1/p')
sums=$(printf '%s\n' "$out" | awk '/^per shard:/ { on = 1; next } /^$/ { on = 0 }
	on && $1 ~ /:/ { b += $2; a += $3; o += $4; i += $5 } END { print b, a, o, i }')
if [ -n "$m" ] && [ "$m" -gt 13000 ] && [ "$m" -lt 17000 ] &&
	[ "$sums" = "20000 20000 $m $m" ] &&
	grep -q '^distribution modula -> ketama, 20000 keys' <<<"$out"; then
	pass ring_diff_modula_to_ketama_per_shard
else
	fail ring_diff_modula_to_ketama_per_shard "moved '$m', per-shard sums '$sums': $(printf '%s\n' "$out" | head -3)"
fi

# --keys-file places the operator's keys: the file's keys and lookup's
# owners say the same moves
printf 'user:1\r\ncart:2\n\nключ:3\nk9\n' >"$E2E_TMP/dkeys"
want=0
for key in user:1 cart:2 ключ:3 k9; do
	x=$("$AGENT" ring lookup --shards "$S4" --distribution modula "$key" | cut -f3)
	y=$("$AGENT" ring lookup --shards "$S4" --distribution dalli "$key" | cut -f3)
	[ "$x" != "$y" ] && want=$((want + 1))
done
out=$("$AGENT" ring diff --shards "$S4" --from-distribution modula --to-client dalli --keys-file "$E2E_TMP/dkeys")
if grep -q "^moved $want of 4 keys" <<<"$out" &&
	grep -q "4 keys from $E2E_TMP/dkeys" <<<"$out"; then
	pass ring_diff_keys_file
else
	fail ring_diff_keys_file "want moved $want of 4: $(printf '%s\n' "$out" | head -3)"
fi

refuse ring_refuse_client_and_distribution "not both" \
	ring lookup --shards "$S4" --client dalli --distribution ketama k
refuse ring_refuse_unknown_client "unknown client 'memcache'" \
	ring lookup --shards "$S4" --client memcache k
refuse ring_refuse_diff_shards_and_from "not both" \
	ring diff --shards "$S4" --from "$S4" --to "$S5"
refuse ring_refuse_diff_keys_file_missing "cannot read --keys-file" \
	ring diff --shards "$S4" --to-client dalli --keys-file "$E2E_TMP/none"
refuse ring_refuse_ketama_plain_weights "has weight 3" \
	ring lookup --shards "10.0.0.1:11211:3,10.0.0.2:11211" --client pylibmc-ketama k

# key hashes and hash tags (issue 15): refusals, and a tag that sends the
# keys of one tag to one shard whatever surrounds it
refuse ring_refuse_unknown_key_hash "unknown key hash 'sha1'" \
	ring lookup --shards "$S4" --key-hash sha1 k
refuse ring_refuse_hash_tag_length "--hash-tag '{' is not two characters" \
	ring lookup --shards "$S4" --distribution twemproxy --hash-tag '{' k
refuse ring_refuse_twemproxy_random "random distribution" \
	ring lookup --shards "$S4" --distribution twemproxy-random k
refuse ring_refuse_pymemcache_key_hash "drop --key-hash" \
	ring lookup --shards "$S4" --distribution pymemcache --key-hash crc32 k
refuse run_refuse_twemproxy_random "random distribution" \
	run --iface ks-none0 --shards "$S4" --distribution twemproxy-random
# pymemcache runs in the datapath up to 32 shards (bpf/ks_ring.h
# KS_RDV_MAX_NODES), its bytes variant not at all: replay refuses them
# before loading anything (agent run's refusals are test_ring_shards.sh's,
# which has an interface to refuse on); ring lookup takes both
S33=$(seq -f '10.0.1.%g:11211' 1 33 | paste -sd,)
refuse replay_refuse_pymemcache_33_shards \
	"pymemcache runs in the datapath for at most 32 shards" \
	replay --shards "$S33" --distribution pymemcache /dev/null
refuse replay_refuse_pymemcache_bytes \
	"pymemcache-bytes is user space only" \
	replay --shards "$S4" --distribution pymemcache-bytes /dev/null
if [ "$("$AGENT" ring lookup --shards "$S33" --distribution pymemcache \
	$(seq -f 'k%g' 1 100) | wc -l)" -eq 100 ]; then
	pass ring_lookup_pymemcache_33_shards
else
	fail ring_lookup_pymemcache_33_shards "ring lookup of 33 pymemcache shards did not answer 100 keys"
fi
tagged=$("$AGENT" ring lookup --shards "$S4" --distribution twemproxy --key-hash murmur \
	--hash-tag '{}' 'a{user42}' 'user42' '{user42}:b' 'x{user42}y{z}' | cut -f2 | sort -u | wc -l)
untagged=$("$AGENT" ring lookup --shards "$S4" --distribution twemproxy --key-hash murmur \
	'a{user42}' 'user42' '{user42}:b' 'x{user42}y{z}' | cut -f2 | sort -u | wc -l)
if [ "$tagged" -eq 1 ] && [ "$untagged" -gt 1 ]; then
	pass ring_hash_tag_one_shard_per_tag
else
	fail ring_hash_tag_one_shard_per_tag "tagged keys on $tagged shards (want 1), untagged on $untagged (want > 1)"
fi
