/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * stack_margin.h - the BPF stack every call chain of every program must
 * leave unused under the kernel's 512 bytes (issue 27: the sampled get's
 * chain with a ring loaded once stood at 512 exactly, and the next byte
 * anywhere on it would have been refused at load). t_stack.c checks it
 * with a copy of the object that has this many bytes more in each
 * program's frame (the Makefile builds it with -include of this file).
 */
#ifndef KS_STACK_MARGIN_H
#define KS_STACK_MARGIN_H

#define KS_STACK_MARGIN 64

#endif
