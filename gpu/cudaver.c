/* gpu/cudaver.c — the CUDA driver API version (for cuda>= requirements and
 * `gpurun info`), asked of the driver's own libcuda.
 *
 * It is the one fact no file states.  Loading a driver library runs its
 * constructors, so (like nvidia-container-cli's NVML helper) it happens
 * only in a short-lived child: forked before any namespace exists, with an
 * empty environment, no privileges when we have some to drop, killed with
 * its parent, and given a few seconds.  The child calls cuDriverGetVersion(),
 * which needs no GPU and no cuInit(), and writes the int to a pipe.  The
 * launcher itself never maps the driver. */
#include "internal.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define CHILD_TIMEOUT_MS 5000
#define NOBODY 65534

static const char *const libcuda[] = {"libcuda.so"};

/* The child's answer: status 0 and the version, or a message. */
struct answer {
	int status;
	int version;
	char msg[200];
};

static __attribute__((noreturn)) void reply(int fd, int status, int version, const char *msg)
{
	struct answer a = {.status = status, .version = version};
	snprintf(a.msg, sizeof a.msg, "%s", msg ? msg : "");
	/* Nothing to do about a failed write: the parent then reports that
	 * the helper died. */
	(void)!write(fd, &a, sizeof a);
	_exit(0);
}

typedef int (*get_version_fn)(int *);

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

static __attribute__((noreturn)) void child(const char *lib, int out, pid_t parent)
{
	char path[64];
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0)
		reply(out, 1, 0, "prctl(PR_SET_PDEATHSIG) failed");
	clearenv();
	int fd = open(lib, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		reply(out, 1, 0, strerror(errno));
	/* Nothing of the launcher's (the image archive, pipes) for the library. */
	if (close_others(fd, out) < 0)
		reply(out, 1, 0, "close_range failed");
	/* As root, drop to nobody first: the library runs with nothing worth
	 * stealing.  It is reached through the fd opened above, so a driver
	 * root in a private directory still works; dumpable again so that
	 * /proc/self/fd stays ours after the uid change. */
	if (geteuid() == 0) {
		if (setgroups(0, NULL) < 0 || setgid(NOBODY) < 0 || setuid(NOBODY) < 0)
			reply(out, 1, 0, "cannot drop privileges");
		if (prctl(PR_SET_DUMPABLE, 1) < 0)
			reply(out, 1, 0, "prctl(PR_SET_DUMPABLE) failed");
		/* The uid change cleared the parent-death signal. */
		if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() != parent)
			reply(out, 1, 0, "prctl(PR_SET_PDEATHSIG) failed");
	}
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		reply(out, 1, 0, "prctl(PR_SET_NO_NEW_PRIVS) failed");
	snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
	void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!h)
		reply(out, 1, 0, dlerror());
	get_version_fn get = (get_version_fn)dlsym(h, "cuDriverGetVersion");
	if (!get)
		reply(out, 1, 0, "no cuDriverGetVersion in it");
	int v = 0, r = get(&v);
	if (r != 0)
		reply(out, 1, 0, "cuDriverGetVersion failed");
	reply(out, 0, v, NULL);
}

static long now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000L + ts.tv_nsec / 1000000L;
}

/* Read the answer with a deadline; the child is reaped either way. */
static int collect(pid_t pid, int in, struct answer *a, struct gerr *err, const char *lib)
{
	long deadline = now_ms() + CHILD_TIMEOUT_MS;
	size_t got = 0;
	int r = 0;
	while (got < sizeof *a) {
		struct pollfd p = {.fd = in, .events = POLLIN};
		long left = deadline - now_ms();
		int n = left > 0 ? poll(&p, 1, (int)left) : 0;
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			r = gerr_set(err, n < 0 ? errno : 0, "%s: cuDriverGetVersion %s", lib,
				     n < 0 ? "poll failed" : "timed out");
			break;
		}
		ssize_t k = read(in, (char *)a + got, sizeof *a - got);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0) {
			r = gerr_set(err, 0, "%s: the helper process died", lib);
			break;
		}
		got += (size_t)k;
	}
	kill(pid, SIGKILL);
	while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
		;
	return r;
}

int cuda_driver_version(struct gpu_driver *drv, char *out, size_t cap, struct gerr *err)
{
	struct strv libs = {0};
	if (drv_find_libs(drv, libcuda, 1, 64, &libs, NULL, err) < 0)
		return -1;
	if (libs.n == 0) {
		strv_free(&libs);
		return gerr_set(err, 0, "no libcuda.so.%s in %s/etc/ld.so.cache", drv->version,
				drv->rootpath);
	}
	int fds[2];
	if (pipe2(fds, O_CLOEXEC) < 0) {
		gerr_set(err, errno, "pipe");
		strv_free(&libs);
		return -1;
	}
	fflush(NULL);
	pid_t self = getpid(), pid = fork();
	if (pid < 0) {
		int e = errno;
		close(fds[0]);
		close(fds[1]);
		strv_free(&libs);
		return gerr_set(err, e, "fork");
	}
	if (pid == 0) {
		close(fds[0]);
		child(libs.v[0], fds[1], self);
	}
	close(fds[1]);
	struct answer a = {0};
	int r = collect(pid, fds[0], &a, err, libs.v[0]);
	close(fds[0]);
	if (r == 0 && a.status != 0) {
		a.msg[sizeof a.msg - 1] = '\0';
		r = gerr_set(err, 0, "%s: %s", libs.v[0], a.msg);
	}
	if (r == 0 && a.version <= 0)
		r = gerr_set(err, 0, "%s: cuDriverGetVersion gave %d", libs.v[0], a.version);
	if (r == 0)
		/* The driver API encodes it as 1000 * major + 10 * minor. */
		snprintf(out, cap, "%d.%d", a.version / 1000, a.version % 1000 / 10);
	strv_free(&libs);
	return r;
}
