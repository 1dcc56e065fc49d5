/* rootfs/unpack/unpack.h — what the unpacker offers the rest of rootfs/
 * (the cache, image and registry files) and the fuzz targets and unit
 * tests, but not the launcher (that is rootfs.h), grouped by the file that
 * defines it:
 *
 *   room.c         the cap on an image's size and the free-space checks
 *                  (image_cap_error, room_check,
 *                  archive_room_check)
 *   unpack.c       the unpack limits and the image's budget (struct
 *                  unpack_limits), rootfs_unpack_limited, unpack_source,
 *                  and the hooks a layer's import passes it (struct
 *                  unpack_hooks)
 *   whiteout.c     a layer's whiteouts as overlayfs reads them
 *                  (whiteout_make, whiteout_opaque)
 *   source.c       the one place that says which archive formats and
 *                  filters gpurun reads (reader_new, raw_open,
 *                  reader_error), the
 *                  compression a stream starts with (compression_of,
 *                  compression_at), and struct fd_source with its calls
 *                  (source_open, source_free, source_map, source_guarded,
 *                  source_watch, source_unwatch, source_drain)
 *   handoff.c      struct handoff, the decompressor thread's blocks
 *   stream.c       the decompressor thread (struct stream, stream_start,
 *                  stream_join) and struct frame_check, the checksums its
 *                  decoders leave to the reader
 *   xz.c           liblzma's entry points for libarchive, loaded on the
 *                  first xz stream (xz_refusal, xz_refusal_clear)
 *   digest.c       SHA-256 digests
 *   names.c        quote_name, and the UTF-8 locale entry names are read in
 *   place.c        making unpacked entries inside a target (struct placer)
 *
 * Besides these, LA_ERRNO_FILE_FORMAT, libarchive's errno for an unknown
 * format.  The decompressor's files share more among themselves and with
 * unpack.c in stream_int.h. */
#ifndef GPURUN_ROOTFS_UNPACK_H
#define GPURUN_ROOTFS_UNPACK_H

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include <sys/stat.h>

#include "../rootfs.h"

struct archive;
struct archive_entry;
struct digest_ctx;
struct fd_source;

/* archive_errno() for "Unrecognized archive format": libarchive uses
 * EILSEQ for it, under a name it does not export. */
#define LA_ERRNO_FILE_FORMAT EILSEQ

/* The caps rootfs_unpack() applies; the fuzzer lowers them to stay fast. */
struct image_budget;
struct unpack_limits {
	size_t max_entries;
	size_t max_path;              /* bytes, entry names and hard-link targets */
	unsigned long long max_bytes; /* file data written, and the decompressed stream */
	/* Optional: the image this archive is one layer of, whose file data,
	 * all layers together, the budget bounds (rootfs_max_image_size()). */
	const struct image_budget *image;
};
struct image_budget {
	unsigned long long max;  /* at most this much file data in all */
	unsigned long long used; /* what the layers below hold (<= max) */
};
/* The error when an image passes max: "the image unpacks to more than
 * <max>, the cap on an image's size (...)"; returns -1. */
int image_cap_error(struct gerr *err, unsigned long long max);
/* The free-space check before an import: 0 when the file system of fd
 * (named where) has need bytes free, else -1 with "WHO: needs at least N
 * (WHAT), but the file system of WHERE has M free" (errnum set when
 * fstatvfs itself failed). */
int room_check(int fd, unsigned long long need, const char *who, const char *what, const char *where, struct gerr *err);
/* Before a whole image is unpacked into dirfd: room for at least the size
 * of in_fd when it is a regular file; 0 when it has that or nothing tells. */
int archive_room_check(int in_fd, const char *name, int dirfd, struct gerr *err);

/* In dir (a directory of the layer being unpacked): NAME's whiteout, a 0:0
 * character device in place of any non-directory of this layer by that
 * name, none when the layer made dir opaque; or dir's opaque marker, which
 * also removes the whiteouts already made in it.  0, or -1 with errno. */
int whiteout_make(int dir, const char *name);
int whiteout_opaque(int dir);

int rootfs_unpack_limited(int in_fd, const char *name, int dirfd, unsigned flags, const struct unpack_limits *lim,
			  struct unpack_stats *st, struct gerr *err);
/* What a layer's import adds to an unpack (unpack_source's hooks, NULL for
 * none).  lowers: with UNPACK_LAYER, the layers below the one being
 * unpacked, topmost first, so that a whiteout whose path runs through a
 * symlink of a lower layer is refused.  progress: called after each entry
 * (the caller throttles). */
struct lower_layers {
	const int *fds;
	size_t n;
};
struct unpack_hooks {
	const struct lower_layers *lowers;
	/* The full id map of the cache area unpacked into (NULL: the caller's
	 * own ids): with UNPACK_KEEP_OWNER, an unprivileged caller unpacks
	 * as the root of that map. */
	const struct subids *map;
	void (*progress)(void *ctx, const struct unpack_stats *st);
	void *progress_ctx;
};
/* The general form: the input is in (a whole file from its current offset,
 * or a range of one; in->hash, when set, is fed every byte of it, to its
 * end), tar_hash (optional) the decompressed tar stream. */
int unpack_source(const struct fd_source *in, struct digest_ctx *tar_hash, const char *name, int dirfd, unsigned flags,
		  const struct unpack_limits *lim, const struct unpack_hooks *hooks, struct unpack_stats *st,
		  struct gerr *err);
extern const struct unpack_limits unpack_default_limits;

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
struct handoff;
struct fd_source {
	int fd;
	/* Instead of fd: the blocks the decompressor thread hands over, and
	 * the frame checksums this side verifies on them (struct frame_check). */
	struct handoff *from;
	struct frame_check *check;
	const void *data; /* what the last read delivered (buf, or a block of from) */
	size_t block;     /* bytes per read() */
	int ranged;       /* read only [start, start + len) of fd, with pread() */
	unsigned long long start, len;
	struct digest_ctx *hash, *hash2; /* optional: every byte read is hashed */
	void *buf;
	/* Instead of read(): the input mapped (source_map), from where the
	 * reading starts; map_base/map_size are the whole mapping. */
	const unsigned char *map;
	size_t map_len;
	void *map_base;
	size_t map_size;
	unsigned long long map_start; /* the file offset map points at */
	size_t map_dropped;           /* bytes of the mapping given back, from map_base */
	int shrank;                   /* the mapped file was cut short under us */
	/* Optional: a file still being written (a blob a registry pull is
	 * fetching).  Called at each end of input with the bytes read so far:
	 * 1 more has come (read again), 0 the real end, -1 it will never
	 * complete (the read fails with EIO). */
	int (*more)(void *ctx, unsigned long long have);
	void *more_ctx;
	unsigned long long total; /* bytes read */
	int eof;                  /* read() returned 0 */
	int read_errno;           /* read() failed */
};
/* Attach src to a and open it (the format is chosen here).  Returns
 * libarchive's status; src->buf is freed by source_free() in any case. */
int source_open(struct archive *a, struct fd_source *src);
void source_free(struct fd_source *src);
/* Map what src would read (a regular file to its end, or its range), so
 * that a decoder reads the page cache in place instead of a copy of it: 1,
 * or 0 where it reads as before (not a regular file, a file still growing,
 * mmap refused).  Reading a mapped file that shrinks faults with SIGBUS;
 * source_guarded() turns that into a read error. */
int source_map(struct fd_source *src);
/* Runs fn(arg) in the calling thread with SIGBUS on src's mapping caught:
 * 0, or -1 with src->read_errno = EIO when the file was cut short under it
 * (what was decoded before is kept). */
int source_guarded(struct fd_source *src, void (*fn)(void *), void *arg);
/* For a reader that a jump must not leave (the tar reader and the placer
 * hold files open): between the two calls, in the calling thread, a fault
 * on src's mapping maps zeros over the rest of it, so the reader goes on
 * to its own end.  source_unwatch() returns 1 (and sets src->shrank) when
 * the file was cut short meanwhile: what was read is then worthless.
 * Both do nothing for a source that is not mapped. */
void source_watch(struct fd_source *src, sigset_t *old);
int source_unwatch(struct fd_source *src, const sigset_t *old);

/* A raw-format reader with the filters (see reader_new) on src, opened and
 * positioned at the start of the decompressed data.  Returns libarchive's
 * status; *ap is always set, for archive_read_free(), and is NULL (with
 * ARCHIVE_FATAL) when no reader could be made. */
int raw_open(struct archive **ap, struct fd_source *src);

/* What went wrong in reader a, the reader this thread made last, in
 * libarchive's words, or NULL; but when a reads an xz, lzma or lzip stream
 * and liblzma could not be loaded, that (rootfs/unpack/xz.c), which
 * libarchive's words would not say. */
const char *reader_error(struct archive *a);

/* Why liblzma cannot be loaded, once the reader this thread made last
 * needed it for an xz, lzma or lzip stream and went without; else NULL.
 * reader_new() clears it for the reader it makes. */
const char *xz_refusal(void);
void xz_refusal_clear(void);

/* The decompressor thread hands the plain tar stream to the extracting
 * thread in large blocks of memory, not through a pipe: a pipe costs two
 * copies of every byte (about 200 MB for Debian minbase) and two system
 * calls per 64 KiB.  The extracting side reads a block in place, and gives it
 * back when it asks for the next one (libarchive's read-callback contract:
 * a buffer stays valid until the next read).  256 KiB blocks rather than
 * 1 MiB: extraction starts sooner on a small image.
 *
 * 128 blocks (32 MiB), so that either side can run ahead of the other
 * through a stretch of the archive it is faster on: a run of small files
 * holds the extractor back while the decoder goes on, big files the other
 * way round; with a few blocks only, each side waits for the other at every
 * such stretch.  A block handed back is the
 * next one filled (a stack, not a ring), so memory is touched only as deep
 * as the backlog goes: a busybox image, which the extractor keeps up with,
 * uses the first 2 MiB (rootfs/unpack/handoff.c). */
#define HANDOFF_SLOTS 128
#define HANDOFF_BLOCK (256 * 1024)
struct handoff {
	pthread_mutex_t lock;
	pthread_cond_t filled; /* the reader waits for a block or the end */
	pthread_cond_t freed;  /* the writer waits for room or the reader's exit */
	unsigned char *blocks; /* HANDOFF_SLOTS of them, in the mapping map */
	size_t len[HANDOFF_SLOTS];
	unsigned long long mark[HANDOFF_SLOTS]; /* the writer's word on a block's end */
	unsigned short queue[HANDOFF_SLOTS];    /* filled blocks, oldest at qtail */
	unsigned long long qhead, qtail;
	unsigned short spare[HANDOFF_SLOTS]; /* free blocks, the last freed on top */
	unsigned nspare;
	int held;    /* the block the reader still reads, or -1 */
	int filling; /* the block the writer got from handoff_slot() */
	int writer_done, reader_gone;
	int reader_waits, writer_waits; /* asleep on filled / freed */
	void *map;                      /* the blocks' mapping */
};
/* The blocks and the locks: 0, or -1 with errno (mmap). */
int handoff_init(struct handoff *h);
/* After both sides are done; harmless on a handoff that failed to init. */
void handoff_destroy(struct handoff *h);
/* The reader's side: the next block (its length, *data set, and *mark, when
 * not NULL, what the writer published with it), 0 at the end of the stream
 * (*mark 0).  A block may be empty and marked: 0 with a mark is no end. */
ssize_t handoff_take(struct handoff *h, const void **data, unsigned long long *mark);
/* The reader stops early: the writer's next wait returns NULL. */
void handoff_close_reader(struct handoff *h);
/* The writer's side: a free block to fill, or NULL when the reader has gone
 * (what EPIPE was: the extracting side stopped first and has its own
 * reason, which is not ours to report). */
unsigned char *handoff_slot(struct handoff *h);
/* The block from handoff_slot() holds len bytes: the reader's now, with
 * mark (0 for none). */
void handoff_publish(struct handoff *h, size_t len, unsigned long long mark);
/* No more blocks: the reader's next take past the last one returns 0. */
void handoff_close_writer(struct handoff *h);

/* zstd's frame checksums and gzip's member CRC-32s, verified by the
 * extracting thread instead of the decompressor: summing is a good part of
 * the decoding time, and the decoder is the slower thread while the
 * extracting one waits for blocks.  The
 * decoder ends the block it fills at each frame's (member's) end and marks
 * it (FRAME_END, and FRAME_SUM with the checksum it carries in the low 32
 * bits); the reader sums every byte it takes and compares at each mark.
 * on, msg and the sum's kind are set before the first block when the
 * decoder leaves the checking to the reader. */
#define FRAME_END (1ULL << 32)
#define FRAME_SUM (1ULL << 33)
struct frame_check {
	int on;
	int bad;   /* a frame's data did not match its checksum */
	void *xxh; /* zstd: XXH64_state_t of the current frame */
	/* gzip (when xxh is NULL): ISA-L's CRC-32 and the current member's */
	uint32_t (*crc32)(uint32_t crc, const unsigned char *buf, uint64_t len);
	uint32_t crc;
	char msg[96]; /* what a mismatch is called (the decoder's words) */
};

/* The decompressor thread: reads in_fd through the compression filters and
 * hands the plain tar stream over, so that decompression and file creation
 * run on two cores, like `tar -xzf` with its gzip child. */
struct stream {
	struct fd_source src;
	struct digest_ctx *out_hash; /* optional: the decompressed bytes are hashed */
	struct handoff q;            /* to the extracting thread */
	unsigned char *fill;         /* the block being filled (the thread's) */
	size_t fill_len;
	unsigned long long max_bytes;
	unsigned long long out_bytes; /* decompressed bytes delivered */
	int failed;                   /* the input could not be read or decompressed */
	int truncated;                /* ... because it ends too early */
	int too_big;                  /* ... or because it exceeds max_bytes */
	char msg[512];                /* libarchive's reason, when failed */
	void *dec;                    /* the gzip decoder's state */
	struct ZSTD_DCtx_s *zdec;     /* the zstd decoder's */
	struct frame_check check;     /* set by the thread, used by the reader */
	pthread_t thread;
};

/* Start the thread on the input described by in (fd, range, hash: copied);
 * *out is set to read the plain stream from s (an fd_source with from set).
 * out_hash, when set, is fed the decompressed stream.  Returns 0, or -1 with
 * err and nothing left running. */
int stream_start(struct stream *s, const struct fd_source *in, struct digest_ctx *out_hash,
		 unsigned long long max_bytes, struct fd_source *out, struct gerr *err);
/* Read what is left of src's input (to its end), hashing it: a digest
 * covers the whole blob, also what a reader left after the data it wanted. */
int source_drain(struct fd_source *src);
/* Wait for the thread and free the blocks.  Call handoff_close_reader()
 * first when the reader stopped before the end: a thread waiting for a free
 * block then stops. */
void stream_join(struct stream *s);

/* The compression of the data at fd's current offset, by magic number:
 * "gzip", "xz", "zstd", "bzip2", NULL for none of them, or "unknown" when
 * fd cannot be peeked at (a pipe).  compression_at: at src's start. */
const char *compression_of(int fd);
const char *compression_at(const struct fd_source *src);

#define DIGEST_HEX_LEN 64
#define DIGEST_PREFIX "sha256:" /* the one algorithm gpurun accepts */
/* Where an OCI layout keeps a blob: OCI_BLOBS HEX. */
#define OCI_BLOB_DIR "blobs/sha256"
#define OCI_BLOBS OCI_BLOB_DIR "/"
struct digest_ctx *digest_new(void);
void digest_update(struct digest_ctx *d, const void *buf, size_t n); /* d may be NULL */
/* The lowercase hex digest; frees d. */
void digest_final(struct digest_ctx *d, char hex[DIGEST_HEX_LEN + 1]);
void digest_free(struct digest_ctx *d);
/* 1 when hex is exactly 64 lowercase hex digits. */
int digest_hex_ok(const char *hex);
/* The hex part of "sha256:<64 hex>", or NULL when digest is not one. */
const char *digest_parse(const char *digest);

/* Copy an entry name into dst for a one-line message: control bytes become
 * \xNN, and long names are cut with "...". */
void quote_name(char *dst, size_t cap, const char *name);
#define QUOTED_NAME_MAX 240

/* Run the calling thread in the C.UTF-8 locale while archive headers are read,
 * so that pax UTF-8 names convert instead of failing in the C locale.  Returns
 * the locale to give back to locale_restore() (unchanged when unavailable). */
void *locale_utf8_enter(void);
void locale_restore(void *saved);

/* rootfs/unpack/place.c: making unpacked entries inside a target directory (see
 * there why not libarchive's write-disk).  Paths are entry names already
 * checked by rootfs/unpack/unpack.c (relative, no ".."). */
struct place_meta {
	int chown, chmod, set_times;
	uid_t uid;
	gid_t gid;
	mode_t mode;
	struct timespec times[2]; /* atime, mtime; UTIME_OMIT where the entry has none */
};
struct kept_dir {
	char *path; /* normalized, relative to the target */
	int fd;     /* O_PATH */
	unsigned long used;
};
struct dir_fixup {
	char *path;
	struct place_meta meta;
};
struct placer {
	int root; /* the target directory (not owned) */
	unsigned flags;
	mode_t umask;
	uid_t euid;
	gid_t egid;
	int root_setgid; /* new files take the target's group: always chown */
	struct kept_dir dirs[8];
	unsigned long clock;
	struct dir_fixup *fix;
	size_t nfix, capfix;
	int fd; /* the regular file being written, or -1 */
	int64_t size, end;
	struct place_meta meta;
	char qname[QUOTED_NAME_MAX]; /* the entry, for messages */
};
void place_init(struct placer *p, int root, unsigned flags);
/* Make the entry (type AE_IFDIR, AE_IFREG or AE_IFLNK; link: a hard link
 * to that entry name); a regular file then takes place_data() and
 * place_finish(). */
int place_entry(struct placer *p, struct archive_entry *e, const char *entry, const char *link, mode_t type,
		struct gerr *err);
int place_data(struct placer *p, const void *buf, size_t size, int64_t off, struct gerr *err);
int place_finish(struct placer *p, struct gerr *err);
/* Directory modes and times, deepest first: after the last entry. */
int place_close(struct placer *p, struct gerr *err);
void place_free(struct placer *p);
/* A directory of the target as a kept O_PATH descriptor (not the caller's
 * to close), made when missing with create; -1 with errno ELOOP when a
 * symlink is on the way, ENOTDIR when something else is. */
int place_dir(struct placer *p, const char *dir, int create);

#endif
