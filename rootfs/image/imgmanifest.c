/* rootfs/image/imgmanifest.c — what an image's JSON says: docker save's
 * manifest.json, an OCI layout's index.json (and a multi-platform index it
 * names, read for this machine's platform), a dir: layout's version and
 * manifest.json, the image manifest, and the config; the image picked by
 * name, every path and digest they name checked before use (no "..", no
 * absolute path, "sha256:" and 64 hex digits). */
#include "image_int.h"

#include <errno.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

void manifest_parsed_free(struct parsed *p)
{
	free(p->ref);
	free(p->config_member);
	free(p->config_hex);
	strv_free(&p->layer_members);
	strv_free(&p->layer_blob_hex);
}

/* A path that an image's JSON names: relative, no "..", not empty. */
static int json_path_ok(const char *p)
{
	if (!p || !*p || *p == '/')
		return 0;
	for (const char *c = p; *c; c++)
		if ((c == p || c[-1] == '/') && c[0] == '.' && c[1] == '.' && (c[2] == '/' || !c[2]))
			return 0;
	return 1;
}

static int bad_digest(const struct isrc *s, const char *digest, struct gerr *err)
{
	char q[QUOTED_NAME_MAX];
	quote_name(q, sizeof q, digest ? digest : "(none)");
	return gerr_set(err, 0, "image %s: invalid digest '%s' (want sha256: and 64 hex digits)", s->name, q);
}

/* The member a digest names in an OCI or dir: layout, after checking the
 * digest. */
static char *blob_member(struct isrc *s, const char *digest, struct gerr *err)
{
	const char *hex = digest_parse(digest);
	if (!hex) {
		bad_digest(s, digest, err);
		return NULL;
	}
	if (s->dir_layout)
		return xasprintf("%s%s", hex, s->blob_suffix);
	return xasprintf(OCI_BLOBS "%s", hex);
}

/* ---- the manifest ------------------------------------------------------- */

/* Does an image's name match what the user picked?  Registries' default
 * prefixes may be left out, as with docker ("gpurun/test:latest" for
 * "docker.io/gpurun/test:latest", "busybox:1" for
 * "docker.io/library/busybox:1"). */
static int name_matches(const char *name, const char *sel)
{
	static const char *const prefixes[] = {"", "docker.io/", "docker.io/library/", "library/"};
	for (size_t i = 0; i < COUNT_OF(prefixes); i++) {
		size_t pl = strlen(prefixes[i]);
		if (!strncmp(name, prefixes[i], pl) && !strcmp(name + pl, sel))
			return 1;
		if (!strncmp(sel, prefixes[i], pl) && !strcmp(sel + pl, name))
			return 1;
	}
	return 0;
}

/* No image picked: say which there are. */
static int pick_error(const struct isrc *s, const char *sel, size_t count, const struct sbuf *names, struct gerr *err)
{
	const char *list = names->s ? names->s : "none with a name";
	if (sel)
		return gerr_set(err, 0, "image %s: no image named %s (there are: %s)", s->name, sel, list);
	return gerr_set(err, 0, "image %s: holds %zu images; pick one with %s@NAME:TAG (%s)", s->name, count, s->name,
			list);
}

static void list_names(struct sbuf *b, const char *name)
{
	sbuf_puts(b, b->len ? ", " : "");
	sbuf_puts(b, name);
}

/* docker save: manifest.json lists the images, each with RepoTags, Config
 * and Layers (member paths). */
int manifest_parse_docker(struct isrc *s, const char *sel, struct parsed *p, struct gerr *err)
{
	json_t *root = isrc_member_json(s, "manifest.json", NULL, NULL, err);
	if (!root)
		return -1;
	int rc = -1;
	json_t *pick = NULL, *e;
	size_t i, j;
	struct sbuf names = {0};
	const char *ref = NULL;
	if (!json_is_array(root) || !json_array_size(root)) {
		gerr_set(err, 0, "image %s: manifest.json lists no image", s->name);
		goto out;
	}
	json_array_foreach(root, i, e)
	{
		json_t *tags = json_object_get(e, "RepoTags"), *t;
		json_array_foreach(tags, j, t)
		{
			const char *tag = json_string_value(t);
			if (!tag)
				continue;
			list_names(&names, tag);
			if (sel && !pick && name_matches(tag, sel)) {
				pick = e;
				ref = tag;
			}
		}
	}
	if (!sel && json_array_size(root) == 1) {
		pick = json_array_get(root, 0);
		ref = json_string_value(json_array_get(json_object_get(pick, "RepoTags"), 0));
	}
	if (!pick) {
		pick_error(s, sel, json_array_size(root), &names, err);
		goto out;
	}
	const char *config = json_string_value(json_object_get(pick, "Config"));
	json_t *layers = json_object_get(pick, "Layers"), *l;
	if (!json_path_ok(config)) {
		gerr_set(err, 0, "image %s: manifest.json: config path '%s' leaves the archive", s->name,
			 config ? config : "(none)");
		goto out;
	}
	if (!json_is_array(layers)) {
		gerr_set(err, 0, "image %s: manifest.json: no Layers", s->name);
		goto out;
	}
	p->config_member = xstrdup(config);
	p->ref = ref ? xstrdup(ref) : NULL;
	json_array_foreach(layers, i, l)
	{
		const char *path = json_string_value(l);
		if (!json_path_ok(path)) {
			char q[QUOTED_NAME_MAX];
			quote_name(q, sizeof q, path ? path : "(none)");
			gerr_set(err, 0, "image %s: manifest.json: layer path '%s' leaves the archive", s->name, q);
			goto out;
		}
		strv_add(&p->layer_members, xstrdup(path));
		/* Docker 25 names layers by digest: the name is a promise to check. */
		const char *hex = str_after(path, OCI_BLOBS);
		hex = hex && digest_hex_ok(hex) ? hex : "";
		strv_add(&p->layer_blob_hex, xstrdup(hex));
	}
	rc = 0;
out:
	sbuf_free(&names);
	json_decref(root);
	return rc;
}

static const char *ref_name(json_t *desc)
{
	json_t *ann = json_object_get(desc, "annotations");
	const char *n = json_string_value(json_object_get(ann, "org.opencontainers.image.ref.name"));
	return n ? n : json_string_value(json_object_get(ann, "io.containerd.image.name"));
}

/* The config and layers an image manifest (what: its name) lists, as the
 * members that hold them. */
static int manifest_blobs(struct isrc *s, const char *what, json_t *manifest, struct parsed *p, struct gerr *err)
{
	const char *config = json_string_value(json_object_get(json_object_get(manifest, "config"), "digest"));
	p->config_member = blob_member(s, config, err);
	if (!p->config_member)
		return -1;
	p->config_hex = xstrdup(digest_parse(config));
	json_t *layers = json_object_get(manifest, "layers"), *l;
	size_t i;
	if (!json_is_array(layers))
		return gerr_set(err, 0, "image %s: %s has no layers", s->name, what);
	json_array_foreach(layers, i, l)
	{
		const char *digest = json_string_value(json_object_get(l, "digest"));
		char *lm = blob_member(s, digest, err);
		if (!lm)
			return -1;
		strv_add(&p->layer_members, lm);
		strv_add(&p->layer_blob_hex, xstrdup(digest_parse(digest)));
	}
	return 0;
}

/* OCI layout: index.json's manifests, picked by their ref.name. */
int manifest_parse_oci(struct isrc *s, const char *sel, struct parsed *p, struct gerr *err)
{
	json_t *index = isrc_member_json(s, "index.json", NULL, NULL, err), *nested = NULL, *manifest = NULL;
	if (!index)
		return -1;
	char *mm = NULL; /* freed at out: no cleanup attribute a goto could jump over */
	int rc = -1;
	struct sbuf names = {0};
	json_t *ms = json_object_get(index, "manifests"), *d, *pick = NULL;
	size_t i;
	if (!json_is_array(ms) || !json_array_size(ms)) {
		gerr_set(err, 0, "image %s: index.json lists no manifest", s->name);
		goto out;
	}
	json_array_foreach(ms, i, d)
	{
		const char *n = ref_name(d);
		if (n)
			list_names(&names, n);
		/* "NAME:TAG" or the bare tag an OCI ref.name often is. */
		const char *colon = sel ? strrchr(sel, ':') : NULL;
		if (sel && n && !pick && (name_matches(n, sel) || (colon && !strcmp(n, colon + 1))))
			pick = d;
	}
	if (!sel && json_array_size(ms) == 1)
		pick = json_array_get(ms, 0);
	if (!pick) {
		pick_error(s, sel, json_array_size(ms), &names, err);
		goto out;
	}
	p->ref = ref_name(pick) ? xstrdup(ref_name(pick)) : NULL;
	if (media_kind(json_string_value(json_object_get(pick, "mediaType"))) == MEDIA_INDEX) {
		_cleanup_free_ char *m = blob_member(s, json_string_value(json_object_get(pick, "digest")), err);
		if (!m || !(nested = isrc_member_json(s, m, str_after(m, OCI_BLOBS), NULL, err)))
			goto out;
		/* A multi-platform index: this machine's image, as a pull picks. */
		struct platform host;
		if (host_platform(&host) < 0) {
			gerr_set(err, errno, "image %s: uname", s->name);
			goto out;
		}
		if (!(pick = platform_pick(json_object_get(nested, "manifests"), &host, s->name, err)))
			goto out;
	}
	mm = blob_member(s, json_string_value(json_object_get(pick, "digest")), err);
	if (!mm || !(manifest = isrc_member_json(s, mm, str_after(mm, OCI_BLOBS), NULL, err)))
		goto out;
	rc = manifest_blobs(s, mm, manifest, p, err);
out:
	free(mm);
	sbuf_free(&names);
	json_decref(manifest);
	json_decref(nested);
	json_decref(index);
	return rc;
}

/* ---- skopeo's dir: layout ------------------------------------------------ */

/* 1.1 names a blob by its hex alone; 1.0 added ".tar" to every blob, the
 * config included.  Any other version may name them otherwise: refused
 * rather than guessed. */
int manifest_dir_version(struct isrc *s, struct gerr *err)
{
	struct stat st;
	int fd = isrc_dir_open(s, "version", &st, err);
	if (fd < 0)
		return -1;
	if (st.st_size > DIR_VERSION_MAX) {
		close(fd);
		return gerr_set(err, 0, "image %s: version is larger than %d bytes: not a dir: layout gpurun reads",
				s->name, DIR_VERSION_MAX);
	}
	size_t len;
	_cleanup_free_ char *text = read_fd_max(fd, "version", DIR_VERSION_MAX, &len, err);
	close(fd);
	if (!text)
		return gerr_prefix(err, "image %s", s->name);
	if (len && text[len - 1] == '\n')
		text[--len] = '\0';
	const char *v = strlen(text) == len ? str_after(text, DIR_VERSION_PREFIX) : NULL;
	if (v && !strcmp(v, "1.1")) {
		s->blob_suffix = "";
		return 0;
	}
	if (v && !strcmp(v, "1.0")) {
		s->blob_suffix = ".tar";
		return 0;
	}
	char q[QUOTED_NAME_MAX];
	quote_name(q, sizeof q, text);
	return gerr_set(err, 0,
			"image %s: version '%s': not a dir: layout version gpurun reads (" DIR_VERSION_PREFIX
			"1.0 or 1.1)",
			s->name, q);
}

/* No index names the manifest, so nothing vouches for it: like an OCI
 * layout's index.json, it is the layout's root of trust, and every blob it
 * names is checked against its digest. */
int manifest_parse_dir(struct isrc *s, const char *sel, struct parsed *p, struct gerr *err)
{
	if (sel)
		return gerr_set(err, 0, "image %s: a dir: layout holds one image; drop @%s", s->name, sel);
	json_t *top = isrc_member_json(s, "manifest.json", NULL, NULL, err), *manifest = top;
	if (!top)
		return -1;
	char *mm = NULL; /* freed at out: no cleanup attribute a goto could jump over */
	int rc = -1;
	if (media_kind(json_string_value(json_object_get(top, "mediaType"))) == MEDIA_INDEX) {
		/* skopeo copy --all: this machine's image, as a pull picks. */
		struct platform host;
		if (host_platform(&host) < 0) {
			gerr_set(err, errno, "image %s: uname", s->name);
			goto out;
		}
		json_t *pick = platform_pick(json_object_get(top, "manifests"), &host, s->name, err);
		if (!pick)
			goto out;
		const char *digest = json_string_value(json_object_get(pick, "digest")), *hex = digest_parse(digest);
		if (!hex) {
			bad_digest(s, digest, err);
			goto out;
		}
		mm = xasprintf("%s.manifest.json", hex);
		if (!(manifest = isrc_member_json(s, mm, hex, NULL, err)))
			goto out;
	}
	const char *what = mm ? mm : "manifest.json", *mt = json_string_value(json_object_get(manifest, "mediaType"));
	json_t *version = json_object_get(manifest, "schemaVersion");
	/* Docker's schema 1 lists layers topmost first, with no config: not
	 * an image gpurun can describe. */
	if (!json_is_integer(version) || json_integer_value(version) != 2 || (mt && media_kind(mt) != MEDIA_MANIFEST)) {
		char q[QUOTED_NAME_MAX];
		quote_name(q, sizeof q, mt ? mt : "(none)");
		gerr_set(err, 0,
			 "image %s: %s is not a schema 2 image manifest (media type '%s'; convert it with skopeo copy "
			 "--format oci)",
			 s->name, what, q);
		goto out;
	}
	rc = manifest_blobs(s, what, manifest, p, err);
out:
	free(mm);
	if (manifest != top)
		json_decref(manifest);
	json_decref(top);
	return rc;
}

static char *config_str(json_t *o, const char *key)
{
	const char *v = json_string_value(json_object_get(o, key));
	return v && *v ? xstrdup(v) : NULL;
}

/* The config: what to run, and the layers' diff_ids.  *hex gets the
 * config's own digest, which names the image in the cache. */
int manifest_parse_config(struct isrc *s, const struct parsed *p, struct image *img, struct strv *diff_ids,
			  char hex[DIGEST_HEX_LEN + 1], struct gerr *err)
{
	const char *promised = p->config_hex;
	const char *base = strrchr(p->config_member, '/');
	base = base ? base + 1 : p->config_member;
	char name_hex[DIGEST_HEX_LEN + 1];
	/* "blobs/sha256/HEX" or docker's "HEX.json": the name is the digest. */
	if (!promised && strlen(base) >= DIGEST_HEX_LEN) {
		memcpy(name_hex, base, DIGEST_HEX_LEN);
		name_hex[DIGEST_HEX_LEN] = '\0';
		if (digest_hex_ok(name_hex) && (!base[DIGEST_HEX_LEN] || !strcmp(base + DIGEST_HEX_LEN, ".json")))
			promised = name_hex;
	}
	json_t *cfg = isrc_member_json(s, p->config_member, promised, hex, err);
	if (!cfg)
		return -1;
	int rc = -1;
	json_t *c = json_object_get(cfg, "config"), *ids = json_object_get(json_object_get(cfg, "rootfs"), "diff_ids"),
	       *d;
	size_t i;
	if (!json_is_array(ids)) {
		gerr_set(err, 0, "image %s: config %s has no rootfs.diff_ids", s->name, p->config_member);
		goto out;
	}
	json_array_foreach(ids, i, d)
	{
		const char *id = json_string_value(d);
		if (!digest_parse(id)) {
			bad_digest(s, id, err);
			goto out;
		}
		strv_add(diff_ids, xstrdup(id));
	}
	if (diff_ids->n != p->layer_members.n) {
		gerr_set(err, 0, "image %s: %zu layers but %zu diff_ids in the config", s->name, p->layer_members.n,
			 diff_ids->n);
		goto out;
	}
	if (json_is_object(c)) {
		img->config.env = json_to_strv(json_object_get(c, "Env"));
		img->config.entrypoint = json_to_strv(json_object_get(c, "Entrypoint"));
		img->config.cmd = json_to_strv(json_object_get(c, "Cmd"));
		img->config.workdir = config_str(c, "WorkingDir");
		img->config.user = config_str(c, "User");
	}
	rc = 0;
out:
	json_decref(cfg);
	return rc;
}
