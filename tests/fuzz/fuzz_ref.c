/* tests/fuzz/fuzz_ref.c — libFuzzer target for the pure parsers of registry
 * pulls (rootfs/registry/ref.c): image references, WWW-Authenticate challenges and
 * platform strings, all of which come from users or from a registry.  The
 * first byte picks the parser ('r', 'c', 'p'; anything else: all three).
 * Beyond "no crash, no leak", it checks the promises: an accepted reference
 * has a registry, a lowercase repository and a tag or a digest, its
 * canonical string parses again to itself (normalisation is idempotent), no
 * part holds a byte that could break a URL or a header line; a refused one
 * gets a one-line message; a challenge's fields are NUL-terminated and free
 * of control bytes. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../rootfs/registry/registry.h"

static int clean(const char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s <= 0x20 || *s == 0x7f || *s == '?' || *s == '#' || *s == '%')
			return 0;
	return 1;
}

static int no_ctl(const char *s, size_t cap)
{
	size_t n = strnlen(s, cap);
	if (n == cap)
		return 0;
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
			return 0;
	return 1;
}

static void check_ref(const char *s)
{
	struct image_ref r, again;
	struct gerr err = {0};
	if (ref_parse(s, &r, &err) < 0) {
		if (!err.msg[0] || strchr(err.msg, '\n') || strncmp(err.msg, "image reference", 15))
			abort();
		return;
	}
	if (!r.registry || !*r.registry || !r.repo || !*r.repo || (!r.tag && !r.digest))
		abort();
	if (!clean(r.registry) || !clean(r.repo) || (r.tag && !clean(r.tag)) || (r.digest && !digest_parse(r.digest)))
		abort();
	for (const char *p = r.repo; *p; p++)
		if (*p >= 'A' && *p <= 'Z')
			abort();
	char *canon = ref_string(&r);
	if (ref_parse(canon, &again, &err) < 0)
		abort();
	char *canon2 = ref_string(&again);
	if (strcmp(canon, canon2))
		abort();
	free(canon);
	free(canon2);
	ref_free(&again);
	ref_free(&r);
}

static void check_challenge(const char *s)
{
	struct auth_challenge c;
	if (challenge_parse(s, &c) < 0)
		return;
	if (!c.scheme[0] || !no_ctl(c.scheme, sizeof c.scheme) || !no_ctl(c.realm, sizeof c.realm) ||
	    !no_ctl(c.service, sizeof c.service) || !no_ctl(c.scope, sizeof c.scope) ||
	    !no_ctl(c.error, sizeof c.error))
		abort();
}

static void check_platform(const char *s)
{
	struct platform p;
	if (platform_parse(s, &p) < 0)
		return;
	if (!p.os[0] || !p.arch[0] || strchr(p.os, '/') || strchr(p.arch, '/') || strchr(p.variant, '/'))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	char *s = malloc(size);
	memcpy(s, data + 1, size - 1);
	s[size - 1] = '\0';
	switch (data[0]) {
	case 'r': check_ref(s); break;
	case 'c': check_challenge(s); break;
	case 'p': check_platform(s); break;
	default:
		check_ref(s);
		check_challenge(s);
		check_platform(s);
	}
	free(s);
	return 0;
}
