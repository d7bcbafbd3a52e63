// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * ring_clients.c - the --client presets. Each line was checked against
 * the client itself (tests/compat: pylibmc, php-memcached, dalli and
 * spymemcached run; libmemcached's behaviours read back with
 * memcached_behavior_get): a client's default is often not what its
 * documentation's examples set.
 */
#include <stdio.h>
#include <string.h>
#include "core/ring_clients.h"
#include "core/ring_dist.h"

const struct ks_client_preset ks_client_presets[] = {
	{ "libmemcached", "no behaviour set (modula, one_at_a_time)",
	  KS_DIST_MODULA_OAAT },
	{ "libmemcached-ketama",
	  "MEMCACHED_BEHAVIOR_KETAMA, or DISTRIBUTION = CONSISTENT",
	  KS_DIST_KETAMA_PLAIN },
	{ "libmemcached-weighted", "MEMCACHED_BEHAVIOR_KETAMA_WEIGHTED",
	  KS_DIST_KETAMA },
	{ "pylibmc", "no behaviors (modula)", KS_DIST_MODULA_OAAT },
	{ "pylibmc-ketama", "behaviors={\"ketama\": True}",
	  KS_DIST_KETAMA_PLAIN },
	{ "pylibmc-ketama-weighted", "behaviors={\"ketama_weighted\": True}",
	  KS_DIST_KETAMA },
	{ "php-memcached", "no options (modula)", KS_DIST_MODULA_OAAT },
	{ "php-memcached-consistent",
	  "OPT_DISTRIBUTION = DISTRIBUTION_CONSISTENT", KS_DIST_KETAMA_PLAIN },
	{ "php-memcached-libketama", "OPT_LIBKETAMA_COMPATIBLE = true",
	  KS_DIST_KETAMA },
	{ "dalli", "Dalli::Client (weights as host:port:weight)",
	  KS_DIST_DALLI },
	{ "spymemcached", "KetamaConnectionFactory (format SPYMEMCACHED)",
	  KS_DIST_SPY },
	{ "spymemcached-libmemcached",
	  "KetamaConnectionFactory, format LIBMEMCACHED", KS_DIST_SPY_LIBMC },
	{ "twemproxy", "distribution: ketama, hash: fnv1a_64",
	  KS_DIST_TWEMPROXY },
	{ "twemproxy-md5", "distribution: ketama, hash: md5",
	  KS_DIST_TWEMPROXY_MD5 },
	{ "pymemcache", "HashClient, str keys", KS_DIST_PYMEMCACHE },
	{ "pymemcache-bytes", "HashClient, bytes keys",
	  KS_DIST_PYMEMCACHE_BYTES },
	{ NULL, NULL, 0 },
};

const struct ks_client_preset *ks_client_find(const char *s, char *err,
					      size_t errlen)
{
	const struct ks_client_preset *p;
	size_t off;

	for (p = ks_client_presets; p->name; p++)
		if (s && !strcmp(s, p->name))
			return p;
	off = (size_t)snprintf(err, errlen, "unknown client '%s'; use one of",
			       s ? s : "");
	for (p = ks_client_presets; p->name && off < errlen; p++)
		off += (size_t)snprintf(err + off, errlen - off, "%s %s",
					p == ks_client_presets ? "" : ",",
					p->name);
	return NULL;
}
