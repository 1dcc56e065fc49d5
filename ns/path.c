/* ns/path.c — resolving and creating paths inside the container root.
 *
 * The unpacked image is hostile input: any directory in it may be a symlink
 * to "/etc" or "../../..".  So no path inside the root is ever handed to the
 * kernel as a string from the host's point of view.  Every lookup is an
 * openat2() relative to the root fd with RESOLVE_IN_ROOT (".." stops at the
 * root, absolute links restart at it) and every creation is a *at() call on
 * a directory fd obtained that way, with O_NOFOLLOW|O_EXCL on the last
 * component.  This is what closes the CVE-2024-0132/0133 class (mounts and
 * empty files landing on the host through image symlinks). */
#include "ns.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *skip_slashes(const char *p)
{
	while (*p == '/')
		p++;
	return p;
}

int root_open(int rootfd, const char *path, int flags, struct gerr *err)
{
	int fd = open_in_root(rootfd, path, flags);
	if (fd < 0)
		return gerr_set(err, errno, "open %s in the container root", path);
	return fd;
}

/* Split "a/b/c" into a malloc'ed parent "a/b" (or ".") and a pointer to "c". */
static char *split_parent(const char *path, const char **base)
{
	const char *rel = skip_slashes(path);
	size_t n = strlen(rel);
	while (n > 0 && rel[n - 1] == '/')
		n--;
	const char *slash = NULL;
	for (size_t i = 0; i < n; i++)
		if (rel[i] == '/')
			slash = rel + i;
	*base = slash ? slash + 1 : rel;
	if (!slash)
		return xstrdup(".");
	size_t pl = (size_t)(slash - rel);
	char *parent = xmalloc(pl + 1);
	memcpy(parent, rel, pl);
	parent[pl] = '\0';
	return parent;
}

/* The last component without trailing slashes, as its own string. */
static char *base_name(const char *base)
{
	size_t n = strcspn(base, "/");
	char *b = xmalloc(n + 1);
	memcpy(b, base, n);
	b[n] = '\0';
	return b;
}

static int mkdir_p_depth(int rootfd, const char *path, mode_t mode, int depth, struct gerr *err)
{
	struct gerr e2 = {0};
	int fd = root_open(rootfd, path, O_PATH | O_DIRECTORY, &e2);
	if (fd >= 0)
		return fd;
	if (e2.errnum != ENOENT)
		return gerr_set(err, e2.errnum, "directory %s in the container root", path);
	if (depth > 40)
		return gerr_set(err, ELOOP, "directory %s in the container root", path);

	const char *base;
	_cleanup_free_ char *parent = split_parent(path, &base);
	_cleanup_free_ char *name = base_name(base);
	if (!*name || !strcmp(name, ".") || !strcmp(name, ".."))
		return gerr_set(err, ENOENT, "directory %s in the container root", path);
	_cleanup_fd_ int pfd = mkdir_p_depth(rootfd, parent, mode, depth + 1, err);
	if (pfd < 0)
		return -1;
	/* pfd is an O_PATH fd: mkdirat accepts it as a directory fd. */
	int made = mkdirat(pfd, name, mode) == 0;
	if (!made && errno != EEXIST)
		return gerr_set(err, errno, "mkdir %s in the container root", path);
	if (!made) {
		/* A dangling image symlink (lib -> /srv/x): make its target,
		 * which is resolved inside the root like everything else. */
		char link[4096];
		ssize_t n = readlinkat(pfd, name, link, sizeof link - 1);
		if (n > 0) {
			link[n] = '\0';
			_cleanup_free_ char *target = link[0] == '/' ? xstrdup(link) : xasprintf("%s/%s", parent, link);
			_cleanup_fd_ int tfd = mkdir_p_depth(rootfd, target, mode, depth + 1, err);
			if (tfd < 0)
				return -1;
		}
	}
	/* Re-resolve from the root, never by following what we just saw. */
	fd = root_open(rootfd, path, O_PATH | O_DIRECTORY, err);
	if (fd < 0)
		return gerr_prefix(err, "create mount point");
	return fd;
}

int root_mkdir_p(int rootfd, const char *path, mode_t mode, struct gerr *err)
{
	return mkdir_p_depth(rootfd, path, mode, 0, err);
}

int root_parent(int rootfd, const char *path, const char **base, struct gerr *err)
{
	int owned;
	return root_parent_cached(rootfd, path, base, NULL, &owned, err);
}

/* The usual target does not exist yet (a library, a device node, /proc's
 * masks): it is created first and the fd of what was created returned, one
 * system call where a stat, a create, a close and an open were four, on
 * every file a GPU launch binds (Debian's driver: 60).  Only when the name
 * is taken does the existing entry decide. */
static int mount_target_in(int rootfd, int pfd, const char *path, const char *base, int dir, int replace,
			   struct gerr *err);

void path_dir_cache_drop(struct dir_cache *c)
{
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
	free(c->path);
	c->path = NULL;
}

int root_parent_cached(int rootfd, const char *path, const char **base, struct dir_cache *c, int *owned,
		       struct gerr *err)
{
	_cleanup_free_ char *parent = split_parent(path, base);
	*owned = 1;
	if (c && c->path && !strcmp(c->path, parent)) {
		*owned = 0;
		return c->fd;
	}
	int fd = root_mkdir_p(rootfd, parent, 0755, err);
	if (fd >= 0 && c) {
		path_dir_cache_drop(c);
		c->path = parent;
		parent = NULL;
		c->fd = fd;
		*owned = 0;
	}
	return fd;
}

int root_mount_target(int rootfd, const char *path, int dir, int replace, struct dir_cache *c, struct gerr *err)
{
	const char *base;
	int owned;
	int pfd = root_parent_cached(rootfd, path, &base, c, &owned, err);
	if (pfd < 0)
		return -1;
	int r = mount_target_in(rootfd, pfd, path, base, dir, replace, err);
	if (owned)
		close(pfd);
	return r;
}

static int mount_target_in(int rootfd, int pfd, const char *path, const char *base, int dir, int replace,
			   struct gerr *err)
{
	_cleanup_free_ char *name = base_name(base);
	if (!*name)
		return root_open(rootfd, path, O_PATH | O_DIRECTORY, err); /* the root itself */

	/* At most twice: again after removing a symlink that replace allows. */
	for (int tries = 0;; tries++) {
		/* O_EXCL|O_NOFOLLOW: EEXIST for any entry of that name, a
		 * dangling symlink included, so what is returned is what was
		 * just made, never what a link points to. */
		if (!dir) {
			int fd = openat(pfd, name, O_RDONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
			if (fd >= 0)
				return fd;
		} else if (mkdirat(pfd, name, 0755) == 0) {
			int fd = openat(pfd, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			if (fd < 0)
				return gerr_set(err, errno, "open %s in the container root", path);
			return fd;
		}
		if (errno != EEXIST)
			return gerr_set(err, errno, "%s %s in the container root", dir ? "mkdir" : "create", path);

		struct stat st;
		if (fstatat(pfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			return gerr_set(err, errno, "stat %s in the container root", path);
		if (S_ISLNK(st.st_mode) && replace && tries == 0) {
			/* An image's /etc/resolv.conf -> ../run/systemd/... is
			 * replaced by a plain node in our private copy of the root. */
			if (unlinkat(pfd, name, 0) < 0)
				return gerr_set(err, errno, "replace symlink %s in the container root", path);
			continue;
		}
		/* Existing entry (a symlink is followed, inside the root). */
		_cleanup_fd_ int fd = root_open(rootfd, path, O_PATH, err);
		if (fd < 0)
			return -1;
		struct stat t;
		if (fstat(fd, &t) < 0)
			return gerr_set(err, errno, "stat %s in the container root", path);
		if (dir && !S_ISDIR(t.st_mode))
			return gerr_set(err, ENOTDIR, "mount point %s in the container root", path);
		if (!dir && S_ISDIR(t.st_mode))
			return gerr_set(err, EISDIR, "mount point %s in the container root", path);
		int ret = fd;
		fd = -1;
		return ret;
	}
}
