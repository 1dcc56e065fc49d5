/* ns/rootbuild.c — steps 2 and 3 of a plan (ns/exec.c): the bind sources
 * and cached layers opened as detached clones while the host is still in
 * view, then the container's root built on a scratch tmpfs of the new
 * mount namespace (the overlay of a directory image or of the cached
 * layers, or the unpacked archive), and the image's $LIBDIR and $LIBDIR32. */
#include "ns.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <sys/sysmacros.h>

#include "../rootfs/rootfs.h"
#include "exec.h"
#include "ophome.h"

/* $LIBDIR of the tree at dirfd (the image's root, or its lower layer). */
const char *image_libdir(int dirfd)
{
	_cleanup_fd_ int fd = open_in_root(dirfd, LIBDIR_MARKER, O_PATH);
	return plan_libdir_for(fd >= 0);
}

/* $LIBDIR32 of the tree at dirfd (see base/plan/plan.h for the rule). */
const char *image_libdir32(int dirfd)
{
	struct stat a, b;
	_cleanup_fd_ int marker = open_in_root(dirfd, LIBDIR_MARKER, O_PATH);
	_cleanup_fd_ int lib32 = open_in_root(dirfd, LIBDIR32_OTHER, O_PATH | O_DIRECTORY);
	_cleanup_fd_ int lib = open_in_root(dirfd, LIBDIR32_PLAIN, O_PATH | O_DIRECTORY);
	_cleanup_fd_ int lib64 = open_in_root(dirfd, LIBDIR_OTHER, O_PATH | O_DIRECTORY);
	int same = lib >= 0 && lib64 >= 0 && fstat(lib, &a) == 0 && fstat(lib64, &b) == 0 && a.st_dev == b.st_dev &&
		   a.st_ino == b.st_ino;
	return plan_libdir32_for(marker >= 0, lib32 >= 0, same);
}

const char *image_expand_libdir(struct exec_state *st, const char *path, char *buf, size_t cap)
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
		if (mountfd_set_attrs(fd, OPF_RO, 0, op->layers.v[i], err) < 0)
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

int rootbuild_preopen_sources(struct plan *p, int image_fd, struct gerr *err)
{
	for (size_t i = 0; i < p->n; i++) {
		struct op *op = &p->v[i];
		if (op->kind == OP_ROOTFS && (op->flags & OPF_LAYERS)) {
			/* --no-cache: the layers do not exist yet. */
			if (!(op->flags & OPF_IMPORT) && preopen_layers(op, err) < 0)
				return -1;
			/* --name: the kept container's directory, its upper/ and
			 * work/ below it (one mount, as overlayfs wants). */
			if (op->kept) {
				op->fd = open_tree(AT_FDCWD, op->kept, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC);
				if (op->fd < 0)
					return gerr_set(err, errno, "kept container %s", op->kept);
				if (mountfd_set_attrs(op->fd, OPF_NOSUID | OPF_NODEV, 0, op->kept, err) < 0)
					return -1;
			}
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
			return gerr_set(err, 0, "%s is not the character device %u:%u", op->src, major(op->rdev),
					minor(op->rdev));
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
 * create.  Best effort: a failure here shows up, with its path, later.
 * rootbuild_upper_mirror_list says which, "MODE PATH" each, parents first: the
 * printed plan makes the same (ns/show.c). */
static void mirror_list_one(int lowerfd, const char *dir, struct strv *out)
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
	/* The resolved path, from the kernel's own record of the fds. */
	char link[64], real[4096], base[4096];
	snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
	ssize_t n = readlink(link, real, sizeof real - 1);
	close(fd);
	snprintf(link, sizeof link, "/proc/self/fd/%d", lowerfd);
	ssize_t bl = readlink(link, base, sizeof base - 1);
	if (n < 0 || bl < 0)
		return;
	real[n] = '\0';
	base[bl] = '\0';
	size_t pl = !strcmp(base, "/") ? 0 : (size_t)bl;
	if ((size_t)n < pl || strncmp(real, base, pl) != 0)
		return;
	_cleanup_fd_ int lcur = dup(lowerfd);
	struct sbuf path = {0};
	for (char *save = NULL, *c = strtok_r(real + pl, "/", &save); c && lcur >= 0; c = strtok_r(NULL, "/", &save)) {
		struct stat ls;
		if (fstatat(lcur, c, &ls, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISDIR(ls.st_mode))
			break;
		if (path.len)
			sbuf_puts(&path, "/");
		sbuf_puts(&path, c);
		/* mkdirat(2) under the run's umask (022) makes this mode. */
		_cleanup_free_ char *entry = xasprintf("%04o %s", (unsigned)(ls.st_mode & 07777 & ~022u), path.s);
		int seen = 0;
		for (size_t j = 0; j < out->n && !seen; j++)
			seen = !strcmp(out->v[j] + 5, path.s);
		if (!seen)
			strv_add(out, xstrdup(entry));
		int nl = openat(lcur, c, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		close(lcur);
		lcur = nl;
	}
	sbuf_free(&path);
}

void rootbuild_upper_mirror_list(const struct plan *p, int lowerfd, struct strv *out)
{
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
			mirror_list_one(lowerfd, rel, out);
			strv_add(&done, xstrdup(rel));
		}
	}
	strv_free(&done);
}

static void prepare_upper(const struct plan *p)
{
	_cleanup_fd_ int lowerfd = open(PLAN_LOWER, O_PATH | O_DIRECTORY | O_CLOEXEC);
	_cleanup_fd_ int upperfd = open(PLAN_UPPER, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (lowerfd < 0 || upperfd < 0)
		return;
	struct strv dirs = {0};
	rootbuild_upper_mirror_list(p, lowerfd, &dirs);
	/* In order, parents first, in a tmpfs only this run has written to. */
	for (size_t i = 0; i < dirs.n; i++)
		if (mkdirat(upperfd, dirs.v[i] + 5, (mode_t)strtoul(dirs.v[i], NULL, 8)) < 0 && errno != EEXIST)
			break;
	strv_free(&dirs);
}

static int by_path(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The mount points under the directory image bound at PLAN_LOWER, as the
 * image's paths, the first few in order ("/dev, /dev/pts, /proc and 3
 * more"), from this mount namespace's mountinfo; how many there are. */
static size_t lower_submounts(struct sbuf *out)
{
	FILE *f = fopen("/proc/self/mountinfo", "re");
	char line[8192];
	size_t pl = strlen(PLAN_LOWER);
	struct strv subs = {0};
	while (f && fgets(line, sizeof line, f)) {
		char *save = NULL, *t = strtok_r(line, " ", &save);
		for (int i = 0; t && i < 4; i++)
			t = strtok_r(NULL, " ", &save); /* the fifth field: the mount point */
		if (!t || strncmp(t, PLAN_LOWER "/", pl + 1))
			continue;
		int seen = 0; /* mounts stacked on one point are one point */
		for (size_t i = 0; i < subs.n && !seen; i++)
			seen = !strcmp(subs.v[i], t + pl);
		if (!seen)
			strv_add(&subs, xstrdup(t + pl));
	}
	if (f)
		fclose(f);
	if (subs.n)
		qsort(subs.v, subs.n, sizeof *subs.v, by_path);
	for (size_t i = 0; i < subs.n && i < 3; i++) {
		_cleanup_free_ char *shown = xvisible(subs.v[i]);
		sbuf_printf(out, "%s%s", i ? ", " : "", shown);
	}
	if (subs.n > 3)
		sbuf_printf(out, " and %zu more", subs.n - 3);
	size_t n = subs.n;
	strv_free(&subs);
	return n;
}

/* The root: a scratch tmpfs that hides the host's /tmp in this namespace
 * only, and in it either an overlay of the directory image (a tmpfs upper
 * layer takes the run's writes) or the unpacked archive bound onto itself,
 * since pivot_root needs the new root to be a mount point. */
int rootbuild_rootfs(struct exec_state *st, struct op *op, struct gerr *err)
{
	const struct run_config *cfg = st->cfg;
	{
		_cleanup_fd_ int tmp = open(PLAN_SCRATCH, O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (tmp < 0)
			return gerr_set(err, errno, "open %s", PLAN_SCRATCH);
		if (mountfd_fresh("tmpfs", "gpurun", PLAN_SCRATCH_DATA, PLAN_SCRATCH_FLAGS, tmp,
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
		c.keep_owner = cfg->keep_owner; /* root of a one-id user namespace cannot chown */
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
		static const char *const kept_dirs[] = {PLAN_LAYERS, PLAN_KEPT};
		size_t nd = op->kept ? COUNT_OF(kept_dirs) : COUNT_OF(dirs);
		for (size_t i = 0; i < nd; i++)
			if (mkdir(op->kept ? kept_dirs[i] : dirs[i], 0755) < 0)
				return gerr_set(err, errno, "mkdir %s", op->kept ? kept_dirs[i] : dirs[i]);
		if (op->kept) {
			if (move_mount(op->fd, "", AT_FDCWD, PLAN_KEPT, MOVE_MOUNT_F_EMPTY_PATH) < 0)
				return gerr_set(err, errno, "bind kept container %s", op->kept);
			close(op->fd);
			op->fd = -1;
		}
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
		if (r < 0 && op->kept) {
			gerr_set(err, errno, "mount the overlay of the layers of %s over the kept container %s",
				 op->src, op->kept);
			return gerr_hint(err, "its directory must be on a file system that keeps overlayfs's extended "
					      "attributes (user.* unprivileged: ext4, xfs, btrfs, tmpfs since Linux "
					      "6.6); set GPURUN_CACHE to one");
		}
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
		if (mountfd_op(op, "overlay", root, "the overlay of the image", err) < 0) {
			/* The mounts under a tree a user namespace inherited are
			 * locked to it, and overlayfs will not take a lower layer
			 * with locked mounts under it (the kernel logs "failed to
			 * clone lowerpath"): / always has some. */
			struct sbuf subs = {0};
			if (cfg->unprivileged && err->errnum == EINVAL && lower_submounts(&subs)) {
				gerr_set(err, 0,
					 "image %s: unprivileged, overlayfs cannot stack on a directory with other "
					 "file systems mounted under it (%s: this user namespace may not look past "
					 "them); run as root, or give an image archive or a directory with nothing "
					 "mounted under it",
					 op->src, subs.s);
				sbuf_free(&subs);
				return -1;
			}
			sbuf_free(&subs);
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
		if (mountfd_set_attrs(tree, op->flags, 0, "the root", err) < 0)
			return -1;
		if (move_mount(tree, "", AT_FDCWD, PLAN_ROOT, MOVE_MOUNT_F_EMPTY_PATH) < 0)
			return gerr_set(err, errno, "bind %s onto itself", PLAN_ROOT);
	}
	st->rootfd = open(PLAN_ROOT, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (st->rootfd < 0)
		return gerr_set(err, errno, "open %s", PLAN_ROOT);
	return 0;
}

/* Mount data naming scratch paths, in double quotes with "$S". */
static void scratch_opts(struct sbuf *b, unsigned flags, const char *data)
{
	struct sbuf o = {0}, d = {0};
	plan_mount_opts(&o, flags, data);
	for (const char *s = o.s ? o.s : ""; *s;) {
		const char *hit = strstr(s, PLAN_SCRATCH "/");
		if (!hit) {
			sbuf_puts(&d, s);
			break;
		}
		sbuf_add(&d, s, (size_t)(hit - s));
		sbuf_puts(&d, "$S/");
		s = hit + strlen(PLAN_SCRATCH "/");
	}
	/* " -o LIST": the list quoted, as it names "$S". */
	if (d.len > 4) {
		sbuf_puts(b, " -o \"");
		sbuf_puts(b, d.s + 4);
		sbuf_puts(b, "\"");
	}
	sbuf_free(&o);
	sbuf_free(&d);
}

/* The overlay of the layers or the directory image onto "$S/root". */
static void overlay_line(const struct op *op, struct sbuf *b)
{
	struct sbuf data = {0};
	sbuf_puts(b, "\nmount -t overlay");
	op_mount_data(op, &data);
	scratch_opts(b, op->flags, data.s);
	sbuf_free(&data);
	sbuf_puts(b, " overlay \"$S/root\"");
}

static void describe_rootfs(const struct plan_view *v, const struct op *op, struct sbuf *b)
{
	(void)v;
	sbuf_puts(b, "mount -t tmpfs");
	plan_mount_opts(b, PLAN_SCRATCH_FLAGS, PLAN_SCRATCH_DATA);
	sbuf_puts(b, " gpurun \"$S\"\n");
	sbuf_puts(b, "mkdir \"$S/host\"; mount --rbind / \"$S/host\"   # the host's tools, for after pivot_root\n");
	if (op->flags & OPF_LAYERS) {
		/* The cache's directory of layers, named once when they share it. */
		size_t dl = 0;
		const char *slash = op->layers.n ? strrchr(op->layers.v[0], '/') : NULL;
		if (slash && slash != op->layers.v[0])
			dl = (size_t)(slash - op->layers.v[0]);
		for (size_t i = 0; dl && i < op->layers.n; i++)
			if (strncmp(op->layers.v[i], op->layers.v[0], dl + 1) || strchr(op->layers.v[i] + dl + 1, '/'))
				dl = 0;
		if (dl) {
			_cleanup_free_ char *dir = xstrndup(op->layers.v[0], dl);
			sbuf_puts(b, "L=");
			sbuf_shquote(b, dir);
			sbuf_puts(b, "\n");
		}
		if (op->kept) {
			sbuf_puts(b, "mkdir \"$S/layers\" \"$S/kept\" \"$S/root\"; mount --bind");
			plan_mount_opts(b, OPF_NOSUID | OPF_NODEV, NULL);
			sbuf_puts(b, " ");
			sbuf_shquote(b, op->kept);
			sbuf_puts(b, " \"$S/kept\"   # the kept container: its upper/ and work/ take the writes");
		} else {
			sbuf_puts(b, "mkdir \"$S/layers\" \"$S/upper\" \"$S/work\" \"$S/root\"");
		}
		for (size_t i = 0; i < op->layers.n; i++) {
			sbuf_printf(b, "\nmkdir \"$S/layers/%zu\"; mount --bind", i);
			plan_mount_opts(b, OPF_RO, NULL);
			sbuf_puts(b, " ");
			if (dl) {
				sbuf_puts(b, "\"$L\"/");
				sbuf_shquote(b, op->layers.v[i] + dl + 1);
			} else {
				sbuf_shquote(b, op->layers.v[i]);
			}
			sbuf_printf(b, " \"$S/layers/%zu\"", i);
		}
		overlay_line(op, b);
	} else if (op->flags & OPF_DIR) {
		sbuf_puts(b, "mkdir \"$S/lower\" \"$S/upper\" \"$S/work\" \"$S/root\"; mount --rbind ");
		sbuf_shquote(b, op->src);
		sbuf_puts(b, " \"$S/lower\"");
		for (size_t i = 0; i < op->upper_dirs.n; i++) {
			sbuf_printf(b, "\nmkdir -m %.4s \"$S/upper\"/", op->upper_dirs.v[i]);
			sbuf_shquote(b, op->upper_dirs.v[i] + 5);
		}
		if (op->upper_dirs.n)
			sbuf_puts(b, "   # the image's directories the plan creates in, made ours in the upper layer");
		overlay_line(op, b);
	} else {
		/* As root, or root of the range's map, GNU tar keeps the owners
		 * and modes (setuid bits too) of the entries; with one id mapped
		 * it cannot, and neither does gpurun. */
		sbuf_puts(b, "mkdir \"$S/root\"; tar -C \"$S/root\" --exclude='dev/*'");
		sbuf_puts(b, (op->flags & OPF_KEEP_OWNER) ? " -xpf " : " --no-same-owner -xf ");
		sbuf_shquote(b, op->src);
		if (!(op->flags & OPF_KEEP_OWNER))
			sbuf_puts(b, "   # setuid and setgid bits are dropped");
		sbuf_puts(b, "\nmount --bind");
		plan_mount_opts(b, op->flags, NULL);
		sbuf_puts(b, " \"$S/root\" \"$S/root\"");
	}
	sbuf_puts(b, "\ncd \"$S/root\"");
}

static int run_rootfs(struct exec_state *st, struct op *op, const char *dst, struct gerr *err)
{
	(void)dst;
	return rootbuild_rootfs(st, op, err);
}

const struct op_home op_home_rootfs = {run_rootfs, describe_rootfs, 0};
