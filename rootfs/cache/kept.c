/* rootfs/cache/kept.c — kept containers: the writable layer of the runs
 * named NAME (--name), kept in the cache area of the launch's id map
 * beside the layers it sits on, with the image it was made from, and the
 * lock that lets one run at a time mount it.
 *
 *   ROOT/containers/NAME/kept.json  {"name", "image", "ref", "chain_id",
 *                                    "layers", "created"}: written once,
 *                                    when the container is made; image
 *                                    is an absolute path or docker://REF
 *   ROOT/containers/NAME/upper/     the overlay's upper layer: what the
 *                                    runs changed
 *   ROOT/containers/NAME/work/      the overlay's work directory
 *   ROOT/containers/NAME/lock       held exclusively by the run that has
 *                                    the layer mounted, for its lifetime
 *   ROOT/containers/NAME/run.json   the record of that run (ns/record.c)
 *   ROOT/containers/NAME/joined     held shared by each launch that joined
 *                                    the running container, for as long as
 *                                    its command runs; that run's init
 *                                    takes it exclusively before it ends
 *
 * The image is known by the OCI chain id of its layers (the digest of
 * what the upper layer was written over): a run with another image is
 * refused, since the changes of one file system laid over another are
 * not the changes anyone made.  `cache rm` refuses, and `cache prune`
 * keeps, an image a kept container needs (rootfs/cache/cacheadmin.c). */
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

#define KEPT_JSON_MAX (1 << 20)

/* The message alone (no strerror), errnum kept for the caller to test. */
static int fail_as(struct gerr *err, int errnum)
{
	err->errnum = errnum;
	return -1;
}

int kept_name_check(const char *name, struct gerr *err)
{
	size_t n = strlen(name);
	int ok = n > 0 && n <= KEPT_NAME_MAX && strchr(KEPT_NAME_FIRST, name[0]);
	for (size_t i = 1; ok && i < n; i++)
		ok = strchr(KEPT_NAME_FIRST "_.-", name[i]) != NULL;
	if (!ok)
		return gerr_set(err, 0,
				"container name '%s': use letters, digits and _ . - (a letter or digit first, at "
				"most %d)",
				name, KEPT_NAME_MAX);
	return 0;
}

/* The chain id of the layers (OCI image spec, config.md): the first
 * layer's diff_id, then sha256 of "PREVIOUS DIFF_ID" for each next one. */
static void chain_id(const struct strv *ids, char out[DIGEST_HEX_LEN + 1 + 7])
{
	char chain[DIGEST_HEX_LEN + 1 + 7] = "";
	for (size_t i = 0; i < ids->n; i++) {
		if (i == 0) {
			snprintf(chain, sizeof chain, "%s", ids->v[0]);
			continue;
		}
		struct digest_ctx *d = digest_new();
		digest_update(d, chain, strlen(chain));
		digest_update(d, " ", 1);
		digest_update(d, ids->v[i], strlen(ids->v[i]));
		char hex[DIGEST_HEX_LEN + 1];
		digest_final(d, hex);
		snprintf(chain, sizeof chain, DIGEST_PREFIX "%s", hex);
	}
	memcpy(out, chain, sizeof chain);
}

static json_t *read_kept(int dirfd)
{
	return cache_read_object_at(dirfd, "kept.json", KEPT_JSON_MAX);
}

static char *jstr(json_t *o, const char *key)
{
	const char *s = json_string_value(json_object_get(o, key));
	return s ? xstrdup(s) : NULL;
}

static void fill_from(struct kept *k, json_t *o)
{
	k->image = jstr(o, "image");
	k->ref = jstr(o, "ref");
	const char *chain = json_string_value(json_object_get(o, "chain_id"));
	snprintf(k->chain, sizeof k->chain, "%s", chain ? chain : "");
	k->created = (long long)json_integer_value(json_object_get(o, "created"));
	json_t *a = json_object_get(o, "layers"), *v;
	size_t i;
	json_array_foreach(a, i, v)
	{
		if (json_is_string(v))
			strv_add(&k->layer_ids, xstrdup(json_string_value(v)));
	}
}

/* The image as given, a local path made absolute (not resolved: a link
 * the user named stays the name), so that `gpurun start NAME` finds it
 * again from any directory; a registry image is its docker://REF. */
static char *image_as_given(const char *source, struct gerr *err)
{
	if (source[0] == '/' || !strncmp(source, REGISTRY_PREFIX, strlen(REGISTRY_PREFIX)))
		return xstrdup(source);
	_cleanup_free_ char *cwd = getcwd(NULL, 0);
	if (!cwd)
		return gerr_set(err, errno, "image %s: getcwd", source), NULL;
	return xasprintf("%s/%s", strcmp(cwd, "/") ? cwd : "", source);
}

static int write_kept(const struct cache *c, const char *name, const struct image *img, const char *chain,
		      struct gerr *err)
{
	_cleanup_free_ char *image = image_as_given(img->source, err);
	if (!image)
		return -1;
	json_t *layers = json_array();
	for (size_t i = 0; i < img->layer_ids.n; i++)
		json_array_append_new(layers, json_string(img->layer_ids.v[i]));
	json_t *o = json_pack("{s:s, s:s, s:s?, s:s, s:o, s:I}", "name", name, "image", image, "ref", img->ref,
			      "chain_id", chain, "layers", layers, "created", (json_int_t)time(NULL));
	char *text = o ? json_dumps(o, JSON_SORT_KEYS) : NULL;
	json_decref(o);
	if (!text)
		return gerr_set(err, 0, "cache: cannot build the record of container %s", name);
	_cleanup_free_ char *rel = xasprintf("containers/%s/kept.json", name);
	int r = write_file_atomic(c, rel, text, err);
	free(text);
	return r;
}

void kept_free(struct kept *k)
{
	if (k->lockfd >= 0)
		close(k->lockfd);
	if (k->dirfd >= 0)
		close(k->dirfd);
	free(k->name);
	free(k->dir);
	free(k->image);
	free(k->ref);
	strv_free(&k->layer_ids);
	memset(k, 0, sizeof *k);
	k->lockfd = k->dirfd = -1;
}

/* ROOT/containers/NAME, opened without following a link. */
static int open_dir(const struct cache *c, const char *name, int create, struct gerr *err)
{
	if (create && mkdirat(c->fd, "containers", 0700) < 0 && errno != EEXIST)
		return gerr_set(err, errno, "cache: mkdir %s/containers", c->root);
	_cleanup_fd_ int top = c->fd >= 0 ? openat(c->fd, "containers", O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
					  : (errno = ENOENT, -1);
	if (top < 0)
		return gerr_set(err, errno, "container %s", name);
	if (create && mkdirat(top, name, 0700) < 0 && errno != EEXIST)
		return gerr_set(err, errno, "cache: mkdir %s/containers/%s", c->root, name);
	int fd = openat(top, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return gerr_set(err, errno, "container %s", name);
	return fd;
}

/* The run lock, taken without waiting: EBUSY when a run holds it. */
static int take_lock(int dirfd, const char *name, struct gerr *err)
{
	int fd = openat(dirfd, "lock", O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return gerr_set(err, errno, "container %s: open its lock", name);
	while (flock(fd, LOCK_EX | LOCK_NB) < 0) {
		int e = errno;
		if (e == EINTR)
			continue;
		close(fd);
		if (e == EWOULDBLOCK)
			return gerr_set(err, 0, "container %s is running", name), fail_as(err, EBUSY);
		return gerr_set(err, e, "container %s: lock", name);
	}
	return fd;
}

int kept_same_image(const struct kept *k, const struct image *img)
{
	char chain[sizeof k->chain];
	chain_id(&img->layer_ids, chain);
	return !strcmp(k->chain, chain);
}

int kept_take(struct cache *c, const char *name, const struct image *img, struct kept *k, struct gerr *err)
{
	memset(k, 0, sizeof *k);
	k->lockfd = k->dirfd = -1;
	if (kept_name_check(name, err) < 0)
		return -1;
	k->name = xstrdup(name);
	k->dir = xasprintf("%s/containers/%s", c->root, name);
	if ((k->dirfd = open_dir(c, name, 1, err)) < 0)
		goto fail;
	if ((k->lockfd = take_lock(k->dirfd, name, err)) < 0)
		goto fail;
	char chain[sizeof k->chain];
	chain_id(&img->layer_ids, chain);
	json_t *o = read_kept(k->dirfd);
	if (o) {
		fill_from(k, o);
		json_decref(o);
		if (strcmp(k->chain, chain)) {
			_cleanup_free_ char *was = k->ref ? xasprintf("%s@%s", k->image, k->ref) : xstrdup(k->image);
			gerr_set(
				err, 0,
				"container %s was made from the image %s (%.19s), not from %s; gpurun rm %s, or give that image",
				name, was ? was : "?", k->chain, img->source, name);
			goto fail;
		}
		return 0;
	}
	/* New (or its record never written): the layer's directories, then
	 * the record, last, so that a container with a record is whole. */
	static const char *const dirs[] = {"upper", "work"};
	for (size_t i = 0; i < COUNT_OF(dirs); i++)
		if (mkdirat(k->dirfd, dirs[i], 0755) < 0 && errno != EEXIST) {
			gerr_set(err, errno, "cache: mkdir %s/%s", k->dir, dirs[i]);
			goto fail;
		}
	if (write_kept(c, name, img, chain, err) < 0)
		goto fail;
	k->image = image_as_given(img->source, err);
	k->ref = img->ref ? xstrdup(img->ref) : NULL;
	memcpy(k->chain, chain, sizeof chain);
	for (size_t i = 0; i < img->layer_ids.n; i++)
		strv_add(&k->layer_ids, xstrdup(img->layer_ids.v[i]));
	k->created = (long long)time(NULL);
	k->made = 1;
	return 0;
fail:
	kept_free(k);
	return -1;
}

int kept_joined_lock(int dirfd, const char *name, struct gerr *err)
{
	int fd = openat(dirfd, "joined", O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return gerr_set(err, errno, "container %s: open its joined lock", name);
	return fd;
}

int kept_dir_running(int dirfd)
{
	_cleanup_fd_ int fd = openat(dirfd, "lock", O_RDWR | O_NOFOLLOW | O_CLOEXEC);
	return fd >= 0 && flock(fd, LOCK_SH | LOCK_NB) < 0 && errno == EWOULDBLOCK;
}

int kept_open(const struct cache *c, const char *name, struct kept *k, struct gerr *err)
{
	memset(k, 0, sizeof *k);
	k->lockfd = -1;
	if (kept_name_check(name, err) < 0)
		return -1;
	k->dirfd = open_dir(c, name, 0, err);
	if (k->dirfd < 0) {
		if (err->errnum == ENOENT)
			gerr_set(err, 0, "no container %s (gpurun ps lists them)", name), fail_as(err, ENOENT);
		return -1;
	}
	k->name = xstrdup(name);
	k->dir = xasprintf("%s/containers/%s", c->root, name);
	json_t *o = read_kept(k->dirfd);
	if (o) {
		fill_from(k, o);
		json_decref(o);
	}
	k->running = kept_dir_running(k->dirfd);
	return 0;
}

int kept_list(const struct cache *c, struct kept **out, size_t *n, struct gerr *err)
{
	*out = NULL;
	*n = 0;
	if (c->fd < 0)
		return 0;
	int fd = openat(c->fd, "containers", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? 0 : gerr_set(err, errno, "cache: open %s/containers", c->root);
	DIR *d = fdopendir(fd);
	if (!d) {
		close(fd);
		return gerr_set(err, errno, "cache: open %s/containers", c->root);
	}
	struct dirent *de;
	while ((de = readdir(d))) {
		struct gerr ignore = {0};
		struct kept k;
		if (de->d_name[0] == '.' || kept_name_check(de->d_name, &ignore) < 0)
			continue;
		if (kept_open(c, de->d_name, &k, &ignore) < 0)
			continue;
		*out = xrealloc(*out, (*n + 1) * sizeof **out);
		(*out)[(*n)++] = k;
	}
	closedir(d);
	return 0;
}

int kept_find(const struct cache *c, const char *name, struct cache *area, struct kept *k, struct gerr *err)
{
	memset(area, 0, sizeof *area);
	area->fd = area->lockfd = area->toplockfd = -1;
	if (kept_name_check(name, err) < 0)
		return -1;
	struct cache_areas a = cache_areas_open(c);
	int r = -1;
	for (size_t i = 0; i < a.n && r < 0; i++) {
		struct gerr none = {0};
		if (a.v[i].fd >= 0 && kept_open(&a.v[i], name, k, &none) == 0) {
			*area = a.v[i]; /* moved out: closing the rest leaves it open */
			memset(&a.v[i], 0, sizeof a.v[i]);
			a.v[i].fd = a.v[i].lockfd = a.v[i].toplockfd = -1;
			r = 0;
		}
	}
	cache_areas_close(&a);
	if (r < 0)
		gerr_set(err, 0, "no container %s (gpurun ps lists them)", name), fail_as(err, ENOENT);
	return r;
}

int kept_list_all(const struct cache *c, struct kept **out, size_t *n, struct gerr *err)
{
	*out = NULL;
	*n = 0;
	struct cache_areas a = cache_areas_open(c);
	int r = 0;
	for (size_t i = 0; i < a.n && r == 0; i++) {
		struct kept *v;
		size_t nv;
		if ((r = kept_list(&a.v[i], &v, &nv, err)) < 0)
			break;
		if (nv) {
			*out = xrealloc(*out, (*n + nv) * sizeof **out);
			memcpy(*out + *n, v, nv * sizeof *v);
			*n += nv;
		}
		free(v);
	}
	cache_areas_close(&a);
	return r;
}

void kept_list_free(struct kept *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		kept_free(&v[i]);
	free(v);
}

int kept_remove(const struct cache *c, const char *name, struct gerr *err)
{
	struct kept k;
	if (kept_open(c, name, &k, err) < 0)
		return -1;
	int lock = take_lock(k.dirfd, name, err);
	if (lock < 0) {
		if (err->errnum == EBUSY)
			gerr_set(err, 0, "container %s is running: it is removed once it has ended (gpurun ps)", name);
		kept_free(&k);
		return -1;
	}
	/* Under its lock, the directory goes from containers/ first: a run
	 * that opens it next makes a new one. */
	_cleanup_free_ char *gone = xasprintf("containers/.rm.%s.%d", name, (int)getpid());
	_cleanup_free_ char *rel = xasprintf("containers/%s", name);
	int r = 0;
	if (renameat(c->fd, rel, c->fd, gone) < 0)
		r = gerr_set(err, errno, "cache: rename %s", k.dir);
	else if (cache_remove_tree(c, c->fd, gone) < 0)
		r = gerr_set(err, errno, "cache: remove %s/%s", c->root, gone);
	close(lock);
	kept_free(&k);
	return r;
}

void kept_layer_ids(const struct cache *c, struct strv *ids)
{
	struct kept *v;
	size_t n;
	struct gerr ignore = {0};
	if (kept_list(c, &v, &n, &ignore) < 0)
		return;
	for (size_t i = 0; i < n; i++)
		for (size_t l = 0; l < v[i].layer_ids.n; l++)
			strv_add(ids, xstrdup(v[i].layer_ids.v[l]));
	kept_list_free(v, n);
}
