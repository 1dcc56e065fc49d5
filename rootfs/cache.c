/* rootfs/cache.c — the image cache: unpacked layers kept on disk, keyed by
 * content, so that a second launch of an image costs what a launch from a
 * directory costs.
 *
 *   ROOT/layers/HEX/      one unpacked layer (HEX: the layer's diff_id, or
 *                         the archive's sha256 for a flat archive)
 *   ROOT/layers/HEX.ok    written last: the layer is complete ("bytes N")
 *   ROOT/images/HEX.json  one image: its layers, config and source; its
 *                         mtime is the image's last use
 *   ROOT/sources/KEY      the fast path: an image file's identity (device,
 *                         inode, size, mtime, ctime, and the @name:tag
 *                         picked) -> the image's HEX, so a hit reads no
 *                         archive
 *   ROOT/tmp/             unpacks in progress; renamed into layers/ when
 *                         complete, so a killed launch leaves nothing that a
 *                         later one would trust (and the next launch that
 *                         finds the cache idle sweeps it: sweep_leftovers)
 *   ROOT/lock             shared by every launch for its lifetime, taken
 *                         exclusively by `cache rm` and `cache prune`
 *   ROOT/locks/NAME       one importer per image and per layer at a time
 *
 * ROOT is $GPURUN_CACHE, else $XDG_CACHE_HOME/gpurun or ~/.cache/gpurun, or
 * /var/cache/gpurun for root.  It is private to its owner (0700), and no
 * cached file keeps a setuid or setgid bit or a security.* or trusted.*
 * xattr: a cache on a host disk must never hold a usable setuid binary. */
#include "rootfs_int.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

static const char *const cache_dirs[] = {"layers", "images", "sources", "tmp", "locks"};

/* mkdir -p with mode for the components we create. */
static int mkdir_parents(const char *path, mode_t mode, struct gerr *err)
{
	_cleanup_free_ char *p = xstrdup(path);
	for (char *s = p + 1; *s; s++) {
		if (*s != '/')
			continue;
		*s = '\0';
		if (mkdir(p, mode) < 0 && errno != EEXIST)
			return gerr_set(err, errno, "cache: mkdir %s", p);
		*s = '/';
	}
	if (mkdir(p, mode) < 0 && errno != EEXIST)
		return gerr_set(err, errno, "cache: mkdir %s", p);
	return 0;
}

static char *default_root(void)
{
	const char *env = getenv("GPURUN_CACHE");
	if (env && *env)
		return xstrdup(env);
	if (geteuid() == 0)
		return xstrdup("/var/cache/gpurun");
	const char *xdg = getenv("XDG_CACHE_HOME");
	if (xdg && *xdg == '/')
		return xasprintf("%s/gpurun", xdg);
	const char *home = getenv("HOME");
	if (home && *home == '/')
		return xasprintf("%s/.cache/gpurun", home);
	return NULL;
}

/* Every launch holds ROOT/lock shared for its lifetime, and every unpack
 * in progress (ROOT/tmp) or layer being committed (a layers/HEX not yet
 * followed by its .ok) belongs to a launch.  So whoever holds the lock
 * exclusively knows that all of these are leftovers of a launch that was
 * killed, and removes them: a SIGKILL leaves nothing behind for longer than
 * until the next launch that finds the cache idle. */
static void sweep_leftovers(const struct cache *c)
{
	static const char *const subdirs[] = {"tmp", "layers"};
	for (size_t s = 0; s < COUNT_OF(subdirs); s++) {
		int fd = openat(c->fd, subdirs[s], O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
		if (!d) {
			if (fd >= 0)
				close(fd);
			continue;
		}
		struct dirent *de;
		while ((de = readdir(d))) {
			if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
				continue;
			if (s == 1) {
				struct stat st;
				size_t n = strlen(de->d_name);
				if (n > 3 && !strcmp(de->d_name + n - 3, ".ok"))
					continue;
				_cleanup_free_ char *ok = xasprintf("%s.ok", de->d_name);
				if (fstatat(fd, ok, &st, AT_SYMLINK_NOFOLLOW) == 0)
					continue;
			}
			(void)cache_remove_tree(fd, de->d_name);
		}
		closedir(d);
	}
}

int cache_open(struct cache *c, int create, struct gerr *err)
{
	_cleanup_free_ char *root = default_root();
	if (!root) {
		memset(c, 0, sizeof *c);
		c->fd = c->lockfd = -1;
		return gerr_set(err, 0, "cache: no HOME to keep it in; set GPURUN_CACHE or use --no-cache");
	}
	int r = cache_open_at(c, root, create, err);
	if (r < 0 && err->errnum != ENOENT)
		gerr_hint(err, "set GPURUN_CACHE to a directory of your own, or use --no-cache");
	return r;
}

int cache_open_at(struct cache *c, const char *root, int create, struct gerr *err)
{
	memset(c, 0, sizeof *c);
	c->fd = c->lockfd = -1;
	c->root = xstrdup(root);
	c->keep_owner = geteuid() == 0 && ids_all_mapped();
	c->fd = open(c->root, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (c->fd < 0 && errno == ENOENT && create) {
		if (mkdir_parents(c->root, 0700, err) < 0)
			return -1;
		c->fd = open(c->root, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	}
	if (c->fd < 0)
		return gerr_set(err, errno, "cache %s", c->root);
	struct stat st;
	if (fstat(c->fd, &st) < 0)
		return gerr_set(err, errno, "cache %s", c->root);
	if (st.st_uid != geteuid())
		return gerr_set(err, 0, "cache %s belongs to uid %u, not to you (uid %u); set GPURUN_CACHE",
				c->root, (unsigned)st.st_uid, (unsigned)geteuid());
	/* Private to its owner: an unpacked image may hold secrets and files
	 * of other users' uids. */
	if ((st.st_mode & 077) && fchmod(c->fd, 0700) < 0)
		return gerr_set(err, errno, "cache %s: chmod 0700", c->root);
	if (!create)
		return 0;
	/* The lock is made last: when it is there, so is the rest. */
	c->lockfd = openat(c->fd, "lock", O_RDWR | O_CLOEXEC | O_NOFOLLOW);
	if (c->lockfd < 0) {
		for (size_t i = 0; i < COUNT_OF(cache_dirs); i++)
			if (mkdirat(c->fd, cache_dirs[i], 0700) < 0 && errno != EEXIST)
				return gerr_set(err, errno, "cache: mkdir %s/%s", c->root, cache_dirs[i]);
		c->lockfd = openat(c->fd, "lock", O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	}
	if (c->lockfd < 0)
		return gerr_set(err, errno, "cache: open %s/lock", c->root);
	/* Alone with the cache: what a killed launch left is swept now. */
	if (flock(c->lockfd, LOCK_EX | LOCK_NB) == 0)
		sweep_leftovers(c);
	/* Held until gpurun exits: `cache rm` and `prune` wait for no one.
	 * (From the exclusive lock this is a downgrade, not atomic: a `cache
	 * rm` may come first, and we wait for it.) */
	if (flock(c->lockfd, LOCK_SH) < 0)
		return gerr_set(err, errno, "cache: lock %s/lock", c->root);
	return 0;
}

void cache_close(struct cache *c)
{
	if (c->fd >= 0)
		close(c->fd);
	if (c->lockfd >= 0)
		close(c->lockfd);
	free(c->root);
	memset(c, 0, sizeof *c);
	c->fd = c->lockfd = -1;
}

int cache_lock(const struct cache *c, const char *name, struct gerr *err)
{
	char path[256];
	snprintf(path, sizeof path, "locks/%s.lock", name);
	int fd = openat(c->fd, path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return gerr_set(err, errno, "cache: open %s/%s", c->root, path);
	while (flock(fd, LOCK_EX) < 0) {
		if (errno != EINTR) {
			int e = errno;
			close(fd);
			return gerr_set(err, e, "cache: lock %s/%s", c->root, path);
		}
	}
	return fd;
}

void cache_unlock(int lockfd)
{
	if (lockfd >= 0)
		close(lockfd); /* closing the only fd releases the flock */
}

char *cache_layer_path(const struct cache *c, const char *hex)
{
	return xasprintf("%s/layers/%s", c->root, hex);
}

int cache_has_layer(const struct cache *c, const char *hex)
{
	char ok[DIGEST_HEX_LEN + 16], dir[DIGEST_HEX_LEN + 16];
	struct stat st;
	snprintf(ok, sizeof ok, "layers/%s.ok", hex);
	snprintf(dir, sizeof dir, "layers/%s", hex);
	return fstatat(c->fd, ok, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode) &&
	       fstatat(c->fd, dir, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode);
}

/* Remove the tree at dirfd/name without following a symlink, making
 * directories writable on the way (an image's 0555 directories). */
static int remove_tree_at(int dirfd, const char *name, int depth)
{
	if (unlinkat(dirfd, name, 0) == 0 || errno == ENOENT)
		return 0;
	if (errno != EISDIR && errno != EPERM)
		return -1;
	if (depth > 4096)
		return errno = ELOOP, -1;
	if (fchmodat(dirfd, name, 0700, 0) < 0 && errno == ENOENT)
		return 0;
	int fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -1;
	DIR *d = fdopendir(fd);
	if (!d) {
		close(fd);
		return -1;
	}
	struct dirent *de;
	int r = 0;
	while ((de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (remove_tree_at(fd, de->d_name, depth + 1) < 0)
			r = -1;
	}
	closedir(d);
	if (unlinkat(dirfd, name, AT_REMOVEDIR) < 0 && errno != ENOENT)
		r = -1;
	return r;
}

int cache_remove_tree(int dirfd, const char *name)
{
	return remove_tree_at(dirfd, name, 0);
}

char *cache_tmpdir(const struct cache *c, const char *what, int *dirfd, struct gerr *err)
{
	_cleanup_free_ char *tmpl = xasprintf("%s/tmp/%s.XXXXXX", c->root, what);
	if (!mkdtemp(tmpl)) {
		gerr_set(err, errno, "cache: mkdtemp in %s/tmp", c->root);
		return NULL;
	}
	*dirfd = open(tmpl, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (*dirfd < 0) {
		gerr_set(err, errno, "cache: open %s", tmpl);
		(void)rmdir(tmpl);
		return NULL;
	}
	char *rel = xstrdup(tmpl + strlen(c->root) + 1); /* "tmp/what.XXXXXX" */
	return rel;
}

/* Write small text to ROOT/rel atomically (tmp file + rename). */
static int write_file_atomic(const struct cache *c, const char *rel, const char *text, struct gerr *err)
{
	_cleanup_free_ char *tmp = xasprintf("tmp/.w.%d.%ld", (int)getpid(), (long)random());
	int fd = openat(c->fd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return gerr_set(err, errno, "cache: create %s/%s", c->root, tmp);
	if (write_all(fd, text, strlen(text)) < 0 || fsync(fd) < 0) {
		int e = errno;
		close(fd);
		unlinkat(c->fd, tmp, 0);
		return gerr_set(err, e, "cache: write %s/%s", c->root, rel);
	}
	close(fd);
	if (renameat(c->fd, tmp, c->fd, rel) < 0) {
		int e = errno;
		unlinkat(c->fd, tmp, 0);
		return gerr_set(err, e, "cache: rename to %s/%s", c->root, rel);
	}
	return 0;
}

int cache_commit_layer(const struct cache *c, const char *tmprel, const char *hex, unsigned long long bytes,
		       struct gerr *err)
{
	char dir[DIGEST_HEX_LEN + 16], ok[DIGEST_HEX_LEN + 16], text[64];
	snprintf(dir, sizeof dir, "layers/%s", hex);
	snprintf(ok, sizeof ok, "layers/%s.ok", hex);
	/* A directory without its .ok is what a killed import left: replace it. */
	if (cache_remove_tree(c->fd, dir) < 0)
		return gerr_set(err, errno, "cache: remove the partial %s/%s", c->root, dir);
	if (renameat(c->fd, tmprel, c->fd, dir) < 0)
		return gerr_set(err, errno, "cache: rename %s/%s to %s", c->root, tmprel, dir);
	snprintf(text, sizeof text, "bytes %llu\n", bytes);
	return write_file_atomic(c, ok, text, err);
}

unsigned long long cache_layer_bytes(const struct cache *c, const char *hex)
{
	char ok[DIGEST_HEX_LEN + 16];
	snprintf(ok, sizeof ok, "layers/%s.ok", hex);
	struct gerr ignore = {0};
	_cleanup_free_ char *text = read_small_file_at(c->fd, ok, 256, NULL, &ignore);
	unsigned long long n = 0;
	if (text)
		(void)sscanf(text, "bytes %llu", &n);
	return n;
}

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

int cache_put_image(const struct cache *c, const char *hex, const struct image *img, struct gerr *err)
{
	/* A registry reference is kept as given; a path made absolute. */
	_cleanup_free_ char *abs = strncmp(img->source, REGISTRY_PREFIX, strlen(REGISTRY_PREFIX))
					   ? realpath(img->source, NULL) : NULL;
	json_t *o = json_pack("{s:s, s:s?, s:o, s:o, s:o, s:o, s:s?, s:s?, s:I, s:I}", "source", abs ? abs : img->source,
			      "ref", img->ref, "layers", strv_json(img->layer_ids.v), "env",
			      strv_json(img->config.env), "entrypoint", strv_json(img->config.entrypoint),
			      "cmd", strv_json(img->config.cmd), "workdir", img->config.workdir, "user",
			      img->config.user, "bytes", (json_int_t)img->bytes, "created", (json_int_t)time(NULL));
	if (!o)
		return gerr_set(err, 0, "cache: cannot build the image record");
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
	/* The record's mtime is the image's last use (for prune). */
	(void)utimensat(c->fd, rel, NULL, 0);
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

/* ---- ls, rm, prune ------------------------------------------------------- */

struct entry {
	char hex[DIGEST_HEX_LEN + 1];
	struct image img;
	struct timespec used;
};

static int by_use(const void *a, const void *b)
{
	const struct entry *x = a, *y = b;
	if (x->used.tv_sec != y->used.tv_sec)
		return x->used.tv_sec < y->used.tv_sec ? -1 : 1;
	return (x->used.tv_nsec > y->used.tv_nsec) - (x->used.tv_nsec < y->used.tv_nsec);
}

/* Every image record, oldest use first.  Damaged records are skipped (and
 * later removed by prune). */
static struct entry *read_entries(const struct cache *c, size_t *n, int remove_bad)
{
	struct entry *v = NULL;
	*n = 0;
	int fd = openat(c->fd, "images", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	struct dirent *de;
	while (d && (de = readdir(d))) {
		size_t l = strlen(de->d_name);
		if (l != DIGEST_HEX_LEN + 5 || strcmp(de->d_name + DIGEST_HEX_LEN, ".json"))
			continue;
		struct entry e = {0};
		memcpy(e.hex, de->d_name, DIGEST_HEX_LEN);
		struct stat st;
		struct gerr ignore = {0};
		if (!digest_hex_ok(e.hex) || fstatat(fd, de->d_name, &st, 0) < 0)
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
		(void)utimensat(fd, de->d_name, t, 0);
		v = xrealloc(v, (*n + 1) * sizeof *v);
		v[(*n)++] = e;
	}
	if (d)
		closedir(d);
	else if (fd >= 0)
		close(fd);
	qsort(v, *n, sizeof *v, by_use);
	return v;
}

static void free_entries(struct entry *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		image_free(&v[i].img);
	free(v);
}

static void human(char *buf, size_t cap, unsigned long long b)
{
	static const char *const units[] = {"B", "kB", "MB", "GB", "TB"};
	double x = (double)b;
	size_t u = 0;
	while (x >= 1000 && u + 1 < COUNT_OF(units)) {
		x /= 1000;
		u++;
	}
	snprintf(buf, cap, u ? "%.1f%s" : "%.0f%s", x, units[u]);
}

int cache_list(struct cache *c, struct gerr *err)
{
	(void)err;
	size_t n;
	struct entry *v = read_entries(c, &n, 0);
	printf("%-14s %-9s %-16s %s\n", "IMAGE ID", "SIZE", "LAST USE", "SOURCE");
	for (size_t i = n; i-- > 0;) {
		char size[32], when[32];
		struct tm tm;
		human(size, sizeof size, v[i].img.bytes);
		strftime(when, sizeof when, "%Y-%m-%d %H:%M", localtime_r(&v[i].used.tv_sec, &tm));
		/* Sources and ref names come from images: shown, never acted on. */
		_cleanup_free_ char *source = xvisible(v[i].img.source ? v[i].img.source : "?");
		_cleanup_free_ char *ref = xvisible(v[i].img.ref ? v[i].img.ref : "");
		printf("%-14.12s %-9s %-16s %s%s%s\n", v[i].hex, size, when, source, *ref ? "@" : "", ref);
	}
	free_entries(v, n);
	return fflush(stdout) == 0 ? 0 : gerr_set(err, errno, "write the list");
}

/* rm and prune change what running launches read: they wait for none. */
static int lock_exclusive(struct cache *c, struct gerr *err)
{
	c->lockfd = openat(c->fd, "lock", O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (c->lockfd < 0)
		return gerr_set(err, errno, "cache: open %s/lock", c->root);
	if (flock(c->lockfd, LOCK_EX | LOCK_NB) < 0) {
		if (errno == EWOULDBLOCK)
			return gerr_set(err, 0, "cache %s is in use by a running gpurun; try again when it ends",
					c->root);
		return gerr_set(err, errno, "cache: lock %s/lock", c->root);
	}
	return 0;
}

static void remove_image_record(const struct cache *c, const char *hex)
{
	char rel[DIGEST_HEX_LEN + 16];
	snprintf(rel, sizeof rel, "images/%s.json", hex);
	(void)unlinkat(c->fd, rel, 0);
}

/* Everything no image record needs: layers, partial unpacks, sources that
 * point nowhere, and the lock files (under the exclusive lock no launch can
 * hold or be waiting for one).  A layer's .ok goes first, so a half-removed
 * layer is never trusted. */
static void collect_garbage(const struct cache *c)
{
	size_t n;
	struct entry *v = read_entries(c, &n, 1);
	const char *const subdirs[] = {"layers", "sources", "tmp", "locks"};
	for (size_t s = 0; s < COUNT_OF(subdirs); s++) {
		int fd = openat(c->fd, subdirs[s], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
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
						keep = !strcmp(v[i].img.layer_ids.v[l] + 7, hex);
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
			cache_remove_tree(fd, de->d_name);
		}
		if (d)
			closedir(d);
		else if (fd >= 0)
			close(fd);
	}
	free_entries(v, n);
}

int cache_remove(struct cache *c, const char *what, struct gerr *err)
{
	if (lock_exclusive(c, err) < 0)
		return -1;
	const char *want = !strncmp(what, "sha256:", 7) ? what + 7 : what;
	char hex[DIGEST_HEX_LEN + 1] = "";
	struct stat st;
	if (stat(what, &st) == 0) {
		_cleanup_free_ char *key = cache_source_key(&st, NULL);
		if (!cache_lookup_source(c, key, hex))
			return gerr_set(err, 0, "cache: %s is not in the cache %s", what, c->root);
	} else {
		size_t n, found = 0;
		struct entry *v = read_entries(c, &n, 0);
		size_t wl = strlen(want);
		for (size_t i = 0; i < n; i++)
			if (wl >= 4 && !strncmp(v[i].hex, want, wl)) {
				memcpy(hex, v[i].hex, sizeof hex);
				found++;
			}
		free_entries(v, n);
		if (found == 0)
			return gerr_set(err, 0, "cache: no image %s in %s (see gpurun cache ls)", what, c->root);
		if (found > 1)
			return gerr_set(err, 0, "cache: %s names %zu images; give more of the digest", what, found);
	}
	remove_image_record(c, hex);
	collect_garbage(c);
	printf("removed %.12s\n", hex);
	return 0;
}

int cache_prune(struct cache *c, unsigned long long max_bytes, struct gerr *err)
{
	if (lock_exclusive(c, err) < 0)
		return -1;
	collect_garbage(c);
	size_t n, removed = 0;
	struct entry *v = read_entries(c, &n, 0);
	/* Least recently used first, until the rest fits. */
	for (size_t i = 0; i < n; i++) {
		unsigned long long total = 0;
		struct strv seen = {0};
		for (size_t j = i; j < n; j++)
			for (size_t l = 0; l < v[j].img.layer_ids.n; l++) {
				const char *id = v[j].img.layer_ids.v[l];
				int dup = 0;
				for (size_t k = 0; k < seen.n && !dup; k++)
					dup = !strcmp(seen.v[k], id);
				if (dup)
					continue;
				strv_add(&seen, xstrdup(id));
				total += cache_layer_bytes(c, id + 7);
			}
		strv_free(&seen);
		if (total <= max_bytes)
			break;
		remove_image_record(c, v[i].hex);
		removed++;
	}
	free_entries(v, n);
	if (removed)
		collect_garbage(c);
	printf("pruned %zu image%s\n", removed, removed == 1 ? "" : "s");
	return 0;
}

/* `gpurun doctor`: is there a cache this user can write, or a place to make
 * one?  Only looks and writes one file it removes at once; the mode fix a
 * launch makes (chmod 0700) is not made here. */
char *cache_doctor(struct checks *ck)
{
	const char *name = "cache";
	char *root = default_root();
	if (!root) {
		check_say(ck, CHECK_FAIL, name,
			  "no place for it (no GPURUN_CACHE, XDG_CACHE_HOME or HOME): images and "
			  "archives need --no-cache; set GPURUN_CACHE to a directory of your own");
		return NULL;
	}
	_cleanup_fd_ int fd = open(root, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 && errno == ENOENT) {
		/* A launch would create it: can it, under the nearest parent
		 * that exists? */
		_cleanup_free_ char *up = xstrdup(root);
		char *slash;
		int e = ENOENT;
		while (e == ENOENT) {
			if (!(slash = strrchr(up, '/')))
				strcpy(up, "."); /* a relative GPURUN_CACHE: under the current directory */
			else
				slash[slash == up] = '\0';
			e = access(up, F_OK) == 0 ? 0 : errno;
		}
		/* Root passes access(2) everywhere: try for real. */
		if (!e) {
			_cleanup_free_ char *t = xasprintf("%s/.gpurun-doctor-%ld", up, (long)getpid());
			e = mkdir(t, 0700) == 0 ? 0 : errno;
			if (!e)
				rmdir(t);
		}
		if (e)
			check_say(ck, CHECK_FAIL, name,
				  "%s cannot be created: %s: %s; set GPURUN_CACHE to a directory of your "
				  "own, or use --no-cache",
				  root, up, strerror(e));
		else
			check_say(ck, CHECK_OK, name, "%s does not exist yet; the first launch of an image "
				  "creates it under %s", root, up);
		return root;
	}
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0) {
		check_say(ck, CHECK_FAIL, name, "%s: %s; set GPURUN_CACHE to a directory of your own, or use "
			  "--no-cache", root, strerror(errno));
		return root;
	}
	if (st.st_uid != geteuid()) {
		check_say(ck, CHECK_FAIL, name, "%s belongs to uid %u, not to you (uid %u); set GPURUN_CACHE",
			  root, (unsigned)st.st_uid, (unsigned)geteuid());
		return root;
	}
	/* Writing for real: root passes every permission check, a read-only
	 * mount or a full disk does not. */
	char probe[32];
	snprintf(probe, sizeof probe, ".doctor-%ld", (long)getpid());
	int tfd = openat(fd, probe, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (tfd < 0) {
		check_say(ck, CHECK_FAIL, name, "%s is not writable: %s; set GPURUN_CACHE to a directory of "
			  "your own, or use --no-cache", root, strerror(errno));
		return root;
	}
	int e = write(tfd, "x", 1) == 1 ? 0 : errno;
	close(tfd);
	unlinkat(fd, probe, 0);
	if (e) {
		check_say(ck, CHECK_FAIL, name, "%s: cannot write: %s", root, strerror(e));
		return root;
	}
	struct statvfs vs;
	unsigned long long avail = fstatvfs(fd, &vs) == 0 ? (unsigned long long)vs.f_bavail * vs.f_frsize : 0;
	char h[32];
	human(h, sizeof h, avail);
	check_say(ck, avail < (256ULL << 20) ? CHECK_WARN : CHECK_OK, name, "%s is writable, %s free%s", root, h,
		  avail < (256ULL << 20) ? ": images may not fit; `gpurun cache prune` frees space" : "");
	return root;
}
