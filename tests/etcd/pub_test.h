/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* pub_test.h - the publisher's tests (pub_test.c), run by etcd_test. */
#ifndef KS_PUB_TEST_H
#define KS_PUB_TEST_H

void t_pub(const char *plain);
void t_pub_keeper(const char *plain);
void t_pub_ordered(const char *plain);

#endif
