// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The capture reader on hand-built files: classic pcap and pcapng in both
 * byte orders, microsecond, nanosecond and binary timestamp resolutions,
 * several interfaces and sections, Linux cooked SLL/SLL2 frames turned
 * into Ethernet, blocks to skip; and every damaged form of those files:
 * cut at every byte, every byte overwritten with lying values, unknown
 * link types. A damaged file must end in one clear error, never a crash
 * or a read past the buffer (the buffers are copied to exact-size heap
 * blocks so a sanitizer build sees any overrun).
 */
#include <stdlib.h>
#include <string.h>
#include "ktest.h"
#include "core/pcap.h"
#include "unit.h"

#define T0 1700000000ULL /* seconds: a timestamp in 2023 */

/* ---- a little writer of capture files ---- */

struct wbuf {
	__u8 b[4096];
	size_t n;
	int be;
	size_t block; /* where the pcapng block being written starts */
};

static void put(struct wbuf *w, const void *p, size_t n)
{
	memcpy(w->b + w->n, p, n);
	w->n += n;
}

static void put8(struct wbuf *w, __u8 v)
{
	put(w, &v, 1);
}

static void put16(struct wbuf *w, __u16 v)
{
	put8(w, w->be ? v >> 8 : v & 0xff);
	put8(w, w->be ? v & 0xff : v >> 8);
}

static void put32(struct wbuf *w, __u32 v)
{
	put16(w, w->be ? v >> 16 : v & 0xffff);
	put16(w, w->be ? v & 0xffff : v >> 16);
}

static void put64(struct wbuf *w, __u64 v)
{
	put32(w, w->be ? v >> 32 : (__u32)v);
	put32(w, w->be ? (__u32)v : v >> 32);
}

static void pad4(struct wbuf *w)
{
	while (w->n % 4)
		put8(w, 0);
}

static void set32(struct wbuf *w, size_t at, __u32 v)
{
	size_t keep = w->n;

	w->n = at;
	put32(w, v);
	w->n = keep;
}

/* A frame of len bytes: Ethernet header with EtherType IPv4, then a
 * pattern that tells frames apart by seed. */
static void frame(__u8 *f, size_t len, __u8 seed)
{
	size_t i;

	for (i = 0; i < len; i++)
		f[i] = (__u8)(seed + i * 7);
	f[12] = 0x08;
	f[13] = 0x00;
}

/* classic pcap */
static void pcap_header(struct wbuf *w, int be, int nsec, __u32 linktype)
{
	memset(w, 0, sizeof(*w));
	w->be = be;
	put32(w, nsec ? 0xa1b23c4d : 0xa1b2c3d4);
	put16(w, 2);
	put16(w, 4);
	put32(w, 0);
	put32(w, 0);
	put32(w, 262144);
	put32(w, linktype);
}

static void pcap_record(struct wbuf *w, __u32 sec, __u32 frac, const void *data,
			__u32 caplen, __u32 wire)
{
	put32(w, sec);
	put32(w, frac);
	put32(w, caplen);
	put32(w, wire);
	put(w, data, caplen);
}

/* pcapng */
static void ng_begin(struct wbuf *w, __u32 type)
{
	w->block = w->n;
	put32(w, type);
	put32(w, 0); /* patched by ng_end */
}

static void ng_end(struct wbuf *w)
{
	__u32 len;

	pad4(w);
	len = (__u32)(w->n - w->block + 4);
	put32(w, len);
	set32(w, w->block + 4, len);
}

static void ng_shb(struct wbuf *w, int be)
{
	w->be = be;
	ng_begin(w, 0x0a0d0d0a);
	put32(w, 0x1a2b3c4d);
	put16(w, 1);
	put16(w, 0);
	put64(w, ~0ULL); /* section length not given */
	ng_end(w);
}

static void ng_opt(struct wbuf *w, __u16 code, const void *v, __u16 len)
{
	put16(w, code);
	put16(w, len);
	put(w, v, len);
	pad4(w);
}

/* tsresol < 0: no if_tsresol option (microseconds). */
static void ng_idb(struct wbuf *w, __u16 linktype, int tsresol)
{
	__u8 r = (__u8)tsresol;

	ng_begin(w, 1);
	put16(w, linktype);
	put16(w, 0);
	put32(w, 0);
	if (tsresol >= 0) {
		ng_opt(w, 9, &r, 1);
		put32(w, 0); /* opt_endofopt */
	}
	ng_end(w);
}

/* flags < 0: no epb_flags option. */
static void ng_epb(struct wbuf *w, __u32 iface, __u64 ts, const void *data,
		   __u32 caplen, __u32 wire, int flags)
{
	ng_begin(w, 6);
	put32(w, iface);
	put32(w, (__u32)(ts >> 32));
	put32(w, (__u32)ts);
	put32(w, caplen);
	put32(w, wire);
	put(w, data, caplen);
	pad4(w);
	if (flags >= 0) {
		struct wbuf v = { .be = w->be };

		put32(&v, (__u32)flags);
		ng_opt(w, 2, v.b, 4);
		put32(w, 0);
	}
	ng_end(w);
}

static void ng_opaque(struct wbuf *w, __u32 type, size_t body)
{
	ng_begin(w, type);
	while (body--)
		put8(w, 0x5a);
	ng_end(w);
}

/* ---- reading ---- */

static struct ks_pcap rd;

/* An exact-size heap copy, so a read past the end is an overrun. */
static __u8 *copy(const void *b, size_t n)
{
	__u8 *c = malloc(n ? n : 1);

	if (c && n)
		memcpy(c, b, n);
	return c;
}

/* Frames read from a buffer; -1 if it ended in an error. */
static int count_frames(const __u8 *b, size_t n, struct ks_pcap_pkt *last)
{
	struct ks_pcap_pkt pkt;
	int rc, frames = 0;

	if (ks_pcap_open(&rd, b, n))
		return -1;
	while ((rc = ks_pcap_next(&rd, &pkt)) > 0) {
		frames++;
		if (last)
			*last = pkt;
	}
	return rc < 0 ? -1 : frames;
}

static int err_has(const char *what)
{
	return strstr(rd.err, what) != NULL;
}

/* ---- classic pcap ---- */

static void classic(int be, int nsec)
{
	__u8 f1[60], f2[200];
	struct ks_pcap_pkt pkt;
	struct wbuf w;
	char name[64];

	snprintf(name, sizeof(name), "pcap_classic_%s_%s", be ? "be" : "le",
		 nsec ? "nsec" : "usec");
	kt_begin(name);
	frame(f1, sizeof(f1), 1);
	frame(f2, sizeof(f2), 2);
	pcap_header(&w, be, nsec, 1);
	pcap_record(&w, T0, 123456, f1, sizeof(f1), sizeof(f1));
	pcap_record(&w, T0 + 1, 999, f2, 100, sizeof(f2)); /* cut by snaplen */
	CHECK_EQ(ks_pcap_open(&rd, w.b, w.n), 0);
	CHECK_EQ(rd.format, KS_PCAP_CLASSIC);
	CHECK_EQ(rd.nsec, nsec);
	CHECK_EQ(ks_pcap_next(&rd, &pkt), 1);
	CHECK(pkt.data == w.b + 24 + 16, "frame 1 not in place");
	CHECK_EQ(pkt.len, sizeof(f1));
	CHECK_EQ(pkt.wire_len, sizeof(f1));
	CHECK_EQ(pkt.ts_ns, T0 * 1000000000ULL + 123456ULL * (nsec ? 1 : 1000));
	CHECK_EQ(pkt.has_ts, 1);
	CHECK_EQ(pkt.record, 1);
	CHECK_EQ(pkt.offset, 24);
	CHECK_EQ(pkt.linktype, KS_LINKTYPE_ETHERNET);
	CHECK_EQ(pkt.dir, KS_PCAP_DIR_UNKNOWN);
	CHECK_EQ(ks_pcap_next(&rd, &pkt), 1);
	CHECK_EQ(pkt.len, 100);
	CHECK_EQ(pkt.wire_len, sizeof(f2));
	CHECK(!memcmp(pkt.data, f2, 100), "frame 2 bytes differ");
	CHECK_EQ(pkt.ts_ns,
		 (T0 + 1) * 1000000000ULL + 999ULL * (nsec ? 1 : 1000));
	CHECK_EQ(pkt.record, 2);
	CHECK_EQ(ks_pcap_next(&rd, &pkt), 0);
	CHECK_EQ(ks_pcap_next(&rd, &pkt), 0);
	kt_end();
}

/* A cooked header for an IPv4 payload; returns its length. */
static size_t sll_header(__u8 *h, int v2, __u16 pkttype, __u16 proto)
{
	static const __u8 mac[6] = { 0x02, 0x11, 0x22, 0x33, 0x44, 0x55 };

	memset(h, 0, 20);
	if (v2) {
		h[0] = proto >> 8;
		h[1] = proto & 0xff;
		h[7] = 3; /* ifindex */
		h[9] = 1; /* ARPHRD_ETHER */
		h[10] = (__u8)pkttype;
		h[11] = 6;
		memcpy(h + 12, mac, 6);
		return 20;
	}
	h[1] = (__u8)pkttype;
	h[3] = 1;
	h[5] = 6;
	memcpy(h + 6, mac, 6);
	h[14] = proto >> 8;
	h[15] = proto & 0xff;
	return 16;
}

static void cooked(int v2, int be)
{
	__u8 rec[120], ip[80];
	struct ks_pcap_pkt pkt;
	struct wbuf w;
	size_t h, i;
	char name[64];

	snprintf(name, sizeof(name), "pcap_cooked_%s_%s", v2 ? "sll2" : "sll",
		 be ? "be" : "le");
	kt_begin(name);
	for (i = 0; i < sizeof(ip); i++)
		ip[i] = (__u8)(0x45 + i);
	pcap_header(&w, be, 0,
		    v2 ? KS_LINKTYPE_LINUX_SLL2 : KS_LINKTYPE_LINUX_SLL);
	/* received, IPv4 */
	h = sll_header(rec, v2, 0, 0x0800);
	memcpy(rec + h, ip, sizeof(ip));
	pcap_record(&w, T0, 0, rec, (__u32)(h + sizeof(ip)),
		    (__u32)(h + sizeof(ip) + 10));
	/* sent by this host */
	h = sll_header(rec, v2, 4, 0x0800);
	memcpy(rec + h, ip, sizeof(ip));
	pcap_record(&w, T0, 1, rec, (__u32)(h + sizeof(ip)),
		    (__u32)(h + sizeof(ip)));
	/* VLAN-tagged: the tag libpcap put back follows the header */
	h = sll_header(rec, v2, 0, 0x8100);
	rec[h] = 0x00;
	rec[h + 1] = 0x2a;
	rec[h + 2] = 0x08;
	rec[h + 3] = 0x00;
	memcpy(rec + h + 4, ip, sizeof(ip));
	pcap_record(&w, T0, 2, rec, (__u32)(h + 4 + sizeof(ip)),
		    (__u32)(h + 4 + sizeof(ip)));

	CHECK_EQ(ks_pcap_open(&rd, w.b, w.n), 0);
	CHECK_EQ(ks_pcap_next(&rd, &pkt), 1);
	CHECK_EQ(pkt.linktype,
		 v2 ? KS_LINKTYPE_LINUX_SLL2 : KS_LINKTYPE_LINUX_SLL);
	CHECK_EQ(pkt.len, 14 + sizeof(ip));
	CHECK_EQ(pkt.wire_len, 14 + sizeof(ip) + 10);
	CHECK_EQ(pkt.dir, KS_PCAP_DIR_IN);
	CHECK(pkt.data[12] == 0x08 && pkt.data[13] == 0x00,
	      "EtherType %02x%02x", pkt.data[12], pkt.data[13]);
	CHECK(pkt.data[6] == 0x02 && pkt.data[11] == 0x55,
	      "source MAC not the cooked address");
	CHECK(!memcmp(pkt.data + 14, ip, sizeof(ip)), "payload differs");
	CHECK_EQ(ks_pcap_next(&rd, &pkt), 1);
	CHECK_EQ(pkt.dir, KS_PCAP_DIR_OUT);
	CHECK_EQ(ks_pcap_next(&rd, &pkt), 1);
	CHECK_EQ(pkt.len, 14 + 4 + sizeof(ip));
	CHECK(pkt.data[12] == 0x81 && pkt.data[13] == 0x00 &&
		      pkt.data[15] == 0x2a && pkt.data[16] == 0x08,
	      "VLAN tag not in place");
	CHECK(!memcmp(pkt.data + 18, ip, sizeof(ip)), "VLAN payload differs");
	CHECK_EQ(ks_pcap_next(&rd, &pkt), 0);

	/* a record shorter than its cooked header */
	pcap_header(&w, be, 0,
		    v2 ? KS_LINKTYPE_LINUX_SLL2 : KS_LINKTYPE_LINUX_SLL);
	pcap_record(&w, T0, 0, rec, 10, 10);
	CHECK_EQ(count_frames(w.b, w.n, NULL), -1);
	CHECK(err_has("record 1 at byte 24: 10 captured bytes, fewer than the"),
	      "message: %s", rd.err);
	kt_end();
}

static void classic_refusals(void)
{
	static const char text[] = "GET / HTTP/1.1\r\n\r\n..........";
	__u8 f[60];
	struct wbuf w;

	kt_begin("pcap_classic_refusals");
	CHECK_EQ(count_frames(NULL, 0, NULL), -1);
	CHECK(err_has("file header at byte 0: the file is empty"), "%s",
	      rd.err);
	CHECK_EQ(count_frames((const __u8 *)text, sizeof(text), NULL), -1);
	CHECK(err_has("not a pcap or pcapng file (it starts with 47 45 54 20)"),
	      "%s", rd.err);
	pcap_header(&w, 0, 0, 101); /* raw IP */
	CHECK_EQ(count_frames(w.b, w.n, NULL), -1);
	CHECK(err_has("file header at byte 20: link type 101 (raw IP) is not supported"),
	      "%s", rd.err);
	pcap_header(&w, 1, 0, 1);
	set32(&w, 0, 0xa1b2cd34);
	CHECK_EQ(count_frames(w.b, w.n, NULL), -1);
	CHECK(err_has("modified pcap"), "%s", rd.err);
	pcap_header(&w, 0, 0, 1);
	w.b[4] = 1; /* version 1.4 */
	CHECK_EQ(count_frames(w.b, w.n, NULL), -1);
	CHECK(err_has("pcap version 1.4"), "%s", rd.err);
	/* lengths that lie */
	frame(f, sizeof(f), 3);
	pcap_header(&w, 0, 0, 1);
	pcap_record(&w, T0, 0, f, sizeof(f), sizeof(f) - 1);
	CHECK_EQ(count_frames(w.b, w.n, NULL), -1);
	CHECK(err_has("record 1 at byte 24: captured length 60 is more than the length on the wire (59)"),
	      "%s", rd.err);
	pcap_header(&w, 0, 0, 1);
	pcap_record(&w, T0, 0, f, sizeof(f), sizeof(f));
	pcap_record(&w, T0, 0, f, sizeof(f), sizeof(f));
	set32(&w, 24 + 16 + 60 + 8, 61);
	set32(&w, 24 + 16 + 60 + 12, 61);
	CHECK_EQ(count_frames(w.b, w.n, NULL), -1);
	CHECK(err_has("record 2 at byte 100: captured length 61 runs past the end of its record (60 bytes left)"),
	      "%s", rd.err);
	set32(&w, 24 + 16 + 60 + 8, KS_PCAP_MAX_FRAME + 1);
	set32(&w, 24 + 16 + 60 + 12, KS_PCAP_MAX_FRAME + 1);
	CHECK_EQ(count_frames(w.b, w.n, NULL), -1);
	CHECK(err_has("record 2 at byte 100: captured length 262145 is over 262144 bytes"),
	      "%s", rd.err);
	/* an error sticks */
	CHECK_EQ(ks_pcap_next(&rd, &(struct ks_pcap_pkt){ 0 }), -1);
	kt_end();
}

/* ---- pcapng ---- */

/*
 * Two sections: the first in byte order be with an Ethernet interface
 * (microseconds), an SLL2 one (nanoseconds, if_tsresol 9) and an Ethernet
 * one with binary resolution (2^-10 s), blocks to skip, EPB/SPB/OPB; the
 * second in the other order, its interfaces numbered afresh.
 */
static size_t build_ng(struct wbuf *w, int be)
{
	__u8 f[64], sll[20 + 40];
	size_t h;

	memset(w, 0, sizeof(*w));
	frame(f, sizeof(f), 9);
	h = sll_header(sll, 1, 4, 0x86dd);
	memset(sll + h, 0x60, 40);
	ng_shb(w, be);
	ng_idb(w, KS_LINKTYPE_ETHERNET, -1);
	ng_opaque(w, 4, 12); /* name resolution block */
	ng_idb(w, KS_LINKTYPE_LINUX_SLL2, 9);
	ng_idb(w, KS_LINKTYPE_ETHERNET, 0x80 | 10);
	ng_epb(w, 0, T0 * 1000000 + 5, f, sizeof(f), sizeof(f), -1);
	ng_epb(w, 1, T0 * 1000000000 + 7, sll, (__u32)(h + 40), 200, 1);
	ng_opaque(w, 0x40000bad, 20); /* a custom block nobody knows */
	ng_epb(w, 2, (T0 << 10) + 512, f, sizeof(f), sizeof(f), 2);
	/* SPB on interface 0: 64 bytes of the frame */
	ng_begin(w, 3);
	put32(w, sizeof(f));
	put(w, f, sizeof(f));
	ng_end(w);
	/* OPB on interface 0 */
	ng_begin(w, 2);
	put16(w, 0);
	put16(w, 0);
	put32(w, 0);
	put32(w, 42);
	put32(w, 20);
	put32(w, 20);
	put(w, f, 20);
	ng_end(w);
	ng_opaque(w, 5, 16); /* interface statistics */
	ng_shb(w, !be);
	ng_idb(w, KS_LINKTYPE_ETHERNET, 6);
	ng_epb(w, 0, T0 * 1000000 + 9, f, sizeof(f), sizeof(f), -1);
	return h;
}

static void pcapng(int be)
{
	struct ks_pcap_pkt pkt;
	struct wbuf w;
	char name[64];

	snprintf(name, sizeof(name), "pcapng_%s", be ? "be" : "le");
	kt_begin(name);
	build_ng(&w, be);
	CHECK_EQ(ks_pcap_open(&rd, w.b, w.n), 0);
	CHECK_EQ(rd.format, KS_PCAP_NG);
	CHECK_EQ(ks_pcap_next(&rd, &pkt), 1);
	CHECK_EQ(pkt.iface, 0);
	CHECK_EQ(pkt.len, 64);
	CHECK_EQ(pkt.ts_ns, T0 * 1000000000ULL + 5000);
	CHECK_EQ(pkt.record, 6); /* SHB, IDB, NRB, IDB, IDB, EPB */
	CHECK_EQ(pkt.dir, KS_PCAP_DIR_UNKNOWN);
	CHECK_EQ(ks_pcap_next(&rd, &pkt), 1);
	CHECK_EQ(pkt.iface, 1);
	CHECK_EQ(pkt.linktype, KS_LINKTYPE_LINUX_SLL2);
	CHECK_EQ(pkt.ts_ns, T0 * 1000000000ULL + 7);
	CHECK_EQ(pkt.len, 14 + 40);
	CHECK_EQ(pkt.wire_len, 200 - 20 + 14);
	CHECK(pkt.data[12] == 0x86 && pkt.data[13] == 0xdd, "EtherType");
	/* epb_flags says inbound although the cooked header says outgoing:
	 * the cooked header is read last and wins */
	CHECK_EQ(pkt.dir, KS_PCAP_DIR_OUT);
	CHECK_EQ(ks_pcap_next(&rd, &pkt), 1);
	CHECK_EQ(pkt.iface, 2);
	CHECK_EQ(pkt.ts_ns, T0 * 1000000000ULL + 500000000ULL);
	CHECK_EQ(pkt.dir, KS_PCAP_DIR_OUT);
	CHECK_EQ(ks_pcap_next(&rd, &pkt), 1); /* SPB */
	CHECK_EQ(pkt.has_ts, 0);
	CHECK_EQ(pkt.len, 64);
	CHECK_EQ(pkt.iface, 0);
	CHECK_EQ(ks_pcap_next(&rd, &pkt), 1); /* OPB */
	CHECK_EQ(pkt.len, 20);
	CHECK_EQ(pkt.ts_ns, 42000ULL);
	CHECK_EQ(ks_pcap_next(&rd, &pkt), 1); /* second section */
	CHECK_EQ(pkt.iface, 0);
	CHECK_EQ(pkt.ts_ns, T0 * 1000000000ULL + 9000);
	CHECK_EQ(rd.big_endian, !be);
	CHECK_EQ(rd.nifs, 1);
	CHECK_EQ(ks_pcap_next(&rd, &pkt), 0);
	kt_end();
}

static void pcapng_refusals(void)
{
	__u8 f[64];
	struct wbuf w;

	kt_begin("pcapng_refusals");
	frame(f, sizeof(f), 4);
	/* a packet of an interface not described */
	memset(&w, 0, sizeof(w));
	ng_shb(&w, 0);
	ng_idb(&w, 1, -1);
	ng_shb(&w, 1);
	ng_idb(&w, 1, -1);
	ng_epb(&w, 1, 0, f, sizeof(f), sizeof(f), -1);
	CHECK_EQ(count_frames(w.b, w.n, NULL), -1);
	CHECK(err_has("record 5 at byte 96: a packet of interface 1, but 1 interface is described"),
	      "%s", rd.err);
	/* an unsupported link type, refused at its first packet */
	memset(&w, 0, sizeof(w));
	ng_shb(&w, 0);
	ng_idb(&w, 1, -1);
	ng_idb(&w, 0, -1); /* BSD loopback, no packets yet: fine */
	ng_epb(&w, 0, 0, f, sizeof(f), sizeof(f), -1);
	ng_epb(&w, 1, 0, f, sizeof(f), sizeof(f), -1);
	CHECK_EQ(count_frames(w.b, w.n, NULL), -1);
	CHECK(err_has("record 5 at byte 164: link type 0 (BSD loopback) is not supported"),
	      "%s", rd.err);
	/* an SPB before any interface */
	memset(&w, 0, sizeof(w));
	ng_shb(&w, 0);
	ng_begin(&w, 3);
	put32(&w, 4);
	put32(&w, 0);
	ng_end(&w);
	CHECK_EQ(count_frames(w.b, w.n, NULL), -1);
	CHECK(err_has("record 2 at byte 28: a packet of interface 0, but 0 interfaces are described"),
	      "%s", rd.err);
	/* trailing length differs, block length not a multiple of 4 */
	memset(&w, 0, sizeof(w));
	ng_shb(&w, 0);
	ng_idb(&w, 1, -1);
	set32(&w, w.n - 4, 24);
	CHECK_EQ(count_frames(w.b, w.n, NULL), -1);
	CHECK(err_has("record 2 at byte 28: the trailing block length 24 differs from the leading 20"),
	      "%s", rd.err);
	set32(&w, 28 + 4, 22);
	CHECK_EQ(count_frames(w.b, w.n, NULL), -1);
	CHECK(err_has("block length 22 is not a multiple of 4"), "%s", rd.err);
	/* a section header with a bad byte-order magic, a wrong version */
	memset(&w, 0, sizeof(w));
	ng_shb(&w, 0);
	set32(&w, 8, 0x12345678);
	CHECK_EQ(count_frames(w.b, w.n, NULL), -1);
	CHECK(err_has("record 1 at byte 0: section header byte-order magic 12345678"),
	      "%s", rd.err);
	memset(&w, 0, sizeof(w));
	ng_shb(&w, 1);
	w.b[13] = 2;
	CHECK_EQ(count_frames(w.b, w.n, NULL), -1);
	CHECK(err_has("pcapng version 2.0"), "%s", rd.err);
	/* if_tsresol finer than the reader takes */
	memset(&w, 0, sizeof(w));
	ng_shb(&w, 0);
	ng_idb(&w, 1, 20);
	CHECK_EQ(count_frames(w.b, w.n, NULL), -1);
	CHECK(err_has("if_tsresol 10^-20"), "%s", rd.err);
	/* an option running past its block */
	memset(&w, 0, sizeof(w));
	ng_shb(&w, 0);
	ng_begin(&w, 1);
	put32(&w, 1);
	put32(&w, 0);
	put16(&w, 9);
	put16(&w, 200);
	ng_end(&w);
	CHECK_EQ(count_frames(w.b, w.n, NULL), -1);
	CHECK(err_has("option 9 (200 bytes) runs past the end of its block"),
	      "%s", rd.err);
	/* EPB whose captured length runs past its block */
	memset(&w, 0, sizeof(w));
	ng_shb(&w, 0);
	ng_idb(&w, 1, -1);
	ng_epb(&w, 0, 0, f, sizeof(f), sizeof(f), -1);
	set32(&w, 48 + 8 + 12, 65);
	set32(&w, 48 + 8 + 16, 65);
	CHECK_EQ(count_frames(w.b, w.n, NULL), -1);
	CHECK(err_has("record 3 at byte 48: captured length 65 runs past the end of its record (64 bytes left)"),
	      "%s", rd.err);
	kt_end();
}

/* ---- damaged files: every cut, every byte ---- */

/*
 * Every prefix of a good file: a cut at a record boundary is a shorter
 * good file; any other cut is one error naming a record and a byte.
 */
static void cut_everywhere(const char *name, const struct wbuf *w,
			   int frames_total)
{
	int bad = 0, short_ok = 0;
	size_t len;

	kt_begin(name);
	for (len = 0; len < w->n; len++) {
		__u8 *c = copy(w->b, len);
		int n = count_frames(c, len, NULL);

		if (n >= 0) {
			short_ok++;
			if (n >= frames_total && !bad++)
				CHECK(0, "cut at %zu read all %d frames", len,
				      n);
		} else if (strncmp(rd.err, "record ", 7) &&
			   strncmp(rd.err, "file header at byte ", 20)) {
			if (!bad++)
				CHECK(0, "cut at %zu: message '%s'", len,
				      rd.err);
		} else if (!strstr(rd.err, " at byte ")) {
			if (!bad++)
				CHECK(0, "cut at %zu: no byte in '%s'", len,
				      rd.err);
		}
		free(c);
	}
	CHECK(short_ok > 0, "no cut at a record boundary was read cleanly");
	CHECK_EQ(count_frames(w->b, w->n, NULL), frames_total);
	kt_end();
}

/*
 * Every byte overwritten with values that make lengths lie (0, 0xff, one
 * more, one less, 0x7f): the reader ends cleanly or in an error, and every
 * frame it hands out lies inside the buffer or its own frame buffer.
 */
static void lie_everywhere(const char *name, const struct wbuf *w)
{
	static const int vals[] = { 0x00, 0xff, -1, 1, 0x7f };
	int bad = 0, errors = 0;
	size_t at, v;

	kt_begin(name);
	for (at = 0; at < w->n; at++) {
		for (v = 0; v < sizeof(vals) / sizeof(vals[0]); v++) {
			__u8 *c = copy(w->b, w->n);
			struct ks_pcap_pkt pkt;
			int rc;

			if (vals[v] == -1 || vals[v] == 1)
				c[at] = (__u8)(c[at] + vals[v]);
			else
				c[at] = (__u8)vals[v];
			if (ks_pcap_open(&rd, c, w->n)) {
				errors++;
				free(c);
				continue;
			}
			while ((rc = ks_pcap_next(&rd, &pkt)) > 0) {
				int in_file = pkt.data >= c &&
					      pkt.data + pkt.len <= c + w->n;
				int in_frame = pkt.data >= rd.frame &&
					       pkt.data + pkt.len <=
						       rd.frame +
							       sizeof(rd.frame);

				if (!in_file && !in_frame && !bad++)
					CHECK(0,
					      "byte %zu = %d: frame outside the buffers",
					      at, vals[v]);
				if (pkt.len > pkt.wire_len && !bad++)
					CHECK(0,
					      "byte %zu = %d: len %u > wire %u",
					      at, vals[v], pkt.len,
					      pkt.wire_len);
			}
			if (rc < 0) {
				errors++;
				if (!strstr(rd.err, " at byte ") && !bad++)
					CHECK(0, "byte %zu: message '%s'", at,
					      rd.err);
			}
			free(c);
		}
	}
	CHECK(errors > 0, "no overwritten byte was refused");
	kt_end();
}

static void damaged(void)
{
	struct wbuf w;
	__u8 f[60], rec[20 + 30];
	size_t h;

	frame(f, sizeof(f), 5);
	pcap_header(&w, 0, 0, 1);
	pcap_record(&w, T0, 0, f, sizeof(f), sizeof(f));
	pcap_record(&w, T0, 1, f, 30, sizeof(f));
	cut_everywhere("pcap_cut_every_byte_le", &w, 2);
	lie_everywhere("pcap_lie_every_byte_le", &w);
	pcap_header(&w, 1, 1, KS_LINKTYPE_LINUX_SLL);
	h = sll_header(rec, 0, 0, 0x0800);
	memset(rec + h, 0x45, 30);
	pcap_record(&w, T0, 0, rec, (__u32)(h + 30), (__u32)(h + 30));
	pcap_record(&w, T0, 0, rec, (__u32)(h + 30), (__u32)(h + 30));
	cut_everywhere("pcap_cut_every_byte_be_sll", &w, 2);
	lie_everywhere("pcap_lie_every_byte_be_sll", &w);
	build_ng(&w, 0);
	cut_everywhere("pcapng_cut_every_byte_le", &w, 6);
	lie_everywhere("pcapng_lie_every_byte_le", &w);
	build_ng(&w, 1);
	cut_everywhere("pcapng_cut_every_byte_be", &w, 6);
	lie_everywhere("pcapng_lie_every_byte_be", &w);
}

static void names(void)
{
	kt_begin("pcap_linktypes");
	CHECK(ks_pcap_linktype_supported(KS_LINKTYPE_ETHERNET), "Ethernet");
	CHECK(ks_pcap_linktype_supported(KS_LINKTYPE_LINUX_SLL), "SLL");
	CHECK(ks_pcap_linktype_supported(KS_LINKTYPE_LINUX_SLL2), "SLL2");
	CHECK(!ks_pcap_linktype_supported(101), "raw IP");
	CHECK(!strcmp(ks_pcap_linktype_name(276), "Linux cooked SLL2"), "%s",
	      ks_pcap_linktype_name(276));
	CHECK(!strcmp(ks_pcap_linktype_name(4242), "unknown"), "4242");
	kt_end();
}

/* What ks_pcap_put_* write, the reader reads back: both resolutions. */
static void writer(int nsec)
{
	__u8 buf[KS_PCAP_FILE_HDR_LEN + 2 * (KS_PCAP_REC_HDR_LEN + 60)];
	__u64 ts = T0 * 1000000000ULL + 123456789ULL;
	struct ks_pcap_pkt pkt;
	struct ks_pcap *p = malloc(sizeof(*p));
	size_t n = 0;
	int i;

	kt_begin(nsec ? "pcap_writer_nsec" : "pcap_writer_usec");
	ks_pcap_put_file_header(buf, nsec, 65535, KS_LINKTYPE_ETHERNET);
	n += KS_PCAP_FILE_HDR_LEN;
	for (i = 0; i < 2; i++) {
		ks_pcap_put_record_header(buf + n, nsec, ts + (__u64)i, 60,
					  60 + (__u32)i);
		n += KS_PCAP_REC_HDR_LEN;
		memset(buf + n, 0x40 + i, 60);
		n += 60;
	}
	CHECK(p && !ks_pcap_open(p, buf, n), "open: %s", p ? p->err : "");
	for (i = 0; p && i < 2; i++) {
		CHECK(ks_pcap_next(p, &pkt) == 1, "record %d: %s", i, p->err);
		CHECK(pkt.len == 60 && pkt.wire_len == 60 + (__u32)i,
		      "lengths");
		CHECK(pkt.data[0] == 0x40 + i, "bytes");
		CHECK(pkt.ts_ns == (nsec ? ts + (__u64)i : ts / 1000 * 1000),
		      "timestamp %llu", (unsigned long long)pkt.ts_ns);
	}
	CHECK(p && ks_pcap_next(p, &pkt) == 0, "end");
	free(p);
	kt_end();
}

void test_pcap(void)
{
	writer(0);
	writer(1);
	classic(0, 0);
	classic(1, 0);
	classic(0, 1);
	classic(1, 1);
	cooked(0, 0);
	cooked(1, 1);
	cooked(1, 0);
	classic_refusals();
	pcapng(0);
	pcapng(1);
	pcapng_refusals();
	damaged();
	names();
}
