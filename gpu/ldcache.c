/* gpu/ldcache.c — glibc's /etc/ld.so.cache, read natively.
 *
 * This is how nvidia-container-cli finds the driver's libraries: not by
 * scanning directories but by asking the driver root's own loader cache,
 * which already knows which file each SONAME resolves to.  The format
 * (the format glibc's ldconfig writes):
 *
 *   old section:           "ld.so-1.7.0" (11 bytes + 1 pad), uint32 nlibs,
 *                          nlibs x {int32 flags, uint32 key, uint32 value},
 *                          strings relative to the end of that table; alone
 *                          in an old-format cache (`ldconfig -c compat` on
 *                          glibc >= 2.32), followed by the new one in a
 *                          "compat" cache of older glibc
 *   new section (8-aligned after the old one, or at offset 0):
 *                          "glibc-ld.so.cache" "1.1", uint32 nlibs @20,
 *                          uint32 len_strings @24, uint8 flags @28, ...,
 *                          48-byte header, then nlibs x 24-byte entries
 *                          {int32 flags, uint32 key, uint32 value,
 *                           uint32 osversion, uint64 hwcap}
 *   key/value: byte offsets from the start of the new header to
 *   NUL-terminated strings.
 *
 * The file comes from a driver root that may be damaged, so nothing in it
 * is trusted: every count and offset is checked against the buffer length
 * before use, and every string must end inside the buffer. */
#include "gpu_int.h"

#include <stdlib.h>
#include <string.h>

#define OLD_MAGIC "ld.so-1.7.0"
#define OLD_HEADER 16 /* magic[11], pad, uint32 nlibs */
#define OLD_ENTRY 12
#define NEW_MAGIC "glibc-ld.so.cache1.1"
#define NEW_HEADER 48
#define NEW_ENTRY 24
#define NEW_FLAGS_OFF 28
#define ENDIAN_MASK 3
#define ENDIAN_UNSET 0
#define ENDIAN_LITTLE 2

/* Unaligned little-endian reads: the buffer may come from anywhere. */
static uint32_t get_u32(const char *p)
{
	const unsigned char *u = (const unsigned char *)p;
	return (uint32_t)u[0] | (uint32_t)u[1] << 8 | (uint32_t)u[2] << 16 | (uint32_t)u[3] << 24;
}

/* Is there a new section, and where: 1 with *off = 0 for a new-only cache
 * or after the old entries for a compat cache; 0 for an old-only cache
 * (what `ldconfig -c compat` writes since glibc 2.32); -1 for garbage. */
static int new_section_offset(const char *data, size_t len, size_t *off, struct gerr *err)
{
	if (len >= sizeof NEW_MAGIC - 1 && !memcmp(data, NEW_MAGIC, sizeof NEW_MAGIC - 1)) {
		*off = 0;
		return 1;
	}
	if (len < OLD_HEADER || memcmp(data, OLD_MAGIC, sizeof OLD_MAGIC - 1) != 0)
		return gerr_set(err, 0, "not an ld.so.cache (bad magic)");
	uint32_t nold = get_u32(data + 12);
	if (nold > (len - OLD_HEADER) / OLD_ENTRY)
		return gerr_set(err, 0, "corrupted ld.so.cache: %u old entries do not fit in %zu bytes", nold, len);
	size_t o = OLD_HEADER + (size_t)nold * OLD_ENTRY;
	o = (o + 7) & ~(size_t)7;
	if (o > len || len - o < sizeof NEW_MAGIC - 1 || memcmp(data + o, NEW_MAGIC, sizeof NEW_MAGIC - 1))
		return 0;
	*off = o;
	return 1;
}

/* A NUL-terminated string at offset `at` of the section, or NULL. */
static const char *section_string(const char *sec, size_t size, uint32_t at)
{
	if (at >= size || !memchr(sec + at, '\0', size - at))
		return NULL;
	return sec + at;
}

/* nlibs entries of `stride` bytes at table, each starting {flags, key,
 * value}, the strings being offsets into [strs, strs+size). */
static int read_entries(const char *table, size_t stride, uint32_t nlibs, const char *strs, size_t size,
			struct ldcache_entry **v, size_t *n, struct gerr *err)
{
	struct ldcache_entry *out = xcalloc(nlibs ? nlibs : 1, sizeof *out);
	for (uint32_t i = 0; i < nlibs; i++) {
		const char *e = table + (size_t)i * stride;
		out[i].flags = get_u32(e);
		out[i].key = section_string(strs, size, get_u32(e + 4));
		out[i].value = section_string(strs, size, get_u32(e + 8));
		if (!out[i].key || !out[i].value) {
			free(out);
			return gerr_set(err, 0, "corrupted ld.so.cache entry %u: string offset out of bounds", i);
		}
	}
	*v = out;
	*n = nlibs;
	return 0;
}

/* Old entries: strings relative to the end of the entry table (whose size
 * new_section_offset() has checked). */
static int parse_old(const char *data, size_t len, struct ldcache_entry **v, size_t *n, struct gerr *err)
{
	uint32_t nlibs = get_u32(data + 12);
	size_t table_end = OLD_HEADER + (size_t)nlibs * OLD_ENTRY;
	return read_entries(data + OLD_HEADER, OLD_ENTRY, nlibs, data + table_end, len - table_end, v, n, err);
}

static int parse_new(const char *sec, size_t size, struct ldcache_entry **v, size_t *n, struct gerr *err)
{
	if (size < NEW_HEADER)
		return gerr_set(err, 0, "corrupted ld.so.cache: truncated header");
	unsigned endian = (unsigned char)sec[NEW_FLAGS_OFF] & ENDIAN_MASK;
	if (endian != ENDIAN_UNSET && endian != ENDIAN_LITTLE)
		return gerr_set(err, 0, "ld.so.cache is not little-endian");
	uint32_t nlibs = get_u32(sec + 20);
	if (nlibs > (size - NEW_HEADER) / NEW_ENTRY)
		return gerr_set(err, 0, "corrupted ld.so.cache: %u entries do not fit in %zu bytes", nlibs, size);
	return read_entries(sec + NEW_HEADER, NEW_ENTRY, nlibs, sec, size, v, n, err);
}

int ldcache_parse(const char *data, size_t len, struct ldcache_entry **v, size_t *n, struct gerr *err)
{
	size_t off = 0;
	*v = NULL;
	*n = 0;
	int r = new_section_offset(data, len, &off, err);
	if (r < 0)
		return -1;
	/* The new section, when there is one, is the complete and current one. */
	return r ? parse_new(data + off, len - off, v, n, err) : parse_old(data, len, v, n, err);
}

/* The arch byte glibc's ldconfig writes for each word size of a machine
 * (its FLAG_*_LIB64 / 32-bit flags; x86-64 entries are 0x0303, AArch64 ones
 * 0x0a03). */
static const struct {
	const char *machine;
	uint32_t arch64, arch32;
} arches[] = {
	{"x86_64", LDCACHE_ARCH_X86_64, LDCACHE_ARCH_I386},
	{"aarch64", LDCACHE_ARCH_AARCH64, LDCACHE_ARCH_ARM_HF},
	{"ppc64le", LDCACHE_ARCH_PPC64, LDCACHE_ARCH_NONE},
};

int ldcache_entry_is_for(uint32_t flags, int bits, const char *machine)
{
	uint32_t type = flags & LDCACHE_TYPE_MASK, arch = flags & LDCACHE_ARCH_MASK;
	if (type != LDCACHE_ELF && type != LDCACHE_ELF_LIBC6)
		return 0;
	for (size_t i = 0; i < COUNT_OF(arches); i++)
		if (!strcmp(machine, arches[i].machine))
			return arch == (bits == 64 ? arches[i].arch64 : arches[i].arch32);
	return 0;
}

int ldcache_entry_is(uint32_t flags, int bits)
{
	return ldcache_entry_is_for(flags, bits, HOST_MACHINE);
}

void ldcache_free(struct ldcache *c)
{
	free(c->data);
	free(c->v);
	memset(c, 0, sizeof *c);
}
