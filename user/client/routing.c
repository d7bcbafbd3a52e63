// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * routing.c - a handle's view follows agents' routing documents where
 * there is no etcd (routing=URL,...; docs/client.md, "The view from
 * routing documents"): every document read once before keysteer_open
 * returns, then a thread of the handle's own reads them all again every
 * routing_poll_ms (libcurl, one easy handle, the thread's) and applies a
 * round only when every document answered: a round replaces the hot
 * entries (routing_doc.c). A round that failed leaves the view as it was
 * and down; once down for stale_view_ms, reads go to the owners only, as
 * with etcd away.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <curl/curl.h>
#include "client/client.h"
#include "client/routing_doc.h"

struct body {
	char *p;
	size_t len;
};

static size_t on_data(char *data, size_t sz, size_t n, void *ud)
{
	struct body *b = ud;
	size_t add = sz * n;
	char *p;

	if (b->len + add > KSC_ROUTING_DOC_MAX)
		return 0; /* curl fails the transfer */
	p = realloc(b->p, b->len + add + 1);
	if (!p)
		return 0;
	memcpy(p + b->len, data, add);
	b->p = p;
	b->len += add;
	p[b->len] = '\0';
	return add;
}

/* GET url into *b: 0, or an error with why (the poll thread must not
 * write ks->err: the caller's thread owns it). */
static int fetch(struct keysteer *ks, const char *url, struct body *b,
		 char *why)
{
	CURL *c = ks->rt_curl;
	long status = 0;
	CURLcode rc;

	b->p = NULL;
	b->len = 0;
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_data);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, b);
	curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, (long)ks->etcd_timeout_ms);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
	rc = curl_easy_perform(c);
	if (rc == CURLE_OK)
		curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
	if (rc == CURLE_OK && status == 200)
		return 0;
	free(b->p);
	b->p = NULL;
	if (rc != CURLE_OK)
		snprintf(why, KSC_ERR_MAX, "routing=%s: %s", url,
			 curl_easy_strerror(rc));
	else /* 503: the agent has not rendered its first document yet */
		snprintf(why, KSC_ERR_MAX, "routing=%s: HTTP %ld", url, status);
	return -EIO;
}

/* Every document, then one round into the view: 0, or an error with
 * why. */
static int poll_all(struct keysteer *ks, char *why)
{
	struct body *b = calloc(ks->rt_n, sizeof(*b));
	struct ksc_routing_plan *plan = calloc(ks->rt_n, sizeof(*plan));
	unsigned i, bad = 0;
	int ret = 0;

	if (!b || !plan) {
		free(b);
		free(plan);
		snprintf(why, KSC_ERR_MAX, "routing: out of memory");
		return -ENOMEM;
	}
	for (i = 0; i < ks->rt_n && !ret; i++)
		ret = fetch(ks, ks->rt_url[i], &b[i], why);
	if (!ret) {
		ksc_wrlock(ks);
		/* every document read before any is applied: one refused
		 * leaves the whole round's keys as they were */
		for (i = 0; i < ks->rt_n && !ret; i++) {
			bad = i;
			ret = ksc_routing_parse(&ks->fo->view, b[i].p, b[i].len,
						&plan[i]);
		}
		if (!ret) {
			ks->rt_round++;
			ksc_view_hot_mark(&ks->fo->view);
			for (i = 0; i < ks->rt_n; i++) {
				int err = ksc_routing_apply(
					&ks->fo->view, &plan[i], ks->rt_round);

				if (err && !ret) {
					ret = err;
					bad = i;
				}
			}
			if (!ret)
				ksc_view_hot_sweep(&ks->fo->view, ksc_now_ms());
		}
		ksc_view_purge(&ks->fo->view, ksc_now_ms(), KSC_GONE_KEEP_MS);
		if (ret)
			snprintf(why, KSC_ERR_MAX, "routing=%s: %s",
				 ks->rt_url[bad], ks->fo->view.why);
		ksc_unlock(ks);
	}
	for (i = 0; i < ks->rt_n; i++) {
		free(b[i].p);
		ksc_routing_plan_free(&plan[i]);
	}
	free(b);
	free(plan);
	return ret;
}

static void *poll_main(void *arg)
{
	struct keysteer *ks = arg;
	char why[KSC_ERR_MAX];

	while (!ksc_fleet_stopping(ks->fo, (int)ks->rt_poll_ms))
		ksc_fleet_mark_up(ks->fo, !poll_all(ks, why), ksc_now_ms());
	return NULL;
}

int ksc_routing_open(struct keysteer *ks, const char *urls)
{
	char why[KSC_ERR_MAX];
	const char *p = urls, *e;
	size_t n;
	int ret;

	for (n = 1, e = urls; (e = strchr(e, ',')); e++)
		n++;
	ks->rt_url = calloc(n, sizeof(*ks->rt_url));
	if (!ks->rt_url || curl_global_init(CURL_GLOBAL_DEFAULT) ||
	    !(ks->rt_curl = curl_easy_init()))
		return ksc_err(ks, -ENOMEM, "routing: out of memory");
	for (; p; p = e ? e + 1 : NULL) {
		e = strchr(p, ',');
		n = e ? (size_t)(e - p) : strlen(p);
		if (n < 8 ||
		    (strncmp(p, "http://", 7) && strncmp(p, "https://", 8)))
			return ksc_err(ks, -EINVAL,
				       "routing=%s: want http://HOST:PORT/"
				       "routing.json[,...]",
				       urls);
		if (!(ks->rt_url[ks->rt_n++] = strndup(p, n)))
			return ksc_err(ks, -ENOMEM, "routing: out of memory");
	}
	if ((ret = poll_all(ks, why)))
		return ksc_err(ks, ret, "%s", why);
	return ksc_fleet_thread_start(ks, poll_main, ks);
}

void ksc_routing_close(struct keysteer *ks)
{
	unsigned i;

	for (i = 0; i < ks->rt_n; i++)
		free(ks->rt_url[i]);
	free(ks->rt_url);
	ks->rt_url = NULL;
	ks->rt_n = 0;
	if (ks->rt_curl)
		curl_easy_cleanup(ks->rt_curl);
	ks->rt_curl = NULL;
}
