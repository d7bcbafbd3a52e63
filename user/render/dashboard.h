/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * dashboard.h - the live terminal dashboard of 'agent report --watch':
 * a header, per-shard load bars, the top keys with a sparkline of their
 * recent rate, the hot-key table and the parse errors, laid out for a
 * given width x height. Pure: it renders a struct ks_view (report.h) and
 * the watcher's own key history into a FILE*, so the unit tests drive it
 * at any size; cmd_report.c owns the terminal (size, keys, redraw).
 *
 * The output is at most height lines, each ending in '\n' and never wider
 * than width columns (every glyph is one column; keys are escaped to
 * printable ASCII by ks_key_text). Sections that do not fit are dropped,
 * lowest priority first: top keys, shards, parse errors, hot keys, footer.
 */
#ifndef KS_DASHBOARD_H
#define KS_DASHBOARD_H

#include <stdio.h>
#include "keysteer.h"
#include "render/report.h"

#define KS_DASH_HIST   60      /* intervals of rate history kept per key */
#define KS_DASH_KEYS   256     /* keys with a history (top list + churn) */
#define KS_DASH_ABSENT (~0ULL) /* the key was not in that interval's top */
#define KS_DASH_MIN_W  32      /* below this, only the too-small notice */
#define KS_DASH_MIN_H  3       /* header, top keys title, one key */
#define KS_DASH_MAX_W  1000    /* wider terminals get 1000 columns */

/* One key's reads+writes per second (milli) in the last KS_DASH_HIST
 * intervals, slot tick % KS_DASH_HIST, KS_DASH_ABSENT where it was not in
 * the top list. */
struct ks_dash_key {
	__u64 hash;      /* ks_key_hash of the key; 0: free slot */
	__u64 last_tick; /* the newest interval it was in the top list */
	__u64 mps[KS_DASH_HIST];
};

/* Kept in the watching process, keyed by key hash: the agent publishes
 * only the last interval. */
struct ks_dash_history {
	__u64 tick;       /* intervals recorded; the newest is tick - 1 */
	__u64 updated_ns; /* ks_report.updated_ns of the newest */
	struct ks_dash_key keys[KS_DASH_KEYS];
};

void ks_dash_history_init(struct ks_dash_history *h);

/*
 * Records the report's top list as one interval, if it is a new one
 * (its updated_ns differs from the last recorded; the watcher may redraw
 * more often than the agent publishes). Returns 1 if recorded.
 */
int ks_dash_history_add(struct ks_dash_history *h, const struct ks_report *r);

/*
 * The key's last width intervals, oldest left, one glyph each: a space
 * where it was absent, else one of 8 levels scaled to the highest rate
 * shown or twice the mean rate shown, whichever is higher, so a steady
 * rate is a line at half height (Unicode blocks U+2581..U+2588, or
 * ".:-=+*#@" when !utf8).
 * NUL-terminated in buf (room for 3 bytes a glyph); returns the bytes.
 */
size_t ks_dash_sparkline(const struct ks_dash_history *h, __u64 hash, int width,
			 int utf8, char *buf, size_t len);

struct ks_dash_opts {
	int width, height; /* the terminal's */
	int utf8;          /* block glyphs; 0: plain ASCII */
	int keys_hint;     /* footer shows the keys (q quit ...) */
};

void ks_dash_render(FILE *f, const struct ks_view *v,
		    const struct ks_dash_history *h,
		    const struct ks_dash_opts *o);

/* Columns a UTF-8 line takes (code points; no wide glyphs are used). */
int ks_dash_cols(const char *s, size_t len);

/*
 * The rendered text as one terminal update that needs no full clear (no
 * flicker): cursor home, each line then clear-to-end-of-line, then clear
 * the rest of the screen. Never prints past the last row or clears the
 * last column of a full line (a terminal's pending wrap would erase it).
 */
void ks_dash_frame(FILE *out, const char *text, size_t len, int width,
		   int height);

#endif
