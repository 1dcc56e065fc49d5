/* tests/unit/source_test.c — the decoders' mapped input (rootfs/unpack/source.c):
 * a regular file is read through a mapping from its current offset, the
 * file offset ends where read() would have left it, what cannot be mapped
 * is read as before, and a file cut short under the mapping is an error of
 * the reading thread, not a SIGBUS that kills the launch.
 *
 *   source_test --list     the names of the cases
 *   source_test CASE       run one case: exit 0, or 1 with what was wrong
 *
 * tests/unit.bats runs every case; `make unit` builds this under ASan and
 * UBSan. */
#include <archive.h>
#include <archive_entry.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../rootfs/unpack/unpack.h"
#include "unit.h"

#define FILE_BYTES (3 * 1024 * 1024 + 123)

/* A temporary file of FILE_BYTES whose byte i is i * 7 mod 251, unlinked
 * at once; its descriptor. */
static int pattern_file(void)
{
	char path[] = "/tmp/gpurun-source-XXXXXX";
	int fd = mkstemp(path);
	if (fd < 0) {
		perror("mkstemp");
		exit(2);
	}
	unlink(path);
	unsigned char *buf = malloc(FILE_BYTES);
	for (size_t i = 0; i < FILE_BYTES; i++)
		buf[i] = (unsigned char)(i * 7 % 251);
	if (write(fd, buf, FILE_BYTES) != FILE_BYTES) {
		perror("write");
		exit(2);
	}
	free(buf);
	lseek(fd, 0, SEEK_SET);
	return fd;
}

/* pattern_file() mapped into *src from its start; its descriptor. */
static int mapped_pattern_file(struct fd_source *src)
{
	int fd = pattern_file();
	*src = (struct fd_source){.fd = fd};
	CHECK(source_map(src) == 1, "mapped");
	return fd;
}

static void case_maps_from_offset(void)
{
	int fd = pattern_file();
	const off_t at = 5000; /* not on a page boundary */
	lseek(fd, at, SEEK_SET);
	struct fd_source src = {.fd = fd, .block = 4096};
	CHECK(source_map(&src) == 1, "a regular file is mapped");
	CHECK(src.map_len == FILE_BYTES - at, "mapped %zu bytes", src.map_len);
	int same = 1;
	for (size_t i = 0; src.map && i < src.map_len; i++)
		same &= src.map[i] == (unsigned char)((i + (size_t)at) * 7 % 251);
	CHECK(same, "the mapping shows the file from its offset");
	CHECK(source_drain(&src) == 0, "read to the end");
	unsigned long long read = src.total;
	CHECK(src.eof && read == src.map_len, "drained to the end: %llu of %zu", read, src.map_len);
	source_free(&src);
	CHECK(lseek(fd, 0, SEEK_CUR) == at + (off_t)read, "the offset is where read() would leave it");
	CHECK(src.map == NULL && src.map_base == NULL, "unmapped");
	close(fd);
}

static void case_range(void)
{
	int fd = pattern_file();
	struct fd_source src = {.fd = fd, .ranged = 1, .start = 70000, .len = 100000};
	CHECK(source_map(&src) == 1, "a range is mapped");
	CHECK(src.map_len == 100000 && src.map && src.map[0] == (unsigned char)(70000 * 7 % 251),
	      "the range starts at its first byte");
	source_free(&src);
	/* A range past the end is left to read(), which reports it short. */
	struct fd_source past = {.fd = fd, .ranged = 1, .start = FILE_BYTES - 10, .len = 100};
	CHECK(source_map(&past) == 0, "a range past the end is not mapped");
	close(fd);
}

static void case_not_mappable(void)
{
	int p[2];
	if (pipe(p) < 0)
		exit(2);
	struct fd_source pipe_src = {.fd = p[0]};
	CHECK(source_map(&pipe_src) == 0, "a pipe is read, not mapped");
	close(p[0]);
	close(p[1]);
	int fd = pattern_file();
	lseek(fd, 0, SEEK_END);
	struct fd_source at_end = {.fd = fd};
	CHECK(source_map(&at_end) == 0, "nothing left to map");
	close(fd);
}

struct shrink {
	struct fd_source *src;
	int touched;
};

/* What a decoder does when the file is truncated under it: read on. */
static void read_after_truncate(void *arg)
{
	struct shrink *sh = arg;
	if (ftruncate(sh->src->fd, 4096) < 0)
		exit(2);
	volatile const unsigned char *p = sh->src->map;
	unsigned sum = 0;
	for (size_t i = 0; i < sh->src->map_len; i += 4096)
		sum += p[i]; /* SIGBUS past the first page */
	sh->touched = (int)sum + 1;
}

static void case_shrinks(void)
{
	struct fd_source src;
	int fd = mapped_pattern_file(&src);
	struct shrink sh = {.src = &src};
	int r = source_guarded(&src, read_after_truncate, &sh);
	CHECK(r == -1, "the reading is stopped");
	CHECK(src.shrank && src.read_errno, "and said to be cut short");
	CHECK(!sh.touched, "at the first page past the new end");
	source_free(&src);
	close(fd);
}

static void case_map_then_populate_fails(void)
{
	struct fd_source src;
	int fd = mapped_pattern_file(&src);
	if (ftruncate(fd, 4096) < 0)
		exit(2);
	/* The next piece handed to a decoder is faulted in first: a file
	 * that ends early is seen there, without a signal. */
	int r = source_drain(&src);
	CHECK(r < 0 && src.shrank, "drain fails, cut short (r=%d)", r);
	source_free(&src);
	close(fd);
}

/* The tar reader's way (source_watch): it cannot be jumped out of, so a
 * fault past the new end reads zeros, and the cut is reported after. */
static void case_watched_shrinks(void)
{
	struct fd_source src;
	int fd = mapped_pattern_file(&src);
	sigset_t mask;
	source_watch(&src, &mask);
	if (ftruncate(fd, 4096) < 0)
		exit(2);
	volatile const unsigned char *p = src.map;
	unsigned first = p[1], nonzero = 0;
	for (size_t i = 4096; i < src.map_len; i += 4096)
		nonzero += p[i] != 0; /* SIGBUS, then zeros */
	CHECK(first == 7, "the page before the cut reads as before (%u)", first);
	CHECK(nonzero == 0, "the pages past the cut read as zeros (%u not)", nonzero);
	CHECK(source_unwatch(&src, &mask) == 1 && src.shrank, "and the cut is reported");
	source_free(&src);
	close(fd);
}

static void case_watched_whole(void)
{
	struct fd_source src;
	int fd = mapped_pattern_file(&src);
	sigset_t mask;
	source_watch(&src, &mask);
	CHECK(source_drain(&src) == 0, "read to the end");
	CHECK(source_unwatch(&src, &mask) == 0 && !src.shrank, "a file left whole is not reported");
	/* The file shrinks after it was read, before the check: what was read
	 * no longer is the file, so it is reported too. */
	struct fd_source again = {.fd = fd};
	lseek(fd, 0, SEEK_SET);
	CHECK(source_map(&again) == 1, "mapped again");
	source_watch(&again, &mask);
	if (ftruncate(fd, 4096) < 0)
		exit(2);
	CHECK(source_unwatch(&again, &mask) == 1, "a cut no page was read past is reported");
	source_free(&src);
	source_free(&again);
	close(fd);
}

/* A ustar header of a regular file into h[512]. */
static void ustar_header(unsigned char *h, const char *name, size_t size)
{
	memset(h, 0, 512);
	snprintf((char *)h, 100, "%s", name);
	snprintf((char *)h + 100, 8, "%07o", 0644);
	snprintf((char *)h + 108, 8, "%07o", 0);
	snprintf((char *)h + 116, 8, "%07o", 0);
	snprintf((char *)h + 124, 12, "%011zo", size);
	snprintf((char *)h + 136, 12, "%011o", 0);
	h[156] = '0';
	memcpy(h + 257,
	       "ustar\0"
	       "00",
	       8);
	memset(h + 148, ' ', 8);
	unsigned sum = 0;
	for (int i = 0; i < 512; i++)
		sum += h[i];
	snprintf((char *)h + 148, 8, "%06o", sum);
}

/* libarchive skips a member it does not read: through a mapping, the
 * next read starts past it.  A tar of a 3 MiB member and a small one. */
static void case_mapped_skip(void)
{
	char path[] = "/tmp/gpurun-source-XXXXXX";
	int fd = mkstemp(path);
	if (fd < 0)
		exit(2);
	unlink(path);
	enum { BIG = 3 << 20 };
	static unsigned char tar[512 + BIG + 512 + 512 + 1024];
	memset(tar, 0, sizeof tar);
	ustar_header(tar, "big", BIG);
	memset(tar + 512, 'b', BIG);
	ustar_header(tar + 512 + BIG, "after", 2);
	memcpy(tar + 1024 + BIG, "ok", 2);
	if (write(fd, tar, sizeof tar) != (ssize_t)sizeof tar)
		exit(2);
	lseek(fd, 0, SEEK_SET);

	struct fd_source src = {.fd = fd, .block = 4096};
	struct archive *a = reader_new(1, 0);
	struct archive_entry *e;
	CHECK(a != NULL, "a reader");
	CHECK(source_map(&src) == 1, "mapped");
	CHECK(source_open(a, &src) == ARCHIVE_OK, "opened");
	CHECK(archive_read_next_header(a, &e) == ARCHIVE_OK && !strcmp(archive_entry_pathname(e), "big"), "big");
	CHECK(archive_read_data_skip(a) == ARCHIVE_OK, "its data is skipped");
	CHECK(archive_read_next_header(a, &e) == ARCHIVE_OK && !strcmp(archive_entry_pathname(e), "after"), "after");
	char buf[8] = "";
	CHECK(archive_read_data(a, buf, sizeof buf) == 2 && !memcmp(buf, "ok", 2), "the next member reads right");
	CHECK(archive_read_next_header(a, &e) == ARCHIVE_EOF, "then the end");
	archive_read_free(a);
	source_free(&src);

	/* Cut inside the big member: the skip stops at the end of the file,
	 * and the reader says the archive is truncated. */
	const size_t cut = 512 + BIG / 2;
	if (ftruncate(fd, (off_t)cut) < 0)
		exit(2);
	lseek(fd, 0, SEEK_SET);
	struct fd_source part = {.fd = fd, .block = 4096};
	a = reader_new(1, 0);
	CHECK(a != NULL && source_map(&part) == 1 && source_open(a, &part) == ARCHIVE_OK, "the cut file opened");
	CHECK(archive_read_next_header(a, &e) == ARCHIVE_OK, "big again");
	CHECK(archive_read_data_skip(a) == ARCHIVE_FATAL, "skipping past the end fails");
	CHECK(part.total <= cut, "never past the end: %llu of %zu", part.total, cut);
	archive_read_free(a);
	source_free(&part);
	close(fd);
}

/* Resident pages of this process (/proc/self/statm, second field). */
static long resident_pages(void)
{
	long size = 0, rss = 0;
	FILE *f = fopen("/proc/self/statm", "r");
	if (!f || fscanf(f, "%ld %ld", &size, &rss) != 2)
		exit(2);
	fclose(f);
	return rss;
}

static void case_resident(void)
{
	/* 48 MiB read through the mapping: the pieces already read leave it. */
	char path[] = "/tmp/gpurun-source-XXXXXX";
	int fd = mkstemp(path);
	if (fd < 0)
		exit(2);
	unlink(path);
	static unsigned char chunk[1 << 20];
	memset(chunk, 'x', sizeof chunk);
	for (int i = 0; i < 48; i++)
		if (write(fd, chunk, sizeof chunk) != (ssize_t)sizeof chunk)
			exit(2);
	lseek(fd, 0, SEEK_SET);
	struct fd_source src = {.fd = fd};
	CHECK(source_map(&src) == 1, "mapped");
	long before = resident_pages();
	CHECK(source_drain(&src) == 0, "read to the end");
	long grown_kib = (resident_pages() - before) * (sysconf(_SC_PAGESIZE) / 1024);
	CHECK(src.total == 48u << 20, "read all of it");
	CHECK(grown_kib < 8 * 1024, "the resident size grew by %ld KiB reading 48 MiB", grown_kib);
	source_free(&src);
	close(fd);
}

int main(int argc, char **argv)
{
	static const struct unit_case cases[] = {
		{"maps-from-offset", case_maps_from_offset},
		{"range", case_range},
		{"not-mappable", case_not_mappable},
		{"shrinks-under-the-reader", case_shrinks},
		{"shrinks-before-the-read", case_map_then_populate_fails},
		{"resident-size-stays-small", case_resident},
		{"watched-shrinks-under-the-reader", case_watched_shrinks},
		{"watched-whole-and-shrunk-after", case_watched_whole},
		{"mapped-skip-stops-at-the-end", case_mapped_skip},
	};
	return unit_main(argc, argv, cases, COUNT_OF(cases));
}
