/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * load.h - ks_load, the memcached load generator: its options, its
 * per-thread state and the text-protocol exchanges (TCP and UDP) it runs.
 * Messages on stderr read "ks_load: <what is wrong>; <what to do>".
 */
#ifndef KS_LOAD_H
#define KS_LOAD_H

#include <stdio.h>
#include <netinet/in.h>
#include <pthread.h>
#include "ks_ring.h"
#include "core/ring.h"
#include "core/shards.h"
#include "hist.h"
#include "zipf.h"

#define LD_MAX_FLASH     8
#define LD_MAX_CONNS     256
#define LD_MAX_MGET      100
#define LD_MAX_VALUE     (1U << 20)
#define LD_UDP_MAX_REQ   65000 /* one datagram: memcached takes no more */
#define LD_UDP_HDR       8
#define LD_MAX_SOURCES   64 /* distinct UDP reply sources kept per thread */
#define LD_PRELOAD_BATCH 64 /* sets pipelined per round trip in --preload */

enum ld_op {
	LD_GET,
	LD_MGET,
	LD_SET,
	LD_NOPS
};
enum ld_proto {
	LD_TCP,
	LD_UDP,
	LD_NPROTO
};
/* Which protocol each op uses: all TCP, all UDP, or the classic split of
 * reads over UDP and writes over TCP. */
enum ld_mode {
	LD_MODE_TCP,
	LD_MODE_UDP,
	LD_MODE_UDP_GETS
};

struct ld_flash {
	char key[KS_MAX_KEY_LEN + 1];
	double share;
};

struct ld_cfg {
	struct ks_ring_spec ring; /* list/file from --shards/--shards-file */
	const char *server;       /* --server host:port instead of a ring */
	__u32 keys;
	double zipf;
	__u64 seed;
	struct ld_flash flash[LD_MAX_FLASH];
	int nflash;
	__u32 mix[LD_NOPS]; /* weights */
	__u32 mget_size;
	__u32 value_size;
	__u32 duration_ms; /* 0: none */
	__u64 count;       /* 0: none */
	__u64 rate;        /* requests/s over all connections; 0: max */
	__u32 conns;
	__u32 timeout_ms;
	enum ld_mode mode;
	const char *prefix;
	const char *exact_file;
	int json;
	int preload; /* set every key once over TCP first */
};

/* 0, or 2 after printing the reason (exit status for bad flags); 1 when
 * --help was printed (exit 0). */
int ld_parse_args(int argc, char **argv, struct ld_cfg *cfg);
void ld_usage(FILE *f);
const char *ld_op_name(int op);
const char *ld_proto_name(int proto);
const char *ld_mode_name(enum ld_mode m);

struct ld_opstat {
	__u64 ops;      /* operations (an mget is one, whatever its shards) */
	__u64 msgs;     /* commands sent (an mget sends one per shard) */
	__u64 keys;     /* keys in the commands sent */
	__u64 hits;     /* VALUE lines seen (UDP: first datagram only) */
	__u64 errors;   /* send/receive failures and unexpected replies */
	__u64 timeouts; /* of which: no reply within --timeout */
	__u64 refused;  /* answered SERVER_ERROR (a rate limit): not errors,
			 * no latency counted */
	struct ks_hist lat; /* ns per operation, errors excluded */
};

struct ld_shard_stat {
	__u64 get_keys;
	__u64 set_keys;
};

/* A shard's or a reply's address, IPv4 or IPv6. */
union ld_addr {
	struct sockaddr sa;
	struct sockaddr_in v4;
	struct sockaddr_in6 v6;
};

static inline socklen_t ld_addr_len(const union ld_addr *a)
{
	return a->sa.sa_family == AF_INET6 ? sizeof(a->v6) : sizeof(a->v4);
}

/* Same address and port (an IPv6 one's scope and flow label aside). */
int ld_addr_same(const union ld_addr *a, const union ld_addr *b);
/* "a.b.c.d:port" or "[v6]:port". */
void ld_addr_text(const union ld_addr *a, char *buf, size_t len);

/*
 * UDP replies by the address they came from. With XDP steering a request
 * sent to a shard is answered by one of its replicas: such a reply is
 * "steered" (its source differs from the request's destination).
 */
struct ld_source {
	union ld_addr sa;
	__u64 replies;
};

struct ld_sources {
	struct ld_source v[LD_MAX_SOURCES];
	__u32 n;
	__u64 other; /* replies from sources past LD_MAX_SOURCES */
	__u64 steered;
	__u64 first_steered_ns; /* CLOCK_MONOTONIC; 0: none yet */
};

void ld_sources_add(struct ld_sources *s, const union ld_addr *sa, __u64 n);
void ld_sources_merge(struct ld_sources *dst, const struct ld_sources *src);

struct ld_shard_addr {
	union ld_addr sa;
	char name[KS_SHARD_HOST_MAX + 8];
};

/* Shared by all threads, read-only once the run starts. */
struct ld_run {
	const struct ld_cfg *cfg;
	struct ks_ring ring;
	struct ks_shards shards;
	struct ld_shard_addr *addr;
	__u32 nshards;
	int use_ring;
	struct ks_zipf zipf;
	double flash_cum[LD_MAX_FLASH];
	__u32 mix_total;
	char *value;                    /* value_size bytes */
	__u64 *exact_gets, *exact_sets; /* keys + nflash, when --exact-counts */
	__u64 start_ns, deadline_ns;
	volatile int stop;
};

/* One per connection thread: its sockets to every shard, buffers, stats. */
struct ld_worker {
	struct ld_run *run;
	pthread_t tid;
	__u32 idx;
	struct ks_rng rng;
	int *tcp_fd, *udp_fd; /* per shard, -1 until first use */
	__u16 reqid;
	char *out; /* request being built */
	size_t outcap;
	char *in; /* TCP receive buffer */
	size_t in_r, in_w, incap;
	__u64 quota; /* ops this thread may send; 0: no limit */
	struct ld_opstat st[LD_NOPS][LD_NPROTO];
	struct ld_shard_stat *shard;
	struct ld_sources src; /* UDP replies by source */
};

__u64 ld_now_ns(void);

/* Key id 0..keys-1 is "<prefix><id + 1>", then the flash keys: its name
 * (NUL-terminated, KS_MAX_KEY_LEN + 1 bytes) and length. */
size_t ld_key_name(const struct ld_run *run, __u32 id, char *buf);
/* The shard the clients' ring gives the key (0 with --server). */
__u32 ld_shard_of(const struct ld_run *run, const char *key, size_t len);

int ld_worker_init(struct ld_worker *w, struct ld_run *run, __u32 idx,
		   __u64 quota);
void ld_worker_free(struct ld_worker *w);

/*
 * --preload: sets every key (Zipf keys and flash keys) once, over TCP, to
 * its owner, with the run's value size, pipelining LD_PRELOAD_BATCH sets
 * per round trip, on min(conns, shards) threads. 0, or -EIO after writing
 * the reason into err. *secs gets the time it took.
 */
/* A run's figures: the threads' counters summed. */
struct ld_totals {
	struct ld_opstat st[LD_NOPS][LD_NPROTO];
	struct ld_shard_stat *shard; /* nshards */
	struct ld_sources src;
	double secs;
	double preload_secs;
};

void ld_sum_workers(const struct ld_run *run, struct ld_worker *ws, __u32 n,
		    struct ld_totals *t);
void ld_print_table(const struct ld_run *run, const struct ld_totals *t);
void ld_print_json(const struct ld_run *run, const struct ld_totals *t);
/* The --exact-counts file; 0 or -1 after printing why. */
int ld_write_exact(const struct ld_run *run);

int ld_preload(struct ld_run *run, double *secs, char *err, size_t errlen);

/*
 * One request/reply on shard sh: cmd[0..len) is sent whole; for gets the
 * reply's VALUE lines are counted in *hits. 0, -ETIMEDOUT or -EIO. UDP
 * sockets are unconnected: the reply is taken from whichever address sends
 * a datagram with the request's id, and counted in w->src.
 */
int ld_tcp_send(struct ld_worker *w, __u32 sh, const char *cmd, size_t len);
int ld_tcp_reply(struct ld_worker *w, __u32 sh, int is_get, __u64 *hits);
int ld_udp_send(struct ld_worker *w, __u32 sh, __u16 id, const char *cmd,
		size_t len);
int ld_udp_reply(struct ld_worker *w, __u32 sh, __u16 id, int is_get,
		 __u64 *hits);
void ld_worker_close(struct ld_worker *w);

#endif
