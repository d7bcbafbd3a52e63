// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * pcap.c - the capture reader (see pcap.h). Formats as libpcap and the
 * pcapng draft (IETF opsawg-pcapng) define them; written from those
 * documents, not from libpcap's code.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include "core/pcap.h"

/* classic pcap */
#define PCAP_HDR_LEN KS_PCAP_FILE_HDR_LEN
#define PCAP_REC_LEN KS_PCAP_REC_HDR_LEN
#define PCAP_USEC    0xa1b2c3d4U
#define PCAP_NSEC    0xa1b23c4dU
#define PCAP_KUZ     0xa1b2cd34U /* Kuznetzov's "modified" pcap */
/* LT_LINKTYPE(): the upper bits may carry FCS length flags */
#define PCAP_LT_MASK 0x03ffffffU

/* pcapng */
#define NG_BLOCK_MIN    12 /* type, length, trailing length */
#define NG_SHB          0x0a0d0d0aU
#define NG_IDB          1
#define NG_OPB          2
#define NG_SPB          3
#define NG_EPB          6
#define NG_BOM          0x1a2b3c4dU
#define NG_SHB_BODY     16 /* byte-order magic, version, section length */
#define NG_IDB_BODY     8  /* link type, reserved, snaplen */
#define NG_PKT_BODY     20 /* EPB and OPB: interface .. original length */
#define NG_SPB_BODY     4  /* original length */
#define NG_OPT_FLAGS    2  /* epb_flags and opb_flags */
#define NG_OPT_TSRESOL  9
#define NG_OPT_TSOFFSET 14

/* Linux cooked headers, always in network byte order */
#define SLL_LEN              16
#define SLL2_LEN             20
#define ETH_HDR_LEN          14
#define ETH_ALEN_BYTES       6
#define PACKET_OUTGOING_TYPE 4 /* <linux/if_packet.h> PACKET_OUTGOING */

static __u16 get16(const __u8 *b, int be)
{
	return be ? (__u16)(b[0] << 8 | b[1]) : (__u16)(b[1] << 8 | b[0]);
}

static __u32 get32(const __u8 *b, int be)
{
	return be ? (__u32)b[0] << 24 | (__u32)b[1] << 16 | (__u32)b[2] << 8 |
			       b[3]
		  : (__u32)b[3] << 24 | (__u32)b[2] << 16 | (__u32)b[1] << 8 |
			       b[0];
}

static __u64 get64(const __u8 *b, int be)
{
	__u64 hi = get32(b + (be ? 0 : 4), be),
	      lo = get32(b + (be ? 4 : 0), be);

	return hi << 32 | lo;
}

static size_t pad4(size_t n)
{
	return (n + 3) & ~(size_t)3;
}

/* Records the error (rec 0: the classic file header) and makes every
 * later call fail the same way. */
__attribute__((format(printf, 4, 5))) static int fail(struct ks_pcap *p,
						      __u64 rec, size_t at,
						      const char *fmt, ...)
{
	va_list ap;
	int n;

	if (rec)
		n = snprintf(p->err, sizeof(p->err),
			     "record %llu at byte %zu: ",
			     (unsigned long long)rec, at);
	else
		n = snprintf(p->err, sizeof(p->err),
			     "file header at byte %zu: ", at);
	if (n < 0 || (size_t)n >= sizeof(p->err))
		n = 0;
	va_start(ap, fmt);
	vsnprintf(p->err + n, sizeof(p->err) - (size_t)n, fmt, ap);
	va_end(ap);
	p->off = p->len;
	p->failed = 1;
	return -1;
}

const char *ks_pcap_linktype_name(__u32 linktype)
{
	switch (linktype) {
	case 0:
		return "BSD loopback";
	case KS_LINKTYPE_ETHERNET:
		return "Ethernet";
	case 101:
		return "raw IP";
	case 105:
		return "802.11";
	case KS_LINKTYPE_LINUX_SLL:
		return "Linux cooked SLL";
	case 127:
		return "802.11 radiotap";
	case 228:
		return "raw IPv4";
	case 229:
		return "raw IPv6";
	case KS_LINKTYPE_LINUX_SLL2:
		return "Linux cooked SLL2";
	default:
		return "unknown";
	}
}

int ks_pcap_linktype_supported(__u32 linktype)
{
	return linktype == KS_LINKTYPE_ETHERNET ||
	       linktype == KS_LINKTYPE_LINUX_SLL ||
	       linktype == KS_LINKTYPE_LINUX_SLL2;
}

/* ts units (1/units s) to ns since the epoch, saturating. */
static __u64 to_ns(__u64 ts, const struct ks_pcap_if *i)
{
	unsigned __int128 ns = (unsigned __int128)ts * 1000000000U / i->units;

	ns += (unsigned __int128)((__int128)i->offset_s * 1000000000);
	return ns > ~0ULL ? ~0ULL : (__u64)ns;
}

/* A cooked frame as Ethernet: no destination known, the source if it is
 * a MAC, the cooked protocol as EtherType (a VLAN tag that libpcap put
 * back after it stays in place, as on the wire). */
static void cook(struct ks_pcap *p, struct ks_pcap_pkt *pkt, const __u8 *addr,
		 unsigned int halen, const __u8 *proto, const __u8 *payload,
		 __u32 n, __u32 wire, __u32 hdr, __u16 pkttype)
{
	memset(p->frame, 0, 2 * ETH_ALEN_BYTES);
	if (halen == ETH_ALEN_BYTES)
		memcpy(p->frame + ETH_ALEN_BYTES, addr, ETH_ALEN_BYTES);
	memcpy(p->frame + 2 * ETH_ALEN_BYTES, proto, 2);
	memcpy(p->frame + ETH_HDR_LEN, payload, n);
	pkt->data = p->frame;
	pkt->len = ETH_HDR_LEN + n;
	pkt->wire_len = wire >= hdr ? wire - hdr + ETH_HDR_LEN : pkt->len;
	pkt->dir = pkttype == PACKET_OUTGOING_TYPE ? KS_PCAP_DIR_OUT
						   : KS_PCAP_DIR_IN;
}

/* Fills pkt with caplen captured bytes of a frame of link type lt. */
static int emit(struct ks_pcap *p, struct ks_pcap_pkt *pkt, const __u8 *data,
		__u32 caplen, __u32 wire, __u32 lt)
{
	pkt->linktype = lt;
	switch (lt) {
	case KS_LINKTYPE_ETHERNET:
		pkt->data = data;
		pkt->len = caplen;
		pkt->wire_len = wire;
		return 0;
	case KS_LINKTYPE_LINUX_SLL:
		if (caplen < SLL_LEN)
			break;
		cook(p, pkt, data + 6, get16(data + 4, 1), data + 14,
		     data + SLL_LEN, caplen - SLL_LEN, wire, SLL_LEN,
		     get16(data, 1));
		return 0;
	case KS_LINKTYPE_LINUX_SLL2:
		if (caplen < SLL2_LEN)
			break;
		cook(p, pkt, data + 12, data[11], data, data + SLL2_LEN,
		     caplen - SLL2_LEN, wire, SLL2_LEN, data[10]);
		return 0;
	default:
		return fail(
			p, pkt->record, pkt->offset,
			"link type %u (%s) is not supported; keysteer replays Ethernet (1), Linux cooked SLL (113) and SLL2 (276) captures: capture on an Ethernet interface or with 'tcpdump -i any'",
			lt, ks_pcap_linktype_name(lt));
	}
	return fail(
		p, pkt->record, pkt->offset,
		"%u captured bytes, fewer than the %u-byte Linux cooked header",
		caplen, lt == KS_LINKTYPE_LINUX_SLL ? SLL_LEN : SLL2_LEN);
}

/* The checks every packet record's lengths get, room being the bytes the
 * record holds for packet data. */
static int check_lengths(struct ks_pcap *p, const struct ks_pcap_pkt *pkt,
			 __u32 caplen, __u32 wire, size_t room)
{
	if (caplen > KS_PCAP_MAX_FRAME)
		return fail(
			p, pkt->record, pkt->offset,
			"captured length %u is over %u bytes, more than any capture of these link types holds; the record is corrupt",
			caplen, KS_PCAP_MAX_FRAME);
	if (caplen > wire)
		return fail(
			p, pkt->record, pkt->offset,
			"captured length %u is more than the length on the wire (%u); the record is corrupt",
			caplen, wire);
	if (caplen > room)
		return fail(
			p, pkt->record, pkt->offset,
			"captured length %u runs past the end of its record (%zu bytes left); the capture is cut short or corrupt",
			caplen, room);
	return 0;
}

static int open_classic(struct ks_pcap *p, __u32 magic)
{
	const __u8 *b = p->buf;
	struct ks_pcap_if *i = &p->ifs[0];
	__u32 swapped = __builtin_bswap32(magic);

	if (magic == PCAP_KUZ || swapped == PCAP_KUZ)
		return fail(
			p, 0, 0,
			"Kuznetzov's modified pcap format is not supported; rewrite it with 'tcpdump -r FILE -w NEW'");
	if (magic != PCAP_USEC && magic != PCAP_NSEC && swapped != PCAP_USEC &&
	    swapped != PCAP_NSEC)
		return fail(
			p, 0, 0,
			"not a pcap or pcapng file (it starts with %02x %02x %02x %02x); give a capture written by tcpdump, tshark or dumpcap",
			b[0], b[1], b[2], b[3]);
	p->format = KS_PCAP_CLASSIC;
	p->big_endian = magic != PCAP_USEC && magic != PCAP_NSEC;
	p->nsec = magic == PCAP_NSEC || swapped == PCAP_NSEC;
	if (p->len < PCAP_HDR_LEN)
		return fail(
			p, 0, 0,
			"the pcap file header is cut short (%zu of %u bytes)",
			p->len, PCAP_HDR_LEN);
	if (get16(b + 4, p->big_endian) != 2)
		return fail(p, 0, 4, "pcap version %u.%u, not 2.x",
			    get16(b + 4, p->big_endian),
			    get16(b + 6, p->big_endian));
	i->snaplen = get32(b + 16, p->big_endian);
	i->linktype = get32(b + 20, p->big_endian) & PCAP_LT_MASK;
	i->units = p->nsec ? 1000000000ULL : 1000000ULL;
	i->offset_s = 0;
	p->nifs = 1;
	if (!ks_pcap_linktype_supported(i->linktype))
		return fail(
			p, 0, 20,
			"link type %u (%s) is not supported; keysteer replays Ethernet (1), Linux cooked SLL (113) and SLL2 (276) captures: capture on an Ethernet interface or with 'tcpdump -i any'",
			i->linktype, ks_pcap_linktype_name(i->linktype));
	p->off = PCAP_HDR_LEN;
	return 0;
}

int ks_pcap_open(struct ks_pcap *p, const void *buf, size_t len)
{
	__u32 magic;

	/* everything but the frame buffer, which holds no state */
	memset(p, 0, offsetof(struct ks_pcap, frame));
	p->buf = buf;
	p->len = buf ? len : 0;
	if (!p->len)
		return fail(p, 0, 0, "the file is empty; give a capture file");
	if (p->len < 4)
		return fail(p, 0, 0,
			    "only %zu bytes, too short for a capture file",
			    p->len);
	magic = get32(p->buf, 0);
	if (magic == NG_SHB) {
		/* The section header itself is read as record 1. */
		p->format = KS_PCAP_NG;
		return 0;
	}
	return open_classic(p, magic);
}

static int next_classic(struct ks_pcap *p, struct ks_pcap_pkt *pkt)
{
	const __u8 *r = p->buf + p->off;
	size_t left = p->len - p->off;
	int be = p->big_endian;
	__u32 caplen, wire;
	__u64 sec, frac;

	if (left < PCAP_REC_LEN)
		return fail(
			p, pkt->record, pkt->offset,
			"the record header is cut short (%zu of %u bytes); the capture is cut short",
			left, PCAP_REC_LEN);
	sec = get32(r, be);
	frac = get32(r + 4, be);
	caplen = get32(r + 8, be);
	wire = get32(r + 12, be);
	if (check_lengths(p, pkt, caplen, wire, left - PCAP_REC_LEN))
		return -1;
	pkt->ts_ns = sec * 1000000000ULL + frac * (p->nsec ? 1 : 1000);
	pkt->has_ts = 1;
	if (emit(p, pkt, r + PCAP_REC_LEN, caplen, wire, p->ifs[0].linktype))
		return -1;
	p->off += PCAP_REC_LEN + caplen;
	return 1;
}

/*
 * The next option in [*o, end): 1 with code, value and length, 0 at
 * opt_endofopt or the end, -1 when it runs past the end.
 */
static int next_opt(const __u8 **o, const __u8 *end, int be, __u16 *code,
		    const __u8 **val, __u16 *vlen)
{
	size_t left = (size_t)(end - *o), need;

	if (left < 4)
		return 0;
	*code = get16(*o, be);
	*vlen = get16(*o + 2, be);
	if (!*code)
		return 0;
	need = 4 + pad4(*vlen);
	if (need > left)
		return -1;
	*val = *o + 4;
	*o += need;
	return 1;
}

/* The direction in an epb_flags/opb_flags option, if there is one. */
static int pkt_options(struct ks_pcap *p, struct ks_pcap_pkt *pkt,
		       const __u8 *o, const __u8 *end)
{
	const __u8 *val = NULL;
	__u16 code = 0, vlen = 0;
	int rc;

	while ((rc = next_opt(&o, end, p->big_endian, &code, &val, &vlen)) >
	       0) {
		__u32 flags;

		if (code != NG_OPT_FLAGS || vlen != 4)
			continue;
		flags = get32(val, p->big_endian) & 3;
		pkt->dir = flags == 1   ? KS_PCAP_DIR_IN
			   : flags == 2 ? KS_PCAP_DIR_OUT
					: KS_PCAP_DIR_UNKNOWN;
	}
	if (rc < 0)
		return fail(
			p, pkt->record, pkt->offset,
			"option %u (%u bytes) runs past the end of its block",
			code, vlen);
	return 0;
}

static int read_shb(struct ks_pcap *p, const struct ks_pcap_pkt *at,
		    const __u8 *body, __u32 n)
{
	if (n < NG_SHB_BODY)
		return fail(
			p, at->record, at->offset,
			"section header block too short (%u body bytes, need %u)",
			n, NG_SHB_BODY);
	if (get16(body + 4, p->big_endian) != 1)
		return fail(p, at->record, at->offset,
			    "pcapng version %u.%u, not 1.x",
			    get16(body + 4, p->big_endian),
			    get16(body + 6, p->big_endian));
	p->nifs = 0; /* interfaces are numbered per section */
	return 0;
}

/* if_tsresol: 10^-r seconds, or 2^-r with the top bit set. */
static int set_tsresol(struct ks_pcap *p, const struct ks_pcap_pkt *at,
		       struct ks_pcap_if *i, __u8 r)
{
	__u8 e = r & 0x7f;
	__u64 u = 1;

	if (r & 0x80) {
		if (e > 63)
			return fail(p, at->record, at->offset,
				    "if_tsresol 2^-%u is finer than 2^-63 s",
				    e);
		i->units = 1ULL << e;
		return 0;
	}
	if (e > 19)
		return fail(p, at->record, at->offset,
			    "if_tsresol 10^-%u is finer than 10^-19 s", e);
	while (e--)
		u *= 10;
	i->units = u;
	return 0;
}

static int read_idb(struct ks_pcap *p, const struct ks_pcap_pkt *at,
		    const __u8 *body, __u32 n)
{
	const __u8 *o = body + NG_IDB_BODY, *val = NULL;
	struct ks_pcap_if *i;
	__u16 code = 0, vlen = 0;
	int rc;

	if (n < NG_IDB_BODY)
		return fail(
			p, at->record, at->offset,
			"interface description block too short (%u body bytes, need %u)",
			n, NG_IDB_BODY);
	if (p->nifs == KS_PCAP_MAX_IFS)
		return fail(p, at->record, at->offset,
			    "more than %u interfaces in one section",
			    KS_PCAP_MAX_IFS);
	i = &p->ifs[p->nifs];
	i->linktype = get16(body, p->big_endian);
	i->snaplen = get32(body + 4, p->big_endian);
	i->units = 1000000; /* the default: microseconds */
	i->offset_s = 0;
	while ((rc = next_opt(&o, body + n, p->big_endian, &code, &val,
			      &vlen)) > 0) {
		if (code == NG_OPT_TSRESOL && vlen >= 1) {
			if (set_tsresol(p, at, i, val[0]))
				return -1;
		} else if (code == NG_OPT_TSOFFSET && vlen == 8) {
			i->offset_s = (__s64)get64(val, p->big_endian);
		}
	}
	if (rc < 0)
		return fail(
			p, at->record, at->offset,
			"option %u (%u bytes) runs past the end of its block",
			code, vlen);
	p->nifs++;
	return 0;
}

static int check_iface(struct ks_pcap *p, const struct ks_pcap_pkt *pkt)
{
	if (pkt->iface < p->nifs)
		return 0;
	return fail(
		p, pkt->record, pkt->offset,
		"a packet of interface %u, but %u interface%s described in this section",
		pkt->iface, p->nifs, p->nifs == 1 ? " is" : "s are");
}

/* EPB (epb: 1) and OPB (0): interface, timestamp, lengths, data, options. */
static int read_pkt_block(struct ks_pcap *p, struct ks_pcap_pkt *pkt,
			  const __u8 *body, __u32 n, int epb)
{
	int be = p->big_endian;
	__u32 caplen, wire;
	__u64 ts;

	if (n < NG_PKT_BODY)
		return fail(
			p, pkt->record, pkt->offset,
			"%s packet block too short (%u body bytes, need %u)",
			epb ? "enhanced" : "obsolete", n, NG_PKT_BODY);
	pkt->iface = epb ? get32(body, be) : get16(body, be);
	ts = (__u64)get32(body + 4, be) << 32 | get32(body + 8, be);
	caplen = get32(body + 12, be);
	wire = get32(body + 16, be);
	if (check_iface(p, pkt) ||
	    check_lengths(p, pkt, caplen, wire, n - NG_PKT_BODY) ||
	    pkt_options(p, pkt, body + NG_PKT_BODY + pad4(caplen), body + n))
		return -1;
	pkt->ts_ns = to_ns(ts, &p->ifs[pkt->iface]);
	pkt->has_ts = 1;
	return emit(p, pkt, body + NG_PKT_BODY, caplen, wire,
		    p->ifs[pkt->iface].linktype);
}

/* SPB: interface 0, no timestamp; the captured length is what the block
 * and the interface's snaplen leave of the original length. */
static int read_spb(struct ks_pcap *p, struct ks_pcap_pkt *pkt,
		    const __u8 *body, __u32 n)
{
	__u32 wire, caplen;

	if (n < NG_SPB_BODY)
		return fail(
			p, pkt->record, pkt->offset,
			"simple packet block too short (%u body bytes, need %u)",
			n, NG_SPB_BODY);
	pkt->iface = 0;
	if (check_iface(p, pkt))
		return -1;
	wire = get32(body, p->big_endian);
	caplen = wire;
	if (caplen > n - NG_SPB_BODY)
		caplen = n - NG_SPB_BODY;
	if (p->ifs[0].snaplen && caplen > p->ifs[0].snaplen)
		caplen = p->ifs[0].snaplen;
	if (check_lengths(p, pkt, caplen, wire, n - NG_SPB_BODY))
		return -1;
	pkt->has_ts = 0;
	return emit(p, pkt, body + NG_SPB_BODY, caplen, wire,
		    p->ifs[0].linktype);
}

/* The block's type and total length, checked against the file. */
static int block_header(struct ks_pcap *p, const struct ks_pcap_pkt *at,
			__u32 *type, __u32 *blen)
{
	const __u8 *b = p->buf + p->off;
	size_t left = p->len - p->off;
	__u32 bom;

	if (left < NG_BLOCK_MIN)
		return fail(
			p, at->record, at->offset,
			"the block header is cut short (%zu of %u bytes); the capture is cut short",
			left, NG_BLOCK_MIN);
	/* A section header's type reads the same in both byte orders; its
	 * byte-order magic sets the order of everything up to the next. */
	*type = get32(b, p->big_endian);
	if (*type == NG_SHB) {
		if (left < NG_BLOCK_MIN + 4)
			return fail(
				p, at->record, at->offset,
				"the section header is cut short (%zu bytes)",
				left);
		bom = get32(b + 8, 0);
		if (bom != NG_BOM && __builtin_bswap32(bom) != NG_BOM)
			return fail(
				p, at->record, at->offset,
				"section header byte-order magic %08x is not 1a2b3c4d in either byte order; the file is corrupt",
				bom);
		p->big_endian = bom != NG_BOM;
	} else if (at->record == 1) {
		return fail(
			p, at->record, at->offset,
			"block type 0x%08x where a pcapng file must start with a section header",
			*type);
	}
	*blen = get32(b + 4, p->big_endian);
	if (*blen < NG_BLOCK_MIN || *blen % 4)
		return fail(p, at->record, at->offset,
			    "block length %u is %s; the file is corrupt", *blen,
			    *blen < NG_BLOCK_MIN ? "shorter than 12 bytes"
						 : "not a multiple of 4");
	if (*blen > left)
		return fail(
			p, at->record, at->offset,
			"block length %u runs past the end of the file (%zu bytes left); the capture is cut short",
			*blen, left);
	if (get32(b + *blen - 4, p->big_endian) != *blen)
		return fail(
			p, at->record, at->offset,
			"the trailing block length %u differs from the leading %u; the file is corrupt",
			get32(b + *blen - 4, p->big_endian), *blen);
	return 0;
}

static int next_ng(struct ks_pcap *p, struct ks_pcap_pkt *pkt)
{
	while (p->off < p->len) {
		const __u8 *body;
		__u32 type = 0, blen = 0, n;
		int rc = 0, is_pkt = 0;

		pkt->record = p->record + 1;
		pkt->offset = p->off;
		if (block_header(p, pkt, &type, &blen))
			return -1;
		body = p->buf + p->off + 8;
		n = blen - NG_BLOCK_MIN;
		switch (type) {
		case NG_SHB:
			rc = read_shb(p, pkt, body, n);
			break;
		case NG_IDB:
			rc = read_idb(p, pkt, body, n);
			break;
		case NG_EPB:
		case NG_OPB:
			rc = read_pkt_block(p, pkt, body, n, type == NG_EPB);
			is_pkt = 1;
			break;
		case NG_SPB:
			rc = read_spb(p, pkt, body, n);
			is_pkt = 1;
			break;
		default: /* name resolution, statistics, custom, ...: skipped */
			break;
		}
		if (rc)
			return -1;
		p->off += blen;
		p->record++;
		if (is_pkt)
			return 1;
	}
	return 0;
}

int ks_pcap_next(struct ks_pcap *p, struct ks_pcap_pkt *pkt)
{
	int rc;

	if (p->failed)
		return -1;
	memset(pkt, 0, sizeof(*pkt));
	if (p->off >= p->len)
		return 0;
	if (p->format == KS_PCAP_NG)
		return next_ng(p, pkt);
	pkt->record = p->record + 1;
	pkt->offset = p->off;
	rc = next_classic(p, pkt);
	if (rc > 0)
		p->record++;
	return rc;
}

/* ---- the writer ---- */

static void put32le(__u8 *b, __u32 v)
{
	b[0] = v & 0xff;
	b[1] = v >> 8 & 0xff;
	b[2] = v >> 16 & 0xff;
	b[3] = v >> 24;
}

void ks_pcap_put_file_header(__u8 out[KS_PCAP_FILE_HDR_LEN], int nsec,
			     __u32 snaplen, __u32 linktype)
{
	put32le(out, nsec ? PCAP_NSEC : PCAP_USEC);
	out[4] = 2; /* version 2.4 */
	out[5] = 0;
	out[6] = 4;
	out[7] = 0;
	put32le(out + 8, 0);  /* thiszone */
	put32le(out + 12, 0); /* sigfigs */
	put32le(out + 16, snaplen);
	put32le(out + 20, linktype);
}

void ks_pcap_put_record_header(__u8 out[KS_PCAP_REC_HDR_LEN], int nsec,
			       __u64 ts_ns, __u32 caplen, __u32 wire_len)
{
	__u64 frac = ts_ns % 1000000000ULL;

	put32le(out, (__u32)(ts_ns / 1000000000ULL));
	put32le(out + 4, (__u32)(nsec ? frac : frac / 1000));
	put32le(out + 8, caplen);
	put32le(out + 12, wire_len);
}
