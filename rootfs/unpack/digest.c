/* rootfs/unpack/digest.c — content digests: SHA-256 from libcrypto, and the
 * "sha256:<64 hex>" strings images name their blobs and layers by.  A digest
 * string is parsed strictly (lowercase hex, exactly 64 digits) because it
 * becomes a file name in the cache. */
#define OPENSSL_SUPPRESS_DEPRECATED /* SHA256_*: no provider machinery per launch */
#include "unpack.h"

#include <openssl/sha.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

struct digest_ctx {
	SHA256_CTX sha;
};

/* libcrypto's .init section calls OPENSSL_cpuid_setup() at every start:
 * its cpuid instructions choose the SHA-256 code (SHA-NI, AVX2), and a
 * hypervisor that traps cpuid makes them tens of microseconds of every
 * launch, though a warm launch hashes nothing.  The link points that call
 * at the empty __wrap_ function (Makefile: --wrap), and the first digest
 * makes the real one.  Until then libcrypto sees no CPU features, which
 * only the SHA-256 code here reads. */
void __wrap_OPENSSL_cpuid_setup(void);
void __real_OPENSSL_cpuid_setup(void);

void __wrap_OPENSSL_cpuid_setup(void)
{
}

static pthread_once_t cpu_features = PTHREAD_ONCE_INIT;

struct digest_ctx *digest_new(void)
{
	pthread_once(&cpu_features, __real_OPENSSL_cpuid_setup);
	struct digest_ctx *d = xmalloc(sizeof *d);
	SHA256_Init(&d->sha);
	return d;
}

void digest_update(struct digest_ctx *d, const void *buf, size_t n)
{
	if (d)
		SHA256_Update(&d->sha, buf, n);
}

void digest_final(struct digest_ctx *d, char hex[DIGEST_HEX_LEN + 1])
{
	static const char digits[] = "0123456789abcdef";
	unsigned char md[SHA256_DIGEST_LENGTH];
	SHA256_Final(md, &d->sha);
	for (size_t i = 0; i < sizeof md; i++) {
		hex[2 * i] = digits[md[i] >> 4];
		hex[2 * i + 1] = digits[md[i] & 15];
	}
	hex[DIGEST_HEX_LEN] = '\0';
	free(d);
}

void digest_free(struct digest_ctx *d)
{
	free(d);
}

int digest_hex_ok(const char *hex)
{
	size_t n = strspn(hex, "0123456789abcdef");
	return n == DIGEST_HEX_LEN && hex[n] == '\0';
}

const char *digest_parse(const char *digest)
{
	const char *hex = str_after(digest, DIGEST_PREFIX);
	return hex && digest_hex_ok(hex) ? hex : NULL;
}
