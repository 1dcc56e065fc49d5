/* rootfs/unpack/gzip.c — the gzip decoder of the decompressor thread: ISA-L's
 * igzip inflating straight into the handoff blocks.
 *
 * gzip, the common case, is inflated with ISA-L's igzip when libisal.so.2 is
 * installed: it is faster than zlib, and inflating is the slower of the two
 * threads, since files are made with a few system calls each.  It
 * is loaded with dlopen() on the first gzip only (a warm launch never maps
 * it), and without it libarchive's zlib filter does the same job
 * (rootfs/unpack/stream.c).  gzip's member CRC-32s are verified by the extracting
 * thread (struct frame_check). */
#include "stream_int.h"

#include <dlfcn.h>
#include <isa-l/igzip_lib.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ISA-L, looked up once per process: inflate, its gzip header reader, and
 * the CRC-32 the extracting thread checks each member with. */
static struct {
	pthread_once_t once;
	void (*init)(struct inflate_state *);
	void (*reset)(struct inflate_state *);
	int (*inflate)(struct inflate_state *);
	int (*header)(struct inflate_state *, struct isal_gzip_header *);
	uint32_t (*crc32)(uint32_t, const unsigned char *, uint64_t);
} isal = {.once = PTHREAD_ONCE_INIT};

static void isal_load(void)
{
	void *h = dlopen("libisal.so.2", RTLD_NOW | RTLD_LOCAL);
	if (!h)
		return;
	isal.reset = (void (*)(struct inflate_state *))dlsym(h, "isal_inflate_reset");
	isal.inflate = (int (*)(struct inflate_state *))dlsym(h, "isal_inflate");
	isal.header = (int (*)(struct inflate_state *, struct isal_gzip_header *))dlsym(h, "isal_read_gzip_header");
	isal.crc32 = (uint32_t(*)(uint32_t, const unsigned char *, uint64_t))dlsym(h, "crc32_gzip_refl");
	/* Set last: init is what says the library is usable. */
	if (isal.reset && isal.inflate && isal.header && isal.crc32)
		isal.init = (void (*)(struct inflate_state *))dlsym(h, "isal_inflate_init");
}

int have_isal(void)
{
	return pthread_once(&isal.once, isal_load) == 0 && isal.init != NULL;
}

static void igzip_fail(struct stream *s, const char *what, int code)
{
	s->failed = 1;
	snprintf(s->msg, sizeof s->msg, "gzip: %s (ISA-L error %d)", what, code);
}

static uint32_t le32(const unsigned char *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* The first bytes of a member's trailer, which ISA-L has already taken from
 * the input into its bit buffer when the deflate data ends (up to 8 bytes,
 * after the padding bits of the data's last byte); how many. */
static size_t trailer_from_bits(const struct inflate_state *st, unsigned char trailer[8])
{
	size_t n = (size_t)st->read_in_length / 8;
	uint64_t bits = st->read_in >> (st->read_in_length % 8);
	if (n > 8)
		n = 8;
	for (size_t i = 0; i < n; i++)
		trailer[i] = (unsigned char)(bits >> (8 * i));
	return n;
}

/* The gzip input inflated into the blocks with ISA-L as raw deflate: the
 * header is read with ISA-L's reader, the trailer here.  Each member's
 * length is checked here, its CRC-32 by the extracting thread (struct
 * frame_check) on the blocks this member filled, so that the slower thread
 * does not also sum 200 MB.  Like libarchive's gzip filter, it goes on with
 * the next member of a concatenated stream, and after a complete member
 * ends quietly at bytes that do not start another. */
void igzip_stream(void *arg)
{
	struct stream *s = arg;
	/* Freed by stream_main: a SIGBUS may leave this function anywhere. */
	struct inflate_state *st = s->dec = xmalloc(sizeof *st);
	enum { HEADER, DATA, TRAILER } part = HEADER;
	struct isal_gzip_header hdr = {0}; /* no name, comment or extra kept */
	unsigned char trailer[8];
	size_t have = 0;         /* trailer bytes so far */
	int members = 0;         /* complete ones */
	uint32_t member_out = 0; /* bytes out of the current one, mod 2^32 as ISIZE */
	int full = 0;            /* the last inflate filled its output: it may hold more */

	s->check.crc32 = isal.crc32;
	snprintf(s->check.msg, sizeof s->check.msg, "gzip: checksum mismatch (ISA-L error %d)",
		 ISAL_INCORRECT_CHECKSUM);
	s->check.on = 1;
	isal.init(st);
	st->avail_in = 0;
	for (;;) {
		if (st->avail_in == 0 && !full) {
			ssize_t n = stream_input(s);
			if (n < 0)
				break;
			if (n == 0) {
				/* Data that stops inside a member fails once the
				 * whole input has been read. */
				if (part != HEADER || !members) {
					s->failed = s->truncated = 1;
					snprintf(s->msg, sizeof s->msg, "gzip: truncated input");
				}
				break;
			}
			st->next_in = (uint8_t *)s->src.data;
			st->avail_in = (uint32_t)n;
		}
		uint32_t in_before = st->avail_in;
		if (part == HEADER) {
			int r = isal.header(st, &hdr);
			if (r == ISAL_END_INPUT && st->avail_in == 0)
				continue; /* a header cut by the input's pieces */
			if (r == ISAL_INVALID_WRAPPER && members)
				break; /* not a gzip header after the last member */
			if (r != ISAL_DECOMP_OK) {
				igzip_fail(s, r == ISAL_INCORRECT_CHECKSUM ? "checksum mismatch" : "bad header", r);
				break;
			}
			/* Raw deflate from here: isal.init and isal.reset leave
			 * crc_flag at ISAL_DEFLATE, so ISA-L sums nothing. */
			part = DATA;
			member_out = 0;
			continue;
		}
		if (part == TRAILER) {
			uint32_t k = 8 - (uint32_t)have < st->avail_in ? 8 - (uint32_t)have : st->avail_in;
			memcpy(trailer + have, st->next_in, k);
			have += k;
			st->next_in += k;
			st->avail_in -= k;
			if (have < 8)
				continue;
			if (le32(trailer + 4) != member_out) {
				igzip_fail(s, "length mismatch", ISAL_INCORRECT_CHECKSUM);
				break;
			}
			/* The member's blocks go now, marked with its CRC. */
			if (stream_mark(s, FRAME_END | FRAME_SUM | le32(trailer)) < 0)
				break;
			/* Keeps the unread input, starts a new member. */
			uint8_t *next = st->next_in;
			uint32_t left = st->avail_in;
			members++;
			isal.reset(st);
			st->next_in = next;
			st->avail_in = left;
			hdr = (struct isal_gzip_header){0};
			part = HEADER;
			continue;
		}
		/* Inflate straight into the block the extracting side reads. */
		if (!stream_room(s))
			break;
		st->next_out = s->fill + s->fill_len;
		st->avail_out = (uint32_t)(HANDOFF_BLOCK - s->fill_len);
		int r = isal.inflate(st);
		if (r < 0) {
			igzip_fail(s, "corrupt data", r);
			break;
		}
		size_t got = HANDOFF_BLOCK - s->fill_len - st->avail_out;
		full = st->avail_out == 0;
		if (stream_added(s, got, 0) < 0)
			break;
		member_out += (uint32_t)got;
		if (st->block_state == ISAL_BLOCK_FINISH) {
			have = trailer_from_bits(st, trailer);
			full = 0;
			part = TRAILER;
			continue;
		}
		/* No input taken and no output made: a stream ISA-L cannot
		 * move on (a loop guard, not a verdict anyone has seen). */
		if (!got && st->avail_in && st->avail_in == in_before) {
			igzip_fail(s, "the stream does not advance", r);
			break;
		}
	}
}
