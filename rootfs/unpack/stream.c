/* rootfs/unpack/stream.c — the decompressor thread: it reads the input through the
 * decoder its compression calls for and hands the plain tar stream over.
 *
 * Unpacking a .tar.gz in one thread spends about as long inflating as it does
 * creating files; GNU tar hides the first behind a gzip child process.  Here
 * a second thread runs a raw-format reader (filters only) and hands the plain
 * tar stream over in blocks of memory (struct handoff); the caller's thread
 * reads them in place with a tar-only reader and makes the files
 * (rootfs/unpack/place.c).  A launch starts the thread before its other setup
 * (rootfs_unpack_start), so inflating overlaps the first mounts too.
 *
 * gzip is inflated by ISA-L when it is installed (rootfs/unpack/gzip.c), zstd by
 * libzstd's streaming API (rootfs/unpack/zstd.c), both straight into the blocks
 * and on a mapping of the file (rootfs/unpack/source.c); anything else by
 * libarchive's filters, whose output is copied into the blocks
 * (rootfs/unpack/streamfill.c).  Either way libarchive parses the tar. */
#include "stream_int.h"

#include <archive.h>
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>
#include <zstd.h>

#define STREAM_READ_BLOCK (256 * 1024)

static void stream_fail(struct stream *s, struct archive *a)
{
	const char *msg = reader_error(a);
	s->failed = 1;
	/* Data that stops early fails once the whole input has been read. */
	s->truncated = s->src.eof && !s->src.read_errno;
	snprintf(s->msg, sizeof s->msg, "%s", msg ? msg : "unknown error");
}

/* A decoder that reads its input through stream_input(): on the file
 * mapped where it can be, else through a buffer of read(). */
static void decode_mapped(struct stream *s, void (*decode)(void *))
{
	if (!source_map(&s->src))
		s->src.buf = xmalloc(s->src.block);
	if (source_guarded(&s->src, decode, s) < 0)
		s->failed = 1;
	free(s->dec);
	s->dec = NULL;
	ZSTD_freeDCtx(s->zdec);
	s->zdec = NULL;
}

static void *stream_main(void *arg)
{
	struct stream *s = arg;
	struct archive *a = NULL;
	const char *comp = compression_at(&s->src);
	if (comp && !strcmp(comp, "gzip") && have_isal()) {
		decode_mapped(s, igzip_stream);
		goto tail;
	}
	if (comp && !strcmp(comp, "zstd")) {
		decode_mapped(s, zstd_stream);
		goto tail;
	}
	/* The raw format takes any stream of at least one byte, so an
	 * unrecognised format means an empty (decompressed) stream: not a
	 * failure here, the tar side reports an archive without entries. */
	int r = raw_open(&a, &s->src);
	if (!a) {
		s->failed = 1;
		snprintf(s->msg, sizeof s->msg, "%s", READER_SETUP_FAILED);
		goto out;
	}
	if (r != ARCHIVE_OK) {
		if (archive_errno(a) != LA_ERRNO_FILE_FORMAT)
			stream_fail(s, a);
		goto out;
	}
	for (;;) {
		const void *block;
		size_t size;
		la_int64_t off;
		r = archive_read_data_block(a, &block, &size, &off);
		if (r == ARCHIVE_EOF)
			break;
		if (r != ARCHIVE_OK) {
			stream_fail(s, a);
			break;
		}
		if (stream_put(s, block, size) < 0)
			break;
	}
tail:
	/* The blob's digest covers every byte, also what follows the end of
	 * the compressed stream. */
	if (!s->failed && s->src.hash && source_drain(&s->src) < 0) {
		s->failed = 1;
		snprintf(s->msg, sizeof s->msg, "read: %s", strerror(s->src.read_errno));
	}
out:
	/* What was decompressed before a failure is handed over too: the tar
	 * side reports its own view of where the stream ended. */
	if (s->fill && s->fill_len)
		handoff_publish(&s->q, s->fill_len, 0);
	s->fill = NULL;
	handoff_close_writer(&s->q);
	archive_read_free(a);
	source_free(&s->src);
	return NULL;
}

int stream_start(struct stream *s, const struct fd_source *in, struct digest_ctx *out_hash,
		 unsigned long long max_bytes, struct fd_source *out, struct gerr *err)
{
	memset(s, 0, sizeof *s);
	s->src = *in;
	s->src.buf = NULL;
	s->src.block = STREAM_READ_BLOCK;
	s->out_hash = out_hash;
	s->max_bytes = max_bytes;
	if (handoff_init(&s->q) < 0)
		return gerr_set(err, errno, "map the decompressor's blocks");

	/* The thread starts with every signal blocked: signals for the
	 * launcher go to its main thread. */
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	int r = pthread_create(&s->thread, NULL, stream_main, s);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	/* The new thread is queued behind us on this CPU and would wait until
	 * we sleep (base/cpu.c says why); it is the launch's long pole, so it
	 * goes first, and our own setup follows when the balancer moves us or
	 * the thread waits.  Not the other CPU for it: its blocks would then
	 * change CPU at every handoff. */
	sched_yield();
	if (r != 0) {
		handoff_destroy(&s->q);
		return gerr_set(err, r, "start the decompressor thread");
	}
	*out = (struct fd_source){.fd = -1, .from = &s->q, .check = &s->check};
	return 0;
}

void stream_join(struct stream *s)
{
	pthread_join(s->thread, NULL);
	handoff_destroy(&s->q);
	XXH64_freeState(s->check.xxh);
	s->check.xxh = NULL;
}
