/* rootfs/regresolve.c — a reference resolved to one image manifest: the
 * manifest its tag or digest names and, when that is an index (an OCI
 * index, a Docker manifest list), the index's entry for the platform asked
 * for, by default the host's. */
#include "registry_int.h"

#include <jansson.h>
#include <stdio.h>
#include <string.h>
#include <sys/utsname.h>

#define MT_OCI_INDEX "application/vnd.oci.image.index.v1+json"
#define MT_DOCKER_LIST "application/vnd.docker.distribution.manifest.list.v2+json"
#define MT_OCI_MANIFEST "application/vnd.oci.image.manifest.v1+json"
#define MT_DOCKER_MANIFEST "application/vnd.docker.distribution.manifest.v2+json"
#define MANIFEST_ACCEPT "Accept: " MT_OCI_INDEX ", " MT_DOCKER_LIST ", " MT_OCI_MANIFEST ", " MT_DOCKER_MANIFEST

/* ---- resolving a reference ---------------------------------------------------- */

int host_platform(struct platform *pf)
{
	static const struct {
		const char *machine, *arch, *variant;
	} map[] = {
		{"x86_64", "amd64", ""}, {"aarch64", "arm64", ""}, {"armv7l", "arm", "v7"}, {"armv6l", "arm", "v6"},
		{"i686", "386", ""},     {"i386", "386", ""},      {"ppc64le", "ppc64le", ""}, {"s390x", "s390x", ""},
		{"riscv64", "riscv64", ""},
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

/* The index entry for the platform; else err lists those there are. */
static json_t *pick_platform(const struct reg *r, json_t *ms, const struct platform *want, struct gerr *err)
{
	size_t i;
	json_t *d;
	struct sbuf there = {0};
	json_array_foreach(ms, i, d)
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
	gerr_set(err, 0, "image %s: no image for platform %s (there are: %s)", r->name, w,
		 there.s ? there.s : "none");
	gerr_hint(err, "pick one with --platform OS/ARCH[/VARIANT]");
	sbuf_free(&there);
	return NULL;
}

static int is_index(const char *mt)
{
	return mt && (!strcmp(mt, MT_OCI_INDEX) || !strcmp(mt, MT_DOCKER_LIST));
}

static int is_manifest(const char *mt)
{
	return mt && (!strcmp(mt, MT_OCI_MANIFEST) || !strcmp(mt, MT_DOCKER_MANIFEST));
}

/* The manifest that ref names, for the platform: *man gets it. */
int resolve(struct reg *r, CURL *h, const struct platform *pf, struct doc *man, struct gerr *err)
{
	_cleanup_free_ char *path = xasprintf("/v2/%s/manifests/%s", r->ref.repo, r->ref.digest ? r->ref.digest : r->ref.tag);
	if (fetch_doc(r, h, path, MANIFEST_ACCEPT, "manifest", r->ref.digest ? digest_parse(r->ref.digest) : NULL, man,
		      err) < 0)
		return -1;
	if (is_index(man->mt)) {
		json_t *d = pick_platform(r, json_object_get(man->j, "manifests"), pf, err);
		if (!d)
			return -1;
		const char *dig = json_string_value(json_object_get(d, "digest"));
		if (!digest_parse(dig))
			return gerr_set(err, 0, "image %s: the index names a manifest by an invalid digest", r->name);
		_cleanup_free_ char *p2 = xasprintf("/v2/%s/manifests/%s", r->ref.repo, dig);
		_cleanup_free_ char *hex = xstrdup(digest_parse(dig));
		doc_free(man);
		if (fetch_doc(r, h, p2, MANIFEST_ACCEPT, "manifest", hex, man, err) < 0)
			return -1;
	}
	if (!is_manifest(man->mt)) {
		char q[128];
		quote_name(q, sizeof q, man->mt[0] ? man->mt : "none");
		if (strstr(man->mt, "manifest.v1"))
			return gerr_set(err, 0, "image %s: a Docker schema 1 manifest (no longer supported by registries "
					"or by gpurun)", r->name);
		return gerr_set(err, 0, "image %s: manifest of an unsupported media type (%s)", r->name, q);
	}
	return 0;
}
