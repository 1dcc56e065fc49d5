/* rootfs/stream.c — the input side of image archives: which formats and
 * filters libarchive may use, and the decompressor thread.
 *
 * Unpacking a .tar.gz in one thread spends about as long inflating as it does
 * creating files; GNU tar hides the first behind a gzip child process.  Here
 * a second thread runs a raw-format reader (filters only) and hands the plain
 * tar stream over in blocks of memory (struct handoff); the caller's thread
 * reads them in place with a tar-only reader and makes the files
 * (rootfs/place.c).  A launch starts the thread before its other setup
 * (rootfs_unpack_start), so inflating overlaps the first mounts too.
 *
 * The decoders of gzip and zstd, and the tar reader of a plain tar, read a
 * regular file through a mapping of it rather than read(): a read copies
 * every byte once more (0.7 ms of a busybox first launch's 7 ms of
 * inflating; a third of a plain Debian tar's first launch).  A file cut
 * short while mapped would kill the thread with SIGBUS; source_guarded()
 * and source_watch() turn that into an error that names it.
 *
 * gzip, the common case, is inflated with ISA-L's igzip when libisal.so.2 is
 * installed: about twice zlib's speed here.  Since files are made with a few
 * system calls each, inflating is again the slower of the two threads.  It
 * is loaded with dlopen() on the first gzip only (a warm launch never maps
 * it), and without it libarchive's zlib filter does the same job.  zstd is
 * read with libzstd's streaming API, also straight into the blocks.  gzip's
 * member CRC-32s and zstd's frame checksums are verified by the extracting
 * thread (struct frame_check).  Either way libarchive parses the tar. */
#include "rootfs_int.h"

#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <isa-l/igzip_lib.h>
#include <locale.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>
/* ZSTD_d_forceIgnoreChecksum: stable since zstd 1.4.7, declared among the
 * experimental parameters; libzstd is linked statically. */
#define ZSTD_STATIC_LINKING_ONLY
#include <zstd.h>
#include <zstd_errors.h>

#define STREAM_READ_BLOCK (256 * 1024)
/* A mapped input is handed to the decoder this much at a time, each piece
 * faulted in with one madvise() rather than a fault per 64 KiB. */
#define MAP_CHUNK (1024 * 1024)
#ifndef MADV_POPULATE_READ
#define MADV_POPULATE_READ 22 /* Linux 5.14; older kernels: EINVAL, ignored */
#endif

struct archive *reader_new(int tar, int filters)
{
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
		{6, "\xfd" "7zXZ\0", "xz"},
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

void quote_name(char *dst, size_t cap, const char *name)
{
	static const char hex[] = "0123456789abcdef";
	size_t n = 0, limit = cap < QUOTED_NAME_MAX ? cap : QUOTED_NAME_MAX;
	if (!cap)
		return;
	/* Room for one escape and "..." at the end. */
	for (const unsigned char *p = (const unsigned char *)name; *p; p++) {
		if (n + 4 + 4 >= limit) {
			memcpy(dst + n, "...", 3);
			n += 3;
			break;
		}
		if (*p < 0x20 || *p == 0x7f) {
			dst[n++] = '\\';
			dst[n++] = 'x';
			dst[n++] = hex[*p >> 4];
			dst[n++] = hex[*p & 15];
		} else {
			dst[n++] = (char)*p;
		}
	}
	dst[n] = '\0';
}

void *locale_utf8_enter(void)
{
	locale_t utf8 = newlocale(LC_CTYPE_MASK, "C.UTF-8", (locale_t)0), old;
	if (utf8 == (locale_t)0)
		return NULL;
	old = uselocale(utf8);
	if (old == (locale_t)0)
		freelocale(utf8);
	return old;
}

void locale_restore(void *saved)
{
	if (!saved)
		return;
	locale_t cur = uselocale((locale_t)saved);
	if (cur != (locale_t)0 && cur != LC_GLOBAL_LOCALE)
		freelocale(cur);
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
	 * cache), so that the resident size is a piece's, not the file's (a
	 * 1 GB image's first launch: 5 MB, not 1 GB). */
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
static ssize_t source_next(struct fd_source *src)
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

static void stream_fail(struct stream *s, struct archive *a)
{
	const char *msg = archive_error_string(a);
	s->failed = 1;
	/* Data that stops early fails once the whole input has been read. */
	s->truncated = s->src.eof && !s->src.read_errno;
	snprintf(s->msg, sizeof s->msg, "%s", msg ? msg : "unknown error");
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

/* The block being filled, with room in it; NULL when the reader has gone. */
static unsigned char *stream_room(struct stream *s)
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
static int stream_added(struct stream *s, size_t size, int flush)
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
static int stream_mark(struct stream *s, unsigned long long mark)
{
	if (!stream_room(s))
		return -1;
	handoff_publish(&s->q, s->fill_len, mark);
	s->fill = NULL;
	return 0;
}

/* One block of libarchive's output, copied into the handoff blocks. */
static int stream_put(struct stream *s, const void *block, size_t size)
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
static ssize_t stream_input(struct stream *s)
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

static int have_isal(void)
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
static void igzip_stream(void *arg)
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
static void zstd_stream(void *arg)
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
	 * change CPU at every handoff (a busybox first launch 5% slower),
	 * where this is 3% faster (400 alternating launches). */
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
