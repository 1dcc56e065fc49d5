/* gpu/helper.c — the short-lived child processes that load one of the
 * driver's own libraries for a fact no file states: libcuda for the CUDA
 * version (cudaver.c), NVML for MIG UUIDs (nvmlmig.c).
 *
 * Loading a driver library runs its constructors, so the launcher itself
 * never maps one.  Like nvidia-container-cli's driver service, the work is
 * done in a child forked before any namespace exists, confined the same way
 * for both: it dies with its parent, has an empty environment and no fd of
 * ours but its answer pipe (and the one fd its caller hands it), optionally
 * chroots into the driver root (unprivileged, inside a user namespace of its
 * own that maps us to ourselves), runs as nobody when we are root, with
 * no_new_privs, and is killed when its deadline passes.
 *
 * Run as root, the library (and, chrooted, all the dynamic loader reads in
 * the driver root) must be root's alone before it is loaded: nobody in a
 * chroot is still code of someone else's run by us (docs/design.md, "Modes").
 *
 * The answer is a struct helper_status, then, when its status is 0, the
 * caller's own payload. */
#include "gpu_int.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/capability.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define NOBODY 65534

struct helper_status {
	int status; /* 0: the payload follows */
	char msg[200];
};

int helper_write(int out, const void *p, size_t n)
{
	while (n) {
		ssize_t k = write(out, p, n);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return -1;
		p = (const char *)p + k;
		n -= (size_t)k;
	}
	return 0;
}

void helper_fail(int out, const char *fmt, ...)
{
	struct helper_status s = {.status = 1};
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(s.msg, sizeof s.msg, fmt, ap);
	va_end(ap);
	/* Nothing to do about a failed write: the parent then reports that
	 * the helper died. */
	(void)helper_write(out, &s, sizeof s);
	_exit(0);
}

int helper_ok(int out)
{
	struct helper_status s = {0};
	return helper_write(out, &s, sizeof s);
}

/* Close every fd above stderr but a and b. */
static int close_others(int a, int b)
{
	unsigned lo = (unsigned)(a < b ? a : b), hi = (unsigned)(a < b ? b : a);
	if (lo > 3 && close_range(3, lo - 1, 0) < 0)
		return -1;
	if (hi > lo + 1 && close_range(lo + 1, hi - 1, 0) < 0)
		return -1;
	return close_range(hi + 1, ~0U, 0);
}

static int write_text(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	int r = helper_write(fd, text, strlen(text));
	return close(fd) < 0 ? -1 : r;
}

/* Unprivileged: a user namespace where we are ourselves, with the
 * capabilities chroot needs over it. */
static int own_userns(void)
{
	char map[64];
	uid_t uid = geteuid();
	gid_t gid = getegid();
	if (unshare(CLONE_NEWUSER) < 0)
		return -1;
	snprintf(map, sizeof map, "%u %u 1\n", (unsigned)uid, (unsigned)uid);
	if (write_text("/proc/self/uid_map", map) < 0 || write_text("/proc/self/setgroups", "deny") < 0)
		return -1;
	snprintf(map, sizeof map, "%u %u 1\n", (unsigned)gid, (unsigned)gid);
	return write_text("/proc/self/gid_map", map);
}

static int drop_caps(void)
{
	struct __user_cap_header_struct h = {.version = _LINUX_CAPABILITY_VERSION_3};
	struct __user_cap_data_struct d[2] = {{0}};
	return (int)syscall(SYS_capset, &h, d);
}

/* In the child: everything above, then body. */
static __attribute__((noreturn)) void confine_and_run(const struct helper_spec *sp, int out, pid_t parent)
{
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0)
		helper_fail(out, "prctl(PR_SET_PDEATHSIG): %s", strerror(errno));
	clearenv();
	/* Nothing of the launcher's (the image archive, pipes) for the library. */
	if (close_others(sp->keep_fd >= 0 ? sp->keep_fd : out, out) < 0)
		helper_fail(out, "close_range: %s", strerror(errno));
	int root = geteuid() == 0, userns = 0;
	if (sp->chroot_fd >= 0) {
		if (!root && own_userns() < 0)
			helper_fail(out, "cannot enter a user namespace to chroot: %s", strerror(errno));
		userns = !root;
		/* The root by the fd discovery resolved everything in, not by name. */
		if (fchdir(sp->chroot_fd) < 0 || chroot(".") < 0 || chdir("/") < 0)
			helper_fail(out, "chroot into the driver root: %s", strerror(errno));
	}
	/* As root, drop to nobody: the library runs with nothing worth
	 * stealing.  Dumpable again, so that /proc/self/fd stays ours after
	 * the uid change (the library may be reached through it). */
	if (root) {
		if (setgroups(0, NULL) < 0 || setgid(NOBODY) < 0 || setuid(NOBODY) < 0)
			helper_fail(out, "cannot drop privileges: %s", strerror(errno));
		if (prctl(PR_SET_DUMPABLE, 1) < 0)
			helper_fail(out, "prctl(PR_SET_DUMPABLE): %s", strerror(errno));
	} else if (userns && drop_caps() < 0) {
		helper_fail(out, "cannot drop capabilities: %s", strerror(errno));
	}
	/* A change of credentials (nobody, the user namespace) clears the
	 * parent-death signal: set it again, and stop if the parent is gone. */
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() != parent)
		helper_fail(out, "prctl(PR_SET_PDEATHSIG): the launcher is gone");
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		helper_fail(out, "prctl(PR_SET_NO_NEW_PRIVS): %s", strerror(errno));
	sp->body(sp->arg, out);
	_exit(0);
}

static long now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000L + ts.tv_nsec / 1000000L;
}

int helper_start(struct helper *h, const struct helper_spec *sp, struct gerr *err)
{
	int fds[2];
	h->pid = -1;
	h->fd = -1;
	h->what = sp->what;
	/* Loading a library runs it.  Run as root, it must be root's alone
	 * (docs/design.md, "Modes"), and, chrooted in the driver root, so must all the
	 * dynamic loader reads there, even though the child runs as nobody. */
	if (sp->chroot_fd >= 0 ? drv_trust_loader(sp->drv, "driver library", sp->lib, err)
			       : drv_trust(sp->drv, "driver library", sp->lib, err))
		return -1;
	if (pipe2(fds, O_CLOEXEC) < 0)
		return gerr_set(err, errno, "%s: pipe", sp->what);
	fflush(NULL);
	pid_t self = getpid(), pid = fork();
	if (pid < 0) {
		int e = errno;
		close(fds[0]);
		close(fds[1]);
		return gerr_set(err, e, "%s: fork", sp->what);
	}
	if (pid == 0) {
		close(fds[0]);
		confine_and_run(sp, fds[1], self);
	}
	close(fds[1]);
	h->pid = pid;
	h->fd = fds[0];
	h->deadline = now_ms() + sp->timeout_ms;
	struct helper_status s = {0};
	if (helper_read(h, &s, sizeof s, err) < 0)
		return -1;
	if (s.status != 0) {
		s.msg[sizeof s.msg - 1] = '\0';
		return gerr_set(err, 0, "%s: %s", sp->what, s.msg);
	}
	return 0;
}

int helper_read(struct helper *h, void *buf, size_t n, struct gerr *err)
{
	size_t got = 0;
	while (got < n) {
		struct pollfd p = {.fd = h->fd, .events = POLLIN};
		long left = h->deadline - now_ms();
		int k = left > 0 ? poll(&p, 1, (int)left) : 0;
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return gerr_set(err, k < 0 ? errno : 0, "%s: the helper process %s", h->what,
					k < 0 ? "could not be polled" : "timed out");
		ssize_t r = read(h->fd, (char *)buf + got, n - got);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return gerr_set(err, 0, "%s: the helper process died", h->what);
		got += (size_t)r;
	}
	return 0;
}

int helper_start_lib(struct helper *h, struct gpu_driver *drv, const char *prefix, long timeout_ms,
		     void (*body)(void *arg, int out), char **host, struct gerr *err)
{
	struct strv libs = {0};
	h->pid = h->fd = -1;
	*host = NULL;
	if (drv_find_libs(drv, &prefix, 1, 64, &libs, NULL, err) < 0)
		return -1;
	if (!libs.n) {
		strv_free(&libs);
		return gerr_set(err, 0, "no %s.%s in %s/etc/ld.so.cache", prefix, drv->version, drv->rootpath);
	}
	*host = xstrdup(libs.v[0]);
	strv_free(&libs);
	/* drv_find_libs resolves inside the root: its paths start with it. */
	size_t rl = strlen(drv->rootpath);
	const char *inroot = strncmp(*host, drv->rootpath, rl) ? *host : *host + rl;
	struct helper_spec sp = {.what = *host,
				 .drv = drv,
				 .lib = inroot,
				 .timeout_ms = timeout_ms,
				 .keep_fd = drv->rootfd,
				 .chroot_fd = drv->rootfd,
				 .body = body,
				 .arg = (void *)inroot};
	return helper_start(h, &sp, err);
}

void helper_end(struct helper *h)
{
	if (h->fd >= 0)
		close(h->fd);
	if (h->pid > 0) {
		kill(h->pid, SIGKILL);
		while (waitpid(h->pid, NULL, 0) < 0 && errno == EINTR)
			;
	}
	h->fd = h->pid = -1;
}
