// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * t_thread.c - the agent's worker threads (user/util/thread.c): a thread
 * from ks_thread_start blocks SIGINT, SIGTERM and SIGHUP and has dropped
 * its capabilities to what it keeps (bounding set too, no_new_privs)
 * before its function runs (named already), while the starting thread
 * keeps its own; its nice value is set before the drop; --thread-caps
 * keep (the e2e control) leaves it the starter's. And the drop's plan
 * (privs.c), pure.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include "ktest.h"
#include "util/privs.h"
#include "util/thread.h"
#include "unit.h"

#define ALL_CAPS ((1ULL << 41) - 1) /* CAP_CHOWN .. CAP_CHECKPOINT_RESTORE */

static void plan_cases(void)
{
	struct ks_caps_plan p;
	unsigned long long agent = KS_CAP(CAP_BPF) | KS_CAP(CAP_NET_ADMIN);

	/* started before the agent's drop: everything, CAP_SETPCAP too */
	ks_caps_plan(ALL_CAPS, ALL_CAPS, KS_CAP(CAP_BPF), 1, &p);
	CHECK_EQ(p.bnd_drop, ALL_CAPS & ~KS_CAP(CAP_BPF));
	CHECK_EQ(p.prm, KS_CAP(CAP_BPF));
	ks_caps_plan(ALL_CAPS, ALL_CAPS, 0, 1, &p);
	CHECK_EQ(p.bnd_drop, ALL_CAPS);
	CHECK_EQ(p.prm, 0);
	/* after it: the agent's sets and no CAP_SETPCAP, so the bounding
	 * set stays the agent's (dropping would fail with EPERM) */
	ks_caps_plan(agent, agent, KS_CAP(CAP_BPF), 0, &p);
	CHECK_EQ(p.bnd_drop, 0);
	CHECK_EQ(p.prm, KS_CAP(CAP_BPF));
	/* keep names one it no longer has: never asked for (capset would
	 * refuse a permitted set that grows) */
	ks_caps_plan(agent, KS_CAP(CAP_BPF), agent | KS_CAP(CAP_SYS_ADMIN), 0,
		     &p);
	CHECK_EQ(p.prm, KS_CAP(CAP_BPF));
	/* a process without capabilities (a unit test as a user) */
	ks_caps_plan(ALL_CAPS, 0, KS_CAP(CAP_BPF), 0, &p);
	CHECK_EQ(p.bnd_drop, 0);
	CHECK_EQ(p.prm, 0);
}

/* What a thread sees of itself. */
struct seen {
	unsigned long long eff, prm, inh;
	int bnd_bpf, bnd_net_admin, nnp;
	int blocked[3]; /* SIGINT, SIGTERM, SIGHUP */
	int nice;
	char name[16]; /* its comm, as it runs */
};

static const int sigs[3] = { SIGINT, SIGTERM, SIGHUP };

static void look(struct seen *s)
{
	struct __user_cap_header_struct hdr = {
		.version = _LINUX_CAPABILITY_VERSION_3, .pid = 0
	};
	struct __user_cap_data_struct d[2];
	sigset_t cur;
	int i;

	memset(s, 0, sizeof(*s));
	if (!syscall(SYS_capget, &hdr, d)) {
		s->eff = (unsigned long long)d[1].effective << 32 |
			 d[0].effective;
		s->prm = (unsigned long long)d[1].permitted << 32 |
			 d[0].permitted;
		s->inh = (unsigned long long)d[1].inheritable << 32 |
			 d[0].inheritable;
	}
	s->bnd_bpf = prctl(PR_CAPBSET_READ, CAP_BPF, 0, 0, 0) == 1;
	s->bnd_net_admin = prctl(PR_CAPBSET_READ, CAP_NET_ADMIN, 0, 0, 0) == 1;
	s->nnp = prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0);
	pthread_sigmask(SIG_BLOCK, NULL, &cur);
	for (i = 0; i < 3; i++)
		s->blocked[i] = sigismember(&cur, sigs[i]) == 1;
	errno = 0;
	s->nice = getpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid));
	prctl(PR_GET_NAME, s->name, 0, 0, 0);
}

static void *seen_main(void *arg)
{
	look(arg);
	return NULL;
}

/* Starts a thread that looks at itself; 0 and *s filled, or -errno. */
static int run(const struct ks_thread_opts *o, struct seen *s)
{
	pthread_t th;
	int err = ks_thread_start(&th, o, seen_main, s);

	if (!err)
		pthread_join(th, NULL);
	return err;
}

static void drops_and_blocks(void)
{
	struct ks_thread_opts o = { .name = "t-thread",
				    .keep = KS_CAP(CAP_BPF) };
	struct seen me, th, after;
	int i;

	look(&me);
	CHECK(me.prm & KS_CAP(CAP_BPF) && me.prm & KS_CAP(CAP_NET_ADMIN),
	      "the unit tests run without CAP_BPF and CAP_NET_ADMIN (%#llx): run as root",
	      me.prm);
	CHECK_EQ(run(&o, &th), 0);
	CHECK_EQ(th.eff, KS_CAP(CAP_BPF));
	CHECK_EQ(th.prm, KS_CAP(CAP_BPF));
	CHECK_EQ(th.inh, 0);
	CHECK(th.bnd_bpf && !th.bnd_net_admin,
	      "its bounding set: CAP_BPF %d, CAP_NET_ADMIN %d (want 1, 0)",
	      th.bnd_bpf, th.bnd_net_admin);
	CHECK_EQ(th.nnp, 1);
	CHECK(!strcmp(th.name, "t-thread"), "its name as it runs: '%s'",
	      th.name);
	for (i = 0; i < 3; i++)
		CHECK(th.blocked[i], "the thread does not block %s",
		      strsignal(sigs[i]));
	/* the starter is as it was: its sets, its mask */
	look(&after);
	CHECK_EQ(after.eff, me.eff);
	CHECK_EQ(after.prm, me.prm);
	CHECK_EQ(after.bnd_net_admin, me.bnd_net_admin);
	CHECK_EQ(after.nnp, me.nnp);
	for (i = 0; i < 3; i++)
		CHECK_EQ(after.blocked[i], me.blocked[i]);
}

static void nice_before_drop(void)
{
	/* a lower nice value than the process's takes CAP_SYS_NICE, which
	 * the thread has only before its drop */
	struct ks_thread_opts o = { .name = "t-nice", .nice = -5 };
	struct seen th;

	CHECK_EQ(run(&o, &th), 0);
	CHECK_EQ(th.nice, -5);
	CHECK_EQ(th.prm, 0);
}

static void control_keeps(void)
{
	struct ks_thread_opts o = { .name = "t-keep" };
	struct seen me, th;

	look(&me);
	ks_thread_test_keep_caps(1);
	CHECK_EQ(run(&o, &th), 0);
	ks_thread_test_keep_caps(0);
	/* the capabilities are the starter's; the mask is still blocked */
	CHECK_EQ(th.eff, me.eff);
	CHECK_EQ(th.prm, me.prm);
	CHECK(th.prm, "the starter has no capability to keep");
	CHECK(th.blocked[0] && th.blocked[1] && th.blocked[2],
	      "the control's thread does not block the signals");
}

void test_thread(void)
{
	kt_begin("thread_caps_plan");
	plan_cases();
	kt_end();
	kt_begin("thread_start_drops_caps_and_blocks_signals");
	drops_and_blocks();
	kt_end();
	kt_begin("thread_start_nice_before_drop");
	nice_before_drop();
	kt_end();
	kt_begin("thread_start_control_keeps_caps");
	control_keeps();
	kt_end();
}
