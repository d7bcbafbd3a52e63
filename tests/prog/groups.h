/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* groups.h - the program-test groups main() runs, one file each. */
#ifndef KS_TEST_GROUPS_H
#define KS_TEST_GROUPS_H

void t_setup_group(void);      /* t_setup.c: loading, pinning, builder */
void t_encap_group(void);      /* t_encap.c: L2/L3/L4 encapsulations */
void t_text_group(void);       /* t_text.c: text and meta commands */
void t_binary_group(void);     /* t_binary.c: binary protocol */
void t_pipeline_group(void);   /* t_pipeline.c: pipelining, big requests */
void t_stream_group(void);     /* t_stream.c: TCP streams across segments */
void t_ports_group(void);      /* t_ports.c: watched ports */
void t_sampling_group(void);   /* t_sampling.c: sampling, epochs, cands */
void t_slog_group(void);       /* t_slog.c: the sample log */
void t_malformed_group(void);  /* t_malformed.c: truncation, lies, garbage */
void t_trace_group(void);      /* t_trace.c: ks_events */
void t_fastpath_group(void);   /* t_fastpath.c: lone-get fast path */
void t_ring_group(void);       /* t_ring.c: keys placed on the ring */
void t_ring_swap_group(void);  /* t_ring_swap.c: ring swaps under load */
void t_ring_cache_group(void); /* t_ring_cache.c: ring hash cache */
void t_place_group(void);      /* t_place.c: 1 in P sampled keys placed */
void t_dedicated_group(void);  /* t_dedicated.c: shard rules' counting */
void t_key_run_group(void);    /* t_key_run.c: multi-get key runs */
void t_fuzz_found_group(void); /* t_fuzz_found.c: fuzzer findings */
void t_hot_group(void);        /* t_hot.c: hot-key slots, dirty on write */
void t_reply_group(void);      /* t_reply.c: the owner's replies, egress */
void t_limit_group(void);      /* t_limit.c: per-key rate limits */
void t_stack_group(void);      /* t_stack.c: the BPF stack's headroom */
void t_steer_group(void);      /* t_hot.c: steering (own netns; last) */

#endif
