/* gpu/gpu.h — what gpu/ offers the rest of gpurun for GPUs by --gpus (CDI
 * is gpu/cdi/cdi.h), by the file that defines it:
 *   inject.c  gpu_configure (struct gpu_opts, struct gpu_result): NVIDIA
 *             driver discovery under a driver root, GPU selection,
 *             requirement checks, and the plan ops that inject the
 *             selected GPUs into a container (what
 *             `nvidia-container-cli configure` does)
 *   info.c    what `gpurun info` and `gpurun list` show (struct
 *             gpu_inventory, struct gpu_listing)
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
	char *ldconfig_dirs;     /* ':'-separated dirs for OP_LDCONFIG after the pivot, or NULL */
	struct strv host_steps;  /* dry run: commands a launch would run on the host first */
	char *compat_driver;     /* the driver version, when libcuda is injected: the image's
				 * CUDA_COMPAT_DIR goes first if newer (base/plan/plan.h) */
	int gpu;                 /* a GPU container: the driver's files are injected */
	unsigned caps;           /* then, its driver capabilities (gpu_caps_bringing) */
	const char *driver_root; /* and the driver root its files come from */
};

/* The driver capability ("utility") whose files bring the program cmd
 * (a name, or a path whose last part is one, as nvidia-smi), when caps
 * lacks it; NULL when no capability brings it or caps has it. */
const char *gpu_caps_bringing(const char *cmd, unsigned caps);

/* Decide whether this is a GPU container and, if so, append the injection
 * ops (device nodes, driver files, /proc/driver/nvidia) to plan.  Must be
 * called after the base /proc and /dev ops have been added.  Returns 0, or
 * -1 with err set (exit 125): bad --gpus/--caps, unknown device, unmet
 * requirement, no NVIDIA driver under the driver root. */
int gpu_configure(struct plan *plan, const struct gpu_opts *o, struct gpu_result *res, struct gerr *err);

/* What `gpurun info` shows (gpu/info.c reads it, cli/gpu.c prints it):
 * every string as the driver root's files say it, to be shown, never
 * acted on; NULL where it is not known. */
struct gpu_inventory_gpu {
	unsigned index, minor;
	char *model, *brand, *uuid, *busid, *arch;
	/* Inside a Slurm step with a ceiling: the GPU's index within the
	 * step's allocation, what --gpus N means there; -1 when it is not
	 * allocated to the step, or outside a step. */
	int slurm_index;
};
struct gpu_inventory_mig {
	unsigned gpu, index; /* "<gpu>:<index>", as --gpus selects it */
	unsigned gi, ci;     /* GPU and compute instance ids */
	char *uuid;
};
struct gpu_inventory {
	char *driver_version, *cuda;
	char *slurm_ceiling; /* inside a Slurm step: where its GPUs came from */
	struct gpu_inventory_gpu *gpus;
	size_t ngpus;
	struct gpu_inventory_mig *migs;
	size_t nmigs;
};
/* driver_root: --driver-root, or NULL (GPURUN_DRIVER_ROOT, else "/");
 * mig_uuids: ask the driver root's NVML for the MIG devices' UUIDs.  What
 * cannot be known (the CUDA version, the UUIDs, a Slurm allocation) is a
 * warning on stderr.  0, or -1 with err. */
int gpu_inventory_read(const char *driver_root, int mig_uuids, struct gpu_inventory *inv, struct gerr *err);
void gpu_inventory_free(struct gpu_inventory *inv);

/* What `gpurun list` shows: what a launch with gpus (NULL: all) and
 * caps_spec (NULL: every capability) would inject, by kind, in the order
 * nvidia-container-cli lists them (devices by their /dev path, the rest by
 * host path).  0, or -1 with err. */
struct gpu_listing_gpu {
	unsigned index;  /* in the GPU table (PCI bus order) */
	int slurm_index; /* within a Slurm step's allocation, or -1 */
	char *uuid, *busid;
};
struct gpu_listing {
	struct strv devices, mig_capabilities, binaries, libraries, libraries32, ipcs, firmware, configs;
	struct gpu_listing_gpu *gpus; /* the whole GPUs injected, in index order */
	size_t ngpus;
	char *slurm_ceiling; /* inside a Slurm step: where its GPUs came from */
};
int gpu_listing_read(const char *driver_root, const char *gpus, const char *caps_spec, struct gpu_listing *l,
		     struct gerr *err);
void gpu_listing_free(struct gpu_listing *l);

/* `gpurun doctor`'s driver checks (gpu/doctor.c): the driver, its device
 * nodes, nvidia-uvm, nvidia-persistenced and the ld.so.cache, one verdict
 * each.  driver_root: --driver-root, or NULL.  With gpus (a --gpus SPEC),
 * also that those GPUs are usable end to end: the selection resolves, and
 * NVML and libcuda initialise in the confined helper and see them. */
int gpu_doctor(struct checks *ck, const char *driver_root, const char *gpus);
/* The same without the CDI specs: the driver's checks only. */
void gpu_doctor_driver(struct checks *ck, const char *driver_root, const char *gpus);

/* `gpurun smoke` (gpu/smoke.c): the probe it runs in the container, beside
 * this gpurun in the build tree or in the installed libexec (malloc'ed), or
 * NULL with err when it is missing or, run as root, not root's alone; and
 * the probe's arguments with the host's facts (the Xids the kernel logged
 * since boot, a libcuda of another version than the kernel module's)
 * appended to a.  driver_root: --driver-root, or NULL. */
char *smoke_probe_path(struct gerr *err);
void smoke_probe_args(const char *driver_root, struct strv *a);
/* Can the probe's launch on these GPUs (a --gpus SPEC) happen?  0 yes; 1
 * no, the driver is too broken for it: the reasons appended to a as the
 * probe's --fail=ID,TEXT (doctor's failed driver checks, by their ids, or
 * the launch's own message as "launch") and --kernel-module=VERSION when
 * known; -1 with err when SPEC does not parse (gpurun's own failure). */
int smoke_preflight(const char *driver_root, const char *gpus, struct strv *a, struct gerr *err);

#endif
