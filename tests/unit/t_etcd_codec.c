// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The etcd client's pure half (user/core/etcd_codec.h): --etcd URL lists,
 * base64, prefix ends, and the gateway's answers as etcd 3.4 writes them
 * (the texts below are copied from a real etcd 3.4.23's answers).
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include "core/etcd_codec.h"
#include "ktest.h"
#include "unit.h"

#define S(x) (x), strlen(x)

static void t_endpoints(void)
{
	static const struct {
		const char *in, *why;
	} bad[] = {
		{ "", "no etcd endpoint" },
		{ "127.0.0.1:2379", "not an http:// or https:// URL" },
		{ "ftp://h", "not an http:// or https:// URL" },
		{ "http://", "not an http" },
		{ "http://:2379", "names no host" },
		{ "http://h:0", "not 1-65535" },
		{ "http://h:65536", "not 1-65535" },
		{ "http://h:", "bad port" },
		{ "http://h:123456", "bad port" },
		{ "http://h:2379/v3", "a path" },
		{ "http://h/x", "a path" },
		{ "http://u:p@h", "bad port" },
		{ "http://u@h", "user info" },
		{ "http://h?x=1", "a query" },
		{ "http://h#f", "a fragment" },
		{ "http://h a", "a character" },
		{ "http://[::1", "bad [IPv6]" },
		{ "http://a,,http://b", "empty entry" },
		{ "http://a,", "empty entry" },
		{ "http://a,https://b", "mix http:// and https://" },
	};
	struct ks_etcd_endpoints e;
	char err[256], many[2048] = "";
	unsigned i;
	int rc;

	kt_begin("etcd_endpoints_parse");
	rc = ks_etcd_parse_endpoints(
		"http://10.0.0.1:2379, HTTP://etcd-2.example ,http://[fd00::1]:12379/",
		&e, err, sizeof(err));
	CHECK(!rc && e.n == 3 && !e.tls, "rc %d n %u: %s", rc, e.n, err);
	CHECK(!strcmp(e.url[0], "http://10.0.0.1:2379"), "url0 %s", e.url[0]);
	CHECK(!strcmp(e.url[1], "http://etcd-2.example:2379"), "url1 %s",
	      e.url[1]);
	CHECK(!strcmp(e.url[2], "http://[fd00::1]:12379"), "url2 %s", e.url[2]);
	rc = ks_etcd_parse_endpoints("https://a:1,https://b:65535", &e, err,
				     sizeof(err));
	CHECK(!rc && e.n == 2 && e.tls && !strcmp(e.url[1], "https://b:65535"),
	      "https: rc %d %s", rc, err);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = '\0';
		rc = ks_etcd_parse_endpoints(bad[i].in, &e, err, sizeof(err));
		CHECK(rc == -EINVAL && strstr(err, bad[i].why),
		      "'%s': rc %d, '%s' (want '%s')", bad[i].in, rc, err,
		      bad[i].why);
	}
	for (i = 0; i <= KS_ETCD_MAX_ENDPOINTS; i++)
		strcat(many, i ? ",http://h" : "http://h");
	rc = ks_etcd_parse_endpoints(many, &e, err, sizeof(err));
	CHECK(rc == -EINVAL && strstr(err, "more than"), "too many: %d %s", rc,
	      err);
	kt_end();
}

static void t_base64(void)
{
	static const char *const plain[] = { "",     "f",     "fo",    "foo",
					     "foob", "fooba", "foobar" };
	static const char *const enc[] = {
		"", "Zg==", "Zm8=", "Zm9v", "Zm9vYg==", "Zm9vYmE=", "Zm9vYmFy"
	};
	unsigned char bin[256], back[400];
	char out[400];
	unsigned i;
	int n;

	kt_begin("etcd_base64_rfc4648_and_bytes");
	for (i = 0; i < 7; i++) {
		ks_etcd_b64_encode(plain[i], strlen(plain[i]), out);
		CHECK(!strcmp(out, enc[i]), "encode %s: %s", plain[i], out);
		n = ks_etcd_b64_decode(enc[i], strlen(enc[i]), back);
		CHECK(n == (int)strlen(plain[i]) &&
			      !memcmp(back, plain[i], (size_t)n),
		      "decode %s: %d", enc[i], n);
	}
	for (i = 0; i < 256; i++)
		bin[i] = (unsigned char)(255 - i);
	for (i = 0; i <= 256; i += 37) {
		size_t len = ks_etcd_b64_encode(bin, i, out);

		n = ks_etcd_b64_decode(out, len, back);
		CHECK(n == (int)i && !memcmp(back, bin, i),
		      "round trip of %u bytes", i);
	}
	CHECK(ks_etcd_b64_decode(S("Zm9"), back) == -EBADMSG,
	      "length not a multiple of 4");
	CHECK(ks_etcd_b64_decode(S("Zm9*"), back) == -EBADMSG, "bad character");
	CHECK(ks_etcd_b64_decode(S("Zg==Zg=="), back) == -EBADMSG,
	      "padding mid-string");
	CHECK(ks_etcd_b64_decode(S("Z=9v"), back) == -EBADMSG, "padding first");
	CHECK(ks_etcd_b64_decode(S("Zg=v"), back) == -EBADMSG,
	      "data after padding");
	kt_end();
}

static void t_prefix_end(void)
{
	unsigned char out[8];
	size_t n;

	kt_begin("etcd_prefix_end");
	n = ks_etcd_prefix_end("abc", 3, out);
	CHECK(n == 3 && !memcmp(out, "abd", 3), "abc -> %.*s", (int)n, out);
	n = ks_etcd_prefix_end("a\xff\xff", 3, out);
	CHECK(n == 1 && out[0] == 'b', "a ff ff -> %zu bytes", n);
	n = ks_etcd_prefix_end("\xff", 1, out);
	CHECK(n == 1 && out[0] == 0, "ff -> every key after");
	n = ks_etcd_prefix_end("", 0, out);
	CHECK(n == 1 && out[0] == 0, "empty -> every key");
	kt_end();
}

#define HDR                                                                    \
	"\"header\":{\"cluster_id\":\"15118495548433857066\",\"member_id\":\"13668033151171901709\",\"revision\":\"5\",\"raft_term\":\"2\"}"

static void t_answers(void)
{
	struct ks_etcd_range r;
	int64_t rev, del, cur, id, ttl;
	char err[256], tok[64], ver[16];
	int won, rc;

	kt_begin("etcd_decode_answers");
	rc = ks_etcd_decode_range(
		S("{" HDR
		  ",\"kvs\":[{\"key\":\"Zm9v\",\"create_revision\":\"2\","
		  "\"mod_revision\":\"3\",\"version\":\"2\",\"value\":\"YmF6\","
		  "\"lease\":\"4111120366240277770\"},{\"key\":\"Zm9w\",\"mod_revision\":\"4\"}],"
		  "\"count\":\"2\"}"),
		&r, err, sizeof(err));
	CHECK(!rc && r.revision == 5 && r.count == 2 && r.n == 2,
	      "range: %d %s", rc, err);
	if (!rc && r.n == 2) {
		CHECK(r.kvs[0].key_len == 3 && !strcmp(r.kvs[0].key, "foo") &&
			      !strcmp(r.kvs[0].value, "baz") &&
			      r.kvs[0].create_revision == 2 &&
			      r.kvs[0].mod_revision == 3 &&
			      r.kvs[0].version == 2 &&
			      r.kvs[0].lease == 4111120366240277770LL,
		      "kv 0");
		/* proto3 leaves out an empty value and zero numbers */
		CHECK(!strcmp(r.kvs[1].key, "fop") && r.kvs[1].value_len == 0 &&
			      r.kvs[1].value && r.kvs[1].lease == 0,
		      "kv 1");
	}
	ks_etcd_range_free(&r);
	rc = ks_etcd_decode_range(S("{" HDR "}"), &r, err, sizeof(err));
	CHECK(!rc && r.n == 0 && r.revision == 5 && !r.kvs, "empty range: %d",
	      rc);
	CHECK(ks_etcd_decode_range(S("{" HDR ",\"kvs\":[{\"key\":\"!!\"}]}"),
				   &r, err, sizeof(err)) == -EBADMSG &&
		      strstr(err, "base64"),
	      "bad base64: %s", err);
	CHECK(ks_etcd_decode_range(S("{" HDR ",\"count\":\"12x\"}"), &r, err,
				   sizeof(err)) == -EBADMSG &&
		      strstr(err, "count"),
	      "bad number: %s", err);
	CHECK(ks_etcd_decode_range(S("{\"kvs\":[]}"), &r, err, sizeof(err)) ==
			      -EBADMSG &&
		      strstr(err, "no header"),
	      "no header: %s", err);
	CHECK(ks_etcd_decode_range(S("<html>"), &r, err, sizeof(err)) ==
			      -EBADMSG &&
		      strstr(err, "not JSON"),
	      "not JSON: %s", err);
	CHECK(ks_etcd_decode_range(S("[1]"), &r, err, sizeof(err)) == -EBADMSG,
	      "not an object");

	rc = ks_etcd_decode_revision(S("{" HDR ",\"deleted\":\"3\"}"), &rev,
				     &del, err, sizeof(err));
	CHECK(!rc && rev == 5 && del == 3, "deleterange: %d", rc);
	rc = ks_etcd_decode_revision(S("{" HDR "}"), &rev, &del, err,
				     sizeof(err));
	CHECK(!rc && del == 0, "deleted absent is 0");

	rc = ks_etcd_decode_txn(
		S("{" HDR
		  ",\"succeeded\":true,\"responses\":[{\"response_put\":"
		  "{\"header\":{\"revision\":\"5\"}}}]}"),
		&won, &rev, &cur, err, sizeof(err));
	CHECK(!rc && won && rev == 5, "txn won: %d", rc);
	rc = ks_etcd_decode_txn(
		S("{" HDR ",\"responses\":[{\"response_range\":{\"header\":"
		  "{\"revision\":\"5\"},\"kvs\":[{\"key\":\"Zm9v\",\"create_revision\":\"2\","
		  "\"mod_revision\":\"3\",\"version\":\"2\"}],\"count\":\"1\"}}]}"),
		&won, &rev, &cur, err, sizeof(err));
	CHECK(!rc && !won && cur == 3, "txn lost: %d won %d cur %lld", rc, won,
	      (long long)cur);
	rc = ks_etcd_decode_txn(
		S("{" HDR ",\"responses\":[{\"response_range\":{\"header\":"
		  "{\"revision\":\"5\"}}}]}"),
		&won, &rev, &cur, err, sizeof(err));
	CHECK(!rc && !won && cur == 0, "txn lost, key absent: %d", rc);
	CHECK(ks_etcd_decode_txn(S("{" HDR "}"), &won, &rev, &cur, err,
				 sizeof(err)) == -EBADMSG,
	      "txn lost without the range");

	rc = ks_etcd_decode_lease(
		S("{" HDR ",\"ID\":\"4111120366240277770\",\"TTL\":\"5\"}"),
		&id, &ttl, err, sizeof(err));
	CHECK(!rc && id == 4111120366240277770LL && ttl == 5, "grant: %d", rc);
	rc = ks_etcd_decode_lease(
		S("{\"result\":{" HDR ",\"ID\":\"7\",\"TTL\":\"30\"}}\n"), &id,
		&ttl, err, sizeof(err));
	CHECK(!rc && id == 7 && ttl == 30, "keepalive: %d", rc);
	rc = ks_etcd_decode_lease(S("{\"result\":{" HDR ",\"ID\":\"7\"}}"), &id,
				  &ttl, err, sizeof(err));
	CHECK(!rc && ttl == 0, "keepalive of a gone lease: TTL left out");

	rc = ks_etcd_decode_token(
		S("{" HDR ",\"token\":\"FzTeSpAHRyfUyDEt.24\"}"), tok,
		sizeof(tok), err, sizeof(err));
	CHECK(!rc && !strcmp(tok, "FzTeSpAHRyfUyDEt.24"), "token: %d", rc);
	CHECK(ks_etcd_decode_token(S("{" HDR "}"), tok, sizeof(tok), err,
				   sizeof(err)) == -EBADMSG,
	      "no token");
	rc = ks_etcd_decode_status(
		S("{" HDR ",\"version\":\"3.4.23\",\"dbSize\":\"20480\"}"), ver,
		sizeof(ver), err, sizeof(err));
	CHECK(!rc && !strcmp(ver, "3.4.23"), "status: %d", rc);
	kt_end();
}

static void t_errors(void)
{
	static const struct {
		const char *body;
		long status;
		int want;
		const char *word;
	} e[] = {
		{ "{\"error\":\"etcdserver: invalid auth token\",\"message\":\"etcdserver: invalid auth token\",\"code\":16}",
		  401, -EKEYEXPIRED, "invalid auth token" },
		{ "{\"error\":\"etcdserver: authentication failed, invalid user ID or password\",\"message\":\"etcdserver: authentication failed, invalid user ID or password\",\"code\":3}",
		  400, -EACCES, "user and password" },
		{ "{\"error\":\"etcdserver: user name is empty\",\"message\":\"etcdserver: user name is empty\",\"code\":3}",
		  400, -EACCES, "no user was given" },
		{ "{\"error\":\"etcdserver: requested lease not found\",\"message\":\"etcdserver: requested lease not found\",\"code\":5}",
		  404, -ENOENT, "lease not found" },
		{ "{\"error\":\"etcdserver: permission denied\",\"message\":\"etcdserver: permission denied\",\"code\":7}",
		  403, -EPERM, "permission denied" },
		{ "{\"error\":\"mvcc: required revision has been compacted\",\"message\":\"mvcc: required revision has been compacted\",\"code\":11}",
		  400, -ERANGE, "compacted" },
		{ "{\"error\":\"etcdserver: no leader\",\"message\":\"etcdserver: no leader\",\"code\":14}",
		  503, -EAGAIN, "no leader" },
		{ "{\"error\":\"unexpected EOF\",\"message\":\"unexpected EOF\",\"code\":3}",
		  400, -EINVAL, "unexpected EOF" },
		{ "{\"error\":\"x\",\"message\":\"odd\",\"code\":13}", 500,
		  -EPROTO, "code 13" },
		{ "Not Found\n", 404, -EBADMSG, "HTTP 404" },
		{ "", 502, -EBADMSG, "no body" },
		{ "{\"code\":2}", 500, -EBADMSG, "without an error message" },
	};
	char err[256];
	unsigned i;

	kt_begin("etcd_decode_errors");
	for (i = 0; i < sizeof(e) / sizeof(e[0]); i++) {
		int rc = ks_etcd_decode_error(S(e[i].body), e[i].status, err,
					      sizeof(err));

		CHECK(rc == e[i].want && strstr(err, e[i].word),
		      "%u: rc %d '%s' (want %d '%s')", i, rc, err, e[i].want,
		      e[i].word);
	}
	kt_end();
}

static void t_watch_stream(void)
{
	const char stream[] =
		"{\"result\":{" HDR ",\"created\":true}}\n"
		"{\"result\":{" HDR
		",\"events\":[{\"kv\":{\"key\":\"Zm9v\",\"create_revision\":\"2\","
		"\"mod_revision\":\"2\",\"version\":\"1\",\"value\":\"YmFy\"}},{\"type\":\"DELETE\","
		"\"kv\":{\"key\":\"Zm9v\",\"mod_revision\":\"7\"},\"prev_kv\":{\"key\":\"Zm9v\"}}]}}\n"
		"{\"result\":{\"header\":{\"cluster_id\":\"1\",\"raft_term\":\"2\"},\"canceled\":true,"
		"\"compact_revision\":\"5\"}}\n";
	struct ks_etcd_watch_msg m;
	char err[256];
	size_t used, pos = 0, cut;
	int rc, whole = 1;

	kt_begin("etcd_decode_watch_stream");
	rc = ks_etcd_decode_watch(stream, sizeof(stream) - 1, &used, &m, err,
				  sizeof(err));
	CHECK(rc == 1 && m.created && !m.canceled && m.revision == 5 &&
		      m.n == 0,
	      "created: %d %s", rc, err);
	ks_etcd_watch_msg_free(&m);
	pos = used;
	rc = ks_etcd_decode_watch(stream + pos, sizeof(stream) - 1 - pos, &used,
				  &m, err, sizeof(err));
	CHECK(rc == 1 && m.n == 2, "events: %d n %zu %s", rc, m.n, err);
	if (rc == 1 && m.n == 2) {
		CHECK(m.events[0].type == KS_ETCD_EV_PUT &&
			      !strcmp(m.events[0].kv.value, "bar") &&
			      m.events[0].kv.mod_revision == 2,
		      "put event");
		CHECK(m.events[1].type == KS_ETCD_EV_DELETE &&
			      !strcmp(m.events[1].kv.key, "foo") &&
			      m.events[1].kv.mod_revision == 7,
		      "delete event");
	}
	ks_etcd_watch_msg_free(&m);
	pos += used;
	rc = ks_etcd_decode_watch(stream + pos, sizeof(stream) - 1 - pos, &used,
				  &m, err, sizeof(err));
	CHECK(rc == 1 && m.canceled && m.compact_revision == 5, "canceled: %d",
	      rc);
	ks_etcd_watch_msg_free(&m);
	pos += used;
	rc = ks_etcd_decode_watch(stream + pos, sizeof(stream) - 1 - pos, &used,
				  &m, err, sizeof(err));
	CHECK(rc == 0 && used == 0, "only a newline left: %d", rc);
	/* cut anywhere inside the first object: "not yet", never an error */
	for (cut = 0; cut < strlen("{\"result\":{" HDR ",\"created\":true}}");
	     cut++) {
		rc = ks_etcd_decode_watch(stream, cut, &used, &m, err,
					  sizeof(err));
		if (rc != 0 || used)
			whole = 0;
		if (rc > 0)
			ks_etcd_watch_msg_free(&m);
	}
	CHECK(whole, "a cut object decoded as something (cut %zu: %d %s)", cut,
	      rc, err);
	rc = ks_etcd_decode_watch(
		S("{\"error\":{\"grpc_code\":16,\"http_code\":401,\"message\":"
		  "\"etcdserver: invalid auth token\",\"code\":16}}"),
		&used, &m, err, sizeof(err));
	CHECK(rc == -EKEYEXPIRED && used > 0, "stream error: %d %s", rc, err);
	rc = ks_etcd_decode_watch(
		S("{\"result\":{" HDR ",\"events\":[{\"type\":\"PATCH\"}]}}"),
		&used, &m, err, sizeof(err));
	CHECK(rc == -EBADMSG && strstr(err, "unknown type"),
	      "bad event type: %d %s", rc, err);
	rc = ks_etcd_decode_watch(S("]oops"), &used, &m, err, sizeof(err));
	CHECK(rc == -EBADMSG, "garbage: %d", rc);
	kt_end();
}

void test_etcd_codec(void)
{
	t_endpoints();
	t_base64();
	t_prefix_end();
	t_answers();
	t_errors();
	t_watch_stream();
}
