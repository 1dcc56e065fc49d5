/* gpu/doctor.c — the NVIDIA half of `gpurun doctor`: what a GPU launch will
 * find under the driver root, checked with the same discovery code a launch
 * uses, one verdict per thing that goes missing on real hosts.
 *
 * Why these: /dev/nvidia-uvm is absent after a fresh boot until something
 * loads nvidia-uvm (then cuInit fails inside the container); /dev/nvidiaN
 * nodes vanish after a driver reload when nothing recreates them; without
 * nvidia-persistenced every launch pays for GPU initialisation; and the
 * driver's libraries are found through the host's ld.so.cache. */
#include "gpu.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "internal.h"

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

static void check_persistenced(struct checks *ck, const struct gpu_driver *drv)
{
	static const char *const sockets[] = {"run/nvidia-persistenced/socket",
					      "var/run/nvidia-persistenced/socket"};
	for (size_t i = 0; i < COUNT_OF(sockets); i++) {
		struct stat st;
		_cleanup_free_ char *host = drv_resolve(drv, sockets[i], &st, NULL);
		if (host && S_ISSOCK(st.st_mode)) {
			check_say(ck, CHECK_OK, "nvidia-persistenced", "running (/%s)", sockets[i]);
			return;
		}
	}
	check_say(ck, CHECK_WARN, "nvidia-persistenced",
		  "not running (no /run/nvidia-persistenced/socket): each launch waits for the GPUs "
		  "to initialise, and their nodes may be gone after a driver reload; start "
		  "nvidia-persistenced");
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

int gpu_doctor(struct checks *ck, const char *driver_root)
{
	const char *root = gpu_default_root(driver_root);
	struct gpu_driver drv = {.rootfd = -1};
	struct gerr e = {0};
	if (gpu_discover(root, &drv, &e) < 0) {
		/* No GPU host is a fine host: only GPU launches need this. */
		const char *env = getenv("GPURUN_DRIVER_ROOT");
		check_say(ck, driver_root || (env && *env) ? CHECK_FAIL : CHECK_WARN, "NVIDIA driver",
			  "%s: GPU launches will fail (--gpus void still works)", e.msg);
		gpu_driver_free(&drv);
		return 0;
	}
	check_say(ck, CHECK_OK, "NVIDIA driver", "version %s, %zu GPU%s under %s", drv.version, drv.ngpus,
		  drv.ngpus == 1 ? "" : "s", *drv.rootpath ? drv.rootpath : "/");
	check_nodes(ck, &drv);
	check_uvm(ck, &drv);
	check_persistenced(ck, &drv);
	check_libs(ck, &drv);
	gpu_driver_free(&drv);
	return 0;
}
