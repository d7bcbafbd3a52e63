/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * log.h - the agent's one levelled logger. Everything goes to stderr so
 * stdout stays clean for reports and trace lines. libbpf's own messages are
 * routed through the same levels by ks_log_init() (dp/bpf_log.h).
 */
#ifndef KS_LOG_H
#define KS_LOG_H

enum ks_log_level {
	KS_LOG_ERROR = 0,
	KS_LOG_WARN,
	KS_LOG_INFO,
	KS_LOG_DEBUG,
};

void ks_log_set_level(enum ks_log_level level);
enum ks_log_level ks_log_level(void);
void ks_log(enum ks_log_level level, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/*
 * Errors read "agent: <what is wrong>; <what to do>": the caller passes
 * both halves in fmt so every message keeps that shape.
 */
#define ks_err(...)   ks_log(KS_LOG_ERROR, __VA_ARGS__)
#define ks_warn(...)  ks_log(KS_LOG_WARN, __VA_ARGS__)
#define ks_info(...)  ks_log(KS_LOG_INFO, __VA_ARGS__)
#define ks_debug(...) ks_log(KS_LOG_DEBUG, __VA_ARGS__)

#endif
