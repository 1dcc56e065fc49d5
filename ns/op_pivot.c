/* ns/op_pivot.c — the end of the root's building: pivot_root into it,
 * then the image's own ldconfig (GPU injection's last step), as P1 does
 * each and as the plan prints them: a helper left in the host's root
 * (ns/plan.sh's after_pivot) does there what P1 does after the pivot. */
#include "ophome.h"
#include "steps.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

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

static int run_pivot(struct exec_state *st, struct op *op, const char *dst, struct gerr *err)
{
	(void)op;
	(void)dst;
	return do_pivot(st, err);
}

/* The op alone; the plan prints the pivot with what surrounds it
 * (ns_describe_pivot). */
static void describe_pivot_op(const struct plan_view *v, const struct op *op, struct sbuf *b)
{
	(void)v;
	(void)op;
	sbuf_puts(b, "pivot_root . .\numount -l .   # detach the old root: the host is now unreachable");
}

const struct op_home op_home_pivot = {run_pivot, describe_pivot_op, 0};

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
		if (ldconfig_become(cfg, &ns_launch(cfg)->user, &e) < 0 || sec_no_new_privs(&e) < 0 ||
		    sec_seccomp(&e) < 0)
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
	_cleanup_fd_ int etc = open_beneath_nofollow(st->rootfd, &LDCONFIG_CACHE_DIR[1], O_PATH | O_DIRECTORY);
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
	ns_ldconfig_ids(st->cfg, &ns_launch(st->cfg)->user, &uid, &gid);
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

static int run_ldconfig(struct exec_state *st, struct op *op, const char *dst, struct gerr *err)
{
	(void)dst;
	return do_ldconfig(st, op, err);
}

/* Its directories; the plan prints the step with the pivot's
 * (ns_describe_pivot), and no comment of its own. */
static void describe_ldconfig(const struct plan_view *v, const struct op *op, struct sbuf *b)
{
	for (const char *s = op->src; s && *s;) {
		size_t n = strcspn(s, ":");
		_cleanup_free_ char *dir = xstrndup(s, n);
		sbuf_puts(b, b->len ? " " : "");
		plan_libdir_word(v, b, dir);
		s += n + (s[n] == ':');
	}
}

const struct op_home op_home_ldconfig = {run_ldconfig, describe_ldconfig, 1};

/* The pivot and what follows it, up to the command.  A helper that
 * pivot_root leaves in the host's root (its rbind) takes over: it starts
 * the image's ldconfig in the old root, which the pivot moves into the
 * new one (exec.c's do_ldconfig: its own pid namespace, the command's ids
 * and groups, no capability), detaches the old root, lets ldconfig run
 * with its cache in a directory of its own, puts the cache in place
 * (scratch_ours, cache_in_place, scratch_remove), remounts the root
 * read-only for --read-only, and lets the command go.  Which ldconfig,
 * and the CUDA compat directory, the plan finds after the pivot with
 * sh's builtins, which resolve the image's symlinks in the new root as
 * gpurun does. */
void ns_describe_pivot(const struct run_config *cfg, const struct plan_view *v, size_t i, const struct ns_user *user,
		       struct sbuf *b)
{
	const struct op *ld = NULL;
	unsigned ro = 0;
	for (size_t j = i + 1; j < cfg->plan->n; j++) {
		if (cfg->plan->v[j].kind == OP_LDCONFIG)
			ld = &cfg->plan->v[j];
		if (cfg->plan->v[j].kind == OP_REMOUNT)
			ro = cfg->plan->v[j].flags;
	}
	unsigned root_flags = plan_rootfs(cfg->plan)->flags & OPF_MOUNT_MASK;
	struct sbuf owner = {0}, ids = {0}, fl = {0};
	if (ld) {
		uid_t uid;
		gid_t gid;
		ns_ldconfig_ids(cfg, user, &uid, &gid);
		sbuf_printf(&owner, "%u:%u", (unsigned)uid, (unsigned)gid);
		struct ns_user ld_user = *user;
		ld_user.uid = uid;
		ld_user.gid = gid;
		ns_setpriv_ids(cfg->fake_ids, ns_takes_groups(cfg, uid, gid), &ld_user, &ids);
	}
	if (ro)
		op_flags_add(&fl, ro | root_flags);
	sbuf_puts(b, "after_pivot ");
	sbuf_shquote(b, owner.len ? owner.s : "");
	sbuf_puts(b, " ");
	sbuf_shquote(b, ids.len ? ids.s + 1 : "");
	sbuf_puts(b, " ");
	sbuf_shquote(b, fl.len ? fl.s : "");
	sbuf_free(&owner);
	sbuf_free(&ids);
	sbuf_free(&fl);
	if (ld) {
		struct sbuf dirs = {0};
		describe_ldconfig(v, ld, &dirs);
		if (dirs.len)
			sbuf_printf(b, " %s", dirs.s);
		sbuf_free(&dirs);
	}
	sbuf_printf(b, "%s\n", ld ? "   # the image's ldconfig, with no capability" : "");
	sbuf_puts(b, "( exec 5>\"$S/piv\"; pivot_root . .; ");
	if (ld && ld->data)
		sbuf_printf(b, "cuda_compat %lu", strtoul(ld->data, NULL, 10));
	else
		sbuf_puts(b, ld ? "image_ldconfig" : "echo");
	sbuf_puts(b, " >&5 ) &");
}
