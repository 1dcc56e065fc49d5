/* rootfs/unpack/stream_int.h — what the decompressor thread's files share among
 * themselves and with no other file (struct stream and the reader's side
 * are in unpack.h), and with unpack.c, which feeds the stream to a
 * child of the cache's id map:
 *
 *   source.c      source_next(): one read of an fd_source, with its books
 *   streamfill.c  the thread's output: filling and handing over the blocks
 *   gzip.c        the gzip decoder (ISA-L, when installed)
 *   zstd.c        the zstd decoder
 *   stream.c      the thread itself, which picks the decoder */
#ifndef GPURUN_ROOTFS_STREAM_INT_H
#define GPURUN_ROOTFS_STREAM_INT_H

#include "unpack.h"

#include <sys/types.h>

/* ---- source.c ------------------------------------------------------------ */

/* The next read of src's input, past EINTR: its size (src->data points at
 * it), 0 at the end (src->eof set), -1 with src->read_errno. */
ssize_t source_next(struct fd_source *src);

/* ---- streamfill.c -------------------------------------------------------- */

/* The block being filled, with room in it; NULL when the reader has gone. */
unsigned char *stream_room(struct stream *s);
/* size bytes were added to the block being filled: 0, or -1 with
 * s->failed set when the thread must stop. */
int stream_added(struct stream *s, size_t size, int flush);
/* The block being filled goes to the reader now, with mark. */
int stream_mark(struct stream *s, unsigned long long mark);
/* size bytes copied into the blocks. */
int stream_put(struct stream *s, const void *block, size_t size);
/* The next block of compressed input, for the decoders that write into
 * the blocks themselves: its size, 0 at the end, -1 with s->failed set. */
ssize_t stream_input(struct stream *s);

/* ---- gzip.c, zstd.c: the decoders, run by decode_mapped() in stream.c ---- */

/* 1 when ISA-L could be loaded (once per process). */
int have_isal(void);
/* arg: the struct stream whose input is gzip (with ISA-L) or zstd. */
void igzip_stream(void *arg);
void zstd_stream(void *arg);

#endif
