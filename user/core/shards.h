/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * shards.h - the shard list a ring is built from: parsed from --shards
 * "host:port[:weight],..." or from a file with one "host:port[:weight]
 * [name]" per line ('#' starts a comment, blank lines are fine, a leading
 * "- " is allowed so a nutcracker.yml server list can be pasted). Errors
 * name the source, the line and the reason in err ("shards.txt:3: port
 * 70000 out of range 1..65535; ..."), for the caller to prefix "agent: ".
 *
 * Hosts are kept as given (IPv4 literal, host name, or an IPv6 literal in
 * brackets, "[2001:2::11]:11211", brackets kept): the clients hash
 * the string, so nothing is resolved here.
 */
#ifndef KS_SHARDS_H
#define KS_SHARDS_H

#include <stddef.h>
#include <linux/types.h>

#define KS_SHARD_HOST_MAX   255 /* a DNS name's limit */
#define KS_SHARD_NAME_MAX   255
#define KS_SHARD_WEIGHT_MAX 1000000
#define KS_SHARD_FILE_MAX   (1 << 20) /* bytes of a shard file */
#define KS_MEMCACHED_PORT   11211     /* the port the clients leave out */

struct ks_shard {
	char host[KS_SHARD_HOST_MAX + 1];
	char name[KS_SHARD_NAME_MAX + 1]; /* "" when none was given */
	__u16 port;
	__u32 weight; /* 1 when none was given */
	__u32 line;   /* source line; item number for flags */
};

/*
 * --self names a shard the ring does not have (a shard not yet added, or
 * removed): this host owns no key. Not an index and not KS_NO_SHARD, so
 * the datapath, which counts a key as misdirected when its owner is not
 * meta.self unless self is KS_NO_SHARD, counts every key placed here.
 */
#define KS_SELF_OUTSIDE 0xfffffffeU

struct ks_shards {
	struct ks_shard *v;
	__u32 n;
	__u32 self;       /* index of --self, KS_NO_SHARD, KS_SELF_OUTSIDE */
	char source[256]; /* "--shards" or the file's path, for messages */
};

/* "host:port[:weight],..." from a flag; what names the flag in messages. */
int ks_shards_parse_list(const char *what, const char *list,
			 struct ks_shards *out, char *err, size_t errlen);

/* The text of a shard file; source names it in messages. */
int ks_shards_parse_text(const char *source, const char *text,
			 struct ks_shards *out, char *err, size_t errlen);

/* Reads and parses a shard file. */
int ks_shards_load_file(const char *path, struct ks_shards *out, char *err,
			size_t errlen);

/* Marks "host:port" as this host's shard; it must be in the list. */
int ks_shards_set_self(struct ks_shards *s, const char *hostport, char *err,
		       size_t errlen);

/* Index of the shard with this host and port, or -1. */
int ks_shards_find(const struct ks_shards *s, const char *host, __u16 port);

/* "host:port" of a shard. */
void ks_shard_addr(const struct ks_shard *sh, char *buf, size_t len);

void ks_shards_free(struct ks_shards *s);

#endif
