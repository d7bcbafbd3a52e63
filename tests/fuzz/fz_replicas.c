// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * fz_replicas.c - libFuzzer harness of the --replicas parser
 * (user/core/replicas.c ks_replicas_parse) and of the rendezvous choice made
 * from what it accepts: entries well formed and distinct, their canonical
 * text parsing back to the same set, and every pick distinct, best first,
 * and independent of the list's order.
 */
#include <arpa/inet.h>
#include "core/replicas.h"
#include "fz_common.h"

static int same_replica(const struct ks_replica_addr *a,
			const struct ks_replica_addr *b)
{
	return a->family == b->family &&
	       !memcmp(&a->addr, &b->addr, sizeof(a->addr)) &&
	       a->port == b->port;
}

static void check_set(const struct ks_replica_set *rs)
{
	static const union ks_inaddr zero;
	unsigned i, j;

	FZ_CHECK(rs->n >= 1 && rs->n <= KS_MAX_REPLICAS, "%u replicas", rs->n);
	for (i = 0; i < rs->n; i++) {
		FZ_CHECK(memcmp(&rs->r[i].addr, &zero, sizeof(zero)) &&
				 rs->r[i].port != 0,
			 "entry %u: address or port 0", i);
		FZ_CHECK(rs->r[i].family == rs->r[0].family,
			 "entry %u: families mixed", i);
		FZ_CHECK(memchr(rs->r[i].text, 0, sizeof(rs->r[i].text)),
			 "entry %u: text not terminated", i);
		for (j = 0; j < i; j++)
			FZ_CHECK(!same_replica(&rs->r[i], &rs->r[j]),
				 "entries %u and %u are the same", j, i);
	}
}

/* The canonical texts joined, reversed: the same replicas again. */
static void check_reparse(const struct ks_replica_set *rs, __u64 key)
{
	char list[KS_MAX_REPLICAS * KS_REPLICA_TEXT + 1], err[256];
	struct ks_replica_set back;
	__u8 a[KS_MAX_REPLICAS], b[KS_MAX_REPLICAS];
	unsigned i, k, na, nb;
	size_t off = 0;

	for (i = rs->n; i-- > 0;)
		off += (size_t)snprintf(list + off, sizeof(list) - off, "%s%s",
					rs->r[i].text, i ? "," : "");
	FZ_CHECK(!ks_replicas_parse(list, &back, err, sizeof(err)),
		 "canonical list '%s' refused: %s", list, err);
	FZ_CHECK(back.n == rs->n, "%u entries back, %u given", back.n, rs->n);
	for (k = 0; k <= rs->n + 1; k++) {
		na = ks_rendezvous_pick(key, rs, k, a);
		nb = ks_rendezvous_pick(key, &back, k, b);
		FZ_CHECK(na == (k < rs->n ? k : rs->n) && nb == na,
			 "pick %u gave %u and %u", k, na, nb);
		for (i = 0; i < na; i++) {
			FZ_CHECK(a[i] < rs->n, "index %u", a[i]);
			/* the same replicas whatever the order of the list */
			FZ_CHECK(
				same_replica(&rs->r[a[i]], &back.r[b[i]]),
				"pick %u: choice %u differs with the list reversed",
				k, i);
			FZ_CHECK(i == 0 || ks_rendezvous_score(
						   key, &rs->r[a[i - 1]]) >
						   ks_rendezvous_score(
							   key, &rs->r[a[i]]),
				 "pick %u: choice %u not in score order", k, i);
		}
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fz_bytes b = { data, size };
	struct ks_replica_set rs;
	size_t errlen;
	char *err = fz_errbuf(&b, &errlen), *s;
	__u64 key = (__u64)fz_take_u32(&b) << 32 | fz_take_u32(&b);

	s = fz_take_rest(&b);
	memset(&rs, 0xa5, sizeof(rs));
	if (ks_replicas_parse(s, &rs, err, errlen)) {
		fz_check_err(err, errlen);
	} else {
		check_set(&rs);
		check_reparse(&rs, key);
	}
	free(s);
	free(err);
	return 0;
}
