/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * etcd_codec.h - the pure half of the etcd client (etcd.h): the endpoint
 * list of --etcd, base64 and prefix ranges, and the decoding of the v3 JSON
 * gateway's answers (jansson; no I/O, no curl), so the unit tier can test
 * each of them on fixed text.
 *
 * The gateway speaks proto3 JSON: keys and values are base64, 64-bit
 * integers are strings ("revision":"42"), and a field at its zero value is
 * left out (no "succeeded" is false, no "TTL" is 0). An error is
 * {"error":..., "message":..., "code":<gRPC code>}; a stream (watch, lease
 * keepalive) is a sequence of {"result":{...}} or {"error":{...}} objects.
 *
 * Decoders return 0 or a negative errno and, on error, write one line
 * saying what is wrong into err (may be NULL). Their errors: -EBADMSG (not
 * JSON, a field of the wrong type, bad base64), -ENOMEM.
 */
#ifndef KS_ETCD_CODEC_H
#define KS_ETCD_CODEC_H

#include <stddef.h>
#include <stdint.h>

#define KS_ETCD_MAX_ENDPOINTS 16
#define KS_ETCD_URL_MAX       264 /* "https://" + a 253-byte name + ":65535" */
#define KS_ETCD_DEFAULT_PORT  2379

/*
 * "URL[,URL...]": http://HOST[:PORT][/] or https://..., HOST a name, an
 * IPv4 address or [IPv6]; PORT defaults to 2379. Refused, with the entry
 * and the reason in err: an empty entry, another scheme, user info, a
 * path, query or fragment, a bad port, a mix of http and https, more than
 * KS_ETCD_MAX_ENDPOINTS. url[i] is "scheme://host:port", no slash.
 */
struct ks_etcd_endpoints {
	unsigned n;
	int tls; /* 1: all https */
	char url[KS_ETCD_MAX_ENDPOINTS][KS_ETCD_URL_MAX];
};
int ks_etcd_parse_endpoints(const char *list, struct ks_etcd_endpoints *eps,
			    char *err, size_t errlen);

/* Standard base64 with padding. encode: out needs 4*((n+2)/3)+1 bytes;
 * returns the length. decode: strict (padding, alphabet); returns the
 * length written to out (room for (len/4)*3 + 1, NUL-terminated) or
 * -EBADMSG. */
size_t ks_etcd_b64_encode(const void *in, size_t n, char *out);
int ks_etcd_b64_decode(const char *in, size_t len, unsigned char *out);

/* The range_end that makes [key, end) every key starting with prefix: the
 * prefix with its last byte below 0xff raised by one and what follows it
 * dropped; "\0" (one zero byte, "every key from key on") when there is no
 * such byte. out has room for n bytes (1 at least); returns its length. */
size_t ks_etcd_prefix_end(const void *prefix, size_t n, unsigned char *out);

/* One key-value as etcd holds it; key and value are decoded bytes, each
 * followed by a NUL that is not counted. A deleted key (watch) has only
 * key and mod_revision. */
struct ks_etcd_kv {
	char *key, *value;
	size_t key_len, value_len;
	int64_t create_revision, mod_revision, version, lease;
};

struct ks_etcd_range {
	int64_t revision; /* the store's revision when it was read */
	int64_t count;    /* keys in the range */
	size_t n;
	struct ks_etcd_kv *kvs;
};

enum ks_etcd_event_type {
	KS_ETCD_EV_PUT = 0,
	KS_ETCD_EV_DELETE = 1
};
struct ks_etcd_event {
	int type;
	struct ks_etcd_kv kv;
};

/* One message of a watch stream. */
struct ks_etcd_watch_msg {
	int64_t revision; /* the header's */
	int created, canceled;
	int64_t compact_revision; /* canceled: the start revision is gone */
	char cancel_reason[200];
	size_t n;
	struct ks_etcd_event *events;
};

void ks_etcd_kv_free(struct ks_etcd_kv *kv);
void ks_etcd_range_free(struct ks_etcd_range *r);
void ks_etcd_watch_msg_free(struct ks_etcd_watch_msg *m);

/*
 * An error answer (HTTP status other than 200, or an "error" object in a
 * stream) to a negative errno, with etcd's own message in err:
 *   -EKEYEXPIRED  the auth token is not (or no longer) valid: authenticate
 *   -EACCES       wrong user or password, or auth is on and none was given
 *   -EPERM        the user may not do this (permission denied)
 *   -ENOENT       lease not found (expired or revoked)
 *   -ERANGE       the revision has been compacted
 *   -EAGAIN       etcd is unavailable for now (no leader, timed out)
 *   -EINVAL       etcd says the request is invalid
 *   -EPROTO       any other error etcd names; -EBADMSG: not an error answer
 */
int ks_etcd_decode_error(const char *body, size_t len, long http_status,
			 char *err, size_t errlen);

/* /v3/kv/range: r is overwritten; free it with ks_etcd_range_free. */
int ks_etcd_decode_range(const char *body, size_t len, struct ks_etcd_range *r,
			 char *err, size_t errlen);
/* The header's revision of any unary answer (put, deleterange, txn, ...);
 * *deleted (may be NULL) the "deleted" count of a deleterange. */
int ks_etcd_decode_revision(const char *body, size_t len, int64_t *revision,
			    int64_t *deleted, char *err, size_t errlen);
/* /v3/kv/txn of a compare-and-swap whose failure branch is one range of
 * the key: *succeeded, the header's revision, and (lost) the key's
 * mod_revision now, 0 when absent. */
int ks_etcd_decode_txn(const char *body, size_t len, int *succeeded,
		       int64_t *revision, int64_t *cur_mod, char *err,
		       size_t errlen);
/* /v3/lease/grant ({"ID","TTL"}) and /v3/lease/keepalive ({"result":
 * {"ID","TTL"}}, an absent TTL meaning the lease is gone): id and ttl. */
int ks_etcd_decode_lease(const char *body, size_t len, int64_t *id,
			 int64_t *ttl, char *err, size_t errlen);
/* /v3/auth/authenticate: the token, NUL-terminated, at most tlen-1 bytes. */
int ks_etcd_decode_token(const char *body, size_t len, char *token, size_t tlen,
			 char *err, size_t errlen);
/* /v3/maintenance/status: the server's version string. */
int ks_etcd_decode_status(const char *body, size_t len, char *version,
			  size_t vlen, char *err, size_t errlen);

/*
 * The first whole JSON object of a stream buffer (leading whitespace
 * skipped): 1 with *used the bytes it took and m filled (free with
 * ks_etcd_watch_msg_free), 0 when the object is not complete yet (*used 0),
 * or an error: an {"error":...} object decodes as ks_etcd_decode_error
 * does (with *used set), anything else not JSON is -EBADMSG.
 */
int ks_etcd_decode_watch(const char *buf, size_t len, size_t *used,
			 struct ks_etcd_watch_msg *m, char *err, size_t errlen);

#endif
