/* rootfs/unpack/streamfill.c — the decompressor thread's output: the block it
 * fills, counted against the cap and hashed, handed to the extracting
 * thread when full, flushed or marked at a frame's end (struct handoff);
 * and its compressed input, read once what is decoded so far is handed
 * over. */
#include "stream_int.h"

#include <stdio.h>
#include <string.h>

/* The block being filled, with room in it; NULL when the reader has gone. */
unsigned char *stream_room(struct stream *s)
{
	if (!s->fill) {
		s->fill = handoff_slot(&s->q);
		s->fill_len = 0;
	}
	return s->fill;
}

/* size bytes were added to the block being filled (in place, or copied by
 * stream_put): counted against the cap, hashed when asked, and the block
 * handed over once full (or with flush, whatever it holds).  0, or -1 with
 * s->failed set when the thread must stop. */
int stream_added(struct stream *s, size_t size, int flush)
{
	if (size > s->max_bytes - s->out_bytes) {
		s->failed = s->too_big = 1;
		return -1;
	}
	digest_update(s->out_hash, s->fill + s->fill_len, size);
	s->fill_len += size;
	s->out_bytes += size;
	if (s->fill_len == HANDOFF_BLOCK || (flush && s->fill_len)) {
		handoff_publish(&s->q, s->fill_len, 0);
		s->fill = NULL;
	}
	return 0;
}

/* The block being filled goes to the reader now, even empty, with mark: 0,
 * or -1 when the reader has gone. */
int stream_mark(struct stream *s, unsigned long long mark)
{
	if (!stream_room(s))
		return -1;
	handoff_publish(&s->q, s->fill_len, mark);
	s->fill = NULL;
	return 0;
}

/* One block of libarchive's output, copied into the handoff blocks. */
int stream_put(struct stream *s, const void *block, size_t size)
{
	const unsigned char *p = block;
	while (size) {
		if (!stream_room(s))
			return -1;
		size_t n = HANDOFF_BLOCK - s->fill_len < size ? HANDOFF_BLOCK - s->fill_len : size;
		memcpy(s->fill + s->fill_len, p, n);
		/* A blob still arriving: what is here goes now, not when a
		 * block is full, so that files appear while it downloads. */
		if (stream_added(s, n, s->src.more != NULL) < 0)
			return -1;
		p += n;
		size -= n;
	}
	return 0;
}

/* The next block of compressed input into s->src.buf, for the decoders
 * that write into the blocks themselves: its size, 0 at the end, -1 with
 * s->failed set.  The read may wait for a blob still arriving, so what is
 * decoded so far is handed over first. */
ssize_t stream_input(struct stream *s)
{
	if (s->src.more && s->fill && stream_added(s, 0, 1) < 0)
		return -1;
	ssize_t n = source_next(&s->src);
	if (n < 0) {
		s->failed = 1;
		snprintf(s->msg, sizeof s->msg, "read: %s", strerror(s->src.read_errno));
	}
	return n;
}
