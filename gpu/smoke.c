/* gpu/smoke.c — `gpurun smoke [--gpus SPEC] [--json|--tap] [IMAGE]`: the
 * GPU smoke test a CI job runs, turned into an ordinary `run` of the probe
 * gpurun ships (gpu/probe/smoke.c, installed as libexec/gpurun/gpurun-smoke)
 * bound read-only into the container.  Without IMAGE the container's root
 * is the host's own /, read-only under gpurun's writable layer like any
 * directory image: the probe needs only the C library, and the host's is
 * the one the probe was built against.
 *
 * gpurun injects only the libraries of the kernel module's version, so
 * after a driver upgrade without a reboot the container gets no libcuda at
 * all; the version of the one the driver root has is found here and handed
 * to the probe, which reports the mismatch. */
#include "smoke.h"
#include "gpu_int.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../base/opt.h"

enum { S_GPUS = 1, S_JSON, S_TAP, S_DRIVER_ROOT, S_HELP };
static const struct opt smoke_opts[] = {
	{S_GPUS, "gpus", NULL, 0, OPT_VALUE, "SPEC", "the GPUs to test, as run's --gpus (default all)"},
	{S_JSON, "json", NULL, 0, OPT_FLAG, NULL, "one JSON document (docs/json.md)"},
	{S_TAP, "tap", NULL, 0, OPT_FLAG, NULL, "Test Anything Protocol"},
	{S_DRIVER_ROOT, "driver-root", NULL, 0, OPT_VALUE, "DIR", "where the host driver lives"},
	{S_HELP, "help", NULL, 'h', OPT_FLAG, NULL, "this text"},
	{0},
};
#define SMOKE_USAGE "usage: gpurun smoke [--gpus SPEC] [--json|--tap] [--driver-root DIR] [IMAGE]\n"

/* The probe: beside the gpurun of the build tree, or in the libexec of an
 * installed one.  It runs as the container's process, so when we are root
 * it must be root's alone, as the driver's own files must (DESIGN.md §8). */
static char *probe_path(void)
{
	char self[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
	if (n < 0)
		die(GPURUN_EXIT_FAIL, "cannot read /proc/self/exe: %s", strerror(errno));
	self[n] = '\0';
	*strrchr(self, '/') = '\0';
	char *tree = xasprintf("%s/gpu/probe/gpurun-smoke", self);
	char *installed = xasprintf("%s/../libexec/gpurun/gpurun-smoke", self);
	char *p = access(tree, X_OK) == 0 ? tree : installed;
	struct stat st;
	if (stat(p, &st) < 0)
		die(GPURUN_EXIT_FAIL, "cannot find the smoke probe: %s: %s", p, strerror(errno));
	if (geteuid() == 0 && (st.st_uid != 0 || (st.st_mode & 022)))
		die(GPURUN_EXIT_FAIL, "the smoke probe is not root's alone: %s", p);
	free(p == tree ? installed : tree);
	return p;
}

/* The version in the file name of the driver root's libcuda when it is
 * not the kernel module's ("535.261.03"), else NULL. */
static char *stale_libcuda(const char *driver_root)
{
	struct gpu_driver drv;
	struct gerr err = {0};
	struct strv same = {0}, other = {0};
	static const char *const cuda[] = {"libcuda.so"};
	char *v = NULL;
	if (gpu_discover(gpu_default_root(driver_root), &drv, &err) < 0)
		return NULL; /* no driver: the probe says so */
	if (drv_find_libs(&drv, cuda, 1, 64, &same, NULL, &err) == 0 && same.n == 0 &&
	    drv_find_platform_libs(&drv, cuda, 1, 64, &other, NULL, &err) == 0 && other.n)
		v = xstrdup(strstr(strrchr(other.v[0], '/') ? strrchr(other.v[0], '/') : other.v[0], ".so.") + 4);
	strv_free(&same);
	strv_free(&other);
	gpu_driver_free(&drv);
	return v;
}

char **smoke_run_argv(int argc, char **argv, const char *driver_root, int *n)
{
	const char *gpus = "all", *form = NULL, *image = "/", *v;
	const struct opt *o;
	struct gerr err = {0};
	struct opt_state s = OPT_STATE(argc, argv);
	for (int r;;) {
		if ((r = opt_next(&s, smoke_opts, &o, &v, &err)) < 0)
			die(GPURUN_EXIT_FAIL, "smoke: %s", err.msg);
		if (r == 0 && s.i < argc) {
			if (strcmp(image, "/")) {
				struct sbuf q = {0};
				sbuf_showquote(&q, argv[s.i]);
				die(GPURUN_EXIT_FAIL, "smoke: unexpected argument %s", q.s);
			}
			image = argv[s.i++];
			continue;
		}
		if (r == 0)
			break;
		switch (o->id) {
		case S_GPUS: gpus = v; break;
		case S_JSON: form = "--json"; break;
		case S_TAP: form = "--tap"; break;
		case S_DRIVER_ROOT: driver_root = v; break;
		case S_HELP:
			fputs(SMOKE_USAGE
			      "\nRun gpurun's GPU smoke test in IMAGE (default: the host's own root) on\n"
			      "the selected GPUs: a CUDA kernel on each, NVML's health, the driver's versions.\n"
			      "Exit status 0 all passed, 1 a check failed, 125 gpurun failed.\n\n",
			      stdout);
			opt_help(stdout, smoke_opts, NULL);
			exit(0);
		}
	}
	struct strv a = {0};
	strv_add(&a, xstrdup("run"));
	if (driver_root) {
		strv_add(&a, xstrdup("--driver-root"));
		strv_add(&a, xstrdup(driver_root));
	}
	strv_add(&a, xasprintf("--gpus=%s", gpus));
	_cleanup_free_ char *probe = probe_path();
	strv_add(&a, xasprintf("--volume=%s:/.gpurun-smoke:ro", probe));
	strv_add(&a, xstrdup("--entrypoint=/.gpurun-smoke"));
	strv_add(&a, xstrdup("--"));
	strv_add(&a, xstrdup(image));
	if (form)
		strv_add(&a, xstrdup(form));
	char *stale = stale_libcuda(driver_root);
	if (stale)
		strv_add(&a, xasprintf("--host-libcuda=%s", stale));
	free(stale);
	*n = (int)a.n;
	return a.v;
}
