// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * t_client_l1.c - libkeysteer's in-process L1 (user/client/l1.c): a hit
 * only at the version it was read under and within its TTL (the cap, or
 * the item's own if sooner), dropped by a write or a flush, and the
 * bounds in keys and bytes kept by evicting the least recently used.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "client/l1.h"
#include "client/view.h"
#include "ktest.h"
#include "unit.h"

static int put(struct ksc_l1 *l, const char *key, __s64 stamp, const char *val,
	       long ttl_s, __u64 now)
{
	return ksc_l1_put(l, key, strlen(key), ksc_key_hash(key, strlen(key)),
			  stamp, val, strlen(val), 7, ttl_s, now);
}

static const struct ksc_l1_entry *get(struct ksc_l1 *l, const char *key,
				      __s64 stamp, __u64 now)
{
	return ksc_l1_get(l, key, strlen(key), ksc_key_hash(key, strlen(key)),
			  stamp, now);
}

static void test_l1_versions(void)
{
	const struct ksc_l1_entry *e;
	struct ksc_l1 l;

	kt_begin("client_l1_hit_only_at_its_version");
	CHECK(ksc_l1_init(&l, 4, 4096, 1000) == 0, "init");
	CHECK(put(&l, "flash:1", 3, "v1", -1, 0) == 0, "not kept");
	e = get(&l, "flash:1", 3, 10);
	CHECK(e && e->len == 2 && !memcmp(e->value, "v1", 3) && e->flags == 7,
	      "no hit at its version");
	CHECK(get(&l, "flash:2", 3, 10) == NULL, "another key hit");
	/* the view moved on: dirty (0) or armed again (5) */
	CHECK(get(&l, "flash:1", 5, 20) == NULL && l.n == 0 && l.c.drops == 1,
	      "a new version hit (n %u drops %llu)", l.n,
	      (unsigned long long)l.c.drops);
	CHECK(get(&l, "flash:1", 3, 30) == NULL,
	      "dropped entry back at the old version");
	put(&l, "flash:1", 5, "v2", -1, 40);
	CHECK(get(&l, "flash:1", 0, 50) == NULL && l.c.drops == 2,
	      "a key no longer armed hit");
	put(&l, "flash:1", 5, "v2", -1, 60);
	CHECK(get(&l, "flash:1", KSC_L1_ANY, 70) != NULL,
	      "KSC_L1_ANY (the control) did not hit");
	CHECK(put(&l, "flash:9", 0, "v", -1, 0) == 1 && l.n == 1,
	      "kept with no version");
	CHECK(l.c.hits == 2 && l.c.misses == 4, "hits %llu misses %llu",
	      (unsigned long long)l.c.hits, (unsigned long long)l.c.misses);
	ksc_l1_free(&l);
	CHECK(ksc_l1_init(&l, 0, 4096, 1000) == -EINVAL &&
		      ksc_l1_init(&l, 4, 4096, 0) == -EINVAL,
	      "a zero bound taken");
	kt_end();
}

static void test_l1_ttl_writes(void)
{
	struct ksc_l1 l;

	kt_begin("client_l1_ttl_cap_and_item_ttl");
	ksc_l1_init(&l, 4, 4096, 1000);
	put(&l, "a", 1, "x", -1, 100);
	CHECK(get(&l, "a", 1, 1099) != NULL, "gone before the cap");
	CHECK(get(&l, "a", 1, 1100) == NULL && l.c.expired == 1,
	      "served at the cap");
	put(&l, "b", 1, "x", 0, 100); /* the copy expires within 1 s */
	CHECK(l.n == 0, "an item about to expire kept");
	ksc_l1_free(&l);
	ksc_l1_init(&l, 4, 4096, 5000);
	put(&l, "c", 1, "x", 2, 100); /* the item's 2 s before the 5 s cap */
	CHECK(get(&l, "c", 1, 2099) && !get(&l, "c", 1, 2100),
	      "the item's own TTL not kept");
	kt_end();

	kt_begin("client_l1_own_writes_and_flush");
	put(&l, "d", 1, "x", -1, 0);
	put(&l, "e", 1, "y", -1, 0);
	CHECK(ksc_l1_drop(&l, "d", 1, ksc_key_hash("d", 1)) == 1 &&
		      !get(&l, "d", 1, 1) && l.c.write_drops == 1,
	      "a write did not drop its key");
	CHECK(ksc_l1_drop(&l, "d", 1, ksc_key_hash("d", 1)) == 0,
	      "dropped twice");
	ksc_l1_flush(&l);
	CHECK(l.n == 0 && l.bytes == 0 && !get(&l, "e", 1, 1) &&
		      l.c.flushes == 1,
	      "flush left %u entries", l.n);
	ksc_l1_flush(&l);
	CHECK(l.c.flushes == 1, "an empty flush counted");
	ksc_l1_free(&l);
	kt_end();
}

static void test_l1_bounds(void)
{
	char key[16], val[200];
	struct ksc_l1 l;
	unsigned i, left = 0;

	kt_begin("client_l1_bounds_evict_least_recent");
	ksc_l1_init(&l, 8, 1 << 20, 60000);
	for (i = 0; i < 8; i++) {
		snprintf(key, sizeof(key), "k%u", i);
		put(&l, key, 1, "v", -1, 0);
	}
	get(&l, "k0", 1, 1); /* k0 recent again: k1 is the oldest */
	put(&l, "k8", 1, "v", -1, 2);
	CHECK(l.n == 8 && get(&l, "k0", 1, 3) && !get(&l, "k1", 1, 3) &&
		      l.c.evictions == 1,
	      "the key bound: n %u, evictions %llu", l.n,
	      (unsigned long long)l.c.evictions);
	ksc_l1_free(&l);
	/* 1000 bytes: four values of 200 and their keys fit, not five */
	ksc_l1_init(&l, 100, 1000, 60000);
	memset(val, 'x', sizeof(val) - 1);
	val[sizeof(val) - 1] = '\0';
	for (i = 0; i < 50; i++) {
		snprintf(key, sizeof(key), "b%u", i);
		put(&l, key, 1, val, -1, i);
		CHECK(l.bytes <= 1000, "%zu bytes over 1000", l.bytes);
	}
	for (i = 0; i < 50; i++) {
		snprintf(key, sizeof(key), "b%u", i);
		left += get(&l, key, 1, 100) != NULL;
	}
	CHECK(left == 4 && l.n == 4, "the byte bound: %u entries left", left);
	CHECK(put(&l, "big", 1, "", -1, 0) == 0, "an empty value not kept");
	{
		char huge[1100];

		memset(huge, 'y', sizeof(huge) - 1);
		huge[sizeof(huge) - 1] = '\0';
		CHECK(put(&l, "huge", 1, huge, -1, 0) == 1 && l.bytes <= 1000,
		      "a value over the bound kept");
	}
	ksc_l1_free(&l);
	kt_end();
}

void test_client_l1(void)
{
	test_l1_versions();
	test_l1_ttl_writes();
	test_l1_bounds();
}
