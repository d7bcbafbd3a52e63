/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * file.h - reading a small file (a pin file, a shard list, a config file)
 * whole into memory, with a size limit, for the parsers that take a
 * buffer.
 */
#ifndef KS_FILE_H
#define KS_FILE_H

#include <stddef.h>

/*
 * Reads a whole file of at most max bytes into a NUL-terminated buffer
 * (*buf, freed by the caller; *len bytes before the NUL). Returns 0 or
 * -errno: open's own, -EIO on a read error, -EFBIG past max, -ENOMEM.
 * Callers say what the file was for in their own error message.
 */
int ks_read_file(const char *path, size_t max, char **buf, size_t *len);

#endif
