/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* clients_compat.h - the rings of libmemcached's unweighted ketama and
 * modula, dalli and spymemcached against the clients' own code. */
#ifndef KS_CLIENTS_COMPAT_H
#define KS_CLIENTS_COMPAT_H

void ks_clients_compat(void);

#endif
