/* rootfs/cache/cacheadmin.c — what `gpurun cache ls`, `cache rm` and
 * `cache prune` do (cli/image.c prints it): listing the image records of
 * every id map's area (every source of each, and the map it was unpacked
 * under), and removing
 * images and whatever no record needs any more, under the cache's exclusive
 * lock (rootfs/cache/cache.c says what the lock guards and what an area is).  An
 * area of a subordinate id map is cleaned through that map: its files
 * belong to the range. */
#include "cache_int.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* ---- ls, rm, prune ------------------------------------------------------- */

struct entry {
	char hex[DIGEST_HEX_LEN + 1];
	struct image img;
	struct timespec used;
	size_t area; /* index into struct cache_areas */
};

static int by_use(const void *a, const void *b)
{
	const struct entry *x = a, *y = b;
	if (x->used.tv_sec != y->used.tv_sec)
		return x->used.tv_sec < y->used.tv_sec ? -1 : 1;
	return (x->used.tv_nsec > y->used.tv_nsec) - (x->used.tv_nsec < y->used.tv_nsec);
}

/* Every image record of an area, appended to v[*n], area index ai.
 * Damaged records are skipped (and later removed by prune). */
static struct entry *area_entries(const struct cache *c, size_t ai, struct entry *v, size_t *n, int remove_bad)
{
	int fd = openat(c->fd, "images", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	struct dirent *de;
	while (d && (de = readdir(d))) {
		size_t l = strlen(de->d_name);
		if (l != DIGEST_HEX_LEN + strlen(".json") || strcmp(de->d_name + DIGEST_HEX_LEN, ".json"))
			continue;
		struct entry e = {.area = ai};
		memcpy(e.hex, de->d_name, DIGEST_HEX_LEN);
		struct stat st;
		struct gerr ignore = {0};
		if (!digest_hex_ok(e.hex) || fstatat(fd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			continue;
		e.used = st.st_mtim;
		if (cache_get_image(c, e.hex, &e.img, &ignore) < 0) {
			image_free(&e.img);
			if (remove_bad) /* a layer is gone: the record cannot be used */
				(void)unlinkat(fd, de->d_name, 0);
			continue;
		}
		/* cache_get_image marked it used: put the time back. */
		struct timespec t[2] = {st.st_atim, st.st_mtim};
		(void)utimensat(fd, de->d_name, t, AT_SYMLINK_NOFOLLOW);
		v = xrealloc(v, (*n + 1) * sizeof *v);
		v[(*n)++] = e;
	}
	if (d)
		closedir(d);
	else if (fd >= 0)
		close(fd);
	return v;
}

/* Every image record of every area, oldest use first. */
static struct entry *read_entries(const struct cache_areas *a, size_t *n, int remove_bad)
{
	struct entry *v = NULL;
	*n = 0;
	for (size_t i = 0; i < a->n; i++)
		v = area_entries(&a->v[i], i, v, n, remove_bad);
	if (v)
		qsort(v, *n, sizeof *v, by_use);
	return v;
}

static void free_entries(struct entry *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		image_free(&v[i].img);
	free(v);
}

/* The record's sources as values: the JSON of cacherecord.c stays here. */
static void listed_sources(json_t *sources, struct cache_listed *out)
{
	out->nsources = json_array_size(sources);
	out->sources = xcalloc(out->nsources ? out->nsources : 1, sizeof *out->sources);
	for (size_t k = 0; k < out->nsources; k++) {
		json_t *x = json_array_get(sources, k);
		const char *src = json_string_value(json_object_get(x, "source"));
		const char *ref = json_string_value(json_object_get(x, "ref"));
		out->sources[k].source = src ? xstrdup(src) : NULL;
		out->sources[k].ref = ref ? xstrdup(ref) : NULL;
	}
}

int cache_list(struct cache *c, struct cache_listed **out, size_t *nout, struct gerr *err)
{
	(void)err; /* a record that cannot be read is not listed */
	struct cache_areas a = cache_areas_open(c);
	size_t n;
	struct entry *v = read_entries(&a, &n, 0);
	struct cache_listed *l = xcalloc(n ? n : 1, sizeof *l);
	for (size_t i = 0; i < n; i++) { /* the most recently used first */
		const struct entry *e = &v[n - 1 - i];
		const struct cache *area = &a.v[e->area];
		struct cache_listed *x = &l[i];
		memcpy(x->hex, e->hex, sizeof x->hex);
		x->bytes = e->img.bytes;
		x->used = e->used;
		x->source = e->img.source ? xstrdup(e->img.source) : NULL;
		x->ref = e->img.ref ? xstrdup(e->img.ref) : NULL;
		for (size_t k = 0; k < e->img.layer_ids.n; k++)
			strv_add(&x->layer_ids, xstrdup(e->img.layer_ids.v[k]));
		x->map = area->map;
		json_t *sources = cache_image_sources(area, e->hex);
		listed_sources(sources, x);
		json_decref(sources);
	}
	free_entries(v, n);
	cache_areas_close(&a);
	*out = l;
	*nout = n;
	return 0;
}

void cache_list_free(struct cache_listed *v, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(v[i].source);
		free(v[i].ref);
		strv_free(&v[i].layer_ids);
		for (size_t k = 0; k < v[i].nsources; k++) {
			free(v[i].sources[k].source);
			free(v[i].sources[k].ref);
		}
		free(v[i].sources);
	}
	free(v);
}

/* rm and prune change what running launches read: they wait for none.
 * Every launch holds TOP/lock shared, whatever its area. */
static int lock_exclusive(struct cache *c, struct gerr *err)
{
	const char *top = c->top ? c->top : c->root;
	_cleanup_fd_ int dfd = open(top, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dfd < 0)
		return gerr_set(err, errno, "cache %s", top);
	c->toplockfd = openat(dfd, "lock", O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (c->toplockfd < 0)
		return gerr_set(err, errno, "cache: open %s/lock", top);
	if (flock(c->toplockfd, LOCK_EX | LOCK_NB) < 0) {
		if (errno == EWOULDBLOCK)
			return gerr_set(err, 0, "cache %s is in use by a running gpurun; try again when it ends", top);
		return gerr_set(err, errno, "cache: lock %s/lock", top);
	}
	return 0;
}

static void remove_image_record(const struct cache *c, const char *hex)
{
	char rel[DIGEST_HEX_LEN + 16];
	snprintf(rel, sizeof rel, "images/%s.json", hex);
	(void)unlinkat(c->fd, rel, 0);
}

/* Everything no image record of the area needs: layers, partial unpacks,
 * sources that point nowhere, and the lock files (under the exclusive lock
 * no launch can hold or be waiting for one).  A layer's .ok goes first, so
 * a half-removed layer is never trusted.  The trees of an area of a
 * subordinate map are removed through that map (cache_remove_tree). */
static int collect_garbage(const struct cache *c, struct gerr *err)
{
	struct cache_areas one = {(struct cache *)c, 1};
	size_t n;
	struct entry *v = read_entries(&one, &n, 1);
	const char *const subdirs[] = {"layers", "sources", "tmp", "locks"};
	struct strv kept = {0}; /* the layers of kept containers stay, record or not */
	kept_layer_ids(c, &kept);
	int rc = 0;
	for (size_t s = 0; s < COUNT_OF(subdirs); s++) {
		int fd = openat(c->fd, subdirs[s], O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
		struct dirent *de;
		while (d && (de = readdir(d))) {
			if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
				continue;
			int keep = 0;
			if (s == 0) {
				char hex[DIGEST_HEX_LEN + 1];
				snprintf(hex, sizeof hex, "%.64s", de->d_name);
				for (size_t i = 0; i < n && !keep; i++)
					for (size_t l = 0; l < v[i].img.layer_ids.n && !keep; l++)
						keep = !strcmp(v[i].img.layer_ids.v[l] + strlen(DIGEST_PREFIX), hex);
				for (size_t l = 0; l < kept.n && !keep; l++)
					keep = !strcmp(kept.v[l] + strlen(DIGEST_PREFIX), hex);
			} else if (s == 1) {
				char hex[DIGEST_HEX_LEN + 1];
				keep = cache_lookup_source(c, de->d_name, hex);
				for (size_t i = 0; keep && i < n; i++)
					if (!strcmp(v[i].hex, hex))
						keep = 2;
				keep = keep == 2;
			}
			if (keep)
				continue;
			_cleanup_free_ char *ok = xasprintf("%s.ok", de->d_name);
			if (s == 0)
				(void)unlinkat(fd, ok, 0);
			if (cache_remove_tree(c, fd, de->d_name) < 0 && rc == 0)
				rc = gerr_set(err, errno, "cache: remove %s/%s/%s", c->root, subdirs[s], de->d_name);
		}
		if (d)
			closedir(d);
		else if (fd >= 0)
			close(fd);
	}
	free_entries(v, n);
	strv_free(&kept);
	return rc;
}

/* The kept container (rootfs/cache/kept.c) of any area whose layers are
 * exactly img's, or NULL (malloc'ed). */
static char *kept_by(const struct cache_areas *a, const struct image *img)
{
	char *name = NULL;
	for (size_t i = 0; i < a->n && !name; i++) {
		struct kept *v;
		size_t n;
		struct gerr ignore = {0};
		if (kept_list(&a->v[i], &v, &n, &ignore) < 0)
			continue;
		for (size_t k = 0; k < n && !name; k++) {
			int same = v[k].layer_ids.n == img->layer_ids.n;
			for (size_t l = 0; same && l < img->layer_ids.n; l++)
				same = !strcmp(v[k].layer_ids.v[l], img->layer_ids.v[l]);
			if (same)
				name = xstrdup(v[k].name);
		}
		kept_list_free(v, n);
	}
	return name;
}

static int collect_all(const struct cache_areas *a, struct gerr *err)
{
	int rc = 0;
	for (size_t i = 0; i < a->n; i++)
		if (collect_garbage(&a->v[i], err) < 0)
			rc = -1;
	return rc;
}

int cache_remove(struct cache *c, const char *what, char removed[DIGEST_HEX_LEN + 1], struct gerr *err)
{
	if (lock_exclusive(c, err) < 0)
		return -1;
	const char *want = str_after(what, DIGEST_PREFIX) ? str_after(what, DIGEST_PREFIX) : what;
	char hex[DIGEST_HEX_LEN + 1] = "";
	struct cache_areas a = cache_areas_open(c);
	struct stat st;
	int rc = 0;
	if (stat(what, &st) == 0) {
		/* A layout directory is known by the document the others hang
		 * from, as the import keys it (rootfs/image/image.c). */
		if (S_ISDIR(st.st_mode)) {
			_cleanup_fd_ int dir = open(what, O_PATH | O_DIRECTORY | O_CLOEXEC);
			if (dir >= 0 && fstatat(dir, "index.json", &st, AT_SYMLINK_NOFOLLOW) < 0)
				(void)fstatat(dir, "manifest.json", &st, AT_SYMLINK_NOFOLLOW);
		}
		_cleanup_free_ char *key = cache_source_key(&st, NULL);
		for (size_t i = 0; i < a.n && !*hex; i++)
			(void)cache_lookup_source(&a.v[i], key, hex);
		if (!*hex)
			rc = gerr_set(err, 0, "cache: %s is not in the cache %s", what, a.v[0].root);
	} else {
		size_t n, found = 0;
		struct entry *v = read_entries(&a, &n, 0);
		size_t wl = strlen(want);
		/* One image may be in more than one area: it counts once. */
		for (size_t i = 0; i < n; i++) {
			int again = 0;
			for (size_t k = 0; k < i && !again; k++)
				again = !strcmp(v[k].hex, v[i].hex);
			if (wl >= 4 && !strncmp(v[i].hex, want, wl) && !again) {
				memcpy(hex, v[i].hex, sizeof hex);
				found++;
			}
		}
		free_entries(v, n);
		if (found == 0)
			rc = gerr_set(err, 0, "cache: no image %s in %s (see gpurun cache ls)", what,
				      c->top ? c->top : c->root);
		else if (found > 1)
			rc = gerr_set(err, 0, "cache: %s names %zu images; give more of the digest", what, found);
	}
	/* An image that a kept container was made from stays: its next run
	 * starts from those layers. */
	for (size_t i = 0; rc == 0 && i < a.n; i++) {
		struct image img = {0};
		struct gerr ignore = {0};
		if (cache_get_image(&a.v[i], hex, &img, &ignore) == 0) {
			_cleanup_free_ char *name = kept_by(&a, &img);
			if (name)
				rc = gerr_set(
					err, 0,
					"cache: image %.12s is the image of the kept container %s; gpurun rm %s first",
					hex, name, name);
		}
		image_free(&img);
	}
	/* The image goes from every area: it is one image, unpacked under
	 * more than one map. */
	for (size_t i = 0; rc == 0 && i < a.n; i++)
		remove_image_record(&a.v[i], hex);
	if (rc == 0)
		rc = collect_all(&a, err);
	cache_areas_close(&a);
	if (rc == 0)
		memcpy(removed, hex, sizeof hex);
	return rc;
}

int cache_prune(struct cache *c, unsigned long long max_bytes, size_t *pruned, struct gerr *err)
{
	if (lock_exclusive(c, err) < 0)
		return -1;
	struct cache_areas a = cache_areas_open(c);
	int rc = collect_all(&a, err);
	size_t n, removed = 0;
	struct entry *v = read_entries(&a, &n, 0);
	/* Least recently used first, until the rest fits.  A layer counts once
	 * per area: each map has its own tree of it. */
	for (size_t i = 0; i < n; i++) {
		unsigned long long total = 0;
		struct strv seen = {0};
		for (size_t j = i; j < n; j++)
			for (size_t l = 0; l < v[j].img.layer_ids.n; l++) {
				const char *id = v[j].img.layer_ids.v[l];
				_cleanup_free_ char *key = xasprintf("%zu/%s", v[j].area, id);
				int dup = 0;
				for (size_t k = 0; k < seen.n && !dup; k++)
					dup = !strcmp(seen.v[k], key);
				if (dup)
					continue;
				strv_add(&seen, xstrdup(key));
				total += cache_layer_bytes(&a.v[v[j].area], id + strlen(DIGEST_PREFIX));
			}
		strv_free(&seen);
		if (total <= max_bytes)
			break;
		_cleanup_free_ char *kept = kept_by(&a, &v[i].img);
		if (kept) /* a kept container's image is never pruned */
			continue;
		remove_image_record(&a.v[v[i].area], v[i].hex);
		removed++;
	}
	free_entries(v, n);
	if (removed && collect_all(&a, err) < 0)
		rc = -1;
	cache_areas_close(&a);
	*pruned = removed;
	return rc;
}
