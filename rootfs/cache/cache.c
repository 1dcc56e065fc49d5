/* rootfs/cache/cache.c — the image cache's directory: where it is, opening it,
 * its locks, and the unpacked layers kept in it, keyed by content, so that
 * a second launch of an image costs what a launch from a directory costs.
 * Its records are rootfs/cache/cacherecord.c's, `cache ls|rm|prune`
 * rootfs/cache/cacheadmin.c's, and doctor's check rootfs/cache/cachedoctor.c's.
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
 * That is one area, for one id map.  TOP is $GPURUN_CACHE, else
 * $XDG_CACHE_HOME/gpurun or ~/.cache/gpurun, or /var/cache/gpurun for
 * root, and it is itself the area of the caller's own ids: root's real ones,
 * or the one id an unprivileged launch maps.  A caller whose launches get
 * the full map of a subordinate range (ns/userns/idmap.c) has the area
 * TOP/idmaps/u<START>-<COUNT>-g<START>-<COUNT>: its trees are unpacked
 * under that map and keep the image's owners, as ids of the range, so a
 * launch with another map must never see them (its files would show as
 * nobody, or as the wrong user), and only a process of that map can remove
 * them (cache_remove_tree).  A launch holds TOP/lock shared besides its
 * area's, so `cache rm` and `prune`, which take TOP/lock exclusively, wait
 * for no launch of any area.
 *
 * The cache is private to its owner (0700), and no cached file keeps a
 * setuid or setgid bit or a security.* or trusted.* xattr: a cache on a
 * host disk must never hold a usable setuid binary. */
#include "cache_int.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
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

char *cache_default_root(void)
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
			(void)cache_remove_tree(c, fd, de->d_name);
		}
		closedir(d);
	}
}

static int open_root(struct cache *c, const char *root, int create, const struct subids *map, struct gerr *err);

/* The area of map m under the open top: made with create; a missing one
 * without create is an open cache with fd -1, where nothing is found. */
static int open_area(struct cache *c, const struct cache *top, const struct subids *m, int create, struct gerr *err)
{
	char key[IDMAP_KEY_MAX];
	idmap_key(m, key, sizeof key);
	_cleanup_free_ char *area = xasprintf("%s/idmaps/%s", top->root, key);
	if (create &&
	    ((mkdirat(top->fd, "idmaps", 0700) < 0 && errno != EEXIST) || (mkdir(area, 0700) < 0 && errno != EEXIST)))
		return gerr_set(err, errno, "cache: mkdir %s", area);
	/* What a killed unpack left in the area belongs to the map: the
	 * sweep of the open removes it through the map. */
	int r = open_root(c, area, create, m, err);
	if (r < 0 && !create && err->errnum == ENOENT) {
		gerr_clear(err);
		r = 0;
	}
	c->keep_owner = 1; /* what the map's root makes keeps its owners */
	return r;
}

int cache_open(struct cache *c, int create, struct gerr *err)
{
	_cleanup_free_ char *root = cache_default_root();
	if (!root) {
		memset(c, 0, sizeof *c);
		c->fd = c->lockfd = c->toplockfd = -1;
		return gerr_set(err, 0, "cache: no HOME to keep it in; set GPURUN_CACHE or use --no-cache");
	}
	struct subids m;
	int r;
	if (subid_lookup(geteuid(), getegid(), &m) < 0) {
		r = cache_open_at(c, root, create, err);
	} else {
		/* TOP first: made, checked as ours, and its lock held. */
		struct cache top;
		r = cache_open_at(&top, root, create, err);
		if (r < 0) {
			*c = top; /* what failed, as without a range */
		} else {
			r = open_area(c, &top, &m, create, err);
			c->toplockfd = top.lockfd;
			top.lockfd = -1;
			cache_close(&top);
		}
	}
	c->top = xstrdup(root);
	if (r < 0 && err->errnum != ENOENT)
		gerr_hint(err, "set GPURUN_CACHE to a directory of your own, or use --no-cache");
	return r;
}

/* The area at root, whose trees belong to map (NULL: the caller's ids). */
static int open_root(struct cache *c, const char *root, int create, const struct subids *map, struct gerr *err)
{
	memset(c, 0, sizeof *c);
	c->fd = c->lockfd = c->toplockfd = -1;
	c->root = xstrdup(root);
	if (map)
		c->map = *map;
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
		return gerr_set(err, 0, "cache %s belongs to uid %u, not to you (uid %u); set GPURUN_CACHE", c->root,
				(unsigned)st.st_uid, (unsigned)geteuid());
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

int cache_open_at(struct cache *c, const char *root, int create, struct gerr *err)
{
	return open_root(c, root, create, NULL, err);
}

void cache_close(struct cache *c)
{
	if (c->fd >= 0)
		close(c->fd);
	if (c->lockfd >= 0)
		close(c->lockfd);
	if (c->toplockfd >= 0)
		close(c->toplockfd);
	free(c->root);
	free(c->top);
	memset(c, 0, sizeof *c);
	c->fd = c->lockfd = c->toplockfd = -1;
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
	/* The directory is held from here on, never named again until its
	 * rmdir: what is put at name after the unlink above (a symlink) is
	 * neither followed by the chmod nor read.  The chmod goes through
	 * /proc, as fchmod() refuses an O_PATH descriptor. */
	int at = openat(dirfd, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (at < 0) {
		if (errno == ENOENT)
			return 0;
		/* No longer a directory: what is there now goes, unfollowed. */
		if (errno == ENOTDIR || errno == ELOOP)
			return unlinkat(dirfd, name, 0) == 0 || errno == ENOENT ? 0 : -1;
		return -1;
	}
	char self[32];
	snprintf(self, sizeof self, "/proc/self/fd/%d", at);
	(void)chmod(self, 0700); /* a directory not ours fails below, as it would */
	int fd = openat(at, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	int e = errno;
	close(at);
	if (fd < 0)
		return errno = e, -1;
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

struct removal {
	int dirfd;
	const char *name;
};

static int remove_in_map(void *arg, void *result, struct gerr *err)
{
	const struct removal *r = arg;
	(void)result;
	if (remove_tree_at(r->dirfd, r->name, 0) < 0)
		return gerr_set(err, errno, "remove %s", r->name);
	return 0;
}

/* What the caller cannot remove (files in a directory that belongs to a
 * subordinate id) is removed by the root of the area's map, as `podman
 * unshare rm` would: it owns every id of the tree, and no other. */
int cache_remove_tree(const struct cache *c, int dirfd, const char *name)
{
	if (remove_tree_at(dirfd, name, 0) == 0)
		return 0;
	int e = errno;
	const struct subids *m = c && c->map.uid_count ? &c->map : NULL;
	if (!m)
		return errno = e, -1;
	struct removal r = {dirfd, name};
	struct idmap_work w = {.fn = remove_in_map, .arg = &r};
	struct gerr err = {0};
	if (idmap_run(m, &w, &err) < 0) {
		/* The map's own complaint is more than errno can say. */
		warnx_("cache: %s%s%s", err.msg, err.hint[0] ? "; " : "", err.hint);
		return errno = err.errnum ? err.errnum : e, -1;
	}
	return 0;
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
int write_file_atomic(const struct cache *c, const char *rel, const char *text, struct gerr *err)
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
	if (cache_remove_tree(c, c->fd, dir) < 0)
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

/* ---- the areas -------------------------------------------------------- */

static void areas_add(struct cache_areas *a, const char *path, const struct subids *m)
{
	struct cache c;
	struct gerr ignore = {0};
	if (cache_open_at(&c, path, 0, &ignore) < 0) {
		cache_close(&c);
		return;
	}
	if (m) {
		c.map = *m;
		c.keep_owner = 1;
	}
	a->v = xrealloc(a->v, (a->n + 1) * sizeof *a->v);
	a->v[a->n++] = c;
}

struct cache_areas cache_areas_open(const struct cache *c)
{
	struct cache_areas a = {0};
	const char *top = c->top ? c->top : c->root;
	areas_add(&a, top, NULL);
	_cleanup_free_ char *dir = xasprintf("%s/idmaps", top);
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	struct dirent *de;
	while (d && (de = readdir(d))) {
		struct subids m;
		if (idmap_from_key(de->d_name, &m) < 0)
			continue;
		_cleanup_free_ char *path = xasprintf("%s/%s", dir, de->d_name);
		areas_add(&a, path, &m);
	}
	if (d)
		closedir(d);
	else if (fd >= 0)
		close(fd);
	return a;
}

void cache_areas_close(struct cache_areas *a)
{
	for (size_t i = 0; i < a->n; i++)
		cache_close(&a->v[i]);
	free(a->v);
	memset(a, 0, sizeof *a);
}
