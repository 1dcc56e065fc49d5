/* rootfs/registry/regresolve.c — a reference resolved to one image manifest: the
 * manifest its tag or digest names and, when that is an index (an OCI
 * index, a Docker manifest list), the index's entry for the platform asked
 * for, by default the host's. */
#include "registry_int.h"

#include <jansson.h>
#include <stdio.h>
#include <string.h>

#define MANIFEST_ACCEPT "Accept: " MT_OCI_INDEX ", " MT_DOCKER_LIST ", " MT_OCI_MANIFEST ", " MT_DOCKER_MANIFEST

/* ---- resolving a reference ---------------------------------------------------- */

/* The manifest that ref names, for the platform: *man gets it. */
int reg_resolve(struct reg *r, CURL *h, const struct platform *pf, struct doc *man, struct gerr *err)
{
	_cleanup_free_ char *path =
		xasprintf("/v2/%s/manifests/%s", r->ref.repo, r->ref.digest ? r->ref.digest : r->ref.tag);
	if (reg_fetch_doc(r, h, path, MANIFEST_ACCEPT, "manifest", r->ref.digest ? digest_parse(r->ref.digest) : NULL,
			  man, err) < 0)
		return -1;
	if (media_kind(man->mt) == MEDIA_INDEX) {
		json_t *d = platform_pick(json_object_get(man->j, "manifests"), pf, r->name, err);
		if (!d) {
			gerr_hint(err, "pick one with --platform OS/ARCH[/VARIANT]");
			return -1;
		}
		const char *dig = json_string_value(json_object_get(d, "digest"));
		if (!digest_parse(dig))
			return gerr_set(err, 0, "image %s: the index names a manifest by an invalid digest", r->name);
		_cleanup_free_ char *p2 = xasprintf("/v2/%s/manifests/%s", r->ref.repo, dig);
		_cleanup_free_ char *hex = xstrdup(digest_parse(dig));
		reg_doc_free(man);
		if (reg_fetch_doc(r, h, p2, MANIFEST_ACCEPT, "manifest", hex, man, err) < 0)
			return -1;
	}
	if (media_kind(man->mt) != MEDIA_MANIFEST) {
		char q[128];
		quote_name(q, sizeof q, man->mt[0] ? man->mt : "none");
		if (strstr(man->mt, "manifest.v1"))
			return gerr_set(err, 0,
					"image %s: a Docker schema 1 manifest (no longer supported by registries "
					"or by gpurun)",
					r->name);
		return gerr_set(err, 0, "image %s: manifest of an unsupported media type (%s)", r->name, q);
	}
	return 0;
}
