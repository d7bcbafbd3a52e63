// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * mc_key.c - the text protocol's key rule (see mc_key.h).
 */
#include <errno.h>
#include "core/mc_key.h"

int ks_mc_key_check(const __u8 *key, size_t klen)
{
	size_t i;

	if (!key || klen == 0 || klen > KS_MC_KEY_MAX)
		return -EINVAL;
	/* A space or control byte would end the key or the request line. */
	for (i = 0; i < klen; i++)
		if (key[i] <= ' ' || key[i] == 0x7f)
			return -EINVAL;
	return 0;
}
