// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * t_client_auth.c - libkeysteer's etcd credentials in a spec (api.c):
 * etcd_user= with etcd_password_file= (never a password in the spec, which
 * ends up in logs), etcd_ca=, etcd_cert=, etcd_key=. The refusals name
 * what is wrong and never the password; the words reach the etcd client,
 * shown by what a fake etcd is sent (the password in the authenticate
 * call) and, as the control, what it is sent without them.
 */
#include <errno.h>
#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include "client/client.h"
#include "ktest.h"
#include "unit.h"

#define SECRET "s3cret-pw-9137"

/* A file in TMPDIR holding text (NULL: none made); its path into path. */
static int temp_file(char *path, size_t len, const char *text)
{
	const char *dir = getenv("TMPDIR");
	int fd;

	snprintf(path, len, "%s/ks_auth_XXXXXX", dir && *dir ? dir : "/tmp");
	fd = mkstemp(path);
	if (fd < 0)
		return -errno;
	if (text && write(fd, text, strlen(text)) != (ssize_t)strlen(text)) {
		close(fd);
		unlink(path);
		return -EIO;
	}
	close(fd);
	return 0;
}

/* keysteer_open(spec): its return, its message into msg. */
static int open_msg(const char *spec, char *msg, size_t len)
{
	struct keysteer *ks = NULL;
	int rc = keysteer_open(&ks, spec);

	snprintf(msg, len, "%s", keysteer_errmsg(ks));
	keysteer_close(ks);
	return rc;
}

static void test_words_refused(void)
{
	static const struct {
		const char *spec, *want;
	} cases[] = {
		{ "servers=127.0.0.1:1 etcd_user=app etcd_password_file=/x",
		  "etcd_user= goes with etcd=URL,..." },
		{ "servers=127.0.0.1:1 etcd_ca=/x",
		  "etcd_ca= goes with etcd=URL,..." },
		{ "etcd=http://127.0.0.1:1 etcd_user=app",
		  "etcd_user=app needs etcd_password_file=PATH (a password is never given in a spec)" },
		{ "etcd=http://127.0.0.1:1 etcd_password_file=/x",
		  "etcd_password_file= needs etcd_user=NAME" },
		{ "etcd=http://127.0.0.1:1 etcd_user=app etcd_password=" SECRET,
		  "etcd_password= is not taken: a spec string ends up in logs; put the password on the first line of a file and give etcd_password_file=PATH" },
	};
	char msg[KSC_ERR_MAX];
	unsigned i;
	int rc;

	kt_begin("client_spec_etcd_auth_words_refused");
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		rc = open_msg(cases[i].spec, msg, sizeof(msg));
		CHECK(rc == -EINVAL && !strcmp(msg, cases[i].want),
		      "'%s': %d '%s'", cases[i].spec, rc, msg);
	}
	kt_end();
}

/* A password file holding text, named by a spec: refused with
 * "etcd_password_file=PATH" and then why. */
static void password_file_refused(const char *what, const char *text,
				  const char *why)
{
	char path[256], spec[512], msg[KSC_ERR_MAX], want[KSC_ERR_MAX];
	int rc;

	if (temp_file(path, sizeof(path), text)) {
		CHECK(0, "no temp file: %s", strerror(errno));
		return;
	}
	snprintf(spec, sizeof(spec),
		 "etcd=http://127.0.0.1:1 etcd_user=app etcd_password_file=%s",
		 path);
	rc = open_msg(spec, msg, sizeof(msg));
	snprintf(want, sizeof(want), "etcd_password_file=%s%s", path, why);
	CHECK(rc == -EINVAL && !strcmp(msg, want), "%s: %d '%s'", what, rc,
	      msg);
	unlink(path);
}

static void test_password_file_errors(void)
{
	char spec[512], msg[KSC_ERR_MAX];
	char big[600];
	int rc;

	kt_begin("client_spec_etcd_password_file_errors");
	/* absent: the path and the reason */
	snprintf(spec, sizeof(spec),
		 "etcd=http://127.0.0.1:1 etcd_user=app "
		 "etcd_password_file=/nonexistent/ks_pw");
	rc = open_msg(spec, msg, sizeof(msg));
	CHECK(rc == -EINVAL &&
		      !strcmp(msg,
			      "cannot read etcd_password_file=/nonexistent/ks_pw (No such file or directory); check the path and its mode"),
	      "absent: %d '%s'", rc, msg);
	/* empty, and a newline alone, are no password */
	password_file_refused("empty", "\n",
			      " is empty; put the password on its first line");
	/* a first line the reader cannot hold whole: refused, not cut
	 * (a cut one would be a wrong password), and not echoed */
	memset(big, 'q', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	password_file_refused("too long", big,
			      ": the first line is longer than 511 bytes");
	kt_end();
}

/* What the fake etcd saw: each request's first line and body. */
struct fake {
	int lfd, n;
	char line[4][128];
	char body[4][1024];
};

/* One request off fd, its body whole (Content-Length). */
static void read_request(int fd, char *line, size_t llen, char *body,
			 size_t blen)
{
	char buf[8192];
	size_t got = 0, need = 0;
	char *end = NULL, *cl;
	ssize_t r;

	line[0] = body[0] = '\0';
	while (got < sizeof(buf) - 1) {
		r = read(fd, buf + got, sizeof(buf) - 1 - got);
		if (r <= 0)
			break;
		got += (size_t)r;
		buf[got] = '\0';
		if (!end && (end = strstr(buf, "\r\n\r\n"))) {
			cl = strcasestr(buf, "\r\ncontent-length:");
			need = (size_t)(end + 4 - buf) +
			       (cl && cl < end ? strtoul(cl + 17, NULL, 10)
					       : 0);
		}
		if (end && got >= need)
			break;
	}
	buf[got] = '\0';
	snprintf(line, llen, "%.*s", (int)strcspn(buf, "\r\n"), buf);
	if (end)
		snprintf(body, blen, "%s", end + 4);
}

/* Answers every request as etcd 3.4 answers a wrong password. */
static void *fake_etcd(void *arg)
{
	static const char ans[] =
		"{\"error\":\"etcdserver: authentication failed, invalid user ID or password\",\"code\":3,"
		"\"message\":\"etcdserver: authentication failed, invalid user ID or password\"}";
	struct fake *f = arg;
	char out[512];
	int fd, n;

	while ((fd = accept(f->lfd, NULL, NULL)) >= 0) {
		if (f->n < 4) {
			read_request(fd, f->line[f->n], sizeof(f->line[0]),
				     f->body[f->n], sizeof(f->body[0]));
			f->n++;
		}
		n = snprintf(out, sizeof(out),
			     "HTTP/1.1 400 Bad Request\r\nContent-Type: "
			     "application/json\r\nContent-Length: %zu\r\n"
			     "Connection: close\r\n\r\n%s",
			     strlen(ans), ans);
		if (write(fd, out, (size_t)n) < 0)
			break;
		close(fd);
	}
	return NULL;
}

/* spec (with %u for the fake's port) opened against a fake etcd: the
 * open's return and message, what the fake saw in f. */
static int open_fake(const char *fmt, const char *pwfile, struct fake *f,
		     char *msg, size_t len)
{
	struct sockaddr_in sa = { .sin_family = AF_INET,
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t sl = sizeof(sa);
	char spec[512];
	pthread_t th;
	int rc;

	memset(f, 0, sizeof(*f));
	f->lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (f->lfd < 0 || bind(f->lfd, (struct sockaddr *)&sa, sizeof(sa)) ||
	    listen(f->lfd, 4) ||
	    getsockname(f->lfd, (struct sockaddr *)&sa, &sl) ||
	    pthread_create(&th, NULL, fake_etcd, f)) {
		snprintf(msg, len, "a fake etcd: %s", strerror(errno));
		if (f->lfd >= 0)
			close(f->lfd);
		return 1;
	}
	snprintf(spec, sizeof(spec), fmt, ntohs(sa.sin_port), pwfile);
	rc = open_msg(spec, msg, len);
	shutdown(f->lfd, SHUT_RDWR); /* wakes the accept */
	pthread_join(th, NULL);
	close(f->lfd);
	return rc;
}

/* Whether body is {"name": user, "password": pw}. */
static int auth_body(const char *body, const char *user, const char *pw)
{
	json_t *o = json_loads(body, 0, NULL);
	const char *n = json_string_value(json_object_get(o, "name"));
	const char *p = json_string_value(json_object_get(o, "password"));
	int ok = n && p && !strcmp(n, user) && !strcmp(p, pw);

	json_decref(o);
	return ok;
}

static void test_user_reaches_etcd(void)
{
	char path[256], msg[KSC_ERR_MAX];
	struct fake f;
	int rc;

	kt_begin("client_spec_etcd_user_authenticates");
	if (temp_file(path, sizeof(path), SECRET "\nsecond line\n")) {
		CHECK(0, "no temp file: %s", strerror(errno));
		kt_end();
		return;
	}
	rc = open_fake("etcd=http://127.0.0.1:%u cluster=auth "
		       "etcd_user=app etcd_password_file=%s",
		       path, &f, msg, sizeof(msg));
	CHECK(rc == -EACCES &&
		      strstr(msg, "etcd refused the user and password") &&
		      !strstr(msg, SECRET),
	      "open: %d '%s'", rc, msg);
	CHECK(f.n >= 1 &&
		      !strcmp(f.line[0],
			      "POST /v3/auth/authenticate HTTP/1.1") &&
		      auth_body(f.body[0], "app", SECRET),
	      "the first request: '%s' '%s'", f.n ? f.line[0] : "(none)",
	      f.n ? f.body[0] : "");
	/* the control: the same open without the words sends no login */
	rc = open_fake("etcd=http://127.0.0.1:%u cluster=auth%s", "", &f, msg,
		       sizeof(msg));
	CHECK(rc < 0 && f.n >= 1 &&
		      !strcmp(f.line[0], "POST /v3/kv/range HTTP/1.1") &&
		      !strstr(f.body[0], "password"),
	      "without etcd_user: %d '%s', first request '%s'", rc, msg,
	      f.n ? f.line[0] : "(none)");
	unlink(path);
	kt_end();
}

/* The TLS words reach the client's own checks (net/etcd.c). */
static void test_tls_words(void)
{
	char msg[KSC_ERR_MAX];
	int rc;

	kt_begin("client_spec_etcd_tls_words_taken");
	rc = open_msg("etcd=https://127.0.0.1:1 etcd_ca=/nonexistent/ca.pem",
		      msg, sizeof(msg));
	CHECK(rc == -EINVAL &&
		      !strcmp(msg,
			      "etcd=https://127.0.0.1:1: cannot read the etcd CA file '/nonexistent/ca.pem': No such file or directory"),
	      "etcd_ca=: %d '%s'", rc, msg);
	rc = open_msg("etcd=https://127.0.0.1:1 etcd_cert=/etc/hostname", msg,
		      sizeof(msg));
	CHECK(rc == -EINVAL && strstr(msg, "needs its key"),
	      "etcd_cert= alone: %d '%s'", rc, msg);
	rc = open_msg("etcd=http://127.0.0.1:1 etcd_ca=/etc/hostname", msg,
		      sizeof(msg));
	CHECK(rc == -EINVAL && strstr(msg, "the endpoints are http://"),
	      "etcd_ca= with http://: %d '%s'", rc, msg);
	kt_end();
}

void test_client_auth(void)
{
	test_words_refused();
	test_password_file_errors();
	test_user_reaches_etcd();
	test_tls_words();
}
