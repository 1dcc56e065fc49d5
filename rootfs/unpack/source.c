/* rootfs/unpack/source.c — libarchive's input: the readers gpurun allows (formats
 * and filters), the compression a stream starts with, and struct fd_source,
 * which feeds a reader from a file descriptor, a range of one, a mapping of
 * it or the decompressor thread's blocks, hashing what it reads.
 *
 * The decoders of gzip and zstd, and the tar reader of a plain tar, read a
 * regular file through a mapping of it rather than read(): a read copies
 * every byte once more, a cost that grows with the image.  A file cut
 * short while mapped would kill the thread with SIGBUS; source_guarded()
 * and source_watch() turn that into an error that names it. */
#include "stream_int.h"

#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

/* A mapped input is handed to the decoder this much at a time, each piece
 * faulted in with one madvise() rather than a fault per 64 KiB. */
#define MAP_CHUNK (1024 * 1024)
#ifndef MADV_POPULATE_READ
#define MADV_POPULATE_READ 22 /* Linux 5.14; older kernels: EINVAL, ignored */
#endif

struct archive *reader_new(int tar, int filters)
{
	xz_refusal_clear(); /* reader_error() speaks of this reader only */
	struct archive *a = archive_read_new();
	if (!a)
		return NULL;
	int r = tar ? archive_read_support_format_tar(a) : archive_read_support_format_raw(a);
	if (filters && r == ARCHIVE_OK) {
		/* These return WARN when they fall back to an external program;
		 * Debian's libarchive links all four libraries. */
		if (archive_read_support_filter_gzip(a) < ARCHIVE_WARN ||
		    archive_read_support_filter_xz(a) < ARCHIVE_WARN ||
		    archive_read_support_filter_zstd(a) < ARCHIVE_WARN ||
		    archive_read_support_filter_bzip2(a) < ARCHIVE_WARN)
			r = ARCHIVE_FATAL;
	}
	if (r != ARCHIVE_OK) {
		archive_read_free(a);
		return NULL;
	}
	return a;
}

static const char *compression_pread(int fd, off_t at, unsigned long long max)
{
	static const struct {
		size_t len;
		const char *magic, *name;
	} comp[] = {
		{2, "\x1f\x8b", "gzip"},
		{6,
		 "\xfd"
		 "7zXZ\0",
		 "xz"},
		{4, "\x28\xb5\x2f\xfd", "zstd"},
		{3, "BZh", "bzip2"},
	};
	unsigned char buf[8];
	ssize_t n = at < 0 ? -1 : pread(fd, buf, max < sizeof buf ? (size_t)max : sizeof buf, at);
	if (n < 0)
		return "unknown";
	for (size_t i = 0; i < COUNT_OF(comp); i++)
		if ((size_t)n >= comp[i].len && !memcmp(buf, comp[i].magic, comp[i].len))
			return comp[i].name;
	/* A zstd skippable frame (magic 0x184D2A50 to 0x184D2A5F): pzstd puts
	 * one before every frame, so its archives start with it. */
	if (n >= 4 && (buf[0] & 0xf0) == 0x50 && !memcmp(buf + 1, "\x2a\x4d\x18", 3))
		return "zstd";
	return NULL;
}

const char *compression_of(int fd)
{
	return compression_pread(fd, lseek(fd, 0, SEEK_CUR), 8);
}

const char *compression_at(const struct fd_source *src)
{
	if (!src->ranged)
		return compression_of(src->fd);
	return compression_pread(src->fd, (off_t)src->start, src->len);
}

/* The next piece of a mapped input (source_map): its size, 0 at the end,
 * -1 with errno when the file has been cut short under the mapping. */
static ssize_t map_pull(struct fd_source *src)
{
	size_t left = src->map_len - (size_t)src->total;
	size_t n = left < MAP_CHUNK ? left : MAP_CHUNK;
	src->data = src->map + src->total;
	uintptr_t lo = (uintptr_t)src->data & ~(uintptr_t)(sysconf(_SC_PAGESIZE) - 1);
	/* A decoder asks for more only once it has used all it had: what lies
	 * before this piece leaves the mapping (its pages stay in the page
	 * cache), so that the resident size is a piece's, not the file's. */
	size_t upto = lo - (uintptr_t)src->map_base;
	if (upto > src->map_dropped) {
		(void)madvise((unsigned char *)src->map_base + src->map_dropped, upto - src->map_dropped,
			      MADV_DONTNEED);
		src->map_dropped = upto;
	}
	/* EFAULT: the file ends before its mapping does now. */
	if (n && madvise((void *)lo, (uintptr_t)src->data + n - lo, MADV_POPULATE_READ) < 0 && errno == EFAULT) {
		src->shrank = 1;
		errno = EIO;
		return -1;
	}
	return (ssize_t)n;
}

/* The checksum of the frame (member) being read: XXH64's low 32 bits for
 * zstd, CRC-32 for gzip. */
static void frame_sum_add(struct frame_check *c, const void *data, size_t n)
{
	if (c->xxh)
		XXH64_update(c->xxh, data, n);
	else
		c->crc = c->crc32(c->crc, data, n);
}

/* The sum of the frame that just ended; the next one starts afresh. */
static uint32_t frame_sum_end(struct frame_check *c)
{
	uint32_t sum = c->crc;
	c->crc = 0;
	if (c->xxh) {
		sum = (uint32_t)XXH64_digest(c->xxh);
		XXH64_reset(c->xxh, 0);
	}
	return sum;
}

/* The next block from the decompressor thread, with each frame's checksum
 * verified where the decoder left that to us (struct frame_check): its
 * size, 0 at the end, or -1 with errno EBADMSG and check->bad set. */
static ssize_t take_block(struct fd_source *src)
{
	struct frame_check *c = src->check;
	for (;;) {
		unsigned long long mark;
		ssize_t n = handoff_take(src->from, &src->data, &mark);
		/* on was set before the first block was published. */
		if (!c || !c->on)
			return n;
		if (n > 0)
			frame_sum_add(c, src->data, (size_t)n);
		if (mark & FRAME_END) {
			uint32_t sum = frame_sum_end(c);
			if ((mark & FRAME_SUM) && sum != (uint32_t)mark) {
				c->bad = 1;
				errno = EBADMSG;
				return -1;
			}
		}
		if (n > 0 || !mark)
			return n; /* an empty block only carries its mark */
	}
}

/* One read of src's input: the next block of the file, or of its range,
 * into src->buf; or the next piece of the blocks or of the mapping, in
 * place.  Hashed when asked. */
static ssize_t source_pull(struct fd_source *src)
{
	ssize_t n;
	if (src->from) {
		n = take_block(src);
	} else if (src->map) {
		n = map_pull(src);
	} else {
		src->data = src->buf;
		if (src->ranged) {
			unsigned long long left = src->len - src->total;
			size_t want = left < src->block ? (size_t)left : src->block;
			n = want ? pread(src->fd, src->buf, want, (off_t)(src->start + src->total)) : 0;
		} else {
			n = read(src->fd, src->buf, src->block);
		}
	}
	if (n > 0) {
		digest_update(src->hash, src->data, (size_t)n);
		digest_update(src->hash2, src->data, (size_t)n);
	}
	return n;
}

/* source_pull() past EINTR, keeping the books: bytes read, end, error. */
ssize_t source_next(struct fd_source *src)
{
	ssize_t n;
	for (;;) {
		while ((n = source_pull(src)) < 0 && errno == EINTR)
			;
		if (n != 0 || !src->more)
			break;
		int m = src->more(src->more_ctx, src->total);
		if (m == 0)
			break;
		if (m < 0) {
			errno = EIO;
			n = -1;
			break;
		}
	}
	if (n < 0)
		src->read_errno = errno;
	else if (n == 0)
		src->eof = 1;
	else
		src->total += (size_t)n;
	return n;
}

int source_drain(struct fd_source *src)
{
	ssize_t n;
	while ((n = source_next(src)) > 0)
		;
	return n < 0 ? -1 : 0;
}

static la_ssize_t source_read(struct archive *a, void *arg, const void **buf)
{
	struct fd_source *src = arg;
	ssize_t n = source_next(src);
	if (n < 0) {
		archive_set_error(a, src->read_errno, "read: %s", strerror(src->read_errno));
		return -1;
	}
	*buf = src->data;
	return n;
}

/* Skipping by seeking: what libarchive does not need (a large member while
 * an image archive is indexed) is never read.  Only for a plain file that
 * nobody hashes: a digest must see every byte. */
static la_int64_t source_skip(struct archive *a, void *arg, la_int64_t request)
{
	struct fd_source *src = arg;
	(void)a;
	if (src->map) {
		/* The next map_pull() starts past what is skipped. */
		size_t left = src->map_len - (size_t)src->total;
		la_int64_t n = request < (la_int64_t)left ? request : (la_int64_t)left;
		src->total += (unsigned long long)n;
		return n;
	}
	off_t here = lseek(src->fd, 0, SEEK_CUR), end = lseek(src->fd, 0, SEEK_END);
	if (here < 0 || end < 0)
		return 0;
	la_int64_t n = request < end - here ? request : end - here;
	if (lseek(src->fd, here + n, SEEK_SET) < 0)
		return 0;
	src->total += (unsigned long long)n;
	return n;
}

int source_open(struct archive *a, struct fd_source *src)
{
	src->buf = src->from || src->map ? NULL : xmalloc(src->block);
	src->eof = src->read_errno = 0;
	src->total = 0;
	struct stat st;
	if (!src->ranged && !src->hash && !src->hash2 && !src->more && fstat(src->fd, &st) == 0 && S_ISREG(st.st_mode))
		archive_read_set_skip_callback(a, source_skip);
	archive_read_set_read_callback(a, source_read);
	archive_read_set_callback_data(a, src);
	return archive_read_open1(a);
}

void source_free(struct fd_source *src)
{
	free(src->buf);
	src->buf = NULL;
	if (src->map_base) {
		munmap(src->map_base, src->map_size);
		/* Where a read() would have left the file offset. */
		if (!src->ranged)
			(void)lseek(src->fd, (off_t)(src->map_start + src->total), SEEK_SET);
	}
	src->map_base = NULL;
	src->map = NULL;
}

int source_map(struct fd_source *src)
{
	struct stat st;
	if (src->more || src->from || src->map || fstat(src->fd, &st) < 0 || !S_ISREG(st.st_mode))
		return 0;
	unsigned long long start = src->start, len = src->len;
	if (!src->ranged) {
		off_t here = lseek(src->fd, 0, SEEK_CUR);
		if (here < 0 || here > st.st_size)
			return 0;
		start = (unsigned long long)here;
		len = (unsigned long long)(st.st_size - here);
	}
	/* A range past the end reads short, and says so, as before. */
	if (!len || start + len > (unsigned long long)st.st_size || len > SIZE_MAX / 2)
		return 0;
	unsigned long long at = start & ~(unsigned long long)(sysconf(_SC_PAGESIZE) - 1);
	size_t size = (size_t)(len + (start - at));
	void *p = mmap(NULL, size, PROT_READ, MAP_PRIVATE, src->fd, (off_t)at);
	if (p == MAP_FAILED)
		return 0;
	(void)madvise(p, size, MADV_SEQUENTIAL); /* read ahead of the decoder */
	src->map_base = p;
	src->map_size = size;
	src->map_start = start;
	src->map = (const unsigned char *)p + (start - at);
	src->map_len = (size_t)len;
	return 1;
}

/* SIGBUS on a mapping that lost its pages (the file was truncated under
 * it): the thread reading it jumps back to source_guarded().  Anything
 * else gets the default action, as if no handler were there. */
static __thread sigjmp_buf *bus_jump;
static __thread struct fd_source *bus_watched; /* source_watch(): no jump */
static __thread const unsigned char *bus_lo, *bus_hi;
static __thread uintptr_t bus_page; /* the page size, for the handler */
static pthread_once_t bus_once = PTHREAD_ONCE_INIT;

static void bus_handler(int sig, siginfo_t *si, void *uc)
{
	(void)uc;
	const unsigned char *a = si->si_addr;
	/* BUS_ADRERR: a fault on a page past the file's end (a SIGBUS sent
	 * by kill() has no address). */
	int ours = si->si_code == BUS_ADRERR && a >= bus_lo && a < bus_hi;
	if (bus_jump && ours)
		siglongjmp(*bus_jump, 1);
	if (bus_watched && ours) {
		/* Zeros from here to the mapping's end: the access runs again
		 * and reads them, and source_unwatch() reports the cut.  (mmap
		 * is a plain system call, safe in a handler.) */
		uintptr_t pg = (uintptr_t)a & ~(bus_page - 1);
		if (mmap((void *)pg, (uintptr_t)bus_hi - pg, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1,
			 0) != MAP_FAILED) {
			bus_watched->shrank = 1;
			return;
		}
	}
	/* Not ours: the faulting access runs again and takes the default. */
	signal(sig, SIG_DFL);
}

static void bus_install(void)
{
	struct sigaction sa = {.sa_sigaction = bus_handler, .sa_flags = SA_SIGINFO};
	sigemptyset(&sa.sa_mask);
	sigaction(SIGBUS, &sa, NULL);
}

/* SIGBUS on src's mapping to bus_handler, in this thread; *old is the
 * signal mask to restore. */
static void bus_catch(const struct fd_source *src, sigset_t *old)
{
	pthread_once(&bus_once, bus_install);
	/* A fault's signal that is blocked kills the process whatever the
	 * handler (the decompressor thread blocks every signal). */
	sigset_t bus;
	sigemptyset(&bus);
	sigaddset(&bus, SIGBUS);
	pthread_sigmask(SIG_UNBLOCK, &bus, old);
	bus_lo = src->map_base;
	bus_hi = bus_lo + src->map_size;
	bus_page = (uintptr_t)sysconf(_SC_PAGESIZE);
}

void source_watch(struct fd_source *src, sigset_t *old)
{
	if (!src->map)
		return;
	bus_catch(src, old);
	bus_watched = src;
}

int source_unwatch(struct fd_source *src, const sigset_t *old)
{
	if (!src->map)
		return 0;
	bus_watched = NULL;
	pthread_sigmask(SIG_SETMASK, old, NULL);
	/* A cut the reader never touched a page of, or one the kernel met
	 * copying from the mapping (pwrite gets EFAULT, no signal). */
	struct stat st;
	if (fstat(src->fd, &st) == 0 && (unsigned long long)st.st_size < src->map_start + src->map_len)
		src->shrank = 1;
	return src->shrank;
}

int source_guarded(struct fd_source *src, void (*fn)(void *), void *arg)
{
	if (!src->map) {
		fn(arg);
		return 0;
	}
	sigset_t old;
	bus_catch(src, &old);
	sigjmp_buf jb;
	int r = 0;
	if (sigsetjmp(jb, 1) == 0) {
		bus_jump = &jb;
		fn(arg);
	} else {
		src->shrank = 1;
		src->read_errno = EIO;
		r = -1;
	}
	bus_jump = NULL;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return r;
}

const char *reader_error(struct archive *a)
{
	const char *why = xz_refusal();
	return why ? why : archive_error_string(a);
}

int raw_open(struct archive **ap, struct fd_source *src)
{
	struct archive_entry *e;
	*ap = reader_new(0, 1);
	if (!*ap)
		return ARCHIVE_FATAL;
	int r = source_open(*ap, src);
	return r == ARCHIVE_OK ? archive_read_next_header(*ap, &e) : r;
}
