/* ns/exec.c — the one loop that carries out a plan, inside the new mount
 * namespace (P1, before the pivot and just after it).
 *
 * Order of business:
 *   1. make "/" a slave mount tree: nothing we mount propagates to the host;
 *   2. open every bind source as a detached clone of its mount (open_tree):
 *      the host is still fully visible, and later steps cover /tmp;
 *   3. build the root on a scratch tmpfs that exists only in this mount
 *      namespace (unpack, or overlay a directory image), so a SIGKILL at any
 *      point leaves nothing behind on the host;
 *   4. run the ops; every target is resolved inside the root (ns/path.c) and
 *      every mount is attached through file descriptors (move_mount), never
 *      through a path string the image could redirect. */
#include "ns.h"

#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../rootfs/rootfs.h"
#include "exec.h"

static int set_attrs(int fd, unsigned flags, int recursive, const char *what, struct gerr *err)
{
	struct mount_attr attr = {.attr_set = op_mount_attrs(flags)};
	if (!attr.attr_set)
		return 0;
	unsigned at = AT_EMPTY_PATH | (recursive ? AT_RECURSIVE : 0);
	if (mount_setattr(fd, "", at, &attr, sizeof attr) < 0)
		return gerr_set(err, errno, "set mount flags on %s", what);
	return 0;
}

static int attach(int tree, int target, const char *what, struct gerr *err)
{
	if (move_mount(tree, "", target, "", MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) < 0)
		return gerr_set(err, errno, "mount on %s", what);
	return 0;
}

/* The kernel refuses a fresh procfs (at create or at fsmount, depending on
 * the version) where parts of the current /proc are covered by locked
 * mounts: gpurun runs inside a container that masks /proc. */
static int proc_hint(int r, const char *type, struct gerr *err)
{
	if (err->errnum == EPERM && !strcmp(type, "proc"))
		gerr_hint(err, "procfs cannot be mounted here: a parent container masks parts of /proc "
			       "(run it with an unmasked /proc, e.g. --security-opt unmask=/proc); "
			       "`gpurun doctor` checks this");
	return r;
}

/* A fresh file system instance built with the fs-context API and attached
 * to target.  data is "k=v,flag,..." (op_mount_data); source is what
 * mountinfo shows in place of "none". */
static int mount_fresh(const char *type, const char *source, const char *data, unsigned flags,
		       int target, const char *what, struct gerr *err)
{
	_cleanup_fd_ int fs = fsopen(type, FSOPEN_CLOEXEC);
	if (fs < 0)
		return gerr_set(err, errno, "fsopen %s for %s", type, what);
	if (fsconfig(fs, FSCONFIG_SET_STRING, "source", source, 0) < 0)
		return gerr_set(err, errno, "%s source for %s", type, what);
	_cleanup_free_ char *copy = xstrdup(data ? data : "");
	for (char *save = NULL, *kv = strtok_r(copy, ",", &save); kv; kv = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(kv, '=');
		int r;
		if (eq) {
			*eq = '\0';
			r = fsconfig(fs, FSCONFIG_SET_STRING, kv, eq + 1, 0);
		} else {
			r = fsconfig(fs, FSCONFIG_SET_FLAG, kv, NULL, 0);
		}
		/* huge= is refused by a kernel built without transparent huge
		 * pages; the scratch tmpfs asks for it only to be faster. */
		if (r < 0 && errno == EINVAL && !strcmp(kv, "huge"))
			continue;
		if (r < 0)
			return gerr_set(err, errno, "%s option %s for %s", type, kv, what);
	}
	if (fsconfig(fs, FSCONFIG_CMD_CREATE, NULL, NULL, 0) < 0)
		return proc_hint(gerr_set(err, errno, "mount %s on %s", type, what), type, err);
	_cleanup_fd_ int mnt = fsmount(fs, FSMOUNT_CLOEXEC, (unsigned)op_mount_attrs(flags));
	if (mnt < 0)
		return proc_hint(gerr_set(err, errno, "fsmount %s for %s", type, what), type, err);
	return attach(mnt, target, what, err);
}

/* A fresh mount of op's kind (tmpfs, proc, sysfs, devpts) or the overlay of
 * a directory image, with the data the printer shows. */
static int mount_op(const struct op *op, const char *type, int target, const char *what, struct gerr *err)
{
	struct sbuf data = {0};
	op_mount_data(op, &data);
	int r = mount_fresh(type, type, data.s, op->flags, target, what, err);
	sbuf_free(&data);
	return r;
}

/* $LIBDIR of the tree at dirfd (the image's root, or its lower layer). */
static const char *image_libdir(int dirfd)
{
	_cleanup_fd_ int fd = open_in_root(dirfd, LIBDIR_MARKER, O_PATH);
	return plan_libdir_for(fd >= 0);
}

/* $LIBDIR32 of the tree at dirfd (see base/plan.h for the rule). */
static const char *image_libdir32(int dirfd)
{
	struct stat a, b;
	_cleanup_fd_ int marker = open_in_root(dirfd, LIBDIR_MARKER, O_PATH);
	_cleanup_fd_ int lib32 = open_in_root(dirfd, LIBDIR32_OTHER, O_PATH | O_DIRECTORY);
	_cleanup_fd_ int lib = open_in_root(dirfd, LIBDIR32_PLAIN, O_PATH | O_DIRECTORY);
	_cleanup_fd_ int lib64 = open_in_root(dirfd, LIBDIR_OTHER, O_PATH | O_DIRECTORY);
	int same = lib >= 0 && lib64 >= 0 && fstat(lib, &a) == 0 && fstat(lib64, &b) == 0 &&
		   a.st_dev == b.st_dev && a.st_ino == b.st_ino;
	return plan_libdir32_for(marker >= 0, lib32 >= 0, same);
}

static const char *expand_libdir(struct exec_state *st, const char *path, char *buf, size_t cap)
{
	if (!strncmp(path, LIBDIR32_VAR, strlen(LIBDIR32_VAR))) {
		if (!st->libdir32)
			st->libdir32 = image_libdir32(st->rootfd);
		return plan_expand_libdir32(path, st->libdir32, buf, cap);
	}
	if (!st->libdir && !strncmp(path, LIBDIR_VAR, strlen(LIBDIR_VAR)))
		st->libdir = image_libdir(st->rootfd);
	return plan_expand_libdir(path, st->libdir, buf, cap);
}

/* Step 2: detached clones of every bind source, made while the host's
 * paths are untouched. */
/* A cached layer, cloned and made read-only before anything is mounted. */
static int preopen_layers(struct op *op, struct gerr *err)
{
	op->layer_fds = xcalloc(op->layers.n, sizeof *op->layer_fds);
	for (size_t i = 0; i < op->layers.n; i++) {
		int fd = open_tree(AT_FDCWD, op->layers.v[i], OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC);
		if (fd < 0)
			return gerr_set(err, errno, "layer %s", op->layers.v[i]);
		op->layer_fds[i] = fd;
		struct stat s;
		if (fstat(fd, &s) < 0 || !S_ISDIR(s.st_mode))
			return gerr_set(err, ENOTDIR, "layer %s", op->layers.v[i]);
		if (set_attrs(fd, OPF_RO, 0, op->layers.v[i], err) < 0)
			return -1;
	}
	return 0;
}

/* The directory image P1 opened must be the tree P0 looked at: the path
 * may have been swapped for a link to another tree (say an OCI layout,
 * which P0 would have imported instead) in between. */
static int same_image(int image_fd, int tree, const char *src, struct gerr *err)
{
	struct stat a, b;
	if (image_fd < 0)
		return 0;
	if (fstat(image_fd, &a) < 0 || fstat(tree, &b) < 0)
		return gerr_set(err, errno, "stat image %s", src);
	if (a.st_dev != b.st_dev || a.st_ino != b.st_ino)
		return gerr_set(err, 0, "image %s changed since it was read", src);
	return 0;
}

static int preopen_sources(struct plan *p, int image_fd, struct gerr *err)
{
	for (size_t i = 0; i < p->n; i++) {
		struct op *op = &p->v[i];
		if (op->kind == OP_ROOTFS && (op->flags & OPF_LAYERS)) {
			/* --no-cache: the layers do not exist yet. */
			if (!(op->flags & OPF_IMPORT) && preopen_layers(op, err) < 0)
				return -1;
			continue;
		}
		int dir_image = op->kind == OP_ROOTFS && (op->flags & OPF_DIR);
		if (op->kind != OP_BIND && !dir_image)
			continue;
		const char *what = dir_image ? "image" : "bind source";
		unsigned fl = OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC;
		if (dir_image || (op->flags & OPF_REC))
			fl |= AT_RECURSIVE;
		op->fd = open_tree(AT_FDCWD, op->src, fl);
		if (op->fd < 0) {
			if (errno == ENOENT && (op->flags & OPF_OPTIONAL)) {
				op->skipped = 1;
				continue;
			}
			return gerr_set(err, errno, "%s %s", what, op->src);
		}
		struct stat s;
		if (fstat(op->fd, &s) < 0)
			return gerr_set(err, errno, "stat %s", op->src);
		if ((op->flags & OPF_DEVICE) && (!S_ISCHR(s.st_mode) || s.st_rdev != op->rdev))
			return gerr_set(err, 0, "%s is not the character device %u:%u", op->src,
					major(op->rdev), minor(op->rdev));
		/* The plan says (and prints) whether it is a directory; a source
		 * swapped since then is refused rather than mounted as a surprise. */
		if ((op->flags & OPF_DIR) && !S_ISDIR(s.st_mode))
			return gerr_set(err, ENOTDIR, "%s %s", what, op->src);
		if (!(op->flags & OPF_DIR) && S_ISDIR(s.st_mode))
			return gerr_set(err, EISDIR, "%s %s", what, op->src);
		if (dir_image && same_image(image_fd, op->fd, op->src, err) < 0)
			return -1;
	}
	return 0;
}

/* Unprivileged, a directory image's files belong to an unmapped uid, so
 * the container's root may not create anything in, say, the image's /etc
 * through the overlay - not even the mount point for /etc/resolv.conf.
 * But an upper-layer directory is ours, and overlayfs gives a merged
 * directory the attributes of its upper half.  So before mounting the
 * overlay, mirror into the upper layer the deepest existing directory (with
 * symlinks resolved inside the image) above every path the plan will
 * create.  Best effort: a failure here shows up, with its path, later. */
static void mirror_into_upper(int lowerfd, int upperfd, const char *dir)
{
	_cleanup_free_ char *d = xstrdup(dir);
	int fd = -1;
	for (;;) {
		fd = open_in_root(lowerfd, d, O_PATH | O_DIRECTORY);
		if (fd >= 0 || errno != ENOENT)
			break;
		char *slash = strrchr(d, '/');
		if (!slash)
			return;
		*slash = '\0';
	}
	if (fd < 0)
		return;
	/* The resolved path, from the kernel's own record of the fd. */
	char link[64], real[4096];
	snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
	ssize_t n = readlink(link, real, sizeof real - 1);
	close(fd);
	size_t pl = strlen(PLAN_LOWER);
	if (n < (ssize_t)pl || strncmp(real, PLAN_LOWER, pl) != 0)
		return;
	real[n] = '\0';
	_cleanup_fd_ int lcur = dup(lowerfd), ucur = dup(upperfd);
	for (char *save = NULL, *c = strtok_r(real + pl, "/", &save); c && lcur >= 0 && ucur >= 0;
	     c = strtok_r(NULL, "/", &save)) {
		struct stat ls;
		if (fstatat(lcur, c, &ls, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISDIR(ls.st_mode))
			return;
		if (mkdirat(ucur, c, ls.st_mode & 07777) < 0 && errno != EEXIST)
			return;
		int nl = openat(lcur, c, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		int nu = openat(ucur, c, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		close(lcur);
		close(ucur);
		lcur = nl;
		ucur = nu;
	}
}

static void prepare_upper(const struct plan *p)
{
	_cleanup_fd_ int lowerfd = open(PLAN_LOWER, O_PATH | O_DIRECTORY | O_CLOEXEC);
	_cleanup_fd_ int upperfd = open(PLAN_UPPER, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (lowerfd < 0 || upperfd < 0)
		return;
	/* $LIBDIR, decided from the lower layer (the root is not mounted yet). */
	const char *libdir = image_libdir(lowerfd), *libdir32 = image_libdir32(lowerfd);
	/* Most ops share a parent (a dozen under /dev): mirror each once. */
	struct strv done = {0};
	for (size_t i = 0; i < p->n; i++) {
		const struct op *op = &p->v[i];
		if (!op->dst || op->kind == OP_ROOTFS || op->kind == OP_REMOUNT)
			continue;
		char buf[4096], buf32[4096];
		const char *dst = plan_expand_libdir32(plan_expand_libdir(op->dst, libdir, buf, sizeof buf), libdir32,
						       buf32, sizeof buf32);
		_cleanup_free_ char *path = xstrdup(dst);
		if (op->kind != OP_MKDIR) {
			char *slash = strrchr(path, '/');
			if (slash)
				*slash = '\0';
		}
		const char *rel = path + strspn(path, "/");
		int seen = 0;
		for (size_t j = 0; j < done.n && !seen; j++)
			seen = !strcmp(done.v[j], rel);
		if (*rel && !seen) {
			mirror_into_upper(lowerfd, upperfd, rel);
			strv_add(&done, xstrdup(rel));
		}
	}
	strv_free(&done);
}

/* The root: a scratch tmpfs that hides the host's /tmp in this namespace
 * only, and in it either an overlay of the directory image (a tmpfs upper
 * layer takes the run's writes) or the unpacked archive bound onto itself,
 * since pivot_root needs the new root to be a mount point. */
static int do_rootfs(struct exec_state *st, struct op *op, struct gerr *err)
{
	const struct run_config *cfg = st->cfg;
	{
		_cleanup_fd_ int tmp = open(PLAN_SCRATCH, O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (tmp < 0)
			return gerr_set(err, errno, "open %s", PLAN_SCRATCH);
		if (mount_fresh("tmpfs", "gpurun", PLAN_SCRATCH_DATA, PLAN_SCRATCH_FLAGS, tmp,
				"the scratch tmpfs " PLAN_SCRATCH, err) < 0)
			return -1;
	}
	if (mkdir(PLAN_ROOT, 0755) < 0)
		return gerr_set(err, errno, "mkdir %s", PLAN_ROOT);
	if (op->flags & OPF_IMPORT) {
		/* The image's layers into a cache on the scratch tmpfs, read
		 * through the fd P0 opened (the image may be under /tmp). */
		struct cache c;
		struct image img;
		char path[64];
		snprintf(path, sizeof path, "/proc/self/fd/%d", cfg->image_fd);
		int r = cache_open_at(&c, PLAN_RUN_CACHE, 1, err);
		c.keep_owner = cfg->keep_owner; /* root of a user namespace cannot chown */
		if (r == 0)
			r = image_prepare(path, op->src, op->image_sel, &c, IMAGE_QUIET, &img, err);
		cache_close(&c);
		if (r < 0)
			return gerr_prefix(err, "--no-cache");
		int same = img.layers.n == op->layers.n;
		for (size_t i = 0; same && i < op->layers.n; i++)
			same = !strcmp(img.layers.v[i], op->layers.v[i]);
		image_free(&img);
		if (!same)
			return gerr_set(err, 0, "image %s changed since it was read", op->src);
		if (preopen_layers(op, err) < 0)
			return -1;
	}
	if (op->flags & OPF_LAYERS) {
		static const char *const dirs[] = {PLAN_LAYERS, PLAN_UPPER, PLAN_WORK};
		for (size_t i = 0; i < COUNT_OF(dirs); i++)
			if (mkdir(dirs[i], 0755) < 0)
				return gerr_set(err, errno, "mkdir %s", dirs[i]);
		for (size_t i = 0; i < op->layers.n; i++) {
			char at[64];
			snprintf(at, sizeof at, PLAN_LAYERS "/%zu", i);
			if (mkdir(at, 0755) < 0)
				return gerr_set(err, errno, "mkdir %s", at);
			if (move_mount(op->layer_fds[i], "", AT_FDCWD, at, MOVE_MOUNT_F_EMPTY_PATH) < 0)
				return gerr_set(err, errno, "bind layer %s", op->layers.v[i]);
			close(op->layer_fds[i]);
			op->layer_fds[i] = -1;
		}
		/* mount(2), not fsconfig: the lowerdir list of a many-layer
		 * image is longer than fsconfig's 256-byte strings. */
		struct sbuf data = {0};
		op_mount_data(op, &data);
		int r = mount("overlay", PLAN_ROOT, "overlay", op_mount_msflags(op->flags), data.s);
		sbuf_free(&data);
		if (r < 0)
			return gerr_set(err, errno, "mount the overlay of the layers of %s", op->src);
	} else if (op->flags & OPF_DIR) {
		static const char *const dirs[] = {PLAN_LOWER, PLAN_UPPER, PLAN_WORK};
		for (size_t i = 0; i < COUNT_OF(dirs); i++)
			if (mkdir(dirs[i], 0755) < 0)
				return gerr_set(err, errno, "mkdir %s", dirs[i]);
		if (move_mount(op->fd, "", AT_FDCWD, PLAN_LOWER, MOVE_MOUNT_F_EMPTY_PATH) < 0)
			return gerr_set(err, errno, "bind image %s", op->src);
		close(op->fd);
		op->fd = -1;
		if (cfg->unprivileged)
			prepare_upper(cfg->plan);
		_cleanup_fd_ int root = open(PLAN_ROOT, O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (root < 0)
			return gerr_set(err, errno, "open %s", PLAN_ROOT);
		if (mount_op(op, "overlay", root, "the overlay of the image", err) < 0) {
			gerr_prefix(err, "image %s", op->src);
			return gerr_hint(err, "overlayfs with a tmpfs upper layer needs Linux >= 6.6 in a "
					      "user namespace; run as root or use a tar image");
		}
	} else {
		_cleanup_fd_ int dfd = open(PLAN_ROOT, O_DIRECTORY | O_CLOEXEC);
		if (dfd < 0)
			return gerr_set(err, errno, "open %s", PLAN_ROOT);
		struct unpack_stats us = {0};
		unsigned how = (op->flags & OPF_KEEP_OWNER) ? UNPACK_KEEP_OWNER : UNPACK_CLEAR_SUID;
		int r = rootfs_unpack_finish(st->unpack, cfg->image, dfd, how, &us, err);
		st->unpack = NULL;
		if (r < 0)
			return -1;
		if (us.devices_skipped)
			warnx_("image %s: %zu device, fifo or socket entries not created", cfg->image,
			       us.devices_skipped);
		_cleanup_fd_ int tree = open_tree(AT_FDCWD, PLAN_ROOT, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC);
		if (tree < 0)
			return gerr_set(err, errno, "bind %s", PLAN_ROOT);
		if (set_attrs(tree, op->flags, 0, "the root", err) < 0)
			return -1;
		if (move_mount(tree, "", AT_FDCWD, PLAN_ROOT, MOVE_MOUNT_F_EMPTY_PATH) < 0)
			return gerr_set(err, errno, "bind %s onto itself", PLAN_ROOT);
	}
	st->rootfd = open(PLAN_ROOT, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (st->rootfd < 0)
		return gerr_set(err, errno, "open %s", PLAN_ROOT);
	return 0;
}

static int do_bind(struct exec_state *st, struct op *op, const char *dst, struct gerr *err)
{
	if (op->skipped)
		return 0;
	_cleanup_fd_ int target =
		root_mount_target(st->rootfd, dst, !!(op->flags & OPF_DIR), !!(op->flags & OPF_REPLACE),
				  (op->flags & OPF_DIR) ? NULL : &st->dirs, err);
	if (target < 0 && (op->flags & OPF_OPTIONAL) &&
	    (err->errnum == EACCES || err->errnum == EROFS || err->errnum == EPERM)) {
		warnx_("%s; %s not bound", err->msg, op->src);
		gerr_clear(err);
		return 0;
	}
	if (target < 0)
		return -1;
	if (set_attrs(op->fd, op->flags, !!(op->flags & OPF_REC), dst, err) < 0)
		return -1;
	if (attach(op->fd, target, dst, err) < 0)
		return -1;
	close(op->fd);
	op->fd = -1;
	return 0;
}

/* The fresh procfs still reaches host-wide kernel knobs through a few
 * paths: each is bound onto itself read-only (recursively: binfmt_misc
 * may be mounted under sys/fs). */
static int proc_readonly(int procfd, struct gerr *err)
{
	for (size_t i = 0; i < proc_nreadonly; i++) {
		const char *name = proc_readonly_paths[i];
		_cleanup_fd_ int t = open_tree(procfd, name, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE);
		if (t < 0) {
			if (errno == ENOENT)
				continue;
			return gerr_set(err, errno, "bind /proc/%s", name);
		}
		if (set_attrs(t, PROC_READONLY_FLAGS, 1, name, err) < 0)
			return -1;
		if (move_mount(t, "", procfd, name, MOVE_MOUNT_F_EMPTY_PATH) < 0)
			return gerr_set(err, errno, "mount /proc/%s read-only", name);
	}
	return 0;
}

static int do_symlink(struct exec_state *st, const struct op *op, const char *dst, struct gerr *err)
{
	const char *base;
	int owned;
	int pfd = root_parent_cached(st->rootfd, dst, &base, &st->dirs, &owned, err);
	if (pfd < 0)
		return -1;
	int r = 0;
	if (symlinkat(op->src, pfd, base) == 0)
		goto out;
	if (errno != EEXIST) {
		r = gerr_set(err, errno, "symlink %s", dst);
		goto out;
	}
	struct stat s;
	if (fstatat(pfd, base, &s, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(s.st_mode)) {
		if (unlinkat(pfd, base, 0) < 0 || symlinkat(op->src, pfd, base) < 0)
			r = gerr_set(err, errno, "replace symlink %s", dst);
		goto out;
	}
	warnx_("%s exists in the image and is not a symlink; left as it is", dst);
out:
	if (owned)
		close(pfd);
	return r;
}

static int do_file(struct exec_state *st, const struct op *op, const char *dst, struct gerr *err)
{
	const char *base;
	struct stat s;
	_cleanup_fd_ int pfd = root_parent(st->rootfd, dst, &base, err);
	if (pfd < 0)
		return -1;
	if ((op->flags & OPF_REPLACE) && fstatat(pfd, base, &s, AT_SYMLINK_NOFOLLOW) == 0 &&
	    S_ISLNK(s.st_mode) && unlinkat(pfd, base, 0) < 0)
		return gerr_set(err, errno, "replace symlink %s", dst);
	/* O_NONBLOCK: a FIFO planted at dst must not hang the launch. */
	_cleanup_fd_ int fd = openat(pfd, base, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK,
				     op->mode ? op->mode : 0644);
	if (fd < 0)
		return gerr_set(err, errno, "write %s", dst);
	if (fstat(fd, &s) < 0 || !S_ISREG(s.st_mode))
		return gerr_set(err, 0, "write %s: not a regular file in the image", dst);
	if (write_all(fd, op->data, op->len) < 0)
		return gerr_set(err, errno, "write %s", dst);
	return 0;
}

static int lo_up(struct gerr *err)
{
	_cleanup_fd_ int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	struct ifreq ifr = {0};
	if (s < 0)
		return gerr_set(err, errno, "socket for lo");
	snprintf(ifr.ifr_name, sizeof ifr.ifr_name, "lo");
	if (ioctl(s, SIOCGIFFLAGS, &ifr) < 0)
		return gerr_set(err, errno, "get flags of lo");
	ifr.ifr_flags |= IFF_UP | IFF_RUNNING;
	if (ioctl(s, SIOCSIFFLAGS, &ifr) < 0)
		return gerr_set(err, errno, "bring lo up");
	return 0;
}

static int do_pivot(struct exec_state *st, struct gerr *err)
{
	if (fchdir(st->rootfd) < 0)
		return gerr_set(err, errno, "chdir into the new root");
	/* pivot_root(".", ".") stacks the old root on top of the new one, so no
	 * put_old directory is needed in a possibly read-only image. */
	if (syscall(SYS_pivot_root, ".", ".") < 0) {
		gerr_set(err, errno, "pivot_root");
		return gerr_hint(err, "pivot_root fails on an initramfs root (rootfs); boot with a real root fs");
	}
	if (umount2(".", MNT_DETACH) < 0)
		return gerr_set(err, errno, "detach the old root");
	if (chdir("/") < 0)
		return gerr_set(err, errno, "chdir /");
	return 0;
}

static int do_ldconfig(struct exec_state *st, const struct op *op, struct gerr *err)
{
	const char *ldconfig = NULL;
	for (size_t i = 0; i < ldconfig_npaths && !ldconfig; i++) {
		struct stat s;
		if (stat(ldconfig_paths[i], &s) == 0 && S_ISREG(s.st_mode) && (s.st_mode & 0111))
			ldconfig = ldconfig_paths[i];
	}
	if (!ldconfig) {
		if (st->cfg->verbose)
			ns_trace("# the image has no ldconfig: skipped");
		return 0;
	}
	struct strv argv = {0};
	strv_add(&argv, xstrdup("ldconfig"));
	for (size_t i = 0; i < ldconfig_nargs; i++)
		strv_add(&argv, xstrdup(ldconfig_args[i]));
	if (op->data) {
		/* After the pivot "/" is the image: its compat directory, never
		 * a host path.  First on the command line = first in the cache
		 * for the same SONAME, which is the one the loader takes. */
		unsigned long host = strtoul(op->data, NULL, 10), compat = plan_compat_major(CUDA_COMPAT_DIR);
		if (compat > host)
			strv_add(&argv, xstrdup(CUDA_COMPAT_DIR));
		if (compat && st->cfg->verbose) {
			_cleanup_free_ char *fact = xasprintf(
				"# CUDA forward compatibility: " CUDA_COMPAT_DIR " has libcuda %lu, the driver is %s: "
				CUDA_COMPAT_VAR "=%s",
				compat, op->data, compat > host ? CUDA_COMPAT_DIR : "(empty)");
			ns_trace(fact);
		}
	}
	for (const char *s = op->src ? op->src : ""; *s;) {
		size_t n = strcspn(s, ":");
		_cleanup_free_ char *dir = xstrndup(s, n);
		char buf[4096];
		strv_add(&argv, xstrdup(expand_libdir(st, dir, buf, sizeof buf)));
		s += n + (s[n] == ':');
	}

	pid_t pid = fork();
	if (pid == 0) {
		/* The image's own binary, run before the command and as root:
		 * it gets less than the command, not more.  No capabilities at
		 * all (a --user command may have none either), no_new_privs,
		 * the command's seccomp filter, an empty environment
		 * (CVE-2025-23266: no inherited LD_PRELOAD reaches it), no
		 * terminal (a session of its own, stdin from /dev/null: no
		 * TIOCSTI into the caller's shell) and no fd above 2.
		 * tests/escape.bats runs an image whose ldconfig is a probe. */
		struct gerr e = {0};
		int null = open("/dev/null", O_RDWR | O_CLOEXEC);
		if (null < 0 || dup2(null, 0) < 0)
			_exit(120);
		if (!st->cfg->verbose && (dup2(null, 1) < 0 || dup2(null, 2) < 0))
			_exit(120);
		char *envp[] = {NULL};
		if (setsid() < 0 || close_range(3, ~0U, CLOSE_RANGE_CLOEXEC) < 0)
			_exit(120);
		if (sec_drop_all_caps(&e) < 0 || sec_no_new_privs(&e) < 0 || sec_seccomp(&e) < 0)
			_exit(120);
		execve(ldconfig, argv.v, envp);
		_exit(121);
	}
	strv_free(&argv);
	if (pid < 0)
		return gerr_set(err, errno, "fork for ldconfig");
	int status;
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return gerr_set(err, errno, "wait for ldconfig");
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		warnx_("%s in the image failed (status %d); libraries are still injected", ldconfig,
		       WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
	return 0;
}

static int run_op(struct exec_state *st, struct op *op, struct gerr *err)
{
	char buf[4096];
	const char *dst = op->dst ? expand_libdir(st, op->dst, buf, sizeof buf) : NULL;
	_cleanup_fd_ int target = -1;

	switch (op->kind) {
	case OP_ROOTFS:
		return do_rootfs(st, op, err);
	case OP_BIND:
		return do_bind(st, op, dst, err);
	case OP_TMPFS:
	case OP_PROC:
	case OP_SYSFS:
	case OP_DEVPTS:
		target = root_mount_target(st->rootfd, dst, 1, 0, NULL, err);
		if (target < 0 || mount_op(op, op_kinds[op->kind].fstype, target, dst, err) < 0)
			return -1;
		if (op->kind == OP_PROC) {
			_cleanup_fd_ int procfd = root_open(st->rootfd, dst, O_PATH | O_DIRECTORY, err);
			return procfd < 0 ? -1 : proc_readonly(procfd, err);
		}
		return 0;
	case OP_MKDIR:
		target = root_mkdir_p(st->rootfd, dst, op->mode ? op->mode : 0755, err);
		return target < 0 ? -1 : 0;
	case OP_SYMLINK:
		return do_symlink(st, op, dst, err);
	case OP_FILE:
		return do_file(st, op, dst, err);
	case OP_REMOUNT:
		target = root_open(st->rootfd, dst, O_PATH, err);
		if (target < 0)
			return -1;
		return set_attrs(target, op->flags, 0, dst, err);
	case OP_HOSTNAME:
		if (sethostname(op->src, strlen(op->src)) < 0)
			return gerr_set(err, errno, "sethostname %s", op->src);
		return 0;
	case OP_LOOPBACK:
		return lo_up(err);
	case OP_PIVOT:
		return do_pivot(st, err);
	case OP_LDCONFIG:
		return do_ldconfig(st, op, err);
	case OP_KIND_COUNT:
		break;
	}
	return gerr_set(err, EINVAL, "unknown plan op %d", (int)op->kind);
}

static int plan_run(struct exec_state *st, struct plan *p, struct gerr *err);

int plan_execute(struct exec_state *st, struct gerr *err)
{
	struct plan *p = st->cfg->plan;
	/* A tar image starts decompressing now, while the mounts before the
	 * unpack are made (the one that needs it is the scratch tmpfs). */
	for (size_t i = 0; i < p->n; i++) {
		const struct op *op = &p->v[i];
		if (op->kind == OP_ROOTFS && !(op->flags & (OPF_DIR | OPF_LAYERS))) {
			st->unpack = rootfs_unpack_start(st->cfg->image_fd, st->cfg->image, err);
			if (!st->unpack)
				return -1;
			break;
		}
	}
	int r = plan_run(st, p, err);
	rootfs_unpack_abandon(st->unpack); /* only left when the plan stopped before it */
	st->unpack = NULL;
	return r;
}

static int plan_run(struct exec_state *st, struct plan *p, struct gerr *err)
{
	if (st->cfg->verbose)
		ns_trace(NS_RSLAVE_LINE);
	/* Without this, in root mode every mount below would propagate to the
	 * host's shared mounts. */
	if (mount(NULL, "/", NULL, MS_REC | MS_SLAVE, NULL) < 0)
		return gerr_set(err, errno, "make / a slave mount");
	umask(022);
	if (preopen_sources(p, st->cfg->image_fd, err) < 0)
		return -1;
	struct sbuf line = {0};
	int r = 0;
	for (size_t i = 0; i < p->n && r == 0; i++) {
		const struct op *op = &p->v[i];
		if (st->cfg->verbose) {
			sbuf_reset(&line);
			op_describe(op, &line);
			ns_trace(line.s);
		}
		if (!(op->kind == OP_BIND && !(op->flags & OPF_DIR)) && op->kind != OP_SYMLINK)
			dir_cache_drop(&st->dirs);
		r = run_op(st, &p->v[i], err);
	}
	dir_cache_drop(&st->dirs);
	sbuf_free(&line);
	return r;
}
