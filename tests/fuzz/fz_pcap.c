// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * fz_pcap.c - libFuzzer harness of the capture file reader (user/core/pcap.c):
 * the input is a whole file in a buffer of exactly its size. Every frame
 * handed out must lie inside the file or the reader's own frame buffer and
 * respect KS_PCAP_MAX_FRAME; records come in file order; an error is
 * final (every later call fails too) and its message is terminated.
 */
#include <stdbool.h>
#include "core/pcap.h"
#include "fz_common.h"

#define MAX_FRAMES 4096 /* a file of a few KiB holds far fewer */

static bool inside(const __u8 *p, __u32 n, const __u8 *base, size_t len)
{
	return p >= base && n <= len && (size_t)(p - base) <= len - n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct ks_pcap p;
	struct ks_pcap_pkt pkt;
	__u8 *buf = malloc(size ? size : 1);
	__u64 last_record = 0;
	size_t last_off = 0;
	volatile __u8 sum = 0;
	int rc = 0, i;
	__u32 k;

	FZ_CHECK(buf != NULL, "out of memory");
	memcpy(buf, data, size);
	if (ks_pcap_open(&p, size ? buf : NULL, size)) {
		FZ_CHECK(memchr(p.err, 0, sizeof(p.err)) && p.err[0],
			 "open failed without a message");
		goto out;
	}
	for (i = 0; i < MAX_FRAMES; i++) {
		memset(&pkt, 0xa5, sizeof(pkt));
		rc = ks_pcap_next(&p, &pkt);
		if (rc <= 0)
			break;
		FZ_CHECK(rc == 1, "ks_pcap_next returned %d", rc);
		FZ_CHECK(pkt.len <= KS_PCAP_MAX_FRAME, "frame of %u bytes",
			 pkt.len);
		FZ_CHECK(
			!pkt.len || inside(pkt.data, pkt.len, buf, size) ||
				inside(pkt.data, pkt.len, p.frame,
				       sizeof(p.frame)),
			"frame %d points outside the file and the frame buffer",
			i);
		FZ_CHECK(pkt.record > last_record, "record %llu after %llu",
			 (unsigned long long)pkt.record,
			 (unsigned long long)last_record);
		FZ_CHECK(pkt.offset >= last_off && pkt.offset < size,
			 "record offset %zu (last %zu, file %zu)", pkt.offset,
			 last_off, size);
		FZ_CHECK(pkt.dir <= KS_PCAP_DIR_OUT, "direction %d", pkt.dir);
		FZ_CHECK(ks_pcap_linktype_supported(pkt.linktype),
			 "a frame of unsupported link type %u", pkt.linktype);
		for (k = 0; k < pkt.len; k++) /* ASan checks every byte */
			sum += pkt.data[k];
		last_record = pkt.record;
		last_off = pkt.offset;
	}
	if (rc < 0) {
		FZ_CHECK(memchr(p.err, 0, sizeof(p.err)) && p.err[0],
			 "failed without a message");
		FZ_CHECK(ks_pcap_next(&p, &pkt) == -1,
			 "an error was not final");
	}
out:
	(void)sum;
	free(buf);
	return 0;
}
