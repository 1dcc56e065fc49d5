/* rootfs/image/platform.c — the platform an image is picked for: this machine's,
 * as the OCI specification names it (uname's x86_64 is amd64), and the one
 * entry of a multi-platform index (an OCI index, a Docker manifest list)
 * that matches it, whether the index comes from a registry or from a local
 * OCI layout. */
#include "image.h"

#include <ctype.h>
#include <jansson.h>
#include <stdio.h>
#include <string.h>
#include <sys/utsname.h>

int host_platform(struct platform *pf)
{
	static const struct {
		const char *machine, *arch, *variant;
	} map[] = {
		{"x86_64", "amd64", ""},    {"aarch64", "arm64", ""}, {"armv7l", "arm", "v7"},
		{"armv6l", "arm", "v6"},    {"i686", "386", ""},      {"i386", "386", ""},
		{"ppc64le", "ppc64le", ""}, {"s390x", "s390x", ""},   {"riscv64", "riscv64", ""},
	};
	struct utsname u;
	memset(pf, 0, sizeof *pf);
	strcpy(pf->os, "linux");
	if (uname(&u) < 0)
		return -1;
	for (size_t i = 0; i < COUNT_OF(map); i++)
		if (!strcmp(u.machine, map[i].machine)) {
			snprintf(pf->arch, sizeof pf->arch, "%s", map[i].arch);
			snprintf(pf->variant, sizeof pf->variant, "%s", map[i].variant);
			return 0;
		}
	snprintf(pf->arch, sizeof pf->arch, "%.31s", u.machine);
	return 0;
}

void platform_str(const struct platform *pf, char *out, size_t cap)
{
	snprintf(out, cap, "%s/%s%s%s", pf->os, pf->arch, pf->variant[0] ? "/" : "", pf->variant);
}

/* A platform without a variant takes any variant of its architecture
 * (linux/arm64 is linux/arm64/v8), as docker picks. */
json_t *platform_pick(json_t *manifests, const struct platform *want, const char *image, struct gerr *err)
{
	size_t i;
	json_t *d;
	struct sbuf there = {0};
	json_array_foreach(manifests, i, d)
	{
		json_t *p = json_object_get(d, "platform");
		const char *os = json_string_value(json_object_get(p, "os"));
		const char *arch = json_string_value(json_object_get(p, "architecture"));
		const char *var = json_string_value(json_object_get(p, "variant"));
		if (!os || !arch || !strcmp(os, "unknown"))
			continue; /* attestations and the like */
		if (!strcmp(os, want->os) && !strcmp(arch, want->arch) &&
		    (!want->variant[0] || (var && !strcmp(var, want->variant)))) {
			sbuf_free(&there);
			return d;
		}
		char q[96];
		snprintf(q, sizeof q, "%s/%s%s%s", os, arch, var ? "/" : "", var ? var : "");
		char qq[96];
		quote_name(qq, sizeof qq, q);
		sbuf_puts(&there, there.len ? ", " : "");
		sbuf_puts(&there, qq);
	}
	char w[100];
	platform_str(want, w, sizeof w);
	gerr_set(err, 0, "image %s: no image for platform %s (there are: %s)", image, w, there.s ? there.s : "none");
	sbuf_free(&there);
	return NULL;
}

int platform_parse(const char *s, struct platform *pf)
{
	memset(pf, 0, sizeof *pf);
	const char *a = strchr(s, '/');
	if (!a)
		return -1;
	const char *v = strchr(a + 1, '/');
	size_t ol = (size_t)(a - s), al = v ? (size_t)(v - a - 1) : strlen(a + 1), vl = v ? strlen(v + 1) : 0;
	if (!ol || !al || (v && (!vl || strchr(v + 1, '/'))) || ol >= sizeof pf->os || al >= sizeof pf->arch ||
	    vl >= sizeof pf->variant)
		return -1;
	memcpy(pf->os, s, ol);
	memcpy(pf->arch, a + 1, al);
	if (v)
		memcpy(pf->variant, v + 1, vl);
	for (const char *p = s; *p; p++)
		if (!isalnum((unsigned char)*p) && *p != '/' && *p != '_' && *p != '-' && *p != '.')
			return -1;
	return 0;
}
