// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* --replicas parsing and the rendezvous choice of a key's replicas. */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "ktest.h"
#include "core/replicas.h"
#include "unit.h"

#define NKEYS 100000

static void parse_good(void)
{
	struct ks_replica_set rs;
	char err[256] = "";
	char list[512];
	int i, n;

	kt_begin("replicas_parse_good");
	CHECK(!ks_replicas_parse("198.18.0.10:11211", &rs, err, sizeof(err)),
	      "one entry: %s", err);
	CHECK_EQ(rs.n, 1);
	CHECK_EQ(rs.r[0].addr.v4, inet_addr("198.18.0.10"));
	CHECK_EQ(rs.r[0].family, KS_AF_INET);
	CHECK_EQ(rs.r[0].port, 11211);
	CHECK(!strcmp(rs.r[0].text, "198.18.0.10:11211"), "text %s",
	      rs.r[0].text);
	CHECK(!ks_replicas_parse(
		      "198.18.0.10:1,198.18.0.10:65535,10.0.0.1:11211", &rs,
		      err, sizeof(err)),
	      "three entries: %s", err);
	CHECK_EQ(rs.n, 3);
	CHECK_EQ(rs.r[1].port, 65535);
	CHECK_EQ(rs.r[2].addr.v4, inet_addr("10.0.0.1"));
	/* Exactly the limit is fine, and the longest text fits. */
	for (i = 0, n = 0; i < KS_MAX_REPLICAS; i++)
		n += snprintf(list + n, sizeof(list) - (size_t)n,
			      "%s198.18.1.%d:65535", i ? "," : "", 200 + i);
	CHECK(!ks_replicas_parse(list, &rs, err, sizeof(err)), "16 entries: %s",
	      err);
	CHECK_EQ(rs.n, KS_MAX_REPLICAS);
	CHECK(!strcmp(rs.r[15].text, "198.18.1.215:65535"), "text %s",
	      rs.r[15].text);
	kt_end();
}

static void parse_good_v6(void)
{
	static const char longest[] =
		"[2001:ffff:ffff:ffff:ffff:ffff:ffff:fffe]:65535";
	struct ks_replica_set rs;
	struct in6_addr a;
	char err[256] = "";

	kt_begin("replicas_parse_ipv6");
	CHECK(!ks_replicas_parse("[2001:2::10]:11211,[2001:0002:0::11]:1", &rs,
				 err, sizeof(err)),
	      "two entries: %s", err);
	CHECK_EQ(rs.n, 2);
	CHECK_EQ(rs.r[0].family, KS_AF_INET6);
	inet_pton(AF_INET6, "2001:2::10", &a);
	CHECK(!memcmp(rs.r[0].addr.v6, &a, 16), "address");
	CHECK_EQ(rs.r[0].port, 11211);
	CHECK(!strcmp(rs.r[0].text, "[2001:2::10]:11211"), "text %s",
	      rs.r[0].text);
	/* the text is canonical whatever was typed */
	CHECK(!strcmp(rs.r[1].text, "[2001:2::11]:1"), "text %s", rs.r[1].text);
	CHECK(!ks_replicas_parse("[::1]:11211,[fd00::1]:11211", &rs, err,
				 sizeof(err)),
	      "loopback and unique-local: %s", err);
	CHECK(!ks_replicas_parse(longest, &rs, err, sizeof(err)), "longest: %s",
	      err);
	CHECK(!strcmp(rs.r[0].text, longest), "text %s", rs.r[0].text);
	kt_end();
}

/* Each bad list fails, leaves rs alone, and the message names the entry
 * and says what to give. */
static void parse_bad_one(const char *list, const char *names)
{
	struct ks_replica_set rs = { .n = 77 };
	char err[256] = "";

	CHECK(ks_replicas_parse(list, &rs, err, sizeof(err)) == -EINVAL,
	      "'%s' accepted", list);
	CHECK(rs.n == 77, "'%s' wrote the set", list);
	CHECK(strstr(err, names) && strstr(err, "; give"),
	      "'%s': message '%s' lacks '%s'", list, err, names);
}

static void parse_bad(void)
{
	char list[512];
	int i, n;

	kt_begin("replicas_parse_rejects");
	parse_bad_one("", "needs a value");
	parse_bad_one("198.18.0.10:11211,", "entry 2 is empty");
	parse_bad_one(",198.18.0.10:11211", "entry 1 is empty");
	parse_bad_one("198.18.0.10:1,,198.18.0.11:1", "entry 2 is empty");
	parse_bad_one("198.18.0.10", "entry 1 '198.18.0.10' has no port");
	parse_bad_one("1.2.3.4:1,198.18.0.300:11211",
		      "entry 2 '198.18.0.300:11211'");
	parse_bad_one("cache1:11211", "'cache1' is not a dotted IPv4");
	parse_bad_one("1.2.3:11211", "'1.2.3' is not a dotted IPv4");
	parse_bad_one(" 1.2.3.4:11211", "entry 1");
	parse_bad_one("0.0.0.0:11211",
		      "'0.0.0.0' is not a dotted IPv4 unicast");
	parse_bad_one("224.0.0.1:11211", "'224.0.0.1' is not");
	parse_bad_one("255.255.255.255:11211", "'255.255.255.255' is not");
	/* IPv6 */
	parse_bad_one("2001:2::10:11211", "an IPv6 address goes in brackets");
	parse_bad_one("[2001:2::10]", "entry 1 '[2001:2::10]' has no port");
	parse_bad_one("[2001:2::10:11211", "has no closing ']'");
	parse_bad_one("[2001:2::10]x:1", "has no closing ']'");
	parse_bad_one("[2001:2::zz]:1", "'2001:2::zz' is not an IPv6 address");
	parse_bad_one("[::]:1", "'::' is the unspecified address");
	parse_bad_one("[ff02::1]:1", "'ff02::1' is multicast");
	parse_bad_one("[fe80::1]:1", "'fe80::1' is link-local");
	parse_bad_one("[fe80::1%eth0]:1", "is not an IPv6 address");
	parse_bad_one("[::ffff:198.18.0.1]:1", "IPv4-mapped");
	parse_bad_one("[2001:2::10]:0", "port '0'");
	parse_bad_one("[2001:2::10]:1,[2001:2:0::10]:1",
		      "entry 2 '[2001:2:0::10]:1' repeats entry 1");
	/* one family */
	parse_bad_one("198.18.0.10:1,[2001:2::10]:1",
		      "entry 2 '[2001:2::10]:1' is IPv6 but entry 1 is IPv4");
	parse_bad_one("[2001:2::10]:1,198.18.0.10:1",
		      "entry 2 '198.18.0.10:1' is IPv4 but entry 1 is IPv6");
	parse_bad_one("1.2.3.4:", "port '' is not a number from 1 to 65535");
	parse_bad_one("1.2.3.4:0", "entry 1 '1.2.3.4:0': port '0'");
	parse_bad_one("1.2.3.4:65536", "port '65536'");
	parse_bad_one("1.2.3.4:99999999999", "port '99999999999'");
	parse_bad_one("1.2.3.4:-1", "port '-1'");
	parse_bad_one("1.2.3.4:+80", "port '+80'");
	parse_bad_one("1.2.3.4:80x", "port '80x'");
	parse_bad_one("1.2.3.4:80,1.2.3.5:80,1.2.3.4:80",
		      "entry 3 '1.2.3.4:80' repeats entry 1");
	for (i = 0, n = 0; i <= KS_MAX_REPLICAS; i++)
		n += snprintf(list + n, sizeof(list) - (size_t)n,
			      "%s10.0.0.%d:1", i ? "," : "", i + 1);
	parse_bad_one(list, "entry 17 '10.0.0.17:1' is one too many");
	memset(list, '1', 300);
	list[300] = '\0';
	parse_bad_one(
		list,
		"entry 1 '1111111111111111111111111111111111111111...' is too long");
	kt_end();
}

static void make_set(struct ks_replica_set *rs, const char *list)
{
	char err[256];

	if (ks_replicas_parse(list, rs, err, sizeof(err)))
		CHECK(0, "'%s': %s", list, err);
}

static __u64 key_hash(unsigned i)
{
	char key[32];

	snprintf(key, sizeof(key), "user:%u", i);
	return ut_hash(key);
}

static void pick_basics(void)
{
	struct ks_replica_set a, b;
	__u8 o1[KS_MAX_REPLICAS], o2[KS_MAX_REPLICAS];
	unsigned i, j, got, bad_order = 0, bad_distinct = 0, bad_det = 0;

	kt_begin("rendezvous_pick_basics");
	make_set(&a, "198.18.0.10:11211,198.18.0.11:11211,198.18.0.12:11211,"
		     "198.18.0.13:11211,198.18.0.10:11212");
	/* The same replicas in another order. */
	make_set(&b, "198.18.0.13:11211,198.18.0.10:11212,198.18.0.11:11211,"
		     "198.18.0.12:11211,198.18.0.10:11211");
	CHECK_EQ(ks_rendezvous_pick(key_hash(1), &a, 9, o1), 5);
	CHECK_EQ(ks_rendezvous_pick(key_hash(1), &a, 0, o1), 0);
	for (i = 0; i < 2000; i++) {
		__u64 h = key_hash(i);
		unsigned seen = 0;

		got = ks_rendezvous_pick(h, &a, 5, o1);
		for (j = 0; j < got; j++)
			seen |= 1u << o1[j];
		bad_distinct += seen != 0x1f;
		for (j = 1; j < got; j++)
			bad_order += ks_rendezvous_score(h, &a.r[o1[j - 1]]) <
				     ks_rendezvous_score(h, &a.r[o1[j]]);
		ks_rendezvous_pick(h, &a, 3, o2);
		bad_det += memcmp(o1, o2, 3) != 0; /* top 3 = prefix of top 5 */
		ks_rendezvous_pick(h, &b, 5, o2);
		for (j = 0; j < 5; j++)
			bad_det += memcmp(&a.r[o1[j]].addr, &b.r[o2[j]].addr,
					  sizeof(a.r[0].addr)) ||
				   a.r[o1[j]].port != b.r[o2[j]].port;
	}
	CHECK(!bad_distinct, "%u keys got repeated indices", bad_distinct);
	CHECK(!bad_order, "%u picks out of score order", bad_order);
	CHECK(!bad_det, "%u picks depend on k or on the list's order", bad_det);
	/* Pinned (worked out apart from this code): a change to the score
	 * moves every hot key's replicas, so it must be deliberate, and it
	 * must come out the same on any machine. */
	CHECK_EQ(ks_rendezvous_score(0x0123456789abcdefULL, &a.r[0]),
		 0x1428ffeef1522551ULL);
	kt_end();
}

/* Four replicas, then a fifth added: the spread and what moves. */
static void pick_spread(const char *name, const char *four_list,
			const char *fifth)
{
	struct ks_replica_set four, five;
	unsigned first[5] = {}, moved = 0, wrong = 0, i;
	char five_list[256];
	__u8 o4[1], o5[1];

	kt_begin(name);
	snprintf(five_list, sizeof(five_list), "%s,%s", four_list, fifth);
	make_set(&four, four_list);
	make_set(&five, five_list);
	for (i = 0; i < NKEYS; i++) {
		__u64 h = key_hash(i);

		ks_rendezvous_pick(h, &four, 1, o4);
		ks_rendezvous_pick(h, &five, 1, o5);
		first[o4[0]]++;
		if (o4[0] == o5[0])
			continue;
		moved++;
		wrong += o5[0] != 4; /* only the newcomer may take a key */
	}
	for (i = 0; i < 4; i++)
		CHECK(first[i] >= NKEYS / 4 * 97 / 100 &&
			      first[i] <= NKEYS / 4 * 103 / 100,
		      "replica %u is first for %u of %u keys", i, first[i],
		      NKEYS);
	CHECK(!wrong, "%u keys moved between old replicas", wrong);
	CHECK(moved >= NKEYS * 19 / 100 && moved <= NKEYS * 21 / 100,
	      "%u of %u keys moved to the 5th replica, want about 1/5", moved,
	      NKEYS);
	printf("# %s: first choice %u/%u/%u/%u of %u; 5th replica took %u\n",
	       name, first[0], first[1], first[2], first[3], NKEYS, moved);
	kt_end();
}

void test_replicas(void)
{
	parse_good();
	parse_good_v6();
	parse_bad();
	pick_basics();
	pick_spread("rendezvous_spread_and_growth",
		    "198.18.0.10:11211,198.18.0.11:11211,198.18.0.12:11211,"
		    "198.18.0.13:11211",
		    "198.18.0.14:11211");
	/* neighbouring IPv6 addresses, as a replica range has them */
	pick_spread("rendezvous_spread_and_growth_ipv6",
		    "[2001:2::10]:11211,[2001:2::11]:11211,[2001:2::12]:11211,"
		    "[2001:2::13]:11211",
		    "[2001:2::14]:11211");
}
