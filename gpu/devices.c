/* gpu/devices.c — the devices of one launch on one driver, GPUs and MIG
 * devices together: which ones (gpu_select) and the set of nodes and files
 * they bring (inj_collect_all).
 *
 * These two join the GPU table's side (select.c, files.c) and the MIG and
 * IMEX side (mig.c), which uses the GPU side's calls: kept above both, so
 * that calls go one way (in select.c or files.c they would make a circle
 * through mig.c). */
#include "gpu_int.h"

#include <stdio.h>
#include <string.h>

int gpu_select(const struct gpu_request *rq, struct gpu_driver *drv, const char *what, const char *where,
	       const struct sel_extras *x, int keep, struct gpu_selection *sel, struct gerr *err)
{
	int cfg = 0, mon = 0;
	unsigned imex[IMEX_MAX];
	size_t nimex = 0;
	if (keep) {
		cfg = sel->mig_config;
		mon = sel->mig_monitor;
		nimex = sel->nimex;
		memcpy(imex, sel->imex, sizeof imex);
	}
	if (!drv->migs && mig_discover(drv, err) < 0)
		return -1;
	/* In a Slurm step, its allocation bounds everything below (slurm.c). */
	struct slurm_ceiling ceil;
	if (rq->kind == SEL_SOME && slurm_ceiling_read(drv, &ceil, err) < 0)
		return -1;
	int bounded = rq->kind == SEL_SOME && ceil.active;
	if (bounded ? slurm_resolve(rq, drv, &ceil, what, sel, err) < 0
		    : gpu_request_resolve(rq, drv->gpus, drv->ngpus, drv->nexcluded, what, where, sel, err) < 0)
		return -1;
	if (bounded)
		snprintf(sel->ceiling, sizeof sel->ceiling, "%s", ceil.from);
	size_t nmig = 0;
	if (rq->kind == SEL_SOME && rq->all) {
		for (size_t i = 0; i < drv->nmigs; i++)
			sel->migmask[i] = !bounded || slurm_ceiling_allows(&ceil, drv->migs[i].gpu);
	} else if (rq->kind == SEL_SOME && rq->count < 0) {
		for (size_t i = 0; i < rq->items.n; i++) {
			char item[128];
			if (!gpu_item_is_mig(rq->items.v[i]))
				continue;
			long m = -1;
			if (bounded && slurm_ceiling_item(&ceil, rq->items.v[i], item, sizeof item) < 0)
				slurm_outside(&ceil, what, rq->items.v[i], err);
			else if ((m = mig_match(bounded ? item : rq->items.v[i], drv, what, where, err)) >= 0 &&
				 bounded && !slurm_ceiling_allows(&ceil, drv->migs[m].gpu))
				m = slurm_outside(&ceil, what, rq->items.v[i], err);
			if (m < 0 && bounded && strcmp(item, rq->items.v[i]))
				gerr_prefix(err, "%.64s in this Slurm step is %s on the node", rq->items.v[i], item);
			if (m < 0)
				return -1;
			sel->migmask[m] = 1;
			sel->mask[drv->migs[m].gpu] = 1; /* its parent GPU comes along */
			nmig++;
		}
	}
	if (keep) {
		sel->mig_config = cfg;
		sel->mig_monitor = mon;
		sel->nimex = nimex;
		memcpy(sel->imex, imex, sizeof imex);
		return 0;
	}
	if (!x)
		return 0;
	if (mig_parse_all(x->mig_config, "NVIDIA_MIG_CONFIG_DEVICES", &sel->mig_config, err) < 0 ||
	    mig_parse_all(x->mig_monitor, "NVIDIA_MIG_MONITOR_DEVICES", &sel->mig_monitor, err) < 0 ||
	    mig_parse_imex(x->imex, sel->imex, &sel->nimex, err) < 0)
		return -1;
	if (nmig && (sel->mig_config || sel->mig_monitor))
		return gerr_set(err, 0, "%s: all: cannot enable mig-%s with specific MIG devices selected",
				sel->mig_config ? "NVIDIA_MIG_CONFIG_DEVICES" : "NVIDIA_MIG_MONITOR_DEVICES",
				sel->mig_config ? "config" : "monitor");
	return 0;
}

int inj_collect_all(struct gpu_driver *drv, const struct gpu_selection *sel, unsigned inj, struct inj_set *set,
		    struct gerr *err)
{
	return inj_collect(drv, sel, inj, set, err) < 0 ? -1 : mig_collect(drv, sel, set, err);
}
