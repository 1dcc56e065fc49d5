/* gpu/nvmlmig.c — MIG UUIDs, asked of the driver root's own NVML.
 *
 * A MIG device's UUID (MIG-<uuid>) is in no file: only NVML knows it.
 * As nvidia-container-cli's driver service does, NVML is loaded in a
 * short-lived child that first chroots into the driver root, so that the
 * root's own libnvidia-ml.so.1 (found through the root's ld.so.cache) runs
 * with that root as / and sees its /proc and /dev.  The child is
 * gpu/helper.c's, as for libcuda: no environment, no fd of ours, dies with
 * its parent, nobody when we are root; unprivileged, the chroot happens in
 * a user namespace of its own (our uid mapped to itself).
 * It answers, over the pipe, each MIG device's parent PCI bus id, GPU and
 * compute instance ids and UUID; mig.c matches them to the MIG devices
 * the capability files show.  Only a MIG-<uuid> selection or `gpurun info`
 * asks: no other launch pays for loading NVML. */
#include "gpu_int.h"

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#define CHILD_TIMEOUT_MS 10000
#define NVML_SUCCESS 0
#define NVML_ERROR_NOT_SUPPORTED 3
#define NVML_ERROR_NOT_FOUND 6
#define NVML_DEVICE_MIG_ENABLE 1
#define UUID_LEN 96

struct header {
	unsigned count; /* records that follow */
};

static struct nvml_mig found[MIG_MAX];

#define SYM(name, type) __typeof__(type) name = (__typeof__(type))dlsym(h, #name)

static void ask_nvml(void *arg, int out)
{
	const char *lib = arg;
	void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
	if (!h)
		helper_fail(out, "%s", dlerror());
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
	    !nvmlDeviceGetMaxMigDeviceCount || !nvmlDeviceGetMigDeviceHandleByIndex || !nvmlDeviceGetGpuInstanceId ||
	    !nvmlDeviceGetComputeInstanceId || !nvmlDeviceGetUUID)
		helper_fail(out, "it lacks an NVML MIG call (driver older than R450?)");
#define CALL(what, call)                                                       \
	do {                                                                   \
		int r_ = (call);                                               \
		if (r_ != NVML_SUCCESS)                                        \
			helper_fail(out, "%s: %s", what, nvmlErrorString(r_)); \
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
				helper_fail(out, "more than %d MIG devices", MIG_MAX);
			struct nvml_mig *f = &found[n++];
			snprintf(f->busid, sizeof f->busid, "%.31s", pci.busId);
			CALL("nvmlDeviceGetGpuInstanceId", nvmlDeviceGetGpuInstanceId(mig, &f->gi));
			CALL("nvmlDeviceGetComputeInstanceId", nvmlDeviceGetComputeInstanceId(mig, &f->ci));
			CALL("nvmlDeviceGetUUID", nvmlDeviceGetUUID(mig, f->uuid, sizeof f->uuid));
			f->uuid[sizeof f->uuid - 1] = '\0';
		}
	}
	CALL("nvmlShutdown", nvmlShutdown());
	struct header hd = {.count = n};
	if (helper_ok(out) == 0 && helper_write(out, &hd, sizeof hd) == 0)
		(void)helper_write(out, found, n * sizeof found[0]);
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
	struct helper hp;
	_cleanup_free_ char *host = NULL;
	struct header h = {0};
	int r = helper_start_lib(&hp, drv, "libnvidia-ml.so", CHILD_TIMEOUT_MS, ask_nvml, &host, err);
	if (r == 0)
		r = helper_read(&hp, &h, sizeof h, err);
	if (r == 0 && h.count > MIG_MAX)
		r = gerr_set(err, 0, "%s: the NVML helper gave %u MIG devices", host, h.count);
	if (r == 0) {
		drv->nvml_migs = xcalloc(h.count ? h.count : 1, sizeof *drv->nvml_migs);
		r = helper_read(&hp, drv->nvml_migs, h.count * sizeof *drv->nvml_migs, err);
		drv->nnvml_migs = r == 0 ? h.count : 0;
	}
	helper_end(&hp);
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
