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
 *      through a path string the image could redirect.
 * Steps 2 and 3 are ns/rootbuild.c; the mount calls, ns/mountfd.c. */
#include "ns.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <net/if.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../rootfs/rootfs.h"
#include "exec.h"

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
	if (mountfd_set_attrs(op->fd, op->flags, (op->flags & OPF_REC) && !(op->flags & OPF_TOP), dst, err) < 0)
		return -1;
	if (mountfd_attach(op->fd, target, dst, err) < 0)
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
		if (mountfd_set_attrs(t, PROC_READONLY_FLAGS, 1, name, err) < 0)
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
	if (op->flags & OPF_OPTIONAL) {
		/* Only where the image has the directory: look, create nothing. */
		_cleanup_free_ char *dir = xstrdup(dst);
		*strrchr(dir, '/') = '\0';
		struct gerr ignored = {0};
		_cleanup_fd_ int dfd = root_open(st->rootfd, *dir ? dir : "/", O_PATH | O_DIRECTORY, &ignored);
		if (dfd < 0)
			return 0;
	}
	_cleanup_fd_ int pfd = root_parent(st->rootfd, dst, &base, err);
	if (pfd < 0)
		return -1;
	if ((op->flags & OPF_REPLACE) && fstatat(pfd, base, &s, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(s.st_mode) &&
	    unlinkat(pfd, base, 0) < 0)
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

int exec_user(struct exec_state *st, struct gerr *err)
{
	if (st->user_known)
		return 0;
	if (ns_user_lookup(st->cfg, st->rootfd, st->rootfd, &st->user, &st->home, err) < 0)
		return -1;
	st->user_known = 1;
	return 0;
}

/* ldconfig's credentials: the command's ids and groups (as ns/command.c
 * sets them on P2), and no capability at all.  With one id mapped it keeps
 * that one id, which is what the command's nested --user namespace maps
 * its ids onto: the same owner of every file, without capabilities. */
static int ldconfig_become(const struct run_config *cfg, const struct ns_user *u, struct gerr *err)
{
	uid_t uid;
	gid_t gid;
	ns_ldconfig_ids(cfg, u, &uid, &gid);
	if (ns_takes_groups(cfg, u->uid, u->gid)) {
		gid_t list[1 + USER_GROUPS_MAX];
		size_t n = u->ngroups < USER_GROUPS_MAX ? u->ngroups : USER_GROUPS_MAX;
		list[0] = u->gid;
		memcpy(list + 1, u->groups, n * sizeof *list);
		if (setgroups(1 + n, list) < 0)
			return gerr_set(err, errno, "set the groups of user %u:%u", (unsigned)u->uid, (unsigned)u->gid);
	}
	if (gid && setresgid(gid, gid, gid) < 0)
		return gerr_set(err, errno, "switch to gid %u", (unsigned)gid);
	return sec_drop_all_caps(uid, err);
}

/* The image's own binary, run before the command: it gets no more than
 * the command, and less where it can.  The command's ids and groups
 * (ldconfig_become), no capabilities at all (a --user command may have
 * none either), no_new_privs, the command's seccomp filter, an empty
 * environment (CVE-2025-23266: no inherited LD_PRELOAD reaches it), no
 * terminal (a session of its own, stdin from /dev/null: no TIOCSTI into
 * the caller's shell) and no fd above 2.  It is pid 1 of a pid namespace
 * of its own, nested in the container's: when it exits the kernel kills
 * whatever it started there (a daemon, a double fork: no orphan reaches
 * our init), and from in there neither P1 nor the command has a pid it
 * could name.  An intermediate process makes that namespace (a fork, then
 * unshare(CLONE_NEWPID), then a fork: what `unshare --pid --fork` does in
 * the plan) and passes on ldconfig's exit status once all of it is gone.
 * tests/escape.bats runs an image whose ldconfig is a probe. */
static int ldconfig_run(struct exec_state *st, const char *path, char **argv, int *status, struct gerr *err)
{
	const struct run_config *cfg = st->cfg;
	pid_t mid = fork();
	if (mid < 0)
		return gerr_set(err, errno, "fork for ldconfig");
	if (mid == 0) {
		if (unshare(CLONE_NEWPID) < 0)
			_exit(122);
		pid_t pid = fork();
		if (pid < 0)
			_exit(122);
		if (pid > 0) {
			int ws;
			while (waitpid(pid, &ws, 0) < 0)
				if (errno != EINTR)
					_exit(122);
			_exit(WIFEXITED(ws) ? WEXITSTATUS(ws) : 128 + WTERMSIG(ws));
		}
		struct gerr e = {0};
		int null = open("/dev/null", O_RDWR | O_CLOEXEC);
		if (null < 0 || dup2(null, 0) < 0)
			_exit(120);
		if (!cfg->verbose && (dup2(null, 1) < 0 || dup2(null, 2) < 0))
			_exit(120);
		char *envp[] = {NULL};
		if (setsid() < 0 || close_range(3, ~0U, CLOSE_RANGE_CLOEXEC) < 0)
			_exit(120);
		if (ldconfig_become(cfg, &st->user, &e) < 0 || sec_no_new_privs(&e) < 0 || sec_seccomp(&e) < 0)
			_exit(120);
		execve(path, argv, envp);
		_exit(121);
	}
	while (waitpid(mid, status, 0) < 0)
		if (errno != EINTR)
			return gerr_set(err, errno, "wait for ldconfig");
	return 0;
}

/* The directory ldconfig writes its cache into (its -C): made for it in
 * the root with a name no image has (a random one), its own and 0700.
 * Not the image's /etc, which the command's user may not write, nor a
 * path that goes through anything of the image's: no symlink of the image
 * is followed to reach it, and nothing can be mounted there.  The plan
 * makes it with mktemp -d. */
static int scratch_make(struct exec_state *st, uid_t uid, gid_t gid, char *name, size_t cap, struct gerr *err)
{
	static const char chars[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
	for (int tries = 0;; tries++) {
		unsigned char rnd[6];
		if (getrandom(rnd, sizeof rnd, 0) != (ssize_t)sizeof rnd)
			return gerr_set(err, errno, "getrandom");
		size_t n = (size_t)snprintf(name, cap, "%s", LDCONFIG_SCRATCH);
		for (size_t i = 0; i < sizeof rnd && n + 1 < cap; i++)
			name[n++] = chars[rnd[i] % (sizeof chars - 1)];
		name[n] = '\0';
		if (mkdirat(st->rootfd, name, 0700) == 0)
			break;
		if (errno != EEXIST || tries == 100)
			return gerr_set(err, errno, "mkdir /%s in the container root", name);
	}
	int fd = openat(st->rootfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 || fchown(fd, uid, gid) < 0) {
		gerr_set(err, errno, "give /%s to %u:%u", name, (unsigned)uid, (unsigned)gid);
		if (fd >= 0)
			close(fd);
		unlinkat(st->rootfd, name, AT_REMOVEDIR);
		return -1;
	}
	return fd;
}

/* Its cache, put in place in the image's /etc as root's and 0644, the way
 * ldconfig itself does it: a file beside it, then rename(2), which
 * replaces a symlink there instead of following it.  What ldconfig left is
 * opened in the scratch directory's fd, not through a symlink, and taken
 * only as a regular file of ldconfig's user (no other file moved in there,
 * which that user could move but not read), of a cache's size; every
 * process of ldconfig's is gone by now, so none changes it meanwhile.
 * /etc must be the image's directory, not a symlink: the plan does this
 * step with the host's tools (ns/show.c), for which an image symlink would
 * lead out of the root, and gpurun does what the plan does. */
static int cache_in_place(struct exec_state *st, int dir, uid_t uid, struct gerr *err)
{
	static const char tmp[] = LDCONFIG_CACHE_NAME "~";
	_cleanup_fd_ int src = openat(dir, LDCONFIG_CACHE_NAME, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	struct stat s;
	if (src < 0 && errno == ENOENT)
		return 0; /* nothing written: an ldconfig that failed, or a stub (Alpine's) */
	if ((src < 0 && errno != ELOOP) || (src >= 0 && fstat(src, &s) < 0))
		return gerr_set(err, errno, "read the cache the image's ldconfig wrote");
	if (src < 0 || !S_ISREG(s.st_mode) || s.st_uid != uid || s.st_size > LDCONFIG_CACHE_MAX)
		return gerr_set(err, 0,
				"the cache the image's ldconfig wrote is not a regular file of uid %u of at most %ld "
				"bytes; not put in place",
				(unsigned)uid, LDCONFIG_CACHE_MAX);
	_cleanup_fd_ int etc = open_beneath_nofollow(st->rootfd, LDCONFIG_CACHE_DIR + 1, O_PATH | O_DIRECTORY);
	if (etc < 0)
		return gerr_set(err, errno, "put the cache the image's ldconfig wrote in %s", LDCONFIG_CACHE_DIR);
	if (unlinkat(etc, tmp, 0) < 0 && errno != ENOENT)
		return gerr_set(err, errno, "remove %s/%s", LDCONFIG_CACHE_DIR, tmp);
	_cleanup_fd_ int dst = openat(etc, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (dst < 0)
		return gerr_set(err, errno, "write %s/%s", LDCONFIG_CACHE_DIR, tmp);
	char buf[65536];
	ssize_t n;
	while ((n = read(src, buf, sizeof buf)) != 0) {
		if ((n < 0 && errno != EINTR) || (n > 0 && write_all(dst, buf, (size_t)n) < 0)) {
			gerr_set(err, errno, "write %s/%s", LDCONFIG_CACHE_DIR, tmp);
			unlinkat(etc, tmp, 0);
			return -1;
		}
	}
	if (renameat(etc, tmp, etc, LDCONFIG_CACHE_NAME) < 0) {
		gerr_set(err, errno, "rename %s/%s to %s", LDCONFIG_CACHE_DIR, tmp, LDCONFIG_CACHE_NAME);
		unlinkat(etc, tmp, 0);
		return -1;
	}
	return 0;
}

/* The scratch directory must still be the one made: ldconfig, where the
 * image gave its user the root directory, could have renamed it and put
 * another in its place. */
static int scratch_ours(struct exec_state *st, int dir, const char *name, struct gerr *err)
{
	struct stat a, b;
	if (fstat(dir, &a) < 0 || fstatat(st->rootfd, name, &b, AT_SYMLINK_NOFOLLOW) < 0 || a.st_dev != b.st_dev ||
	    a.st_ino != b.st_ino)
		return gerr_set(err, 0, "the image's ldconfig moved its directory /%s", name);
	return 0;
}

/* Gone before the command starts, holding no more than ldconfig's cache
 * and its temporary: nothing is removed recursively, since what ldconfig's
 * user moved in there may hold files that user could not remove. */
static int scratch_remove(struct exec_state *st, int dir, const char *name, struct gerr *err)
{
	static const char *const files[] = {LDCONFIG_CACHE_NAME, LDCONFIG_CACHE_NAME "~"};
	for (size_t i = 0; i < COUNT_OF(files); i++)
		if (unlinkat(dir, files[i], 0) < 0 && errno != ENOENT)
			return gerr_set(err, errno, "remove /%s/%s", name, files[i]);
	if (unlinkat(st->rootfd, name, AT_REMOVEDIR) < 0)
		return gerr_set(err, errno, "remove the image's ldconfig's directory /%s", name);
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
	if (exec_user(st, err) < 0)
		return -1;
	uid_t uid;
	gid_t gid;
	ns_ldconfig_ids(st->cfg, &st->user, &uid, &gid);
	char name[64];
	struct gerr e = {0};
	_cleanup_fd_ int dir = scratch_make(st, uid, gid, name, sizeof name, &e);
	if (dir < 0) {
		warnx_("%s; the image's ldconfig is not run, libraries are still injected", e.msg);
		return 0;
	}
	struct strv argv = {0};
	strv_add(&argv, xstrdup("ldconfig"));
	for (size_t i = 0; i < ldconfig_nargs; i++)
		strv_add(&argv, xstrdup(ldconfig_args[i]));
	strv_add(&argv, xasprintf("/%s/%s", name, LDCONFIG_CACHE_NAME));
	if (op->data) {
		/* After the pivot "/" is the image: its compat directory, never
		 * a host path.  First on the command line = first in the cache
		 * for the same SONAME, which is the one the loader takes. */
		unsigned long host = strtoul(op->data, NULL, 10), compat = plan_compat_major(CUDA_COMPAT_DIR);
		if (compat > host)
			strv_add(&argv, xstrdup(CUDA_COMPAT_DIR));
		if (compat && st->cfg->verbose) {
			_cleanup_free_ char *fact =
				xasprintf("# CUDA forward compatibility: " CUDA_COMPAT_DIR
					  " has libcuda %lu, the driver is %s: " CUDA_COMPAT_VAR "=%s",
					  compat, op->data, compat > host ? CUDA_COMPAT_DIR : "(empty)");
			ns_trace(fact);
		}
	}
	for (const char *s = op->src ? op->src : ""; *s;) {
		size_t n = strcspn(s, ":");
		_cleanup_free_ char *d = xstrndup(s, n);
		char buf[4096];
		strv_add(&argv, xstrdup(image_expand_libdir(st, d, buf, sizeof buf)));
		s += n + (s[n] == ':');
	}

	int status = 0, r = ldconfig_run(st, ldconfig, argv.v, &status, err);
	strv_free(&argv);
	if (r < 0)
		return -1;
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		warnx_("%s in the image failed (status %d); libraries are still injected", ldconfig,
		       WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
	if (scratch_ours(st, dir, name, err) < 0)
		return -1;
	if (cache_in_place(st, dir, uid, &e) < 0)
		warnx_("%s; libraries are still injected", e.msg);
	return scratch_remove(st, dir, name, err);
}

static int run_op(struct exec_state *st, struct op *op, struct gerr *err)
{
	char buf[4096];
	const char *dst = op->dst ? image_expand_libdir(st, op->dst, buf, sizeof buf) : NULL;
	_cleanup_fd_ int target = -1;

	switch (op->kind) {
	case OP_ROOTFS: return rootbuild_rootfs(st, op, err);
	case OP_BIND: return do_bind(st, op, dst, err);
	case OP_TMPFS:
	case OP_PROC:
	case OP_SYSFS:
	case OP_DEVPTS:
		target = root_mount_target(st->rootfd, dst, 1, 0, NULL, err);
		if (target < 0 || mountfd_op(op, op_kinds[op->kind].fstype, target, dst, err) < 0)
			return -1;
		return 0;
	case OP_PROC_RO:
		target = root_open(st->rootfd, dst, O_PATH | O_DIRECTORY, err);
		return target < 0 ? -1 : proc_readonly(target, err);
	case OP_MKDIR:
		target = root_mkdir_p(st->rootfd, dst, op->mode ? op->mode : 0755, err);
		return target < 0 ? -1 : 0;
	case OP_SYMLINK: return do_symlink(st, op, dst, err);
	case OP_FILE: return do_file(st, op, dst, err);
	case OP_REMOUNT:
		target = root_open(st->rootfd, dst, O_PATH, err);
		if (target < 0)
			return -1;
		return mountfd_set_attrs(target, op->flags, !!(op->flags & OPF_BELOW), dst, err);
	case OP_HOSTNAME:
		if (sethostname(op->src, strlen(op->src)) < 0)
			return gerr_set(err, errno, "sethostname %s", op->src);
		return 0;
	case OP_LOOPBACK: return lo_up(err);
	case OP_PIVOT: return do_pivot(st, err);
	case OP_LDCONFIG: return do_ldconfig(st, op, err);
	case OP_KIND_COUNT: break;
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
	/* Without this, in root mode every mount below would propagate to the
	 * host's shared mounts. */
	if (mount(NULL, "/", NULL, MS_REC | MS_SLAVE, NULL) < 0)
		return gerr_set(err, errno, "make / a slave mount");
	umask(022);
	if (st->cfg->verbose) { /* the host's mounts, before the scratch covers /tmp */
		ns_capture_mounts(p);
		ns_view(st->cfg, &st->view);
		ns_view_upper(st->cfg);
	}
	if (rootbuild_preopen_sources(p, st->cfg->image_fd, err) < 0)
		return -1;
	struct sbuf line = {0};
	int r = 0;
	for (size_t i = 0; i < p->n && r == 0; i++) {
		const struct op *op = &p->v[i];
		if ((r = step_at(st, i, err)) < 0)
			break;
		if (st->cfg->verbose) {
			/* The pivot's lines name ldconfig's ids: the root is built. */
			if (op->kind == OP_PIVOT && (r = exec_user(st, err)) < 0)
				break;
			sbuf_reset(&line);
			ns_describe_op(st->cfg, &st->view, i, &st->user, &line);
			if (line.len)
				ns_trace(line.s);
		}
		if (!(op->kind == OP_BIND && !(op->flags & OPF_DIR)) && op->kind != OP_SYMLINK)
			path_dir_cache_drop(&st->dirs);
		r = run_op(st, &p->v[i], err);
	}
	path_dir_cache_drop(&st->dirs);
	if (r == 0)
		r = step_at(st, p->n, err);
	sbuf_free(&line);
	return r;
}
