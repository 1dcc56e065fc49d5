/* tests/unit/arch_test.c — what differs between host architectures, checked
 * for every architecture gpurun knows on whichever one runs the tests: the
 * ld.so.cache entries that count as the host's libraries (glibc's flags:
 * x86-64 0x0303, AArch64 0x0a03, ...) and the Debian multiarch library
 * directory ($LIBDIR).  An aarch64 host (GH200, Grace) is thus tested on an
 * x86_64 machine through the same functions a launch calls, with
 * HOST_MACHINE replaced by the machine under test.
 *
 *   arch_test --list     the names of the cases
 *   arch_test CASE       run one case: exit 0, or 1 with what was wrong
 *
 * tests/unit.bats runs every case; `make unit` builds this under ASan and
 * UBSan. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../gpu/gpu_int.h"
#include "unit.h"

static void put_u32(unsigned char *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

/* One libcuda.so.1 per architecture, as a multi-arch driver root's cache
 * would hold them (flags as glibc's ldconfig writes them). */
static const struct {
	uint32_t flags;
	const char *value;
} entries[] = {
	{0x0303, "/usr/lib/x86_64-linux-gnu/libcuda.so.1"},
	{0x0a03, "/usr/lib/aarch64-linux-gnu/libcuda.so.1"},
	{0x0003, "/usr/lib/i386-linux-gnu/libcuda.so.1"},
	{0x0903, "/usr/lib/arm-linux-gnueabihf/libcuda.so.1"},
	{0x0503, "/usr/lib/powerpc64le-linux-gnu/libcuda.so.1"},
	{0x0803, "/usr/libx32/libcuda.so.1"}, /* x32: nobody's */
};
#define NENTRIES (sizeof entries / sizeof entries[0])

/* A new-format cache (glibc >= 2.32) of those entries, in memory. */
static unsigned char *make_cache(size_t *len)
{
	size_t strings = 48 + NENTRIES * 24, size = strings;
	for (size_t i = 0; i < NENTRIES; i++)
		size += sizeof "libcuda.so.1" + strlen(entries[i].value) + 1;
	unsigned char *c = calloc(1, size);
	if (!c)
		abort();
	memcpy(c, "glibc-ld.so.cache1.1", 20);
	put_u32(c + 20, (uint32_t)NENTRIES);
	put_u32(c + 24, (uint32_t)(size - strings));
	c[28] = 2; /* little-endian */
	size_t at = strings;
	for (size_t i = 0; i < NENTRIES; i++) {
		unsigned char *e = c + 48 + i * 24;
		put_u32(e, entries[i].flags);
		put_u32(e + 4, (uint32_t)at);
		memcpy(c + at, "libcuda.so.1", sizeof "libcuda.so.1");
		at += sizeof "libcuda.so.1";
		put_u32(e + 8, (uint32_t)at);
		memcpy(c + at, entries[i].value, strlen(entries[i].value) + 1);
		at += strlen(entries[i].value) + 1;
	}
	*len = size;
	return c;
}

/* The values of the entries that are machine's bits-bit libraries, joined
 * by spaces ("" for none). */
static void pick(const struct ldcache_entry *v, size_t n, const char *machine, int bits, char *out, size_t cap)
{
	out[0] = '\0';
	for (size_t i = 0; i < n; i++)
		if (ldcache_entry_is_for(v[i].flags, bits, machine))
			snprintf(out + strlen(out), cap - strlen(out), "%s%s", out[0] ? " " : "", v[i].value);
}

static void case_ldcache_flags(void)
{
	size_t len, n;
	struct ldcache_entry *v;
	struct gerr err = {0};
	unsigned char *cache = make_cache(&len);
	CHECK(ldcache_parse((const char *)cache, len, &v, &n, &err) == 0, "parse: %s", err.msg);
	CHECK(n == NENTRIES, "%zu entries", n);
	static const struct {
		const char *machine;
		int bits;
		const char *want;
	} cases[] = {
		{"x86_64", 64, "/usr/lib/x86_64-linux-gnu/libcuda.so.1"},
		{"x86_64", 32, "/usr/lib/i386-linux-gnu/libcuda.so.1"},
		{"aarch64", 64, "/usr/lib/aarch64-linux-gnu/libcuda.so.1"},
		{"aarch64", 32, "/usr/lib/arm-linux-gnueabihf/libcuda.so.1"},
		{"ppc64le", 64, "/usr/lib/powerpc64le-linux-gnu/libcuda.so.1"},
		{"ppc64le", 32, ""},
		{"riscv64", 64, ""},
	};
	char got[512];
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		pick(v, n, cases[i].machine, cases[i].bits, got, sizeof got);
		CHECK(!strcmp(got, cases[i].want), "%s %d-bit: got \"%s\", want \"%s\"", cases[i].machine,
		      cases[i].bits, got, cases[i].want);
	}
	/* The launch's own predicate is the host's row. */
	for (size_t i = 0; i < n; i++)
		CHECK(ldcache_entry_is(v[i].flags, 64) == ldcache_entry_is_for(v[i].flags, 64, HOST_MACHINE),
		      "entry %zu: host predicate differs from %s's", i, HOST_MACHINE);
	/* Not an ELF library of any kind. */
	CHECK(!ldcache_entry_is_for(0x0a00, 64, "aarch64"), "type 0 (libc5) is not a library");
	free(v);
	free(cache);
}

static void case_libdir(void)
{
	CHECK(!strcmp(plan_libdir_for_machine("aarch64", 1), "/usr/lib/aarch64-linux-gnu"), "aarch64 Debian");
	CHECK(!strcmp(plan_libdir_for_machine("aarch64", 0), "/usr/lib64"), "aarch64 other");
	CHECK(!strcmp(plan_libdir_for_machine("x86_64", 1), "/usr/lib/x86_64-linux-gnu"), "x86_64 Debian");
	CHECK(!strcmp(plan_libdir_for_machine("ppc64le", 1), "/usr/lib/powerpc64le-linux-gnu"), "ppc64le");
	CHECK(plan_libdir_for_machine("riscv64", 1) == NULL, "an unknown machine has no multiarch dir");
	CHECK(!strcmp(plan_libdir_for(1), plan_libdir_debian(HOST_MACHINE)), "the host's is %s's", HOST_MACHINE);
	char buf[256];
	CHECK(!strcmp(plan_expand_libdir("$LIBDIR/libcuda.so.1", plan_libdir_for_machine("aarch64", 1), buf,
					 sizeof buf),
		      "/usr/lib/aarch64-linux-gnu/libcuda.so.1"),
	      "expanded: %s", buf);
}

static const struct unit_case cases[] = {
	{"ldcache-flags", case_ldcache_flags},
	{"libdir", case_libdir},
};

int main(int argc, char **argv)
{
	return unit_main(argc, argv, cases, sizeof cases / sizeof cases[0]);
}
