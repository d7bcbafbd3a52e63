/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * sig.h - SIGINT/SIGTERM only set a flag; loops check it and sleep in a
 * way a signal cuts short, so the exit path (detach, clear trace) always
 * runs.
 */
#ifndef KS_SIG_H
#define KS_SIG_H

#include <signal.h>
#include <linux/types.h>

extern volatile sig_atomic_t ks_stop;
/* Set by SIGHUP once ks_install_reload_handler() ran; cleared by whoever
 * acts on it. */
extern volatile sig_atomic_t ks_reload;

/* Installs the flag-setting handlers and ignores SIGPIPE. */
void ks_install_stop_handlers(void);
/* SIGHUP sets ks_reload instead of ending the process. */
void ks_install_reload_handler(void);

/* Sleeps until the monotonic deadline (ks_mono_ns(), util/clock.h) or
 * ks_stop; returns !ks_stop. */
int ks_sleep_until(__u64 deadline_ns);

#endif
