/* rootfs/cache/cacherecord.c — the cache's records: an image's record
 * (ROOT/images/HEX.json: its layers, config and sources) and the fast path's
 * (ROOT/sources/KEY -> HEX), written atomically and read back checked
 * against the layers present; rootfs/cache/cache.c owns the directory they live
 * in.  A record is what a cache hit reads instead of the archive. */
#include "cache_int.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

/* ---- image records ------------------------------------------------------- */

/* A record holds the config's Env, Entrypoint, Cmd, WorkingDir and User,
 * strings no longer than they were in the config (at most IMAGE_JSON_MAX),
 * and besides them at most IMAGE_MAX_LAYERS layer ids and the source's
 * path: a record of a config at the cap must still be read back. */
#define IMAGE_RECORD_MAX (IMAGE_JSON_MAX + (1 << 20))

static json_t *strv_json(char **v)
{
	json_t *a = json_array();
	for (; v && *v; v++)
		json_array_append_new(a, json_string(*v));
	return a;
}

char **json_to_strv(json_t *a)
{
	if (!json_is_array(a))
		return NULL;
	struct strv v = {0};
	size_t i;
	json_t *x;
	json_array_foreach(a, i, x)
	{
		if (json_is_string(x))
			strv_add(&v, xstrdup(json_string_value(x)));
	}
	return v.v ? v.v : xcalloc(1, sizeof *v.v); /* [] is not "absent" */
}

static char *json_strdup(json_t *o, const char *key)
{
	const char *s = json_string_value(json_object_get(o, key));
	return s ? xstrdup(s) : NULL;
}

/* An image's sources: every file or reference that led to it.  "source"
 * and "ref" are the latest (what a record of an older gpurun has alone);
 * "sources" lists them all, oldest first, as {"source", "ref"} objects. */
#define RECORD_SOURCES_MAX 64

static json_t *read_record(const struct cache *c, const char *hex)
{
	char rel[DIGEST_HEX_LEN + 16];
	snprintf(rel, sizeof rel, "images/%s.json", hex);
	return cache_read_object_at(c->fd, rel, IMAGE_RECORD_MAX);
}

json_t *cache_read_object_at(int dirfd, const char *rel, size_t max)
{
	size_t len;
	struct gerr ignore = {0};
	_cleanup_free_ char *text = read_small_file_at(dirfd, rel, max, &len, &ignore);
	json_error_t je;
	json_t *o = text ? json_loadb(text, len, 0, &je) : NULL;
	if (!json_is_object(o)) {
		json_decref(o);
		return NULL;
	}
	return o;
}

static json_t *source_entry(const char *source, const char *ref)
{
	json_t *e = json_pack("{s:s}", "source", source);
	if (e && ref)
		json_object_set_new(e, "ref", json_string(ref));
	return e;
}

/* A new array of the sources o records (none when o is NULL). */
static json_t *record_sources(json_t *o)
{
	json_t *a = json_array(), *list = json_object_get(o, "sources"), *x;
	size_t i;
	json_array_foreach(list, i, x)
	{
		const char *src = json_string_value(json_object_get(x, "source"));
		json_t *e = src ? source_entry(src, json_string_value(json_object_get(x, "ref"))) : NULL;
		if (e)
			json_array_append_new(a, e);
	}
	const char *src = json_string_value(json_object_get(o, "source"));
	json_t *e = !json_array_size(a) && src ? source_entry(src, json_string_value(json_object_get(o, "ref"))) : NULL;
	if (e)
		json_array_append_new(a, e);
	return a;
}

/* Append source@ref unless the list has it; the oldest go past the cap. */
static void add_source(json_t *a, const char *source, const char *ref)
{
	json_t *x;
	size_t i;
	json_array_foreach(a, i, x)
	{
		const char *r = json_string_value(json_object_get(x, "ref"));
		if (!strcmp(json_string_value(json_object_get(x, "source")), source) &&
		    (r && ref ? !strcmp(r, ref) : r == ref))
			return;
	}
	json_t *e = source_entry(source, ref);
	if (e)
		json_array_append_new(a, e);
	while (json_array_size(a) > RECORD_SOURCES_MAX)
		json_array_remove(a, 0);
}

json_t *cache_image_sources(const struct cache *c, const char *hex)
{
	json_t *o = read_record(c, hex);
	json_t *a = record_sources(o);
	json_decref(o);
	return a;
}

int cache_put_image(const struct cache *c, const char *hex, const struct image *img, struct gerr *err)
{
	/* A registry reference is kept as given; a path made absolute. */
	_cleanup_free_ char *abs =
		strncmp(img->source, REGISTRY_PREFIX, strlen(REGISTRY_PREFIX)) ? realpath(img->source, NULL) : NULL;
	/* The record is rewritten whenever a source leads to the image again:
	 * keep the sources it had.  Two imports of one image by different
	 * sources at once may lose one of them (each holds its source's lock,
	 * not the image's): a listing loses a line, nothing is served wrong. */
	json_t *old = read_record(c, hex);
	json_t *sources = record_sources(old);
	json_decref(old);
	add_source(sources, abs ? abs : img->source, img->ref);
	json_t *o = json_pack("{s:s, s:s?, s:o, s:o, s:o, s:o, s:s?, s:s?, s:I, s:I}", "source",
			      abs ? abs : img->source, "ref", img->ref, "layers", strv_json(img->layer_ids.v), "env",
			      strv_json(img->config.env), "entrypoint", strv_json(img->config.entrypoint), "cmd",
			      strv_json(img->config.cmd), "workdir", img->config.workdir, "user", img->config.user,
			      "bytes", (json_int_t)img->bytes, "created", (json_int_t)time(NULL));
	if (!o) {
		json_decref(sources);
		return gerr_set(err, 0, "cache: cannot build the image record");
	}
	json_object_set_new(o, "sources", sources);
	json_object_set_new(o, "has_entrypoint", json_boolean(img->config.entrypoint != NULL));
	json_object_set_new(o, "has_cmd", json_boolean(img->config.cmd != NULL));
	/* Compact: then a record is never much longer than the config it
	 * came from (IMAGE_RECORD_MAX). */
	char *text = json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS);
	json_decref(o);
	if (!text)
		return gerr_set(err, 0, "cache: cannot write the image record");
	char rel[DIGEST_HEX_LEN + 16];
	snprintf(rel, sizeof rel, "images/%s.json", hex);
	int r = write_file_atomic(c, rel, text, err);
	free(text);
	return r;
}

int cache_get_image(const struct cache *c, const char *hex, struct image *img, struct gerr *err)
{
	char rel[DIGEST_HEX_LEN + 16];
	snprintf(rel, sizeof rel, "images/%s.json", hex);
	size_t len;
	_cleanup_free_ char *text = read_small_file_at(c->fd, rel, IMAGE_RECORD_MAX, &len, err);
	if (!text)
		return -1;
	json_error_t je;
	json_t *o = json_loadb(text, len, 0, &je);
	if (!json_is_object(o)) {
		json_decref(o);
		return gerr_set(err, 0, "cache: %s/%s: damaged record", c->root, rel);
	}
	json_t *ids = json_object_get(o, "layers"), *id;
	size_t i;
	int bad = !json_array_size(ids);
	json_array_foreach(ids, i, id)
	{
		const char *h = digest_parse(json_string_value(id));
		if (!h || !cache_has_layer(c, h)) {
			bad = 1;
			break;
		}
		strv_add(&img->layers, cache_layer_path(c, h));
		strv_add(&img->layer_ids, xstrdup(json_string_value(id)));
	}
	if (bad) {
		strv_free(&img->layers);
		strv_free(&img->layer_ids);
		json_decref(o);
		return gerr_set(err, 0, "cache: image %.12s: a layer is missing or damaged", hex);
	}
	img->ref = json_strdup(o, "ref");
	if (!img->source)
		img->source = json_strdup(o, "source");
	json_t *env = json_object_get(o, "env");
	img->config.env = json_array_size(env) ? json_to_strv(env) : NULL;
	if (json_is_true(json_object_get(o, "has_entrypoint")))
		img->config.entrypoint = json_to_strv(json_object_get(o, "entrypoint"));
	if (json_is_true(json_object_get(o, "has_cmd")))
		img->config.cmd = json_to_strv(json_object_get(o, "cmd"));
	img->config.workdir = json_strdup(o, "workdir");
	img->config.user = json_strdup(o, "user");
	img->bytes = (unsigned long long)json_integer_value(json_object_get(o, "bytes"));
	json_decref(o);
	/* The record's mtime is the image's last use (for prune); a symlink
	 * put in its place since it was read is never followed. */
	(void)utimensat(c->fd, rel, NULL, AT_SYMLINK_NOFOLLOW);
	return 0;
}

/* ---- the fast path ------------------------------------------------------- */

char *cache_source_key(const struct stat *st, const char *selector)
{
	char sel[DIGEST_HEX_LEN + 1] = "";
	if (selector) {
		struct digest_ctx *d = digest_new();
		digest_update(d, selector, strlen(selector));
		digest_final(d, sel);
		sel[16] = '\0';
	}
	/* The ctime, because any write sets it and only the kernel does: a
	 * file rewritten in place to the same size, its mtime put back with
	 * touch -d, still has a new ctime (setting it back takes root and the
	 * system clock). */
	return xasprintf("%llx-%llx-%llx-%lld.%09ld-%lld.%09ld%s%s", (unsigned long long)st->st_dev,
			 (unsigned long long)st->st_ino, (unsigned long long)st->st_size, (long long)st->st_mtim.tv_sec,
			 st->st_mtim.tv_nsec, (long long)st->st_ctim.tv_sec, st->st_ctim.tv_nsec, *sel ? "-" : "", sel);
}

int cache_lookup_source(const struct cache *c, const char *key, char hex[DIGEST_HEX_LEN + 1])
{
	_cleanup_free_ char *rel = xasprintf("sources/%s", key);
	struct gerr ignore = {0};
	size_t len;
	_cleanup_free_ char *text = read_small_file_at(c->fd, rel, 256, &len, &ignore);
	if (!text || len < DIGEST_HEX_LEN)
		return 0;
	memcpy(hex, text, DIGEST_HEX_LEN);
	hex[DIGEST_HEX_LEN] = '\0';
	return digest_hex_ok(hex);
}

int cache_put_source(const struct cache *c, const char *key, const char *hex, struct gerr *err)
{
	_cleanup_free_ char *rel = xasprintf("sources/%s", key);
	_cleanup_free_ char *text = xasprintf("%s\n", hex);
	return write_file_atomic(c, rel, text, err);
}

void image_free(struct image *img)
{
	strv_free(&img->layers);
	strv_free(&img->layer_ids);
	char **lists[] = {img->config.env, img->config.entrypoint, img->config.cmd};
	for (size_t i = 0; i < COUNT_OF(lists); i++) {
		for (char **p = lists[i]; p && *p; p++)
			free(*p);
		free(lists[i]);
	}
	free(img->config.workdir);
	free(img->config.user);
	free(img->ref);
	free(img->source);
	memset(img, 0, sizeof *img);
}
