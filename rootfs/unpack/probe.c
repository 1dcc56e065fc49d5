/* rootfs/unpack/probe.c — the check gpurun makes on an image file before any
 * namespace work: is it a tar archive (plain, gzip, xz, zstd or bzip2,
 * judged by content, never by name)?  It runs before every launch of a file
 * that is not in the cache, so the accepting path decompresses a few KiB and
 * reads a tar header or two, up to the first whose name settles it.  Only a
 * refusal costs more: a second look at the (decompressed) first bytes, to
 * tell the user what the file is instead of a bare "not a tar archive". */
#include "unpack.h"

#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

/* Enough compressed input for the first tar header, and not much more to
 * inflate: a launch pays for each byte decompressed here twice. */
#define PROBE_BLOCK (8 * 1024)
#define SNIFF_BYTES (32 * 1024 + 8) /* up to the ISO 9660 volume descriptor */
/* The quick look's decompressed head: a tar header and the pax or GNU
 * long-name records that may come before it.  Read HEAD_STEP at a time. */
#define HEAD_BYTES (8 * 1024)
#define HEAD_STEP (4 * 1024)

#define USE_TAR "use tar, optionally compressed with gzip, xz, zstd or bzip2"

static const struct magic {
	size_t off, len;
	const char *bytes, *what;
} magics[] = {
	{0, 4, "PK\x03\x04", "zip archives"},
	{0, 4, "PK\x05\x06", "zip archives"},
	{0, 6, "7z\xbc\xaf\x27\x1c", "7-Zip archives"},
	{0, 6, "Rar!\x1a\x07", "RAR archives"},
	{0, 8, "!<arch>\n", "ar archives (such as .deb packages)"},
	{0, 6, "070701", "cpio archives"},
	{0, 6, "070702", "cpio archives"},
	{0, 6, "070707", "cpio archives"},
	{0, 4, "\xed\xab\xee\xdb", "RPM packages"},
	{0, 4, "hsqs", "squashfs images"},
	{0, 4, "MSCF", "cab archives"},
	{0, 4, "xar!", "xar archives"},
	{0, 4, "QFI\xfb", "qcow2 disk images"},
	{0, 4, "\x04\x22\x4d\x18", "lz4-compressed files"},
	{0, 4, "LZIP", "lzip-compressed files"},
	{0, 2, "\x1f\x9d", "compress (.Z) files"},
	{32769, 5, "CD001", "ISO 9660 images"},
};

/* The top-level names that say an archive holds an image rather than a root
 * file system: an OCI image layout, or what `docker save` writes. */
static const char *const layout_names[] = {"oci-layout", "index.json", "manifest.json", "repositories"};

static const char *sniff(const unsigned char *buf, size_t n)
{
	for (size_t i = 0; i < COUNT_OF(magics); i++) {
		const struct magic *m = &magics[i];
		if (n >= m->off + m->len && !memcmp(buf + m->off, m->bytes, m->len))
			return m->what;
	}
	return NULL;
}

/* Why is fd not a tar archive?  Decompress its first bytes again, with the
 * raw format, and look at them. */
static int explain_refusal(int fd, const char *name, struct gerr *err)
{
	struct archive *a;
	struct fd_source src = {.fd = fd, .block = PROBE_BLOCK};
	size_t n = 0;
	if (lseek(fd, 0, SEEK_SET) < 0)
		return gerr_set(err, errno, "image %s: cannot rewind", name);
	const char *comp = compression_of(fd);
	unsigned char *head = xmalloc(SNIFF_BYTES);
	int r = raw_open(&a, &src);
	if (!a) {
		free(head);
		return gerr_set(err, 0, "image %s: %s", name, READER_SETUP_FAILED);
	}
	while (r == ARCHIVE_OK && n < SNIFF_BYTES) {
		const void *block;
		size_t size;
		la_int64_t off;
		r = archive_read_data_block(a, &block, &size, &off);
		if (r != ARCHIVE_OK)
			break;
		if (size > SNIFF_BYTES - n)
			size = SNIFF_BYTES - n;
		if (size)
			memcpy(head + n, block, size);
		n += size;
	}
	const char *what = sniff(head, n), *msg = reader_error(a);
	int failed = r != ARCHIVE_OK && r != ARCHIVE_EOF;
	if (what)
		gerr_set(err, 0, "image %s: not a tar archive (%s are not supported; " USE_TAR ")", name, what);
	else if (comp && failed && n == 0 && archive_errno(a) == LA_ERRNO_FILE_FORMAT)
		gerr_set(err, 0, "image %s: not a tar archive (empty after %s decompression)", name, comp);
	else if (comp && failed && xz_refusal())
		gerr_set(err, 0, "image %s: %s data: %s", name, comp, xz_refusal());
	else if (comp && failed && src.eof)
		gerr_set(err, 0, "image %s: truncated %s data", name, comp);
	else if (comp && failed)
		gerr_set(err, 0, "image %s: damaged %s data (%s)", name, comp, msg ? msg : "unknown error");
	else
		gerr_set(err, 0, "image %s: not a tar archive", name);
	free(head);
	source_free(&src);
	archive_read_free(a);
	return -1;
}

/* What one entry's name says: PROBE_IMAGE or PROBE_FLAT, or -1 where it says
 * nothing yet.  `tar -C dir -cf x.tar .` names every member "./NAME" and
 * starts with "./" itself, and a root file system may have a directory
 * named blobs at its top too: the entries after those decide.  Within
 * blobs, a file named by its sha256 digest is the content-addressed store
 * of an OCI layout (the Docker 25 `docker save` starts with it), which
 * settles it without reading on through every blob. */
static int entry_says(struct archive_entry *e)
{
	const char *path = archive_entry_pathname(e);
	if (!path)
		return PROBE_FLAT;
	while (path[0] == '.' && path[1] == '/')
		path += 2;
	if (!*path || !strcmp(path, "."))
		return -1;
	const char *in_blobs = str_after(path, "blobs/");
	if (in_blobs) {
		const char *hex = str_after(in_blobs, "sha256/");
		int digest = hex && strlen(hex) == DIGEST_HEX_LEN && strspn(hex, "0123456789abcdef") == DIGEST_HEX_LEN;
		return digest && archive_entry_filetype(e) == AE_IFREG ? PROBE_IMAGE : -1;
	}
	if (!strcmp(path, "blobs"))
		return -1;
	for (size_t i = 0; i < COUNT_OF(layout_names); i++)
		if (!strcmp(path, layout_names[i]))
			return PROBE_IMAGE;
	/* The legacy `docker save` layout starts with a layer directory, a
	 * config or a layer named by 64 hex digits ("<id>/", "<id>.json",
	 * "<id>.tar"): no root file system starts that way. */
	size_t n = strspn(path, "0123456789abcdef");
	int id = n == 64 && (path[n] == '/' || !strcmp(path + n, ".json") || !strcmp(path + n, ".tar"));
	return id ? PROBE_IMAGE : PROBE_FLAT;
}

/* From the entry e just read, the entries of a until one settles it:
 * PROBE_IMAGE or PROBE_FLAT, or -1 where the archive ends (or cannot be
 * read on) first. */
static int entries_say(struct archive *a, struct archive_entry *e)
{
	int kind = entry_says(e), r;
	while (kind < 0 && ((r = archive_read_next_header(a, &e)) == ARCHIVE_OK || r == ARCHIVE_WARN))
		kind = entry_says(e);
	return kind;
}

/* Up to cap bytes of the gzip stream at the start of fd, inflated with zlib
 * (ISA-L is loaded later, by the unpack, and only there): how many, or 0
 * where zlib stops on an error before that. */
static size_t head_gzip(int fd, unsigned char *out, size_t cap)
{
	unsigned char in[HEAD_STEP];
	z_stream z = {0};
	off_t at = 0;
	int r = inflateInit2(&z, 16 + MAX_WBITS); /* 16: a gzip wrapper */
	if (r != Z_OK)
		return 0;
	z.next_out = out;
	z.avail_out = (uInt)cap;
	while (r == Z_OK && z.avail_out) {
		if (!z.avail_in) {
			ssize_t n = pread(fd, in, sizeof in, at);
			if (n <= 0)
				break;
			at += n;
			z.next_in = in;
			z.avail_in = (uInt)n;
		}
		r = inflate(&z, Z_NO_FLUSH);
	}
	size_t got = r == Z_OK || r == Z_STREAM_END ? cap - z.avail_out : 0;
	inflateEnd(&z);
	return got;
}

/* The quick look, for gzip: inflate the head here and let libarchive's tar
 * reader read the first header from it.  libarchive's gzip filter fills a
 * 64 KiB block before the tar reader gets its first 512 bytes, and that
 * inflating would be most of the probe, on the path of every launch of a
 * .tar.gz with --no-cache.  zstd decodes whole blocks of up to 128 KiB, so
 * a smaller head saves it nothing.
 * Returns 1 with *kind set where the head's entries settle it, and 0 where
 * they do not (another compression, a damaged or short stream, a long pax
 * header, names that leave it open to the head's end): the full look then
 * decides, and says why a file is refused. */
static int quick_probe(int fd, int *kind)
{
	const char *comp = compression_of(fd);
	unsigned char buf[HEAD_BYTES];
	size_t n = comp && !strcmp(comp, "gzip") ? head_gzip(fd, buf, sizeof buf) : 0;
	struct archive *a = n >= 512 ? reader_new(1, 0) : NULL;
	struct archive_entry *e;
	int done = 0;
	if (a && archive_read_open_memory(a, buf, n) == ARCHIVE_OK) {
		int r = archive_read_next_header(a, &e);
		/* Where the head ends before a name settles it, the full
		 * look reads on. */
		int says = r == ARCHIVE_OK || r == ARCHIVE_WARN ? entries_say(a, e) : -1;
		if (says >= 0) {
			*kind = says;
			done = 1;
		}
	}
	if (a)
		archive_read_free(a);
	return done;
}

int rootfs_probe(int fd, const char *name, struct gerr *err)
{
	struct fd_source src = {.fd = fd, .block = PROBE_BLOCK};
	struct archive_entry *e;
	int rc = 0;

	if (lseek(fd, 0, SEEK_SET) < 0)
		return gerr_set(err, errno, "image %s: cannot rewind", name);
	if (quick_probe(fd, &rc))
		return rc;
	struct archive *a = reader_new(1, 1);
	if (!a)
		return gerr_set(err, 0, "image %s: %s", name, READER_SETUP_FAILED);
	/* In the C locale: a pax UTF-8 name that does not convert is a
	 * warning, and the names this looks for are ASCII. */
	int r = source_open(a, &src);
	if (r == ARCHIVE_OK)
		r = archive_read_next_header(a, &e);
	if (src.read_errno)
		rc = gerr_set(err, src.read_errno, "image %s: read", name);
	else if (src.total == 0)
		rc = gerr_set(err, 0, "image %s: empty file", name);
	else if (r == ARCHIVE_EOF)
		rc = gerr_set(err, 0, "image %s: archive has no entries", name);
	else if (r != ARCHIVE_OK && r != ARCHIVE_WARN)
		rc = explain_refusal(fd, name, err);
	else if (entries_say(a, e) == PROBE_IMAGE)
		rc = PROBE_IMAGE;
	source_free(&src);
	archive_read_free(a);
	if (lseek(fd, 0, SEEK_SET) < 0 && rc == 0)
		rc = gerr_set(err, errno, "image %s: cannot rewind", name);
	return rc;
}
