// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * batch.c - keysteer_set_many (libkeysteer.h, docs/client.md "Batches"):
 * N writes in one call. Every owner gets its items as one pipeline of
 * quiet meta sets ending in "mn", all owners at once; then every replica
 * that may hold a copy of any written item gets one pipeline of stale
 * marks, then one of tombstones for the items it had none of, and so on
 * (batch_proto.h), all replicas at once; the call returns when every
 * invalidation is done or has failed. A round is a set of pipelines sent
 * to every server before any reply is read, so a round costs one round
 * trip however many servers and items it holds.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include "client/batch_proto.h"
#include "client/client.h"
#include "client/route.h"
#include "core/mc_key.h"

#define KSC_API __attribute__((visibility("default")))

/* One command of a round; its answer is filled in by the round. */
struct bcmd {
	unsigned srv;  /* server id */
	unsigned item; /* index in the batch, sent as the opaque */
	unsigned task; /* the caller's index (an invalidation task) */
	enum ksc_batch_cmd kind;
	int answered; /* a reply line named it */
	enum ksc_batch_code code;
	int err; /* the pipeline failed before its answer: may have run */
};

/* One server's pipeline of a round: cmds[a, b). */
struct bgroup {
	unsigned a, b;
	struct ksc_conn *c;
	char *text;
	struct iovec *iov;
	int niov, fresh, err;
	unsigned unattributed; /* error lines without an opaque */
};

struct batch {
	struct keysteer *ks;
	const struct keysteer_item *items;
	__u64 deadline;
};

static int by_server(const void *pa, const void *pb)
{
	const struct bcmd *a = pa, *b = pb;

	if (a->srv != b->srv)
		return a->srv < b->srv ? -1 : 1;
	return a->item < b->item ? -1 : a->item > b->item;
}

static int build(struct batch *bt, struct bcmd *cmds, struct bgroup *g)
{
	unsigned i, n = g->b - g->a;
	char *p;

	g->text = malloc((size_t)n * KSC_BATCH_LINE_MAX + 4);
	g->iov = malloc(((size_t)n * 3 + 1) * sizeof(*g->iov));
	if (!g->text || !g->iov)
		return -ENOMEM;
	p = g->text;
	for (i = g->a; i < g->b; i++) {
		const struct keysteer_item *it = &bt->items[cmds[i].item];
		long ttl = cmds[i].kind == KSC_BC_SET ? (long)it->exptime
						      : bt->ks->inval_ttl_s;
		size_t len = ksc_batch_line(p, cmds[i].kind, it->key, it->klen,
					    it->len, it->flags, ttl,
					    cmds[i].item);

		g->iov[g->niov++] = (struct iovec){ p, len };
		p += len;
		if (cmds[i].kind != KSC_BC_SET)
			continue;
		g->iov[g->niov++] = (struct iovec){
			(void *)(it->value ? it->value : ""), it->len
		};
		g->iov[g->niov++] = (struct iovec){ "\r\n", 2 };
	}
	memcpy(p, "mn\r\n", 4);
	g->iov[g->niov++] = (struct iovec){ p, 4 };
	return 0;
}

/* sendmsg moves the iovecs it has sent: a copy for each try. */
static int send_group(struct batch *bt, struct bgroup *g)
{
	struct iovec *iov = malloc((size_t)g->niov * sizeof(*iov));
	int err;

	if (!iov)
		return -ENOMEM;
	memcpy(iov, g->iov, (size_t)g->niov * sizeof(*iov));
	err = ks_mc_pipe_send(&g->c->mc, iov, g->niov, bt->deadline, &g->fresh);
	free(iov);
	return err;
}

static struct bcmd *named(struct bcmd *cmds, const struct bgroup *g, long item)
{
	unsigned i;

	for (i = g->a; i < g->b; i++)
		if ((long)cmds[i].item == item)
			return &cmds[i];
	return NULL;
}

/* The group's replies up to MN: 0, or the error that cut them short
 * (what was not answered by then may or may not have run). */
static int read_group(struct batch *bt, struct bcmd *cmds, struct bgroup *g,
		      unsigned *lines)
{
	struct ksc_batch_reply r;
	struct bcmd *c;
	char *line;
	int err;

	for (*lines = 0;; ++*lines) {
		if ((err = ks_mc_pipe_line(&g->c->mc, &line, bt->deadline)))
			return err;
		ksc_batch_reply_parse(line, &r);
		if (r.code == KSC_BR_MN)
			return 0;
		if (r.code == KSC_BR_ERROR && r.opaque < 0) {
			if (!g->unattributed++)
				ksc_err(bt->ks, -EIO, "%.200s", line);
			continue;
		}
		c = r.code == KSC_BR_BAD ? NULL : named(cmds, g, r.opaque);
		if (!c || c->answered) {
			ks_mc_close(&g->c->mc); /* out of step */
			return -EPROTO;
		}
		c->answered = 1;
		c->code = r.code;
	}
}

static void finish_group(struct batch *bt, struct bcmd *cmds, struct bgroup *g)
{
	unsigned i, lines = 0;
	int err = g->err;

	if (!err) {
		err = read_group(bt, cmds, g, &lines);
		/* a kept connection the server had closed: all once more */
		if (err && !lines && !g->fresh && ks_mc_pipe_broken(err)) {
			for (i = g->a; i < g->b; i++)
				cmds[i].answered = 0;
			err = send_group(bt, g);
			if (!err)
				err = read_group(bt, cmds, g, &lines);
		}
	}
	/* an error without an opaque names no item: each silent one is
	 * uncertain */
	if (!err && g->unattributed)
		err = -EIO;
	for (i = g->a; i < g->b; i++)
		if (!cmds[i].answered)
			cmds[i].err = err;
}

/* Runs one round: every server's pipeline sent, then every reply read. */
static int run_round(struct batch *bt, struct bcmd *cmds, unsigned n)
{
	struct bgroup *gs = calloc(n ? n : 1, sizeof(*gs));
	unsigned i, ng = 0;
	int ret = 0;

	if (!gs)
		return -ENOMEM;
	qsort(cmds, n, sizeof(*cmds), by_server);
	for (i = 0; i < n; i++)
		if (!i || cmds[i].srv != cmds[i - 1].srv)
			gs[ng++] = (struct bgroup){ .a = i, .b = i + 1 };
		else
			gs[ng - 1].b = i + 1;
	bt->deadline = ksc_now_ms() + (__u64)bt->ks->timeout_ms;
	for (i = 0; i < ng && !ret; i++) {
		struct bgroup *g = &gs[i];

		g->c = ksc_conn_get(bt->ks, cmds[g->a].srv);
		if (!g->c)
			g->err = -EHOSTUNREACH;
		else if ((ret = build(bt, cmds, g)) == 0)
			g->err = send_group(bt, g);
		/* a kept connection the server had closed: once on a new one */
		if (!ret && g->err && !g->fresh && ks_mc_pipe_broken(g->err))
			g->err = send_group(bt, g);
	}
	if (ret)
		ksc_err(bt->ks, ret, "out of memory");
	for (i = 0; i < ng; i++) {
		if (!ret)
			finish_group(bt, cmds, &gs[i]);
		free(gs[i].text);
		free(gs[i].iov);
	}
	free(gs);
	return ret;
}

static int check_items(struct keysteer *ks, struct keysteer_item *items,
		       size_t n)
{
	size_t i;

	if (!items && n)
		return ksc_err(ks, -EINVAL, "%zu items at NULL", n);
	if (n > KEYSTEER_BATCH_MAX)
		return ksc_err(ks, -EINVAL, "%zu items: at most %d a batch", n,
			       KEYSTEER_BATCH_MAX);
	for (i = 0; i < n; i++)
		items[i].result = -ECANCELED;
	for (i = 0; i < n; i++) {
		const struct keysteer_item *it = &items[i];
		const char *why = NULL;

		if (!it->key || ks_mc_key_check(it->key, it->klen))
			why = "a key is 1..250 bytes without spaces or control "
			      "bytes";
		else if (!it->value && it->len)
			why = "a value of that many bytes at NULL";
		else if (it->len > KS_MC_VALUE_MAX)
			why = "a value is at most 1 MiB";
		else if (it->exptime > KS_MC_TTL_MAX)
			why = "exptime is at most 30 days";
		if (why) {
			items[i].result = -EINVAL;
			return ksc_err(ks, -EINVAL,
				       "item %zu: %s; nothing written", i, why);
		}
	}
	return 0;
}

struct inv_task {
	unsigned item, srv;
	enum ksc_inv_state state;
	int err;
};

/* Every replica that may hold a copy of a written item, invalidated:
 * the tasks' states say which ones were. */
static int invalidate_all(struct batch *bt, const unsigned *owner,
			  const __u64 *hash, const int *wrote, size_t n,
			  struct inv_task **out, unsigned *nout)
{
	struct keysteer *ks = bt->ks;
	struct inv_task *t = malloc((n * KSC_INVAL_MAX + 1) * sizeof(*t));
	struct bcmd *cmds = malloc((n * KSC_INVAL_MAX + 1) * sizeof(*cmds));
	const struct ksc_view *v;
	__u16 ids[KSC_INVAL_MAX];
	unsigned nt = 0, i, k, nc, round;
	int ret = 0;

	*out = t;
	if (!t || !cmds) {
		free(cmds);
		return -ENOMEM;
	}
	v = ksc_rdlock(ks);
	for (i = 0; i < n; i++) {
		if (!wrote[i])
			continue;
		k = ksc_route_inval(v, owner[i], hash[i], ks->inval_all, ids,
				    KSC_INVAL_MAX);
		while (k--)
			t[nt++] = (struct inv_task){ i, ids[k], KSC_INV_MARK,
						     0 };
	}
	ksc_unlock(ks);
	for (round = 0; round < 2 * KSC_INV_ROUNDS && !ret; round++) {
		for (i = nc = 0; i < nt; i++)
			if (t[i].state == KSC_INV_MARK ||
			    t[i].state == KSC_INV_TOMB)
				cmds[nc++] = (struct bcmd){
					.srv = t[i].srv,
					.item = t[i].item,
					.task = i,
					.kind = t[i].state == KSC_INV_MARK
							? KSC_BC_MARK
							: KSC_BC_TOMB
				};
		if (!nc)
			break;
		ret = run_round(bt, cmds, nc);
		for (i = 0; i < nc && !ret; i++) {
			struct inv_task *x = &t[cmds[i].task];

			if (cmds[i].err == -ECONNREFUSED) {
				/* no memcached there: it serves no copy */
				x->state = KSC_INV_DONE;
			} else if (cmds[i].err) {
				x->state = KSC_INV_FAIL;
				x->err = cmds[i].err;
			} else {
				x->state = ksc_inv_step(x->state,
							cmds[i].answered,
							cmds[i].code);
				if (x->state == KSC_INV_FAIL)
					x->err = -EPROTO;
			}
		}
	}
	for (i = 0; i < nt; i++)
		if (t[i].state == KSC_INV_MARK || t[i].state == KSC_INV_TOMB) {
			t[i].state = KSC_INV_FAIL;
			t[i].err = -EAGAIN; /* raced every round */
		}
	*nout = nt;
	free(cmds);
	return ret;
}

/* Each item's result from its set and its invalidations; 0 or the first
 * failure, named in ks->err. */
static int results(struct batch *bt, struct keysteer_item *items, size_t n,
		   const struct bcmd *sets, const struct inv_task *t,
		   unsigned nt)
{
	struct keysteer *ks = bt->ks;
	char name[KSC_ADDR_MAX];
	unsigned i;
	int first = 0;

	for (i = 0; i < n; i++)
		items[i].result = sets[i].err;
	for (i = 0; i < nt; i++) {
		if (t[i].state == KSC_INV_DONE) {
			ks->st.invalidations++;
			continue;
		}
		ks->st.inval_errors++;
		if (items[t[i].item].result)
			continue;
		items[t[i].item].result = -EIO;
		if (!first) {
			ksc_server_name(ks, t[i].srv, name, sizeof(name));
			first = ksc_err(
				ks, -EIO,
				"item %u: written to the owner, but replica %s "
				"not invalidated (%s): readers reaching it may "
				"read the old value until its copy expires",
				t[i].item, name, strerror(-t[i].err));
		}
	}
	for (i = 0; i < n; i++) {
		ks->st.sets += !sets[i].err;
		if (sets[i].err && sets[i].err != -KEYSTEER_ELIMIT && !first)
			first = ksc_err(ks, sets[i].err,
					"item %u: set on its owner: %s", i,
					strerror(-sets[i].err));
	}
	return first;
}

/*
 * Each item's key through its rate limit, in item order (limit.h; one
 * token per item, as keysteer_set takes one per call): refused[i] 1 for
 * an item over its key's limit, never sent. The number refused.
 */
static unsigned limit_items(struct keysteer *ks,
			    const struct keysteer_item *items, size_t n,
			    int *refused)
{
	unsigned i, nref = 0;

	for (i = 0; i < n; i++) {
		refused[i] = !ks->batch_skip_limit &&
			     ksc_limit_check(ks, items[i].key, items[i].klen) ==
				     -KEYSTEER_ELIMIT;
		nref += refused[i];
	}
	return nref;
}

/* The call's error for its refused items when nothing else failed. */
static int refused_err(struct keysteer *ks, const struct keysteer_item *items,
		       size_t n, const int *refused, unsigned nref)
{
	unsigned i;

	for (i = 0; i < n && !refused[i]; i++)
		;
	return ksc_err(ks, -KEYSTEER_ELIMIT,
		       "%u of %zu items over their keys' rate limits, not "
		       "sent (the first: item %u, '%.*s'); the others "
		       "written",
		       nref, n, i,
		       (int)(items[i].klen > 64 ? 64 : items[i].klen),
		       (const char *)items[i].key);
}

KSC_API int keysteer_set_many(struct keysteer *ks, struct keysteer_item *items,
			      size_t n)
{
	struct batch bt = { ks, items, 0 };
	struct inv_task *tasks = NULL;
	unsigned *owner = NULL, *old = NULL, i, nt = 0, nsend, nref;
	struct bcmd *sets = NULL;
	struct ksc_move mv;
	__u64 *hash = NULL;
	__s64 *rev = NULL;
	int *wrote = NULL, *refused = NULL, ret, old_err = 0;

	if ((ret = check_items(ks, items, n)))
		goto out;
	if (!n) {
		ks->err[0] = '\0';
		return 0;
	}
	owner = calloc(n, sizeof(*owner));
	old = calloc(n, sizeof(*old));
	rev = calloc(n, sizeof(*rev));
	hash = calloc(n, sizeof(*hash));
	wrote = calloc(n, sizeof(*wrote));
	sets = calloc(n, sizeof(*sets));
	refused = calloc(n, sizeof(*refused));
	if (!owner || !old || !rev || !hash || !wrote || !sets || !refused) {
		ret = ksc_err(ks, -ENOMEM, "out of memory");
		goto out;
	}
	/* items decided one by one: a limited key's item over its limit is
	 * refused alone, its result -KEYSTEER_ELIMIT, and the rest written
	 * (docs/limits.md, "TCP through libkeysteer") */
	nref = limit_items(ks, items, n, refused);
	for (i = nsend = 0; i < n; i++) {
		hash[i] = ksc_key_hash(items[i].key, items[i].klen);
		ksc_move_now(ks, items[i].key, items[i].klen, &mv);
		owner[i] = mv.owner;
		old[i] = mv.inval_old ? mv.old : KSC_NONE;
		rev[i] = mv.rev;
		if (owner[i] == KSC_NONE) {
			ret = ksc_err(ks, -ENOENT,
				      "no ring yet: the fleet has none");
			goto out;
		}
		if (!refused[i])
			sets[nsend++] = (struct bcmd){ .srv = owner[i],
						       .item = i,
						       .kind = KSC_BC_SET };
	}
	if (nsend && (ret = run_round(&bt, sets, nsend)))
		goto out;
	/* back in item order (the round sorted them by server) */
	{
		struct bcmd *by_item = calloc(n, sizeof(*by_item));

		if (!by_item) {
			ret = ksc_err(ks, -ENOMEM, "out of memory");
			goto out;
		}
		for (i = 0; i < nsend; i++)
			by_item[sets[i].item] = sets[i];
		for (i = 0; i < n; i++)
			if (refused[i])
				by_item[i] = (struct bcmd){
					.item = i, .err = -KEYSTEER_ELIMIT
				};
		free(sets);
		sets = by_item;
	}
	for (i = 0; i < n; i++) {
		if (sets[i].answered && sets[i].code != KSC_BR_HD)
			sets[i].err = -EPROTO; /* a plain set has no other */
		/* refused at connect or by the limit: never written. Anything
		 * else may have been, and is invalidated as a write that
		 * was. */
		wrote[i] = sets[i].err != -ECONNREFUSED &&
			   sets[i].err != -EHOSTUNREACH &&
			   sets[i].err != -KEYSTEER_ELIMIT;
	}
	/* a moved key's old owner, after its new one took the set
	 * (docs/client.md, "Ring changes"): one call each, only in a grace */
	for (i = 0; i < n; i++) {
		struct ksc_move m = { owner[i], old[i], 0, 1, rev[i] };

		if (old[i] != KSC_NONE && wrote[i] &&
		    ksc_inval_old(ks, &m, items[i].key, items[i].klen, hash[i]))
			old_err = -EIO;
	}
	if (!ks->batch_skip_inval &&
	    (ret = invalidate_all(&bt, owner, hash, wrote, n, &tasks, &nt)))
		goto out;
	ks->st.batches++;
	ks->st.batch_keys += n;
	for (i = 0; i < n; i++) {
		struct ksc_move m = { owner[i], old[i], 0, 0, rev[i] };

		if (wrote[i])
			ksc_ring_log(ks, items[i].key, items[i].klen, &m);
	}
	ret = results(&bt, items, n, sets, tasks, nt);
	if (!ret && old_err)
		ret = ksc_err(ks, old_err,
			      "written, but an old owner not invalidated: "
			      "readers still on the old ring may read old "
			      "values there");
	/* a refusal is the caller's to pace, not a failure of what was
	 * sent: named only when nothing else went wrong */
	if (!ret && nref)
		ret = refused_err(ks, items, n, refused, nref);
out:
	free(owner);
	free(old);
	free(rev);
	free(hash);
	free(wrote);
	free(refused);
	free(sets);
	free(tasks);
	if (ret)
		ks->st.errors++;
	else
		ks->err[0] = '\0';
	return ret;
}

int ksc_batch_option(struct keysteer *ks, const char *val)
{
	if (strcmp(val, "on") && strcmp(val, "off"))
		return ksc_err(ks, -EINVAL,
			       "batch_invalidate=%s: want on or off", val);
	ks->batch_skip_inval = !strcmp(val, "off");
	return 0;
}
