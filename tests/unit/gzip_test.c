/* tests/unit/gzip_test.c — gzip through the decompressor thread with ISA-L
 * (rootfs/unpack/gzip.c): the header is read by ISA-L's reader, the trailer by
 * ours (partly out of ISA-L's bit buffer), and each member's CRC-32 is
 * checked by the reading side.  The input arrives in pieces of 1 byte to
 * 1 MiB, as a blob still being downloaded does, so that every header,
 * every deflate stream and every trailer is cut somewhere.
 *
 *   gzip_test --list     the names of the cases
 *   gzip_test CASE       run one case: exit 0, or 1 with what was wrong
 *
 * tests/unit.bats runs every case; `make unit` builds this under ASan and
 * UBSan. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <zlib.h>

#include "../../rootfs/unpack/unpack.h"
#include "unit.h"

/* Three members: one of 300,000 bytes (more than a block) with a name, a
 * comment, an extra field and a header CRC; an empty one; one of 70,001
 * bytes with a plain header. */
static const size_t member_len[] = {300000, 0, 70001};
#define MEMBERS (sizeof member_len / sizeof member_len[0])

static unsigned char *plain; /* the members' data, one after the other */
static size_t plain_len;
static unsigned char *gz; /* the gzip stream */
static size_t gz_len;
static size_t member_end[MEMBERS]; /* where each member ends in gz */

/* Text-like bytes that deflate compresses with both literals and matches. */
static void make_plain(void)
{
	static const char *words[] = {"busybox ",  "lib/x86_64-linux-gnu/", "libc.so.6 ", "\n", "\0\0\0\0",
				      "usr/share/"};
	unsigned x = 12345;
	for (size_t i = 0; i < MEMBERS; i++)
		plain_len += member_len[i];
	plain = malloc(plain_len);
	for (size_t i = 0; i < plain_len;) {
		x = x * 1103515245 + 12345;
		if (x >> 28 < 4) {
			plain[i++] = (unsigned char)(x >> 16); /* noise */
			continue;
		}
		const char *w = words[(x >> 16) % (sizeof words / sizeof words[0])];
		for (size_t k = 0; k < strlen(w) + (w[0] == 0 ? 4 : 0) && i < plain_len; k++)
			plain[i++] = (unsigned char)w[k];
	}
}

static size_t deflate_member(unsigned char *out, size_t cap, const unsigned char *in, size_t n, int fancy)
{
	z_stream z = {0};
	CHECK(deflateInit2(&z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) == Z_OK, "deflateInit2");
	unsigned char extra[] = "XYZ";
	gz_header h = {.name = (Bytef *)"member-name",
		       .comment = (Bytef *)"a comment",
		       .extra = extra,
		       .extra_len = 3,
		       .hcrc = 1};
	if (fancy)
		CHECK(deflateSetHeader(&z, &h) == Z_OK, "deflateSetHeader");
	z.next_in = (Bytef *)in;
	z.avail_in = (uInt)n;
	z.next_out = out;
	z.avail_out = (uInt)cap;
	CHECK(deflate(&z, Z_FINISH) == Z_STREAM_END, "deflate");
	size_t len = z.total_out;
	deflateEnd(&z);
	return len;
}

static void make_gz(void)
{
	make_plain();
	size_t cap = plain_len + 4096;
	gz = malloc(cap + 64);
	for (size_t i = 0, from = 0; i < MEMBERS; from += member_len[i], i++) {
		gz_len += deflate_member(gz + gz_len, cap - gz_len, plain + from, member_len[i], i == 0);
		member_end[i] = gz_len;
	}
}

static void sha256_hex(const unsigned char *p, size_t n, char hex[DIGEST_HEX_LEN + 1])
{
	struct digest_ctx *d = digest_new();
	digest_update(d, p, n);
	digest_final(d, hex); /* frees d */
}

/* The input of the thread: a file that grows by step bytes each time the
 * reader finds its end, as a registry blob still arriving does. */
struct feed {
	int fd;
	const unsigned char *data;
	size_t len, sent, step;
};

static int feed_more(void *ctx, unsigned long long have)
{
	struct feed *f = ctx;
	(void)have;
	if (f->sent == f->len)
		return 0;
	size_t k = f->len - f->sent < f->step ? f->len - f->sent : f->step;
	if (pwrite(f->fd, f->data + f->sent, k, (off_t)f->sent) != (ssize_t)k)
		return -1;
	f->sent += k;
	return 1;
}

struct outcome {
	int drained; /* source_drain() on the reading side: 0 or -1 */
	int failed, truncated, bad;
	char msg[512], check_msg[96];
	char hex[DIGEST_HEX_LEN + 1];
};

/* data (len bytes) through the thread in pieces of step bytes. */
static struct outcome run(const unsigned char *data, size_t len, size_t step)
{
	struct outcome o = {0};
	int fd = memfd_create("gz", MFD_CLOEXEC);
	CHECK(fd >= 0, "memfd_create");
	/* The magic is there when the thread looks at the format. */
	struct feed f = {.fd = fd, .data = data, .len = len, .sent = 2, .step = step};
	CHECK(pwrite(fd, data, 2, 0) == 2, "pwrite");
	struct fd_source in = {.fd = fd, .more = feed_more, .more_ctx = &f};
	struct stream s;
	struct fd_source out;
	struct gerr err = {0};
	if (stream_start(&s, &in, NULL, 1ULL << 30, &out, &err) < 0) {
		CHECK(0, "stream_start: %s", err.msg);
		return o;
	}
	struct digest_ctx *d = digest_new();
	out.hash = d;
	o.drained = source_drain(&out);
	if (o.drained < 0)
		handoff_close_reader(&s.q);
	stream_join(&s);
	digest_final(d, o.hex);
	o.failed = s.failed;
	o.truncated = s.truncated;
	o.bad = s.check.bad;
	snprintf(o.msg, sizeof o.msg, "%s", s.msg);
	snprintf(o.check_msg, sizeof o.check_msg, "%s", s.check.msg);
	close(fd);
	return o;
}

static const size_t steps[] = {1, 2, 3, 7, 64, 4093, 1 << 20};

static void need_isal(void)
{
	if (!dlopen("libisal.so.2", RTLD_NOW | RTLD_LOCAL)) {
		fprintf(stderr, "libisal.so.2 is not installed: these cases test the ISA-L decoder\n");
		exit(1);
	}
	make_gz();
}

static void case_members_in_pieces(void)
{
	need_isal();
	char want[DIGEST_HEX_LEN + 1];
	sha256_hex(plain, plain_len, want);
	for (size_t i = 0; i < sizeof steps / sizeof steps[0]; i++) {
		struct outcome o = run(gz, gz_len, steps[i]);
		CHECK(o.drained == 0 && !o.failed && !o.bad, "step %zu: drained %d failed %d bad %d: %s", steps[i],
		      o.drained, o.failed, o.bad, o.msg);
		CHECK(!strcmp(o.hex, want), "step %zu: the data differs", steps[i]);
	}
}

static void case_bytes_after_the_last_member(void)
{
	need_isal();
	static const char junk[] = "bytes that start no gzip member";
	memcpy(gz + gz_len, junk, sizeof junk);
	char want[DIGEST_HEX_LEN + 1];
	sha256_hex(plain, plain_len, want);
	for (size_t i = 0; i < sizeof steps / sizeof steps[0]; i++) {
		struct outcome o = run(gz, gz_len + sizeof junk, steps[i]);
		CHECK(o.drained == 0 && !o.failed && !o.bad, "step %zu: %s", steps[i], o.msg);
		CHECK(!strcmp(o.hex, want), "step %zu: the data differs", steps[i]);
	}
}

/* A CRC-32 that does not match its member's data, on the first member (the
 * next ones are fine) or on the last. */
static void case_wrong_crc(void)
{
	need_isal();
	size_t which[] = {0, MEMBERS - 1};
	for (size_t w = 0; w < 2; w++) {
		unsigned char *crc = gz + member_end[which[w]] - 8;
		crc[1] ^= 0x40;
		for (size_t i = 0; i < sizeof steps / sizeof steps[0]; i += 2) {
			struct outcome o = run(gz, gz_len, steps[i]);
			CHECK(o.drained < 0 && o.bad, "member %zu, step %zu: drained %d bad %d", which[w], steps[i],
			      o.drained, o.bad);
			CHECK(!strcmp(o.check_msg, "gzip: checksum mismatch (ISA-L error -6)"), "message: %s",
			      o.check_msg);
		}
		crc[1] ^= 0x40;
	}
}

static void case_wrong_length(void)
{
	need_isal();
	gz[member_end[0] - 4] ^= 1;
	for (size_t i = 0; i < sizeof steps / sizeof steps[0]; i += 2) {
		struct outcome o = run(gz, gz_len, steps[i]);
		CHECK(o.failed && !o.truncated, "step %zu: failed %d truncated %d", steps[i], o.failed, o.truncated);
		CHECK(!strcmp(o.msg, "gzip: length mismatch (ISA-L error -6)"), "message: %s", o.msg);
	}
}

/* Cut inside the last trailer, and inside the last deflate data. */
static void case_truncated(void)
{
	need_isal();
	size_t cut[] = {gz_len - 3, gz_len - 20};
	for (size_t c = 0; c < 2; c++) {
		for (size_t i = 0; i < sizeof steps / sizeof steps[0]; i += 2) {
			struct outcome o = run(gz, cut[c], steps[i]);
			CHECK(o.failed && o.truncated, "cut at %zu, step %zu: failed %d truncated %d: %s", cut[c],
			      steps[i], o.failed, o.truncated, o.msg);
		}
	}
}

int main(int argc, char **argv)
{
	static const struct unit_case cases[] = {
		{"members-in-pieces", case_members_in_pieces},
		{"bytes-after-the-last-member", case_bytes_after_the_last_member},
		{"wrong-crc", case_wrong_crc},
		{"wrong-length", case_wrong_length},
		{"truncated", case_truncated},
	};
	return unit_main(argc, argv, cases, sizeof cases / sizeof cases[0]);
}
