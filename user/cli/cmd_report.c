// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * cmd_report.c - 'agent report' ('agent --report'): reads what a running
 * agent published in the pinned ks_report plus the datapath's totals and
 * prints the text report or JSON once. --watch on a terminal runs the
 * live dashboard (dashboard.h) until q, Ctrl-C or SIGTERM; --watch into a
 * pipe or with --json prints the report again every interval.
 */
#include <errno.h>
#include <bpf/bpf.h>
#include <getopt.h>
#include <langinfo.h>
#include <locale.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <termios.h>
#include <unistd.h>
#include "dp/attach.h"
#include "cli/cli_options.h"
#include "cli/cmds.h"
#include "dp/collect.h"
#include "core/mc_key.h"
#include "dp/dedicated_map.h"
#include "render/dashboard.h"
#include "dp/bpf_log.h"
#include "util/opts.h"
#include "render/report.h"
#include "render/report_limit.h"
#include "dp/limit_map.h"
#include "util/clock.h"
#include "util/sig.h"

struct report_opts {
	const char *ifname;
	struct ks_view_opts view;
	int watch;
	__u32 interval_ms; /* 0: the agent's */
	int verbose;
	int ascii; /* dashboard in plain ASCII */
};

static int parse_report(int argc, char **argv, struct report_opts *o)
{
	struct ks_cli_getopt g;
	char err[KS_ERRLEN];
	int c, n;

	memset(o, 0, sizeof(*o));
	ks_view_opts_init(&o->view);
	ks_cli_getopt_init(&g, KS_CMD_REPORT);
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, g.shorts, g.lo, NULL)) != -1) {
		switch (c) {
		case 'i':
			o->ifname = optarg;
			break;
		case 'w':
			o->watch = 1;
			break;
		case 'I':
			if (ks_parse_seconds("--interval", optarg, 100, 3600000,
					     &o->interval_ms, err, sizeof(err)))
				goto bad;
			break;
		case 'v':
			o->verbose = 1;
			break;
		case 'A':
			o->ascii = 1;
			break;
		case 'h':
			ks_help_report(stdout);
			return -1;
		default:
			n = ks_view_opt(&o->view, c, optarg, err, sizeof(err));
			if (n < 0)
				goto bad;
			if (n)
				break;
			return ks_bad_option("report", c, argv);
		}
	}
	return ks_no_args("report", argc, argv);
bad:
	ks_err("%s", err);
	return KS_EXIT_USAGE;
}

struct report_ctx {
	struct report_opts o;
	struct ks_maps maps;
	struct ks_collector col;
	struct ks_report *rep;
	struct ks_shard_report *ring;
	struct ks_misdirect *mis_all, mis[KS_MISDIRECT_SHOW];
	struct ks_totals totals;
	struct ks_hot_slot *hot;  /* used slots, KS_HOT_SLOTS room */
	struct ks_limit_map lmap; /* the rate limits' pins; limits -1: none */
	struct ks_limit_info lrow[KS_LIMIT_SLOTS];
	struct ks_limit_view lview;
	struct ks_replica reps[KS_MAX_REPLICAS];
	struct ks_dash_history *hist; /* the dashboard's sparklines */
	char ifname[IF_NAMESIZE];
	char pin_dir[PATH_MAX];
};

/* The shard report and the recent misdirected clients of its ring. */
static int read_ring(struct report_ctx *c, size_t *n_mis)
{
	long n;
	int err;

	*n_mis = 0;
	err = ks_read_shard_report(&c->maps, c->ring);
	if (err || !c->ring->version || !c->ring->nshards)
		return err;
	n = ks_read_misdirect(&c->col, c->mis_all);
	if (n < 0)
		return (int)n;
	*n_mis = ks_misdirect_recent(c->mis_all, (size_t)n,
				     c->ring->pushed_mono_ns, c->mis,
				     KS_MISDIRECT_SHOW);
	return 0;
}

/* The used hot-key slots and the replica table. */
static int read_hot(struct report_ctx *c, struct ks_hot_view *h)
{
	struct ks_hot_slot s;
	__u32 i;

	memset(h, 0, sizeof(*h));
	h->slot = c->hot;
	h->rep = c->reps;
	h->hash_only = c->o.view.hash_only;
	h->now_mono_ns = ks_mono_ns();
	for (i = 0; i < KS_MAX_REPLICAS; i++)
		if (bpf_map_lookup_elem(c->maps.replicas, &i, &c->reps[i]))
			return -errno;
	for (i = 0; i < KS_HOT_SLOTS; i++) {
		if (bpf_map_lookup_elem(c->maps.hot, &i, &s))
			return -errno;
		if (s.hash)
			c->hot[h->n++] = s;
	}
	return 0;
}

/* The limited keys (ks_limit_info's used rows) and the check counters;
 * nothing from an agent whose datapath has no limits. */
static int read_limits(struct report_ctx *c)
{
	__u32 i;

	c->lview = (struct ks_limit_view){ .row = c->lrow,
					   .hash_only = c->o.view.hash_only };
	if (c->lmap.limits < 0)
		return 0;
	for (i = 0; i < KS_LIMIT_SLOTS; i++) {
		if (bpf_map_lookup_elem(c->lmap.info, &i, &c->lrow[c->lview.n]))
			return -errno;
		if (c->lrow[c->lview.n].rate)
			c->lview.n++;
	}
	return ks_limit_map_pkts(&c->lmap, &c->lview.pkts);
}

/* Reads every map the report shows into c, and v (with hot) over it. */
static int read_view(struct report_ctx *c, struct ks_view *v,
		     struct ks_hot_view *hot)
{
	int err;

	*v = (struct ks_view){ .rep = c->rep,
			       .totals = &c->totals,
			       .top = c->o.view.top,
			       .hash_only = c->o.view.hash_only,
			       .ring = c->ring,
			       .mis = c->mis,
			       .shards_top = c->o.view.shards_top,
			       .hot = hot };
	err = ks_read_report(&c->maps, c->rep);
	if (!err)
		err = ks_read_totals(&c->col, &c->totals);
	if (!err)
		err = read_ring(c, &v->n_mis);
	if (!err)
		err = read_hot(c, hot);
	if (!err)
		err = read_limits(c);
	if (c->lmap.limits >= 0)
		v->limits = &c->lview;
	hot->replies = (int)c->rep->replies;
	v->agent_alive = ks_pid_alive(c->rep->agent_pid);
	v->now_ns = ks_real_ns();
	v->now_mono_ns = ks_mono_ns();
	return err;
}

static int read_failed(const struct report_ctx *c, int err)
{
	ks_err("cannot read the pinned maps in %s (%s); check that the agent still runs",
	       c->pin_dir, strerror(-err));
	return KS_EXIT_FAIL;
}

/*
 * Dedicated shards (docs/placement.md): the shard rules in the datapath,
 * each with its shard on the active ring and that shard's load, and how
 * many sampled keys they placed. Nothing from a datapath without rules,
 * or from one loaded before them.
 */
static void text_dedicated(const struct report_ctx *c)
{
	static struct ks_ded_entry e[2 * KS_DEDICATED_MAX];
	const struct ks_shard_report *r = c->ring;
	struct ks_dedicated_stats st;
	struct ks_config cfg;
	struct ks_ded_fds f;
	char key[4 * KS_KEY_BUF + 8];
	long n, i;
	__u32 half = 0, sh;

	if (ks_ded_open(&f, c->pin_dir))
		return;
	n = ks_ded_read(&f, e, sizeof(e) / sizeof(e[0]));
	if (n > 0 && !ks_ded_read_stats(&f, &st)) {
		if (!ks_read_config(&c->maps, &cfg))
			half = cfg.ring & 1;
		printf("\ndedicated shards: %ld rules; sampled keys placed by them %llu (exact %llu, prefix %llu), with their ring owner as the ring lacks the shard %llu, exact-hash collisions %llu\n",
		       n,
		       (unsigned long long)(st.n[KS_DED_EXACT] +
					    st.n[KS_DED_PREFIX]),
		       (unsigned long long)st.n[KS_DED_EXACT],
		       (unsigned long long)st.n[KS_DED_PREFIX],
		       (unsigned long long)st.n[KS_DED_ORPHAN],
		       (unsigned long long)st.n[KS_DED_COLLISION]);
		printf("  %-30s %-21s %10s %6s\n", "RULE", "SHARD", "READS/S",
		       "xMEAN");
		for (i = 0; i < n; i++) {
			ks_key_text(e[i].key, e[i].len, key, sizeof(key));
			if (e[i].prefix)
				strncat(key, "*",
					sizeof(key) - strlen(key) - 1);
			sh = e[i].shard[half];
			if (sh >= KS_MAX_SHARDS || !r->nshards ||
			    sh >= r->nshards) {
				printf("  %-30s %-21s %s\n", key, "-",
				       "not in the ring: keys with their ring owner");
				continue;
			}
			printf("  %-30s %-21.21s %10.1f %6.2f\n", key,
			       r->shards[sh].name,
			       r->shards[sh].reads_mps / 1e3,
			       r->shards[sh].ratio_milli / 1e3);
		}
	}
	ks_ded_close(&f);
}

static int render_once(struct report_ctx *c)
{
	struct ks_hot_view hot;
	struct ks_view v;
	int err;

	err = read_view(c, &v, &hot);
	if (err)
		return read_failed(c, err);
	if (c->o.watch && !c->o.view.json)
		fputs("\033[H\033[2J", stdout); /* home, clear screen */
	if (c->o.view.json)
		ks_render_json(stdout, &v);
	else
		ks_render_text(stdout, &v);
	if (!c->o.view.json)
		text_dedicated(c);
	/* a watch stops at a lost frame; main() says why */
	return ks_stdout_flush() ? KS_EXIT_FAIL : 0;
}

static int still_attached(const struct report_ctx *c)
{
	char link[PATH_MAX + 8];
	struct stat st;

	snprintf(link, sizeof(link), "%s/link", c->pin_dir);
	return stat(link, &st) == 0;
}

static int detached(const struct report_ctx *c)
{
	ks_err("keysteer is no longer attached to %s; start it again with 'agent run --iface %s'",
	       c->ifname, c->ifname);
	return KS_EXIT_FAIL;
}

/* The redraw period: --interval, else the agent's. */
static __u64 watch_period_ns(const struct report_ctx *c)
{
	__u32 ms = c->o.interval_ms ? c->o.interval_ms : c->rep->interval_ms;

	return (__u64)(ms < 100 ? 1000 : ms) * 1000000ULL;
}

/* --watch into a pipe or with --json: the report again every interval. */
static int watch_plain(struct report_ctx *c)
{
	int rc = 0;

	while (!ks_stop) {
		if (!still_attached(c))
			return detached(c);
		rc = render_once(c);
		if (rc)
			return rc;
		ks_sleep_until(ks_mono_ns() + watch_period_ns(c));
	}
	return KS_EXIT_OK;
}

/* ---- the live dashboard: the terminal's size, keys and redraws ---- */

static volatile sig_atomic_t dash_resized, dash_suspended;

static void on_winch(int sig)
{
	(void)sig;
	dash_resized = 1;
}

static void on_tstp(int sig)
{
	(void)sig;
	dash_suspended = 1;
}

struct dash_term {
	int raw;  /* stdin's modes were changed: restore them */
	int keys; /* stdin still gives keys */
	struct termios saved;
	int width, height;
};

static void term_write(const char *s, size_t len)
{
	while (len) {
		ssize_t n = write(STDOUT_FILENO, s, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return; /* the terminal is gone: nothing to restore */
		s += n;
		len -= (size_t)n;
	}
}

static void term_size(struct dash_term *t)
{
	struct winsize ws;

	if (!ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) && ws.ws_col && ws.ws_row) {
		t->width = ws.ws_col;
		t->height = ws.ws_row;
	} else {
		t->width = 80;
		t->height = 24;
	}
}

static void term_enter(struct dash_term *t)
{
	static const char enter[] = "\033[?1049h\033[?25l\033[H\033[2J";
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sigemptyset(&sa.sa_mask);
	sa.sa_handler = on_winch;
	sigaction(SIGWINCH, &sa, NULL);
	sa.sa_handler = on_tstp;
	sigaction(SIGTSTP, &sa, NULL);
	t->raw = isatty(STDIN_FILENO) && !tcgetattr(STDIN_FILENO, &t->saved);
	if (t->raw) {
		struct termios raw = t->saved;

		/* Keys as typed, not echoed; Ctrl-C still sends SIGINT. */
		raw.c_lflag &= ~(tcflag_t)(ICANON | ECHO);
		raw.c_cc[VMIN] = 0;
		raw.c_cc[VTIME] = 0;
		tcsetattr(STDIN_FILENO, TCSANOW, &raw);
	}
	t->keys = t->raw;
	/* The alternate screen keeps the shell's screen for the exit. */
	term_write(enter, sizeof(enter) - 1);
	term_size(t);
}

static void term_leave(struct dash_term *t)
{
	static const char leave[] = "\033[?25h\033[?1049l";

	term_write(leave, sizeof(leave) - 1);
	if (t->raw)
		tcsetattr(STDIN_FILENO, TCSANOW, &t->saved);
	signal(SIGWINCH, SIG_DFL);
	signal(SIGTSTP, SIG_DFL);
}

enum dash_event {
	DASH_TICK,
	DASH_RESIZE,
	DASH_QUIT,
	DASH_SUSPEND
};

/* The key's event, or -1 for a key that means nothing here. */
static int dash_key(char k)
{
	switch (k) {
	case 'q':
	case 'Q':
		return DASH_QUIT;
	case 'r':
	case ' ':
		return DASH_TICK; /* read and redraw now */
	case '\f':
		return DASH_RESIZE; /* Ctrl-L: clear and redraw */
	default:
		return -1;
	}
}

/* Waits for the deadline, a key, a resize, Ctrl-Z or a stop signal. */
static enum dash_event dash_wait(struct dash_term *t, __u64 deadline_ns)
{
	while (!ks_stop) {
		__u64 now = ks_mono_ns();
		struct pollfd p = { .fd = STDIN_FILENO, .events = POLLIN };
		char keys[32];
		ssize_t n, i;
		int ms;

		if (dash_resized)
			return DASH_RESIZE;
		if (dash_suspended)
			return DASH_SUSPEND;
		if (now >= deadline_ns)
			return DASH_TICK;
		/* Short steps: a signal that lands just before poll() waits
		 * at most this long. */
		ms = (int)((deadline_ns - now) / 1000000ULL) + 1;
		ms = ms > 100 ? 100 : ms;
		if (poll(&p, t->keys ? 1 : 0, ms) <= 0)
			continue;
		if (p.revents & (POLLHUP | POLLERR | POLLNVAL)) {
			t->keys = 0; /* no more keys: keep drawing */
			continue;
		}
		/* Non-canonical with VMIN 0: 0 bytes is "none now", not EOF. */
		n = read(STDIN_FILENO, keys, sizeof(keys));
		for (i = 0; i < n; i++)
			if (dash_key(keys[i]) >= 0)
				return (enum dash_event)dash_key(keys[i]);
	}
	return DASH_QUIT;
}

/* One frame, written at once; clear first after a resize. */
static void dash_draw(const struct report_ctx *c, const struct ks_view *v,
		      const struct dash_term *t, struct ks_dash_opts *o,
		      int clear)
{
	char *text = NULL, *frame = NULL;
	size_t tlen = 0, flen = 0;
	FILE *f;

	o->width = t->width;
	o->height = t->height;
	f = open_memstream(&text, &tlen);
	if (!f)
		return;
	ks_dash_render(f, v, c->hist, o);
	fclose(f);
	f = open_memstream(&frame, &flen);
	if (f) {
		if (clear)
			fputs("\033[2J", f);
		ks_dash_frame(f, text, tlen, t->width, t->height);
		fclose(f);
		term_write(frame, flen);
	}
	free(frame);
	free(text);
}

static int utf8_locale(void)
{
	setlocale(LC_CTYPE, "");
	return !strcmp(nl_langinfo(CODESET), "UTF-8");
}

static int watch_dashboard(struct report_ctx *c)
{
	struct ks_dash_opts o = { .utf8 = !c->o.ascii && utf8_locale() };
	int rc = KS_EXIT_OK, err = 0, gone = 0, clear = 0;
	struct ks_hot_view hot;
	struct dash_term t;
	struct ks_view v;
	__u64 next = 0;

	c->hist = calloc(1, sizeof(*c->hist));
	if (!c->hist) {
		ks_err("out of memory (%s); free some memory",
		       strerror(ENOMEM));
		return KS_EXIT_FAIL;
	}
	ks_dash_history_init(c->hist);
	term_enter(&t);
	while (!ks_stop) {
		enum dash_event ev;

		gone = !still_attached(c);
		if (gone)
			break;
		err = read_view(c, &v, &hot);
		if (err)
			break;
		ks_dash_history_add(c->hist, c->rep);
		if (ks_mono_ns() >= next)
			next = ks_mono_ns() + watch_period_ns(c);
		o.keys_hint = t.keys;
		dash_draw(c, &v, &t, &o, clear);
		clear = 0;
		ev = dash_wait(&t, next);
		if (ev == DASH_QUIT)
			break;
		if (ev == DASH_RESIZE) {
			dash_resized = 0;
			term_size(&t);
			clear = 1;
		} else if (ev == DASH_SUSPEND) {
			/* Ctrl-Z: give the shell its screen, stop, and take
			 * the terminal again on fg. */
			dash_suspended = 0;
			term_leave(&t);
			raise(SIGTSTP);
			term_enter(&t);
		} else {
			next = 0; /* a tick or 'r': the next period starts */
		}
	}
	term_leave(&t);
	if (gone)
		rc = detached(c);
	else if (err)
		rc = read_failed(c, err);
	return rc;
}

static int watch(struct report_ctx *c)
{
	ks_install_stop_handlers();
	if (!c->o.view.json && isatty(STDOUT_FILENO))
		return watch_dashboard(c);
	return watch_plain(c);
}

int cmd_report(int argc, char **argv)
{
	struct report_ctx *c;
	int rc, err;

	c = calloc(1, sizeof(*c));
	if (!c)
		return KS_EXIT_FAIL;
	ks_maps_init(&c->maps);
	c->lmap.limits = -1;
	rc = parse_report(argc, argv, &c->o);
	if (rc)
		goto out;
	ks_log_init(c->o.verbose ? KS_LOG_DEBUG : KS_LOG_INFO);
	rc = ks_require_root("reading keysteer's pinned maps");
	if (rc)
		goto out;
	rc = ks_find_attached(c->o.ifname, c->ifname, c->pin_dir,
			      sizeof(c->pin_dir));
	if (rc)
		goto out;
	err = ks_maps_open_pinned(&c->maps, c->pin_dir);
	if (err) {
		ks_err("cannot open the pinned maps in %s (%s); the agent may be starting or stopping, try again",
		       c->pin_dir, strerror(-err));
		rc = KS_EXIT_FAIL;
		goto out;
	}
	/* an agent of a build before limits has no such pins: no section */
	if (ks_limit_map_open(&c->lmap, NULL, c->pin_dir))
		c->lmap.limits = -1;
	c->rep = calloc(1, sizeof(*c->rep));
	c->ring = calloc(1, sizeof(*c->ring));
	c->hot = calloc(KS_HOT_SLOTS, sizeof(*c->hot));
	err = ks_collector_init(&c->col, &c->maps);
	if (!err)
		c->mis_all = calloc((size_t)c->col.ncpus * KS_MISDIRECT_SLOTS,
				    sizeof(*c->mis_all));
	if (err || !c->rep || !c->ring || !c->mis_all || !c->hot) {
		ks_err("out of memory (%s); free some memory",
		       strerror(err ? -err : ENOMEM));
		rc = KS_EXIT_FAIL;
		goto out;
	}
	rc = c->o.watch ? watch(c) : render_once(c);
out:
	ks_collector_free(&c->col);
	ks_maps_close(&c->maps);
	ks_limit_map_close(&c->lmap);
	free(c->rep);
	free(c->ring);
	free(c->mis_all);
	free(c->hot);
	free(c->hist);
	free(c);
	return rc < 0 ? KS_EXIT_OK : rc;
}
