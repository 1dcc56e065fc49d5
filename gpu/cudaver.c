/* gpu/cudaver.c — the CUDA driver API version (for cuda>= requirements and
 * `gpurun info`), asked of the driver's own libcuda.
 *
 * It is the one fact no file states.  libcuda is loaded only in a confined,
 * short-lived child (gpu/helper.c), which calls cuDriverGetVersion() (no GPU
 * and no cuInit() needed) and writes the int to a pipe.  The library is
 * opened here, before the child drops to nobody, and reached through that
 * fd: a driver root in a private directory still works. */
#include "gpu_int.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define CHILD_TIMEOUT_MS 5000

static const char *const libcuda[] = {"libcuda.so"};

typedef int (*get_version_fn)(int *);

static void ask_version(void *arg, int out)
{
	char path[64];
	snprintf(path, sizeof path, "/proc/self/fd/%d", *(const int *)arg);
	void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!h)
		helper_fail(out, "%s", dlerror());
	get_version_fn get = (get_version_fn)dlsym(h, "cuDriverGetVersion");
	if (!get)
		helper_fail(out, "no cuDriverGetVersion in it");
	int v = 0;
	if (get(&v) != 0)
		helper_fail(out, "cuDriverGetVersion failed");
	if (helper_ok(out) == 0)
		(void)helper_write(out, &v, sizeof v);
}

int cuda_driver_version(struct gpu_driver *drv, char *out, size_t cap, struct gerr *err)
{
	struct strv libs = {0};
	if (drv_find_libs(drv, libcuda, 1, 64, &libs, NULL, err) < 0)
		return -1;
	if (libs.n == 0) {
		strv_free(&libs);
		return gerr_set(err, 0, "no libcuda.so.%s in %s/etc/ld.so.cache", drv->version, drv->rootpath);
	}
	int fd = open(libs.v[0], O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		int e = errno;
		gerr_set(err, e, "%s", libs.v[0]);
		strv_free(&libs);
		return -1;
	}
	struct helper h;
	struct helper_spec sp = {.what = libs.v[0],
				 .drv = drv,
				 .lib = libs.v[0],
				 .timeout_ms = CHILD_TIMEOUT_MS,
				 .keep_fd = fd,
				 .chroot_fd = -1,
				 .body = ask_version,
				 .arg = &fd};
	int v = 0;
	int r = helper_start(&h, &sp, err);
	if (r == 0)
		r = helper_read(&h, &v, sizeof v, err);
	helper_end(&h);
	close(fd);
	if (r == 0 && v <= 0)
		r = gerr_set(err, 0, "%s: cuDriverGetVersion gave %d", libs.v[0], v);
	if (r == 0)
		/* The driver API encodes it as 1000 * major + 10 * minor. */
		snprintf(out, cap, "%d.%d", v / 1000, v % 1000 / 10);
	strv_free(&libs);
	return r;
}
