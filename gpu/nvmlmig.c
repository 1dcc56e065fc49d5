/* gpu/nvmlmig.c — MIG UUIDs, asked of the driver root's own NVML.
 *
 * A MIG device's UUID (MIG-<uuid>) is in no file: only NVML knows it.
 * As nvidia-container-cli's driver service does, NVML is loaded in a
 * short-lived child that first chroots into the driver root, so that the
 * root's own libnvidia-ml.so.1 (found through the root's ld.so.cache) runs
 * with that root as / and sees its /proc and /dev.  Like gpu/cudaver.c the
 * child is forked before any namespace exists, has an empty environment
 * and no fd of ours but its pipe, dies with its parent and gets a few
 * seconds.  As root it chroots, then drops to nobody; unprivileged it
 * first enters a user namespace of its own (our uid mapped to itself),
 * which is what allows the chroot, then drops those capabilities again.
 * It answers, over the pipe, each MIG device's parent PCI bus id, GPU and
 * compute instance ids and UUID; mig.c matches them to the MIG devices
 * the capability files show.  Only a MIG-<uuid> selection or `gpurun info`
 * asks: no other launch pays for loading NVML. */
#include "internal.h"

#include <dlfcn.h>
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
#include <strings.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define CHILD_TIMEOUT_MS 10000
#define NOBODY 65534
#define NVML_SUCCESS 0
#define NVML_ERROR_NOT_SUPPORTED 3
#define NVML_ERROR_NOT_FOUND 6
#define NVML_DEVICE_MIG_ENABLE 1
#define UUID_LEN 96

static const char *const libnvml[] = {"libnvidia-ml.so"};

/* NVML's ABI for the calls made (nvml.h: nvmlPciInfo_t v3). */
typedef void *nvml_dev;
typedef struct {
	char busIdLegacy[16];
	unsigned int domain, bus, device, pciDeviceId, pciSubSystemId;
	char busId[32];
} nvml_pci;

struct header {
	int status; /* 0: count records follow */
	unsigned count;
	char msg[200];
};

static struct nvml_mig found[MIG_MAX];

static __attribute__((noreturn)) void fail(int fd, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static __attribute__((noreturn)) void fail(int fd, const char *fmt, ...)
{
	struct header h = {.status = 1};
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(h.msg, sizeof h.msg, fmt, ap);
	va_end(ap);
	/* Nothing to do about a failed write: the parent then reports that
	 * the helper died. */
	(void)!write(fd, &h, sizeof h);
	_exit(0);
}

static int put_all(int fd, const void *p, size_t n)
{
	while (n) {
		ssize_t k = write(fd, p, n);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return -1;
		p = (const char *)p + k;
		n -= (size_t)k;
	}
	return 0;
}

static int write_file(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	int r = put_all(fd, text, strlen(text));
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
	if (write_file("/proc/self/uid_map", map) < 0 || write_file("/proc/self/setgroups", "deny") < 0)
		return -1;
	snprintf(map, sizeof map, "%u %u 1\n", (unsigned)gid, (unsigned)gid);
	return write_file("/proc/self/gid_map", map);
}

static int drop_caps(void)
{
	struct __user_cap_header_struct h = {.version = _LINUX_CAPABILITY_VERSION_3};
	struct __user_cap_data_struct d[2] = {{0}};
	return (int)syscall(SYS_capset, &h, d);
}

#define SYM(name, type) __typeof__(type) name = (__typeof__(type))dlsym(h, #name)

static __attribute__((noreturn)) void child(int rootfd, const char *lib, int out, pid_t parent)
{
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0)
		fail(out, "prctl(PR_SET_PDEATHSIG) failed");
	clearenv();
	/* Nothing of the launcher's (the image archive, pipes) for NVML. */
	unsigned lo = (unsigned)(rootfd < out ? rootfd : out), hi = (unsigned)(rootfd < out ? out : rootfd);
	if ((lo > 3 && close_range(3, lo - 1, 0) < 0) || (hi > lo + 1 && close_range(lo + 1, hi - 1, 0) < 0) ||
	    close_range(hi + 1, ~0U, 0) < 0)
		fail(out, "close_range: %s", strerror(errno));
	int root = geteuid() == 0;
	if (!root && own_userns() < 0)
		fail(out, "cannot enter a user namespace to chroot: %s", strerror(errno));
	/* The root by the fd discovery resolved everything in, not by name. */
	if (fchdir(rootfd) < 0 || chroot(".") < 0 || chdir("/") < 0)
		fail(out, "chroot into the driver root: %s", strerror(errno));
	close(rootfd);
	if (root) {
		if (setgroups(0, NULL) < 0 || setgid(NOBODY) < 0 || setuid(NOBODY) < 0)
			fail(out, "cannot drop privileges");
	} else if (drop_caps() < 0) {
		fail(out, "cannot drop capabilities: %s", strerror(errno));
	}
	/* A change of credentials (the user namespace, nobody) clears the
	 * parent-death signal: set it again, and stop if the parent is gone. */
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() != parent)
		fail(out, "prctl(PR_SET_PDEATHSIG) failed");
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		fail(out, "prctl(PR_SET_NO_NEW_PRIVS) failed");
	void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
	if (!h)
		fail(out, "%s", dlerror());
	SYM(nvmlErrorString, const char *(*)(int));
	SYM(nvmlInit_v2, int (*)(void));
	SYM(nvmlShutdown, int (*)(void));
	SYM(nvmlDeviceGetCount_v2, int (*)(unsigned *));
	SYM(nvmlDeviceGetHandleByIndex_v2, int (*)(unsigned, nvml_dev *));
	SYM(nvmlDeviceGetPciInfo_v3, int (*)(nvml_dev, nvml_pci *));
	SYM(nvmlDeviceGetMigMode, int (*)(nvml_dev, unsigned *, unsigned *));
	SYM(nvmlDeviceGetMaxMigDeviceCount, int (*)(nvml_dev, unsigned *));
	SYM(nvmlDeviceGetMigDeviceHandleByIndex, int (*)(nvml_dev, unsigned, nvml_dev *));
	SYM(nvmlDeviceGetGpuInstanceId, int (*)(nvml_dev, unsigned *));
	SYM(nvmlDeviceGetComputeInstanceId, int (*)(nvml_dev, unsigned *));
	SYM(nvmlDeviceGetUUID, int (*)(nvml_dev, char *, unsigned));
	if (!nvmlErrorString || !nvmlInit_v2 || !nvmlShutdown || !nvmlDeviceGetCount_v2 ||
	    !nvmlDeviceGetHandleByIndex_v2 || !nvmlDeviceGetPciInfo_v3 || !nvmlDeviceGetMigMode ||
	    !nvmlDeviceGetMaxMigDeviceCount || !nvmlDeviceGetMigDeviceHandleByIndex ||
	    !nvmlDeviceGetGpuInstanceId || !nvmlDeviceGetComputeInstanceId || !nvmlDeviceGetUUID)
		fail(out, "it lacks an NVML MIG call (driver older than R450?)");
#define CALL(what, call)                                                                       \
	do {                                                                                   \
		int r_ = (call);                                                               \
		if (r_ != NVML_SUCCESS)                                                        \
			fail(out, "%s: %s", what, nvmlErrorString(r_));                        \
	} while (0)
	unsigned ngpus, n = 0;
	CALL("nvmlInit_v2", nvmlInit_v2());
	CALL("nvmlDeviceGetCount_v2", nvmlDeviceGetCount_v2(&ngpus));
	for (unsigned g = 0; g < ngpus; g++) {
		nvml_dev dev;
		nvml_pci pci;
		unsigned cur, pend, max;
		CALL("nvmlDeviceGetHandleByIndex_v2", nvmlDeviceGetHandleByIndex_v2(g, &dev));
		CALL("nvmlDeviceGetPciInfo_v3", nvmlDeviceGetPciInfo_v3(dev, &pci));
		int r = nvmlDeviceGetMigMode(dev, &cur, &pend);
		if (r == NVML_ERROR_NOT_SUPPORTED || (r == NVML_SUCCESS && cur != NVML_DEVICE_MIG_ENABLE))
			continue; /* no MIG on this GPU */
		CALL("nvmlDeviceGetMigMode", r);
		CALL("nvmlDeviceGetMaxMigDeviceCount", nvmlDeviceGetMaxMigDeviceCount(dev, &max));
		for (unsigned m = 0; m < max; m++) {
			nvml_dev mig;
			r = nvmlDeviceGetMigDeviceHandleByIndex(dev, m, &mig);
			if (r == NVML_ERROR_NOT_FOUND)
				continue; /* no MIG device at that index */
			CALL("nvmlDeviceGetMigDeviceHandleByIndex", r);
			if (n == MIG_MAX)
				fail(out, "more than %d MIG devices", MIG_MAX);
			struct nvml_mig *f = &found[n++];
			snprintf(f->busid, sizeof f->busid, "%.31s", pci.busId);
			CALL("nvmlDeviceGetGpuInstanceId", nvmlDeviceGetGpuInstanceId(mig, &f->gi));
			CALL("nvmlDeviceGetComputeInstanceId", nvmlDeviceGetComputeInstanceId(mig, &f->ci));
			CALL("nvmlDeviceGetUUID", nvmlDeviceGetUUID(mig, f->uuid, sizeof f->uuid));
			f->uuid[sizeof f->uuid - 1] = '\0';
		}
	}
	CALL("nvmlShutdown", nvmlShutdown());
	struct header hd = {.status = 0, .count = n};
	if (put_all(out, &hd, sizeof hd) == 0)
		(void)put_all(out, found, n * sizeof found[0]);
	_exit(0);
}

static long now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000L + ts.tv_nsec / 1000000L;
}

/* Read exactly n bytes by the deadline: 0, or -1 with err. */
static int read_by(int in, void *buf, size_t n, long deadline, const char *lib, struct gerr *err)
{
	size_t got = 0;
	while (got < n) {
		struct pollfd p = {.fd = in, .events = POLLIN};
		long left = deadline - now_ms();
		int k = left > 0 ? poll(&p, 1, (int)left) : 0;
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return gerr_set(err, k < 0 ? errno : 0, "%s: NVML helper %s", lib,
					k < 0 ? "poll failed" : "timed out");
		ssize_t r = read(in, (char *)buf + got, n - got);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return gerr_set(err, 0, "%s: the NVML helper process died", lib);
		got += (size_t)r;
	}
	return 0;
}

/* Give the file-based MIG devices their UUIDs: same parent bus id, GPU
 * instance and compute instance. */
static void attach(struct gpu_driver *drv)
{
	for (size_t i = 0; i < drv->nnvml_migs; i++) {
		const struct nvml_mig *f = &drv->nvml_migs[i];
		for (size_t m = 0; m < drv->nmigs; m++) {
			struct mig_dev *d = &drv->migs[m];
			if (!strcasecmp(drv->gpus[d->gpu].busid, f->busid) && d->gi == f->gi && d->ci == f->ci)
				snprintf(d->uuid, sizeof d->uuid, "%s", f->uuid);
		}
	}
}

int nvml_mig_uuids(struct gpu_driver *drv, struct gerr *err)
{
	if (drv->nvml_asked)
		return 0;
	struct strv libs = {0};
	if (drv_find_libs(drv, libnvml, 1, 64, &libs, NULL, err) < 0)
		return -1;
	if (libs.n == 0) {
		strv_free(&libs);
		return gerr_set(err, 0, "no libnvidia-ml.so.%s in %s/etc/ld.so.cache",
				drv->version, drv->rootpath);
	}
	const char *host = libs.v[0];
	size_t rl = strlen(drv->rootpath);
	/* drv_find_libs resolves inside the root: its paths start with it. */
	const char *inroot = strncmp(host, drv->rootpath, rl) ? host : host + rl;
	int fds[2];
	if (pipe2(fds, O_CLOEXEC) < 0) {
		strv_free(&libs);
		return gerr_set(err, errno, "pipe");
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
		child(drv->rootfd, inroot, fds[1], self);
	}
	close(fds[1]);
	long deadline = now_ms() + CHILD_TIMEOUT_MS;
	struct header h = {0};
	int r = read_by(fds[0], &h, sizeof h, deadline, host, err);
	if (r == 0 && h.status != 0) {
		h.msg[sizeof h.msg - 1] = '\0';
		r = gerr_set(err, 0, "%s: %s", host, h.msg);
	}
	if (r == 0 && h.count > MIG_MAX)
		r = gerr_set(err, 0, "%s: the NVML helper gave %u MIG devices", host, h.count);
	if (r == 0) {
		drv->nvml_migs = xcalloc(h.count ? h.count : 1, sizeof *drv->nvml_migs);
		r = read_by(fds[0], drv->nvml_migs, h.count * sizeof *drv->nvml_migs, deadline, host, err);
		drv->nnvml_migs = r == 0 ? h.count : 0;
	}
	kill(pid, SIGKILL);
	while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
		;
	close(fds[0]);
	strv_free(&libs);
	if (r < 0)
		return -1;
	for (size_t i = 0; i < drv->nnvml_migs; i++) {
		drv->nvml_migs[i].busid[sizeof drv->nvml_migs[i].busid - 1] = '\0';
		drv->nvml_migs[i].uuid[sizeof drv->nvml_migs[i].uuid - 1] = '\0';
	}
	drv->nvml_asked = 1;
	attach(drv);
	return 0;
}
