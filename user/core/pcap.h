/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * pcap.h - a reader of capture files held in memory: classic pcap (either
 * byte order, microsecond or nanosecond timestamps) and pcapng (sections
 * of either byte order, several interfaces with their own link type and
 * timestamp resolution, enhanced/simple/obsolete packet blocks; every
 * other block skipped). Frames come out as Ethernet: Linux cooked
 * captures (SLL, SLL2, as 'tcpdump -i any' writes them) get an Ethernet
 * header made from their protocol field; other link types are refused.
 *
 * A pure function over a buffer: no I/O, no allocation, every length
 * checked against the buffer before it is used, so a damaged or hostile
 * file ends in an error message, never a read out of bounds. Errors read
 * "record N at byte B: <what>" (pcapng blocks and classic packet records
 * are numbered from 1; a classic file header error says "file header").
 */
#ifndef KS_PCAP_H
#define KS_PCAP_H

#include <stddef.h>
#include <linux/types.h>

/* Link types (tcpdump.org/linktypes.html) this reader turns into Ethernet. */
#define KS_LINKTYPE_ETHERNET   1
#define KS_LINKTYPE_LINUX_SLL  113
#define KS_LINKTYPE_LINUX_SLL2 276

/* Longest captured length accepted: libpcap's MAXIMUM_SNAPLEN. A record
 * claiming more is corrupt. */
#define KS_PCAP_MAX_FRAME 262144
/* Interfaces one pcapng section may describe. */
#define KS_PCAP_MAX_IFS 256
#define KS_PCAP_ERRLEN  256

enum ks_pcap_format {
	KS_PCAP_CLASSIC = 1,
	KS_PCAP_NG,
};

/* Which way a frame went, when the capture says (cooked header, pcapng
 * epb_flags); XDP sees only received frames. */
enum ks_pcap_dir {
	KS_PCAP_DIR_UNKNOWN = 0,
	KS_PCAP_DIR_IN,
	KS_PCAP_DIR_OUT,
};

struct ks_pcap_if {
	__u32 linktype;
	__u32 snaplen;  /* 0: no limit given */
	__u64 units;    /* timestamp units per second */
	__s64 offset_s; /* if_tsoffset: seconds added to every timestamp */
};

struct ks_pcap_pkt {
	const __u8 *data; /* the frame as Ethernet */
	__u32 len;        /* bytes at data */
	__u32 wire_len;   /* its length on the wire, as Ethernet */
	__u64 ts_ns;      /* nanoseconds since the epoch, if has_ts */
	int has_ts;       /* 0 for pcapng simple packet blocks */
	__u32 iface;      /* pcapng interface id; 0 in classic pcap */
	__u32 linktype;   /* as captured, before the Ethernet header was made */
	enum ks_pcap_dir dir;
	__u64 record;  /* record number (as in error messages) */
	size_t offset; /* byte offset of the record in the file */
};

struct ks_pcap {
	const __u8 *buf;
	size_t len;
	size_t off;   /* where the next record starts */
	__u64 record; /* number of the last record read */
	enum ks_pcap_format format;
	int big_endian; /* of the file, or of the current pcapng section */
	int nsec;       /* classic: nanosecond timestamps */
	int failed;     /* an error was met: every call fails */
	struct ks_pcap_if ifs[KS_PCAP_MAX_IFS]; /* classic: ifs[0] only */
	__u32 nifs;
	char err[KS_PCAP_ERRLEN];
	/* A cooked frame rebuilt as Ethernet; it is no longer than the
	 * captured bytes (14-byte header for a 16- or 20-byte one). */
	__u8 frame[KS_PCAP_MAX_FRAME];
};

/*
 * Starts reading buf (len bytes; buf may be NULL when len is 0), which
 * must stay unchanged while p is used. Reads the classic file header or
 * checks that a pcapng file starts with a section header. Returns 0, or
 * -1 with the reason in p->err.
 */
int ks_pcap_open(struct ks_pcap *p, const void *buf, size_t len);

/*
 * The next frame into pkt (pkt->data points into the buffer or into
 * p->frame, valid until the next call). Returns 1 for a frame, 0 at the
 * end of the file, -1 with the reason in p->err (then again -1).
 */
int ks_pcap_next(struct ks_pcap *p, struct ks_pcap_pkt *pkt);

/*
 * The writer's half, for generated captures (tests/bench/acc/acc_gen.c):
 * a classic pcap file header and record headers in little-endian order,
 * nanosecond timestamps when nsec (else microseconds, truncated). Pure:
 * the caller writes the bytes wherever it likes.
 */
#define KS_PCAP_FILE_HDR_LEN 24
#define KS_PCAP_REC_HDR_LEN  16
void ks_pcap_put_file_header(__u8 out[KS_PCAP_FILE_HDR_LEN], int nsec,
			     __u32 snaplen, __u32 linktype);
void ks_pcap_put_record_header(__u8 out[KS_PCAP_REC_HDR_LEN], int nsec,
			       __u64 ts_ns, __u32 caplen, __u32 wire_len);

/* "Ethernet", "Linux cooked (SLL)", ..., or "unknown" for others. */
const char *ks_pcap_linktype_name(__u32 linktype);

/* Whether ks_pcap_next() turns frames of this link type into Ethernet. */
int ks_pcap_linktype_supported(__u32 linktype);

#endif
