/* gpu/info.c — what `gpurun info` and `gpurun list` show, read from the
 * driver root into plain values that cli/gpu.c prints (as
 * `nvidia-container-cli info` and `list` print them, or as JSON).
 *   info:  the driver's version, the CUDA version, the GPU table and its
 *          MIG devices with their UUIDs from the driver root's NVML
 *          (gpu/nvmlmig.c), and a Slurm step's ceiling with each GPU's
 *          index within the step's allocation.
 *   list:  control nodes, GPU nodes, MIG capability and IMEX nodes, MIG
 *          capability files, binaries, libraries (64-bit, then 32-bit), IPC
 *          paths, firmware, graphics JSON files; and the GPUs injected.  Device nodes are their
 *          /dev path (as the reference prints them); everything else the
 *          host path, i.e. with the driver root in front.
 * Without --gpus and --caps, list takes every GPU and every capability,
 * like the reference; with them, exactly what a launch would inject.
 * Where NVML would be asked, the values come from gpu/models.c and the
 * CUDA version from libcuda in a child (gpu/cudaver.c); NULL if unknown.
 * What cannot be known is a warning, never a failure: the table is still
 * worth having. */
#include "gpu_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A GPU's index within the step's allocation (ceil->gpu is in index
 * order, as CUDA_VISIBLE_DEVICES counts there), or -1. */
static int slurm_index_of(const struct slurm_ceiling *ceil, unsigned gpu)
{
	for (size_t i = 0; ceil->active && i < ceil->n; i++)
		if (ceil->gpu[i] == gpu)
			return (int)i;
	return -1;
}

int gpu_inventory_read(const char *driver_root, int mig_uuids, struct gpu_inventory *inv, struct gerr *err)
{
	struct gpu_driver drv = {.rootfd = -1};
	memset(inv, 0, sizeof *inv);
	if (gpu_discover(gpu_default_root(driver_root), &drv, err) < 0 || mig_discover(&drv, err) < 0) {
		gpu_driver_free(&drv);
		return -1;
	}
	char cuda[32];
	struct gerr why = {0};
	if (cuda_driver_version(&drv, cuda, sizeof cuda, &why) < 0)
		warnx_("CUDA version unknown: %s", why.msg);
	else
		inv->cuda = xstrdup(cuda);
	/* MIG UUIDs only NVML knows; a host without MIG devices does not ask. */
	struct gerr nowhy = {0};
	if (drv.nmigs && mig_uuids && nvml_mig_uuids(&drv, &nowhy) < 0)
		warnx_("MIG UUIDs unknown: %s", nowhy.msg);
	struct slurm_ceiling ceil;
	struct gerr swhy = {0};
	if (slurm_ceiling_read(&drv, &ceil, &swhy) < 0) {
		warnx_("Slurm allocation unknown: %s", swhy.msg);
		ceil.active = 0;
	} else if (ceil.active) {
		inv->slurm_ceiling = xstrdup(ceil.from);
	}
	inv->driver_version = xstrdup(drv.version);
	inv->gpus = xcalloc(drv.ngpus ? drv.ngpus : 1, sizeof *inv->gpus);
	for (size_t i = 0; i < drv.ngpus; i++) {
		const struct gpu_dev *g = &drv.gpus[i];
		inv->gpus[i] = (struct gpu_inventory_gpu){
			.index = g->index,
			.minor = g->minor,
			.model = xstrdup(g->model),
			.brand = xstrdup(g->brand),
			.uuid = g->uuid[0] ? xstrdup(g->uuid) : NULL,
			.busid = xstrdup(g->busid),
			.arch = strcmp(g->arch, "n/a") ? xstrdup(g->arch) : NULL,
			.slurm_index = slurm_index_of(&ceil, g->index),
		};
	}
	inv->ngpus = drv.ngpus;
	inv->migs = xcalloc(drv.nmigs ? drv.nmigs : 1, sizeof *inv->migs);
	for (size_t m = 0; m < drv.nmigs; m++) {
		const struct mig_dev *d = &drv.migs[m];
		inv->migs[m] = (struct gpu_inventory_mig){
			.gpu = d->gpu,
			.index = d->index,
			.gi = d->gi,
			.ci = d->ci,
			.uuid = d->uuid[0] ? xstrdup(d->uuid) : NULL,
		};
	}
	inv->nmigs = drv.nmigs;
	gpu_driver_free(&drv);
	return 0;
}

void gpu_inventory_free(struct gpu_inventory *inv)
{
	for (size_t i = 0; i < inv->ngpus; i++) {
		struct gpu_inventory_gpu *g = &inv->gpus[i];
		free(g->model);
		free(g->brand);
		free(g->uuid);
		free(g->busid);
		free(g->arch);
	}
	for (size_t m = 0; m < inv->nmigs; m++)
		free(inv->migs[m].uuid);
	free(inv->gpus);
	free(inv->migs);
	free(inv->driver_version);
	free(inv->cuda);
	free(inv->slurm_ceiling);
	memset(inv, 0, sizeof *inv);
}

static void add_files(struct strv *to, const struct inj_file *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		strv_add(to, xstrdup(v[i].src));
}

int gpu_listing_read(const char *driver_root, const char *gpus, const char *caps_spec, struct gpu_listing *l,
		     struct gerr *err)
{
	const char *root = gpu_default_root(driver_root);
	struct gpu_driver drv = {.rootfd = -1};
	struct gpu_request rq = {0};
	struct gpu_selection sel;
	struct inj_set set = {0};
	unsigned caps = DRVCAP_ALL;
	int r = -1;
	memset(l, 0, sizeof *l);
	if (gpu_request_parse(gpus ? gpus : "all", "--gpus", &rq, err) < 0 ||
	    (caps_spec && caps_parse(caps_spec, &caps, err) < 0))
		goto out;
	if (caps_spec && !caps)
		caps = DRVCAP_DEFAULT;
	if (gpu_discover(root, &drv, err) < 0 || gpu_select(&rq, &drv, "--gpus", root, NULL, 0, &sel, err) < 0)
		goto out;
	/* void: nothing would be injected, so nothing is listed. */
	if (sel.kind != SEL_VOID) {
		if (inj_collect_all(&drv, &sel, caps_inject_flags(caps), &set, err) < 0)
			goto out;
		for (size_t i = 0; i < set.ndevs; i++)
			strv_add(&l->devices, xstrdup(set.devs[i].dst));
		add_files(&l->mig_capabilities, set.caps, set.ncaps);
		add_files(&l->binaries, set.bins, set.nbins);
		add_files(&l->libraries, set.libs, set.nlibs);
		add_files(&l->libraries32, set.libs32, set.nlibs32);
		add_files(&l->ipcs, set.ipcs, set.nipcs);
		add_files(&l->firmware, set.firmware, set.nfirmware);
		add_files(&l->configs, set.configs, set.nconfigs);
		struct slurm_ceiling ceil;
		struct gerr swhy = {0};
		if (slurm_ceiling_read(&drv, &ceil, &swhy) < 0)
			ceil.active = 0; /* the selection above has said why already */
		else if (ceil.active)
			l->slurm_ceiling = xstrdup(ceil.from);
		l->gpus = xcalloc(drv.ngpus ? drv.ngpus : 1, sizeof *l->gpus);
		for (size_t i = 0; i < drv.ngpus; i++) {
			const struct gpu_dev *g = &drv.gpus[i];
			if (!sel.mask[g->index])
				continue;
			l->gpus[l->ngpus++] = (struct gpu_listing_gpu){
				.index = g->index,
				.slurm_index = slurm_index_of(&ceil, g->index),
				.uuid = g->uuid[0] ? xstrdup(g->uuid) : NULL,
				.busid = xstrdup(g->busid),
			};
		}
	}
	r = 0;
out:
	inj_free(&set);
	gpu_request_free(&rq);
	gpu_driver_free(&drv);
	return r;
}

void gpu_listing_free(struct gpu_listing *l)
{
	struct strv *all[] = {&l->devices, &l->mig_capabilities, &l->binaries, &l->libraries, &l->libraries32,
			      &l->ipcs,    &l->firmware,         &l->configs};
	for (size_t i = 0; i < COUNT_OF(all); i++)
		strv_free(all[i]);
	for (size_t i = 0; i < l->ngpus; i++) {
		free(l->gpus[i].uuid);
		free(l->gpus[i].busid);
	}
	free(l->gpus);
	free(l->slurm_ceiling);
	memset(l, 0, sizeof *l);
}
