/* gpu/doctor.c — the NVIDIA half of `gpurun doctor`: what a GPU launch will
 * find under the driver root, checked with the same discovery code a launch
 * uses, one verdict per thing that goes missing on real hosts.
 *
 * Why these: /dev/nvidia-uvm is absent after a fresh boot until something
 * loads nvidia-uvm (then cuInit fails inside the container); /dev/nvidiaN
 * nodes vanish after a driver reload when nothing recreates them; without
 * nvidia-persistenced every launch pays for GPU initialisation; and the
 * driver's libraries are found through the host's ld.so.cache.
 *
 * What fails and what warns (docs/json.md): a check fails when a launch
 * that needs it fails: no driver where one was asked for (--driver-root,
 * GPURUN_DRIVER_ROOT, --gpus) or where the host shows an installed driver
 * whose kernel side is gone, a missing node, nvidia-uvm, an ld.so.cache
 * without the driver's libraries, a kernel module of another version than
 * the libraries (an upgrade without a reboot), and, with --gpus, NVML or libcuda not
 * initialising in the confined helper (gpu/helper.c) or not seeing the
 * selected GPUs.  It warns when launches work but worse: no driver on a
 * host with no sign of one, a persistence daemon that is not running or
 * left a stale socket.  The CDI specs' verdict is gpu/cdi/cdistale.c's. */
#include "gpu.h"

#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <unistd.h>

#include "cdi/cdi.h"
#include "gpu_int.h"

/* A character node of the driver root with the given numbers? */
static int has_node(const struct gpu_driver *drv, const char *path, unsigned major_, unsigned minor_)
{
	struct stat st;
	_cleanup_free_ char *host = drv_resolve(drv, path, &st, NULL);
	return host && S_ISCHR(st.st_mode) && (!major_ || (major(st.st_rdev) == major_ && minor(st.st_rdev) == minor_));
}

static void check_nodes(struct checks *ck, const struct gpu_driver *drv)
{
	struct sbuf missing = {0}, fix = {0};
	if (!has_node(drv, "dev/nvidiactl", NV_MAJOR, NV_CTL_MINOR))
		sbuf_puts(&missing, " /dev/nvidiactl");
	for (size_t i = 0; i < drv->ngpus; i++) {
		char path[32];
		const struct gpu_dev *g = &drv->gpus[i];
		snprintf(path, sizeof path, "dev/nvidia%u", g->minor);
		if (has_node(drv, path, NV_MAJOR, g->minor))
			continue;
		sbuf_printf(&missing, " /%s (GPU %u, %s)", path, g->index, g->busid);
		sbuf_printf(&fix, "%snvidia-modprobe -c=%u", fix.len ? "; " : "", g->minor);
	}
	if (!missing.len)
		check_say(ck, CHECK_OK, "NVIDIA devices", "/dev/nvidiactl and a node for each of the %zu GPUs",
			  drv->ngpus);
	else
		check_say(ck, CHECK_FAIL, "NVIDIA devices",
			  "missing or not a character device 195:N:%s; the driver creates them on first "
			  "use: as root, run %s, or keep nvidia-persistenced running",
			  missing.s, fix.len ? fix.s : "nvidia-modprobe");
	sbuf_free(&missing);
	sbuf_free(&fix);
}

static void check_uvm(struct checks *ck, const struct gpu_driver *drv)
{
	/* A GPU Operator driver root has the node but no proc/devices. */
	int node = has_node(drv, "dev/nvidia-uvm", 0, 0);
	if (node)
		check_say(ck, CHECK_OK, "nvidia-uvm", "/dev/nvidia-uvm is there (CUDA can initialise)");
	else if (drv->uvm_major)
		check_say(ck, CHECK_FAIL, "nvidia-uvm",
			  "the module is loaded (major %u) but /dev/nvidia-uvm is missing: CUDA fails "
			  "in every container; as root, run nvidia-modprobe -u -c=0",
			  drv->uvm_major);
	else
		check_say(ck, CHECK_FAIL, "nvidia-uvm",
			  "not loaded (no nvidia-uvm in /proc/devices, no /dev/nvidia-uvm): CUDA fails "
			  "in every container; as root, run nvidia-modprobe -u -c=0 (or modprobe nvidia-uvm)");
}

/* Is someone listening on the socket?  Connected through /proc/self/fd,
 * since a driver root's path may be longer than sun_path. */
static int socket_listening(const char *host, int *errnum)
{
	_cleanup_fd_ int fd = open(host, O_PATH | O_CLOEXEC | O_NOFOLLOW);
	_cleanup_fd_ int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0 || s < 0) {
		*errnum = errno;
		return 0;
	}
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	snprintf(a.sun_path, sizeof a.sun_path, "/proc/self/fd/%d", fd);
	/* A full backlog (EAGAIN) still means a listener. */
	if (connect(s, (struct sockaddr *)&a, sizeof a) == 0 || errno == EAGAIN)
		return 1;
	*errnum = errno;
	return 0;
}

static void check_persistenced(struct checks *ck, const struct gpu_driver *drv)
{
	static const char *const sockets[] = {"run/nvidia-persistenced/socket", "var/run/nvidia-persistenced/socket"};
	for (size_t i = 0; i < COUNT_OF(sockets); i++) {
		struct stat st;
		_cleanup_free_ char *host = drv_resolve(drv, sockets[i], &st, NULL);
		if (!host || !S_ISSOCK(st.st_mode))
			continue;
		int e = 0;
		const char *root = drv->rootpath;
		if (socket_listening(host, &e))
			check_say(ck, CHECK_OK, "nvidia-persistenced", "running (%s/%s accepts connections)", root,
				  sockets[i]);
		else if (e == ECONNREFUSED)
			check_say(ck, CHECK_WARN, "nvidia-persistenced",
				  "stale: %s/%s is there but nobody listens on it (the daemon died or was "
				  "stopped uncleanly); each launch waits for the GPUs to initialise: "
				  "restart nvidia-persistenced",
				  root, sockets[i]);
		else
			check_say(ck, CHECK_WARN, "nvidia-persistenced", "%s/%s: cannot connect: %s", root, sockets[i],
				  strerror(e));
		return;
	}
	check_say(ck, CHECK_WARN, "nvidia-persistenced",
		  "not running (no %s/run/nvidia-persistenced/socket): each launch waits for the GPUs "
		  "to initialise, and their nodes may be gone after a driver reload; start "
		  "nvidia-persistenced",
		  drv->rootpath);
}

/* The kernel module of one version and the libraries of another: a
 * driver upgraded without a reboot (the old module is still loaded).  No
 * ldconfig helps; said as such, in place of the ld.so.cache's verdict.
 * Returns whether it is so. */
static int check_versions(struct checks *ck, struct gpu_driver *drv)
{
	_cleanup_free_ char *path = NULL;
	_cleanup_free_ char *libs = drv_other_version(drv, "libcuda.so", &path);
	if (!libs)
		return 0;
	check_say(ck, CHECK_FAIL, "driver versions",
		  "the kernel module is %s but the libraries are %s (%s): a driver upgraded without a reboot, "
		  "the old module still loaded; nothing CUDA or NVML works until you reboot or reload the "
		  "module (stop what uses the GPUs, then rmmod nvidia_uvm nvidia_drm nvidia_modeset nvidia "
		  "and modprobe nvidia)",
		  drv->version, libs, path);
	return 1;
}

static void check_libs(struct checks *ck, struct gpu_driver *drv)
{
	static const char *const libs[] = {"libcuda.so", "libnvidia-ml.so"};
	const char *root = drv->rootpath;
	struct sbuf listed = {0};
	for (size_t i = 0; i < COUNT_OF(libs); i++) {
		struct strv found = {0};
		struct gerr e = {0};
		int r = drv_find_libs(drv, &libs[i], 1, 64, &found, NULL, &e);
		if (r < 0 || !found.n) {
			if (r < 0)
				check_say(ck, CHECK_FAIL, "ld.so.cache", "%s; as root, run ldconfig%s%s", e.msg,
					  *root ? " -r " : "", root);
			else
				check_say(ck, CHECK_FAIL, "ld.so.cache",
					  "%s/etc/ld.so.cache lists no %s.%s: the driver's libraries are not "
					  "registered; as root, run ldconfig%s%s",
					  root, libs[i], drv->version, *root ? " -r " : "", root);
			strv_free(&found);
			sbuf_free(&listed);
			return;
		}
		const char *base = strrchr(found.v[0], '/');
		sbuf_printf(&listed, "%s%s", listed.len ? " and " : "", base ? base + 1 : found.v[0]);
		strv_free(&found);
	}
	check_say(ck, CHECK_OK, "ld.so.cache", "%s/etc/ld.so.cache lists %s", root, listed.s);
	sbuf_free(&listed);
}

/* ---- --gpus: NVML and libcuda, loaded as a launch's helpers load them -- */

#define LIB_TIMEOUT_MS 10000

/* What the NVML helper answers: the bus ids of the GPUs NVML sees. */
struct nvml_seen {
	unsigned count;
	char busid[GPU_MAX][32];
};
static struct nvml_seen nvml_seen;

#define SYM(name, type) __typeof__(type) name = (__typeof__(type))dlsym(h, #name)

static void ask_nvml(void *arg, int out)
{
	void *h = dlopen(arg, RTLD_NOW | RTLD_LOCAL);
	if (!h)
		helper_fail(out, "%s", dlerror());
	SYM(nvmlErrorString, const char *(*)(int));
	SYM(nvmlInit_v2, int (*)(void));
	SYM(nvmlDeviceGetCount_v2, int (*)(unsigned *));
	SYM(nvmlDeviceGetHandleByIndex_v2, int (*)(unsigned, nvml_dev *));
	SYM(nvmlDeviceGetPciInfo_v3, int (*)(nvml_dev, nvml_pci *));
	if (!nvmlErrorString || !nvmlInit_v2 || !nvmlDeviceGetCount_v2 || !nvmlDeviceGetHandleByIndex_v2 ||
	    !nvmlDeviceGetPciInfo_v3)
		helper_fail(out, "it lacks nvmlInit_v2 or a device call");
	int r = nvmlInit_v2();
	if (r != 0)
		helper_fail(out, "nvmlInit_v2: %s (%d)", nvmlErrorString(r), r);
	unsigned n = 0;
	if ((r = nvmlDeviceGetCount_v2(&n)) != 0)
		helper_fail(out, "nvmlDeviceGetCount_v2: %s (%d)", nvmlErrorString(r), r);
	nvml_seen.count = n < GPU_MAX ? n : GPU_MAX;
	for (unsigned i = 0; i < nvml_seen.count; i++) {
		nvml_dev d;
		nvml_pci pci;
		if ((r = nvmlDeviceGetHandleByIndex_v2(i, &d)) != 0 || (r = nvmlDeviceGetPciInfo_v3(d, &pci)) != 0)
			helper_fail(out, "GPU %u: %s (%d)", i, nvmlErrorString(r), r);
		snprintf(nvml_seen.busid[i], sizeof nvml_seen.busid[i], "%.31s", pci.busId);
	}
	if (helper_ok(out) == 0)
		(void)helper_write(out, &nvml_seen, sizeof nvml_seen);
}

/* What the libcuda helper answers after cuInit(0) succeeded. */
struct cuda_seen {
	int version, count;
};

static void ask_cuda(void *arg, int out)
{
	void *h = dlopen(arg, RTLD_NOW | RTLD_LOCAL);
	if (!h)
		helper_fail(out, "%s", dlerror());
	SYM(cuInit, int (*)(unsigned));
	SYM(cuDriverGetVersion, int (*)(int *));
	SYM(cuDeviceGetCount, int (*)(int *));
	SYM(cuGetErrorName, int (*)(int, const char **));
	if (!cuInit || !cuDriverGetVersion || !cuDeviceGetCount)
		helper_fail(out, "it lacks cuInit, cuDriverGetVersion or cuDeviceGetCount");
	struct cuda_seen c = {0};
	int r = cuInit(0);
	if (r != 0) {
		const char *name = NULL;
		if (!cuGetErrorName || cuGetErrorName(r, &name) != 0 || !name)
			helper_fail(out, "cuInit: CUresult %d", r);
		helper_fail(out, "cuInit: %s (%d)", name, r);
	}
	if ((r = cuDriverGetVersion(&c.version)) != 0)
		helper_fail(out, "cuDriverGetVersion: CUresult %d", r);
	if ((r = cuDeviceGetCount(&c.count)) != 0)
		helper_fail(out, "cuDeviceGetCount: CUresult %d", r);
	if (helper_ok(out) == 0)
		(void)helper_write(out, &c, sizeof c);
}

/* Run body on the driver root's library prefix ("libcuda.so"), chrooted in
 * the root as NVML runs for MIG UUIDs (nvmlmig.c): the library sees the
 * root's /proc and /dev, as it will inside a container.  Reads n bytes of
 * answer into buf.  -1 with err naming the library and what failed. */
static int load_and_ask(struct gpu_driver *drv, const char *prefix, void (*body)(void *, int), void *buf, size_t n,
			char **libname, struct gerr *err)
{
	struct helper hp;
	int r = helper_start_lib(&hp, drv, prefix, LIB_TIMEOUT_MS, body, libname, err);
	if (r == 0)
		r = helper_read(&hp, buf, n, err);
	helper_end(&hp);
	return r;
}

static void check_nvml(struct checks *ck, struct gpu_driver *drv, const struct gpu_selection *sel)
{
	struct gerr e = {0};
	_cleanup_free_ char *lib = NULL;
	memset(&nvml_seen, 0, sizeof nvml_seen);
	if (load_and_ask(drv, "libnvidia-ml.so", ask_nvml, &nvml_seen, sizeof nvml_seen, &lib, &e) < 0) {
		check_say(ck, CHECK_FAIL, "NVML",
			  "does not initialise: %s: nvidia-smi and NVML programs fail "
			  "in every container",
			  e.msg);
		return;
	}
	struct sbuf missing = {0};
	size_t want = 0;
	for (size_t i = 0; i < drv->ngpus; i++) {
		if (sel->kind != SEL_SOME || !sel->mask[i])
			continue;
		want++;
		int found = 0;
		for (unsigned k = 0; k < nvml_seen.count && k < GPU_MAX && !found; k++)
			found = !strncasecmp(nvml_seen.busid[k], drv->gpus[i].busid, sizeof nvml_seen.busid[k]);
		if (!found)
			sbuf_printf(&missing, "%sGPU %u (%s)", missing.len ? ", " : "", drv->gpus[i].index,
				    drv->gpus[i].busid);
	}
	if (missing.len)
		check_say(ck, CHECK_FAIL, "NVML", "%s initialises but does not see %s (it sees %u GPU%s)", lib,
			  missing.s, nvml_seen.count, nvml_seen.count == 1 ? "" : "s");
	else
		check_say(ck, CHECK_OK, "NVML", "%s initialises and sees the %zu selected GPU%s", lib, want,
			  want == 1 ? "" : "s");
	sbuf_free(&missing);
}

static void check_cuda(struct checks *ck, struct gpu_driver *drv, const struct gpu_selection *sel)
{
	struct gerr e = {0};
	struct cuda_seen c = {0};
	_cleanup_free_ char *lib = NULL;
	size_t want = 0;
	for (size_t i = 0; i < drv->ngpus; i++)
		want += sel->kind == SEL_SOME && sel->mask[i];
	if (load_and_ask(drv, "libcuda.so", ask_cuda, &c, sizeof c, &lib, &e) < 0)
		check_say(ck, CHECK_FAIL, "libcuda",
			  "does not initialise: %s: CUDA programs fail in every "
			  "container",
			  e.msg);
	else if (c.count < 0 || (size_t)c.count < want)
		check_say(ck, CHECK_FAIL, "libcuda",
			  "%s: cuInit succeeds but cuDeviceGetCount gives %d, fewer "
			  "than the %zu selected GPU%s",
			  lib, c.count, want, want == 1 ? "" : "s");
	else
		check_say(ck, CHECK_OK, "libcuda", "%s: cuInit succeeds, CUDA %d.%d, %d device%s", lib,
			  c.version / 1000, c.version % 1000 / 10, c.count, c.count == 1 ? "" : "s");
}

/* With --gpus SPEC: the selection resolves, and NVML and libcuda work. */
static void check_selected(struct checks *ck, struct gpu_driver *drv, const char *root, const char *gpus)
{
	struct gpu_request rq = {0};
	struct gpu_selection sel;
	struct gerr e = {0};
	if (gpu_request_parse(gpus, "--gpus", &rq, &e) < 0 ||
	    gpu_select(&rq, drv, "--gpus", root, NULL, 0, &sel, &e) < 0) {
		check_say(ck, CHECK_FAIL, "GPUs", "%s", e.msg);
		gpu_request_free(&rq);
		return;
	}
	gpu_request_free(&rq);
	if (sel.kind == SEL_VOID) {
		check_say(ck, CHECK_OK, "GPUs", "--gpus void uses no driver");
		return;
	}
	struct sbuf list = {0};
	for (size_t i = 0; i < drv->ngpus; i++)
		if (sel.kind == SEL_SOME && sel.mask[i])
			sbuf_printf(&list, "%s%u (%s)", list.len ? ", " : "", drv->gpus[i].index, drv->gpus[i].busid);
	check_say(ck, CHECK_OK, "GPUs", "--gpus %s selects %s", gpus, list.len ? list.s : "no GPU (driver files only)");
	sbuf_free(&list);
	check_nvml(ck, drv, &sel);
	check_cuda(ck, drv, &sel);
}

/* Signs of an installed NVIDIA driver on a host where none answers: its
 * nvidia-smi, or an NVIDIA display controller on the PCI bus.  Then the
 * GPU or the kernel module is gone, and that is a failure. */
static const char *driver_traces(const char *root, char *buf, size_t cap)
{
	struct stat st;
	snprintf(buf, cap, "%s/usr/bin/nvidia-smi", strcmp(root, "/") ? root : "");
	if (stat(buf, &st) == 0)
		return buf;
	if (strcmp(root, "/"))
		return NULL;
	DIR *d = opendir("/sys/bus/pci/devices");
	struct dirent *de;
	const char *found = NULL;
	while (d && !found && (de = readdir(d))) {
		char vendor[16] = "", class[16] = "", path[512];
		snprintf(path, sizeof path, "/sys/bus/pci/devices/%s/vendor", de->d_name);
		_cleanup_fd_ int v = open(path, O_RDONLY | O_CLOEXEC);
		snprintf(path, sizeof path, "/sys/bus/pci/devices/%s/class", de->d_name);
		_cleanup_fd_ int c = open(path, O_RDONLY | O_CLOEXEC);
		if (v < 0 || c < 0 || read(v, vendor, sizeof vendor - 1) < 0 || read(c, class, sizeof class - 1) < 0)
			continue;
		/* Class 0x03: a display controller (VGA or 3D: every data-centre GPU). */
		if (!strncmp(vendor, "0x10de", 6) && !strncmp(class, "0x03", 4)) {
			snprintf(buf, cap, "an NVIDIA GPU at PCI %s", de->d_name);
			found = buf;
		}
	}
	if (d)
		closedir(d);
	return found;
}

void gpu_doctor_driver(struct checks *ck, const char *driver_root, const char *gpus)
{
	const char *root = gpu_default_root(driver_root);
	struct gpu_driver drv = {.rootfd = -1};
	struct gerr e = {0};
	if (gpu_discover(root, &drv, &e) < 0) {
		char trace[600];
		const char *seen = driver_traces(root, trace, sizeof trace);
		if (seen)
			check_say(ck, CHECK_FAIL, "NVIDIA driver",
				  "%s, but this host has %s: the GPU or the kernel module is gone; GPU "
				  "launches will fail",
				  e.msg, seen);
		else
			/* No GPU host is a fine host, unless a driver was asked for. */
			check_say(ck, gpu_root_named(driver_root) || gpus ? CHECK_FAIL : CHECK_WARN, "NVIDIA driver",
				  "%s: GPU launches will fail (--gpus void still works)", e.msg);
		gpu_driver_free(&drv);
		return;
	}
	check_say(ck, CHECK_OK, "NVIDIA driver", "version %s, %zu GPU%s under %s", drv.version, drv.ngpus,
		  drv.ngpus == 1 ? "" : "s", *drv.rootpath ? drv.rootpath : "/");
	check_nodes(ck, &drv);
	check_uvm(ck, &drv);
	check_persistenced(ck, &drv);
	/* After an upgrade without a reboot there is no NVML or libcuda of
	 * the module's version to try end to end: that one verdict says it. */
	if (!check_versions(ck, &drv)) {
		check_libs(ck, &drv);
		if (gpus)
			check_selected(ck, &drv, root, gpus);
	}
	gpu_driver_free(&drv);
}

int gpu_doctor(struct checks *ck, const char *driver_root, const char *gpus)
{
	gpu_doctor_driver(ck, driver_root, gpus);
	cdi_doctor(ck);
	return 0;
}
