// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * example.c - libkeysteer's example (docs/client.md), built as
 * build/ks_client_example:
 *
 *   ks_client_example SPEC set KEY VALUE   write through the library
 *   ks_client_example SPEC get KEY         read (exit 1 on a miss)
 *   ks_client_example SPEC delete KEY
 *   ks_client_example SPEC stats           the handle's counters
 *   ks_client_example SPEC loop KEY N      N gets, then the counters
 *
 * SPEC as keysteer_open takes it, e.g. "etcd=http://198.18.2.1:2379
 * cluster=web" or "servers=198.18.2.11:11211,198.18.2.12:11211".
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <libkeysteer.h>

static void print_stats(struct keysteer *ks)
{
	struct keysteer_stats st;

	keysteer_stats(ks, &st, sizeof(st));
	printf("gets %" PRIu64 " hits %" PRIu64 " copy_reads %" PRIu64
	       " owner_reads %" PRIu64 " fallbacks %" PRIu64 " sets %" PRIu64
	       " deletes %" PRIu64 " invalidations %" PRIu64
	       " inval_errors %" PRIu64 " errors %" PRIu64
	       " view_revision %" PRId64 " ring_revision %" PRId64
	       " hot_keys %" PRIu64 " armed_keys %" PRIu64 " view_up %d"
	       " owners_only %d\n",
	       st.gets, st.hits, st.copy_reads, st.owner_reads, st.fallbacks,
	       st.sets, st.deletes, st.invalidations, st.inval_errors,
	       st.errors, st.view_revision, st.ring_revision, st.hot_keys,
	       st.armed_keys, st.view_up, st.owners_only);
}

int main(int argc, char **argv)
{
	struct keysteer *ks;
	const char *op = argc > 2 ? argv[2] : "";
	const char *key = argc > 3 ? argv[3] : "";
	uint32_t flags;
	size_t len;
	void *val;
	int rc = 0, ret;
	long i, n;

	if (argc < 3) {
		fprintf(stderr,
			"usage: %s SPEC set KEY VALUE | get KEY | "
			"delete KEY | stats | loop KEY N\n",
			argv[0]);
		return 2;
	}
	if (keysteer_open(&ks, argv[1]) < 0) {
		fprintf(stderr, "keysteer_open: %s\n", keysteer_errmsg(ks));
		keysteer_close(ks);
		return 2;
	}
	if (!strcmp(op, "set") && argc == 5) {
		ret = keysteer_set(ks, key, strlen(key), argv[4],
				   strlen(argv[4]), 0, 0);
	} else if (!strcmp(op, "get") && argc == 4) {
		ret = keysteer_get(ks, key, strlen(key), &val, &len, &flags);
		if (ret == 1)
			printf("%.*s\n", (int)len, (char *)val);
		else if (!ret)
			rc = 1;
		keysteer_free(val);
	} else if (!strcmp(op, "delete") && argc == 4) {
		ret = keysteer_delete(ks, key, strlen(key));
	} else if (!strcmp(op, "stats")) {
		ret = 0;
		print_stats(ks);
	} else if (!strcmp(op, "loop") && argc == 5) {
		n = atol(argv[4]);
		for (i = 0, ret = 0; i < n && ret >= 0; i++) {
			ret = keysteer_get(ks, key, strlen(key), &val, &len,
					   NULL);
			keysteer_free(val);
		}
		print_stats(ks);
	} else {
		fprintf(stderr, "%s: unknown or incomplete command '%s'\n",
			argv[0], op);
		ret = 0;
		rc = 2;
	}
	if (ret < 0) {
		fprintf(stderr, "%s: %s\n", op, keysteer_errmsg(ks));
		rc = 2;
	}
	keysteer_close(ks);
	return rc;
}
