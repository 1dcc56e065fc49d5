/* rootfs/unpack/zstd.c — the zstd decoder of the decompressor thread: libzstd's
 * streaming API, straight into the handoff blocks, its frame checksums
 * verified by the extracting thread (struct frame_check). */
#include "stream_int.h"

#include <stdio.h>
#include <string.h>
#include <xxhash.h>
/* ZSTD_d_forceIgnoreChecksum: stable since zstd 1.4.7, declared among the
 * experimental parameters; libzstd is linked statically. */
#define ZSTD_STATIC_LINKING_ONLY
#include <zstd.h>
#include <zstd_errors.h>

/* zstd's frame checksums to the reader (struct frame_check): 1 when the
 * decoder now skips them, 0 when it checks them itself as before. */
static int zstd_hand_checks(struct stream *s, ZSTD_DCtx *dctx)
{
	struct frame_check *c = &s->check;
	c->xxh = XXH64_createState();
	if (c->xxh && XXH64_reset(c->xxh, 0) == XXH_OK &&
	    !ZSTD_isError(ZSTD_DCtx_setParameter(dctx, ZSTD_d_forceIgnoreChecksum, ZSTD_d_ignoreChecksum))) {
		/* As the decoder would have said it. */
		snprintf(c->msg, sizeof c->msg, "zstd: %s", ZSTD_getErrorString(ZSTD_error_checksum_wrong));
		return c->on = 1;
	}
	XXH64_freeState(c->xxh);
	c->xxh = NULL;
	return 0;
}

/* What the decoder saw of the current frame's input: its first bytes (the
 * header, which says whether the frame has a checksum) and the last four
 * (the checksum, at the frame's end). */
struct frame_bytes {
	unsigned char head[ZSTD_FRAMEHEADERSIZE_MAX];
	size_t nhead;
	unsigned char tail[4];
};

static void frame_bytes_add(struct frame_bytes *f, const unsigned char *p, size_t k)
{
	size_t h = sizeof f->head - f->nhead < k ? sizeof f->head - f->nhead : k;
	memcpy(f->head + f->nhead, p, h);
	f->nhead += h;
	if (k >= sizeof f->tail) {
		memcpy(f->tail, p + k - sizeof f->tail, sizeof f->tail);
	} else {
		memmove(f->tail, f->tail + k, sizeof f->tail - k);
		memcpy(f->tail + sizeof f->tail - k, p, k);
	}
}

/* The mark of a frame that just ended (FRAME_END, and FRAME_SUM with the
 * checksum it carries); the next frame starts afresh. */
static unsigned long long frame_end_mark(struct frame_bytes *f)
{
	unsigned long long mark = FRAME_END;
	ZSTD_frameHeader fh;
	if (ZSTD_getFrameHeader(&fh, f->head, f->nhead) == 0 && fh.frameType == ZSTD_frame && fh.checksumFlag)
		mark |= FRAME_SUM | (unsigned long long)f->tail[0] | (unsigned long long)f->tail[1] << 8 |
			(unsigned long long)f->tail[2] << 16 | (unsigned long long)f->tail[3] << 24;
	f->nhead = 0;
	return mark;
}

/* zstd straight into the handoff blocks with libzstd's streaming API (the
 * library libarchive's own zstd filter uses): without that filter's
 * output buffer, a copy of every byte is saved, and zstd was the slower
 * of the two threads.  Concatenated and skippable frames are read as
 * zstd reads them; bytes that are no frame, a damaged frame, a frame whose
 * checksum does not match (checked by the reader: zstd_hand_checks), or
 * input that ends inside a frame fail. */
void zstd_stream(void *arg)
{
	struct stream *s = arg;
	/* Freed by stream_main: a SIGBUS may leave this function anywhere. */
	ZSTD_DCtx *dctx = s->zdec = ZSTD_createDCtx();
	if (!dctx) {
		s->failed = 1;
		snprintf(s->msg, sizeof s->msg, "zstd: out of memory");
		return;
	}
	const int marks = zstd_hand_checks(s, dctx);
	struct frame_bytes fb = {.nhead = 0};
	ZSTD_inBuffer in = {0};
	size_t pending = 1; /* ZSTD_decompressStream's last hint: 0 at a frame's end */
	int full = 0;       /* the last call filled its output: it may hold more */
	for (;;) {
		if (in.pos == in.size && !full) {
			ssize_t n = stream_input(s);
			if (n < 0)
				break;
			if (n == 0) {
				if (pending) {
					s->failed = s->truncated = 1;
					snprintf(s->msg, sizeof s->msg, "zstd: truncated input");
				}
				break;
			}
			in = (ZSTD_inBuffer){s->src.data, (size_t)n, 0};
		}
		if (!stream_room(s))
			break;
		ZSTD_outBuffer out = {s->fill + s->fill_len, HANDOFF_BLOCK - s->fill_len, 0};
		size_t before = in.pos;
		size_t r = ZSTD_decompressStream(dctx, &out, &in);
		if (ZSTD_isError(r)) {
			s->failed = 1;
			snprintf(s->msg, sizeof s->msg, "zstd: %s", ZSTD_getErrorName(r));
			break;
		}
		if (marks)
			frame_bytes_add(&fb, (const unsigned char *)in.src + before, in.pos - before);
		pending = r;
		full = out.pos == out.size;
		if (stream_added(s, out.pos, 0) < 0)
			break;
		if (marks && r == 0 && stream_mark(s, frame_end_mark(&fb)) < 0)
			break;
	}
}
