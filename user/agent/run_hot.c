// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * run_hot.c - the hot-key table wired into 'agent run' (see run_hot.h).
 * The decisions themselves are in hotkeys.c; this file does the I/O: the
 * pin file, the routing document, the log lines.
 */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "util/log.h"
#include "util/opts.h"
#include "agent/run_hot.h"
#include "render/routing_json.h"
#include "util/clock.h"

void ks_run_hot_defaults(struct ks_run_hot *h)
{
	memset(h, 0, sizeof(*h));
	h->o.gid = (gid_t)-1;
	h->o.owner_turns = -1;
	ks_hot_policy_default(&h->o.pol);
}

int ks_parse_double(const char *what, const char *s, double min, double max,
		    double *out, char *err, size_t errlen)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (!*s || *end || errno || !isfinite(v)) {
		snprintf(err, errlen, "%s '%s' is not a number; give e.g. %g",
			 what, s, min > 0 ? min : max / 2);
		return -EINVAL;
	}
	if (v < min || v > max) {
		snprintf(err, errlen, "%s %s is out of range; give %g..%g",
			 what, s, min, max);
		return -ERANGE;
	}
	*out = v;
	return 0;
}

/* The directory must exist and be writable: the temp file goes there. */
static int check_routing_dir(const char *path, char *err, size_t errlen)
{
	char *copy = strdup(path);
	const char *dir;
	int ret = 0;

	if (!copy)
		return -ENOMEM;
	dir = dirname(copy);
	if (access(dir, W_OK)) {
		ret = -errno;
		snprintf(
			err, errlen,
			"--routing-file %s: directory %s is not writable (%s); create it or pick another path",
			path, dir, strerror(-ret));
	}
	free(copy);
	return ret;
}

int ks_run_hot_prepare(struct ks_run_hot *h, char *err, size_t errlen)
{
	int ret;

	h->o.pol.max_copies = h->o.replicas + 1;
	ret = ks_hot_policy_check(&h->o.pol, err, errlen);
	if (ret)
		return ret;
	h->table = malloc(sizeof(*h->table));
	h->next_rules = calloc(1, sizeof(*h->next_rules));
	if (!h->table || !h->next_rules) {
		snprintf(err, errlen, "out of memory for the hot-key table");
		return -ENOMEM;
	}
	ks_hot_init(h->table);
	if (h->o.pins_path) {
		ks_file_sig_get(h->o.pins_path, &h->pins_sig);
		ret = ks_hot_rules_load(h->next_rules, h->o.pins_path, err,
					errlen);
		if (ret)
			return ret;
		ks_hot_set_rules(h->table, h->next_rules);
	}
	if (h->o.routing_path)
		return check_routing_dir(h->o.routing_path, err, errlen);
	return 0;
}

int ks_write_file_atomic(const char *path, const char *data, size_t len,
			 gid_t gid)
{
	size_t plen = strlen(path);
	char *tmp = malloc(plen + 5);
	size_t off = 0;
	int fd, ret = 0;

	if (!tmp)
		return -ENOMEM;
	memcpy(tmp, path, plen);
	memcpy(tmp + plen, ".tmp", 5);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0640);
	if (fd < 0) {
		ret = -errno;
		goto out;
	}
	/* The umask may have taken bits away; a leftover tmp may have
	 * other ones. */
	if (fchmod(fd, 0640))
		ret = -errno;
	/* readable by a configured group (a dashboard, a proxy) */
	if (!ret && gid != (gid_t)-1 && fchown(fd, (uid_t)-1, gid))
		ret = -errno;
	while (!ret && off < len) {
		ssize_t w = write(fd, data + off, len - off);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			ret = -errno;
		else
			off += (size_t)w;
	}
	/* Readers must never see a renamed file whose data is not on disk. */
	if (!ret && fsync(fd))
		ret = -errno;
	if (close(fd) && !ret)
		ret = -errno;
	if (!ret && rename(tmp, path))
		ret = -errno;
	if (ret)
		unlink(tmp);
out:
	free(tmp);
	return ret;
}

static int write_routing(struct ks_run_hot *h, __u64 ring_version)
{
	size_t need;
	int ret;

	if (!h->o.routing_path && !h->o.serve_doc)
		return 0;
	for (;;) {
		need = h->doc ? ks_hot_json_steer(h->table, &h->o.pol, h->o.rs,
						  h->o.owner_turns,
						  ring_version, h->doc,
						  h->doc_size)
			      : SIZE_MAX;
		if (need < h->doc_size)
			break;
		free(h->doc);
		h->doc_size = need == SIZE_MAX ? 65536 : need + 1;
		h->doc = malloc(h->doc_size);
		if (!h->doc) {
			h->doc_size = 0;
			return -ENOMEM;
		}
	}
	h->doc_len = need;
	ret = h->o.routing_path ? ks_write_file_atomic(h->o.routing_path,
						       h->doc, need, h->o.gid)
				: 0;
	if (ret)
		return ret;
	h->written = 1;
	h->written_version = h->table->version;
	return 0;
}

int ks_run_hot_start(struct ks_run_hot *h, __u64 ring_version)
{
	int ret;

	/* No samples yet: this only seeds the exact pins. */
	ks_hot_update(h->table, &h->o.pol, NULL, 0, 0);
	ret = write_routing(h, ring_version);
	if (ret)
		ks_err("cannot write the routing file %s (%s); check the directory",
		       h->o.routing_path, strerror(-ret));
	return ret;
}

void ks_run_hot_poll(struct ks_run_hot *h, int hup)
{
	struct ks_file_sig sig;
	char err[KS_ERRLEN * 2];
	__u64 now = ks_mono_ns();

	if (h->fleet || !h->o.pins_path || (!hup && now < h->next_check_ns))
		return;
	h->next_check_ns = now + KS_PINS_CHECK_NS;
	ks_file_sig_get(h->o.pins_path, &sig);
	if (!hup && ks_file_sig_equal(&sig, &h->pins_sig))
		return;
	/* Acted on either way: a bad file is reported once, not every
	 * check, and the next change is read again. */
	h->pins_sig = sig;
	if (ks_hot_rules_load(h->next_rules, h->o.pins_path, err,
			      sizeof(err))) {
		ks_warn("%s; keeping the previous pins", err);
		return;
	}
	ks_hot_set_rules(h->table, h->next_rules);
	ks_info("pins reloaded from %s: %zu rules", h->o.pins_path,
		h->next_rules->n);
}

void ks_run_hot_fleet_rules(struct ks_run_hot *h, const struct ks_hot_rules *r,
			    const char *source)
{
	if (r) {
		if (!h->fleet && h->o.pins_path)
			ks_info("the fleet's pins rule now; %s is not read while they are there",
				h->o.pins_path);
		h->fleet = 1;
		*h->next_rules = *r;
		ks_hot_set_rules(h->table, h->next_rules);
		ks_info("pins from %s: %zu rules", source, r->n);
		return;
	}
	h->fleet = 0;
	if (h->o.pins_path) {
		memset(&h->pins_sig, 0, sizeof(h->pins_sig));
		ks_run_hot_poll(h, 1);
		return;
	}
	memset(h->next_rules, 0, sizeof(*h->next_rules));
	ks_hot_set_rules(h->table, h->next_rules);
	ks_info("no pins now");
}

void ks_run_hot_fleet_load(struct ks_run_hot *h, double own_ps, double mean_ps,
			   size_t shards, double share)
{
	h->load_own_ps = own_ps;
	h->load_mean_ps = mean_ps;
	h->load_shards = shards;
	h->load_share = share;
}

/* The policy of this interval's update: --balance's threshold, if any. */
static void balanced_policy(struct ks_run_hot *h, const struct ks_hot_sample *s,
			    size_t n, struct ks_hot_policy *pol)
{
	double base = ks_hot_read_threshold(&h->o.pol), before, thr;

	*pol = h->o.pol;
	if (h->o.balance <= 0)
		return;
	h->bal.over = h->o.balance;
	before = h->bal.thr > 0 ? h->bal.thr : base;
	thr = ks_balance_step(&h->bal, &h->o.pol, h->load_own_ps,
			      h->load_mean_ps, h->load_shards, h->table, s, n,
			      h->load_share);
	ks_balance_policy(&h->o.pol, thr, pol);
	if (thr != before)
		ks_info("balance: this shard served %.0f reads/s, the mean of %zu shards %.0f (%.2fx): read threshold %.1f/s (the policy's %.1f)",
			h->bal.own_ps, h->bal.shards, h->bal.mean_ps,
			h->bal.mean_ps > 0 ? h->bal.own_ps / h->bal.mean_ps : 0,
			thr, base);
}

void ks_run_hot_interval(struct ks_run_hot *h,
			 const struct ks_top_entry *ranked, size_t n,
			 const struct ks_hot_unseen *u, size_t nu, __u32 seq,
			 __u64 ring_version)
{
	/* the ranked keys, then the table's keys none of them is */
	struct ks_hot_sample s[KS_HOT_SAMPLES_MAX];
	struct ks_hot_policy pol;
	size_t i, changes, hot = 0, pos = 0;
	int ret;

	if (n > KS_HOT_CAP)
		n = KS_HOT_CAP;
	for (i = 0; i < n; i++)
		ks_hot_sample_from_top(&ranked[i], &s[i]);
	n = ks_hot_add_unseen(h->table, s, n, KS_HOT_SAMPLES_MAX, u, nu);
	balanced_policy(h, s, n, &pol);
	changes = ks_hot_update(h->table, &pol, s, n, seq);
	while (ks_hot_next(h->table, &pos))
		hot++;
	ks_debug("#%u hot keys %zu, %zu changes, table v%llu", seq, hot,
		 changes, (unsigned long long)h->table->version);
	if (h->written && h->written_version == h->table->version)
		return;
	ret = write_routing(h, ring_version);
	if (ret)
		ks_warn("cannot write the routing file %s (%s); will retry next interval",
			h->o.routing_path, strerror(-ret));
}

void ks_run_hot_free(struct ks_run_hot *h)
{
	free(h->table);
	free(h->next_rules);
	free(h->doc);
	h->table = NULL;
	h->next_rules = NULL;
	h->doc = NULL;
}
