/* tests/fuzz/fuzz_ldcache.c — gpu/ldcache.c on arbitrary bytes.  The cache
 * comes from a driver root that may be damaged: the parser must never read
 * outside the buffer, and every entry it returns must point inside it at a
 * string that ends inside it. */
#include <stdlib.h>
#include <string.h>

#include "../../gpu/gpu_int.h"

static void check_inside(const char *buf, size_t len, const char *s)
{
	if (s < buf || s >= buf + len || !memchr(s, '\0', (size_t)(buf + len - s)))
		abort();
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
	/* A private copy: ASan then catches any read past its end. */
	char *buf = malloc(size ? size : 1);
	memcpy(buf, data, size);
	struct ldcache_entry *v;
	size_t n;
	struct gerr err = {0};
	if (ldcache_parse(buf, size, &v, &n, &err) == 0) {
		for (size_t i = 0; i < n; i++) {
			check_inside(buf, size, v[i].key);
			check_inside(buf, size, v[i].value);
			(void)ldcache_entry_is(v[i].flags, 64);
			(void)ldcache_entry_is(v[i].flags, 32);
		}
		free(v);
	} else if (!err.msg[0]) {
		abort(); /* a failure always says why */
	}
	free(buf);
	return 0;
}
