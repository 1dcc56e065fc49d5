/* rootfs/rootfs_int.h — what the files of rootfs/ share among themselves and
 * with the fuzz targets, but not with the launcher: the one place that says
 * which archive formats and filters gpurun reads, the decompressor thread,
 * the unpack limits, and how entry names are quoted in messages. */
#ifndef GPURUN_ROOTFS_INT_H
#define GPURUN_ROOTFS_INT_H

#include <errno.h>
#include <pthread.h>
#include <stddef.h>

#include "rootfs.h"

struct archive;

/* archive_errno() for "Unrecognized archive format": libarchive uses
 * EILSEQ for it, under a name it does not export. */
#define LA_ERRNO_FILE_FORMAT EILSEQ

/* The caps rootfs_unpack() applies; the fuzzer lowers them to stay fast. */
struct unpack_limits {
	size_t max_entries;
	size_t max_path;               /* bytes, entry names and hard-link targets */
	unsigned long long max_bytes;  /* file data written, and the decompressed stream */
};

int rootfs_unpack_limited(int in_fd, const char *name, int dirfd, unsigned flags,
			  const struct unpack_limits *lim, struct unpack_stats *st, struct gerr *err);

/* A reader for gpurun's only accepted input.  With tar, the tar format (ustar,
 * pax, GNU, v7); without, the raw format (the decompressed stream as one
 * entry).  With filters, gzip, xz, zstd and bzip2.  Never _all: the zip, rar,
 * 7z, iso and cab readers carry most of libarchive's CVEs. */
struct archive *reader_new(int tar, int filters);
/* The message when reader_new() returns NULL: out of memory, or a
 * libarchive built without one of the filters. */
#define READER_SETUP_FAILED "libarchive cannot set up the archive reader (out of memory?)"

/* A file descriptor as libarchive's input, through our own read callback
 * instead of archive_read_open_fd(): it keeps a read error's errno, and it
 * notes end of input, which is how truncation is recognised whatever words a
 * filter uses for it (xz says only "No progress is possible"). */
struct fd_source {
	int fd;
	size_t block;   /* bytes per read() */
	void *buf;
	unsigned long long total; /* bytes read */
	int eof;        /* read() returned 0 */
	int read_errno; /* read() failed */
};
/* Attach src to a and open it (the format is chosen here).  Returns
 * libarchive's status; src->buf is freed by source_free() in any case. */
int source_open(struct archive *a, struct fd_source *src);
void source_free(struct fd_source *src);

/* A raw-format reader with the filters (see reader_new) on src, opened and
 * positioned at the start of the decompressed data.  Returns libarchive's
 * status; *ap is always set, for archive_read_free(), and is NULL (with
 * ARCHIVE_FATAL) when no reader could be made. */
int raw_open(struct archive **ap, struct fd_source *src);

/* The decompressor thread: reads in_fd through the compression filters and
 * writes the plain tar stream into a pipe, so that decompression and file
 * creation run on two cores, like `tar -xzf` with its gzip child. */
struct stream {
	struct fd_source src;
	int out_fd;                    /* write end of the pipe, owned by the thread */
	unsigned long long max_bytes;
	unsigned long long out_bytes;  /* decompressed bytes delivered */
	int failed;                    /* the input could not be read or decompressed */
	int truncated;                 /* ... because it ends too early */
	int too_big;                   /* ... or because it exceeds max_bytes */
	char msg[512];                 /* libarchive's reason, when failed */
	pthread_t thread;
};

/* Start the thread; *read_fd is the pipe's read end (the caller closes it).
 * Returns 0, or -1 with err and nothing left running. */
int stream_start(struct stream *s, int in_fd, unsigned long long max_bytes, int *read_fd,
		 struct gerr *err);
/* Wait for the thread.  Close the read end first: a thread blocked on a full
 * pipe then gets EPIPE and stops. */
void stream_join(struct stream *s);

/* The compression of the data at fd's current offset, by magic number:
 * "gzip", "xz", "zstd", "bzip2", NULL for none of them, or "unknown" when
 * fd cannot be peeked at (a pipe). */
const char *compression_of(int fd);

/* Copy an entry name into dst for a one-line message: control bytes become
 * \xNN, and long names are cut with "...". */
void quote_name(char *dst, size_t cap, const char *name);
#define QUOTED_NAME_MAX 240

/* Run the calling thread in the C.UTF-8 locale while archive headers are read,
 * so that pax UTF-8 names convert instead of failing in the C locale.  Returns
 * the locale to give back to locale_restore() (unchanged when unavailable). */
void *locale_utf8_enter(void);
void locale_restore(void *saved);

#endif
