// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * file.c - a whole small file into memory (see file.h).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include "util/file.h"

int ks_read_file(const char *path, size_t max, char **buf, size_t *len)
{
	FILE *f = fopen(path, "r");
	char *b;
	size_t n;
	int rc = 0;

	*buf = NULL;
	*len = 0;
	if (!f)
		return -errno;
	b = malloc(max + 1);
	if (!b) {
		fclose(f);
		return -ENOMEM;
	}
	n = fread(b, 1, max + 1, f);
	if (ferror(f))
		rc = -EIO;
	else if (n > max)
		rc = -EFBIG;
	fclose(f);
	if (rc) {
		free(b);
		return rc;
	}
	b[n] = '\0';
	*buf = b;
	*len = n;
	return 0;
}
