/* gpu/gpu.h — what gpu/ offers the rest of gpurun for GPUs by --gpus (CDI
 * is gpu/cdi/cdi.h), by the file that defines it:
 *   inject.c  gpu_configure (struct gpu_opts, struct gpu_result): NVIDIA
 *             driver discovery under a driver root, GPU selection,
 *             requirement checks, and the plan ops that inject the
 *             selected GPUs into a container (what
 *             `nvidia-container-cli configure` does)
 *   info.c    gpu_info and gpu_list (struct gpu_query): `gpurun info` and
 *             `gpurun list`
 *   doctor.c  gpu_doctor: `gpurun doctor`'s driver checks
 *   smoke.c   the smoke probe and the host's facts it is given
 * gpu/ never mounts anything itself: it appends ops to the plan
 * (base/plan/plan.h). */
#ifndef GPURUN_GPU_H
#define GPURUN_GPU_H

#include <stddef.h>

#include "../base/base.h"
#include "../base/plan/plan.h"

struct gpu_opts {
	const char *driver_root; /* --driver-root; NULL: GPURUN_DRIVER_ROOT, else "/" */
	const char *gpus;        /* --gpus value, NULL when not given */
	const char *caps;        /* --caps value, NULL when not given */
	char **requires;         /* --require values */
	size_t nrequires;
	char **env; /* container environment "K=V" (from -e), for NVIDIA_* */
	size_t nenv;
	int dry_run; /* change nothing on the host (missing nodes: say what would run) */
	int verbose; /* print host steps (nvidia-modprobe) as they run */
};

struct gpu_result {
	char *ldconfig_dirs;    /* ':'-separated dirs for OP_LDCONFIG after the pivot, or NULL */
	struct strv host_steps; /* dry run: commands a launch would run on the host first */
	char *compat_driver;    /* the driver version, when libcuda is injected: the image's
				 * CUDA_COMPAT_DIR goes first if newer (base/plan/plan.h) */
};

/* Decide whether this is a GPU container and, if so, append the injection
 * ops (device nodes, driver files, /proc/driver/nvidia) to plan.  Must be
 * called after the base /proc and /dev ops have been added.  Returns 0, or
 * -1 with err set (exit 125): bad --gpus/--caps, unknown device, unmet
 * requirement, no NVIDIA driver under the driver root. */
int gpu_configure(struct plan *plan, const struct gpu_opts *o, struct gpu_result *res, struct gerr *err);

/* What `gpurun info [--csv] [--driver-root DIR]` and
 * `gpurun list [--gpus SPEC] [--caps LIST] [--driver-root DIR]` print on
 * stdout.  Return 0, or -1 with err. */
struct gpu_query {
	const char *driver_root; /* NULL: GPURUN_DRIVER_ROOT, else "/" */
	const char *gpus;        /* list: NULL for all */
	const char *caps;        /* list: NULL for all */
	int csv;                 /* info */
	int json;                /* info, list: the docs/json.md document */
};
int gpu_info(const struct gpu_query *q, struct gerr *err);
int gpu_list(const struct gpu_query *q, struct gerr *err);

/* `gpurun doctor`'s driver checks (gpu/doctor.c): the driver, its device
 * nodes, nvidia-uvm, nvidia-persistenced and the ld.so.cache, one verdict
 * each.  driver_root: --driver-root, or NULL.  With gpus (a --gpus SPEC),
 * also that those GPUs are usable end to end: the selection resolves, and
 * NVML and libcuda initialise in the confined helper and see them. */
int gpu_doctor(struct checks *ck, const char *driver_root, const char *gpus);

/* `gpurun smoke` (gpu/smoke.c): the probe it runs in the container, beside
 * this gpurun in the build tree or in the installed libexec (malloc'ed), or
 * NULL with err when it is missing or, run as root, not root's alone; and
 * the probe's arguments with the host's facts (the Xids the kernel logged
 * since boot, a libcuda of another version than the kernel module's)
 * appended to a.  driver_root: --driver-root, or NULL. */
char *smoke_probe_path(struct gerr *err);
void smoke_probe_args(const char *driver_root, struct strv *a);

#endif
