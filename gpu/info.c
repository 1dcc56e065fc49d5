/* gpu/info.c — what the `gpurun info` and `gpurun list` verbs print (their
 * options are read by gpurun.c).
 *
 * Same fields, order and layout as `nvidia-container-cli info` and `list`,
 * so scripts written for those read ours:
 *   info:  "NVRM version:   550.54.14" / "CUDA version:   12.4", then per
 *          GPU a blank line and Device Index, Device Minor, Model, Brand,
 *          GPU UUID, Bus Location, Architecture (labels padded to 15), and
 *          gpurun's own "MIG Device:" line per MIG device, with its UUID
 *          from the driver root's NVML (gpu/nvmlmig.c); --csv: the two headers and comma-separated rows.
 *   list:  control nodes, GPU nodes, MIG capability and IMEX nodes, MIG
 *          capability files, binaries, libraries (64-bit, then 32-bit), IPC
 *          paths, firmware, graphics JSON files.  Device nodes print as their
 *          /dev path (as the reference does); everything else as the host
 *          path, i.e. with the driver root in front.
 * Without options, list shows every GPU and every capability, like the
 * reference; --gpus and --caps show exactly what a launch would inject.
 * Where NVML would be asked, the values come from gpu/models.c and the
 * CUDA version from libcuda in a child (gpu/cudaver.c); "n/a" if unknown.
 * --json: the same facts as one document each (docs/json.md), null where
 * the table says "n/a", the lists of `list` by kind. */
#include "gpu_int.h"

#include "../base/json.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

static int info_json(const struct gpu_driver *drv, const char *cuda, struct gerr *err)
{
	json_t *doc = json_object(), *gpus = json_array();
	json_put_text(doc, "driver_version", drv->version);
	json_put_text(doc, "cuda_version", cuda);
	for (size_t i = 0; i < drv->ngpus; i++) {
		const struct gpu_dev *g = &drv->gpus[i];
		json_t *o = json_object(), *migs = json_array();
		json_object_set_new(o, "index", json_integer(g->index));
		json_object_set_new(o, "minor", json_integer(g->minor));
		json_put_text(o, "model", g->model);
		json_put_text(o, "brand", g->brand);
		json_put_text(o, "uuid", g->uuid[0] ? g->uuid : NULL);
		json_put_text(o, "bus_location", g->busid);
		json_put_text(o, "architecture", strcmp(g->arch, "n/a") ? g->arch : NULL);
		for (size_t m = 0; m < drv->nmigs; m++) {
			const struct mig_dev *d = &drv->migs[m];
			if (d->gpu != g->index)
				continue;
			json_t *mo = json_object();
			json_object_set_new(mo, "index", json_integer(d->index));
			json_put_text(mo, "uuid", d->uuid[0] ? d->uuid : NULL);
			json_object_set_new(mo, "gpu_instance", json_integer(d->gi));
			json_object_set_new(mo, "compute_instance", json_integer(d->ci));
			json_array_append_new(migs, mo);
		}
		json_object_set_new(o, "mig_devices", migs);
		json_array_append_new(gpus, o);
	}
	json_object_set_new(doc, "gpus", gpus);
	return json_print(doc, err);
}

int gpu_info(const struct gpu_query *q, struct gerr *err)
{
	struct gpu_driver drv = {.rootfd = -1};
	if (gpu_discover(gpu_default_root(q->driver_root), &drv, err) < 0 || mig_discover(&drv, err) < 0) {
		gpu_driver_free(&drv);
		return -1;
	}
	char cuda[32] = "n/a";
	struct gerr why = {0};
	if (cuda_driver_version(&drv, cuda, sizeof cuda, &why) < 0) {
		snprintf(cuda, sizeof cuda, "n/a");
		warnx_("CUDA version unknown: %s", why.msg);
	}
	/* MIG UUIDs only NVML knows; a host without MIG devices does not ask. */
	struct gerr nowhy = {0};
	if (drv.nmigs && !q->csv && nvml_mig_uuids(&drv, &nowhy) < 0)
		warnx_("MIG UUIDs unknown: %s", nowhy.msg);
	if (q->json) {
		int r = info_json(&drv, strcmp(cuda, "n/a") ? cuda : NULL, err);
		gpu_driver_free(&drv);
		return r;
	}
	_cleanup_free_ char *version = xvisible(drv.version);
	if (q->csv)
		printf("NVRM version,CUDA version\n%s,%s\n\n"
		       "Device Index,Device Minor,Model,Brand,GPU UUID,Bus Location,Architecture\n",
		       version, cuda);
	else
		printf("%-15s %s\n%-15s %s\n", "NVRM version:", version, "CUDA version:", cuda);
	/* gpurun's own line: inside a Slurm step, the GPUs a launch may have. */
	struct slurm_ceiling ceil;
	struct gerr swhy = {0};
	if (slurm_ceiling_read(&drv, &ceil, &swhy) < 0)
		warnx_("Slurm allocation unknown: %s", swhy.msg);
	else if (ceil.active && !q->csv)
		printf("%-15s %s\n", "Slurm ceiling:", ceil.from);
	for (size_t i = 0; i < drv.ngpus; i++) {
		const struct gpu_dev *g = &drv.gpus[i];
		/* Read from the driver root's files: shown, never acted on. */
		_cleanup_free_ char *uuid = xvisible(g->uuid[0] ? g->uuid : "n/a");
		_cleanup_free_ char *model = xvisible(g->model), *brand = xvisible(g->brand);
		_cleanup_free_ char *busid = xvisible(g->busid), *arch = xvisible(g->arch);
		if (q->csv)
			printf("%u,%u,%s,%s,%s,%s,%s\n", g->index, g->minor, model, brand, uuid, busid, arch);
		else
			printf("\n%-15s %u\n%-15s %u\n%-15s %s\n%-15s %s\n%-15s %s\n%-15s %s\n%-15s %s\n",
			       "Device Index:", g->index, "Device Minor:", g->minor, "Model:", model, "Brand:", brand,
			       "GPU UUID:", uuid, "Bus Location:", busid, "Architecture:", arch);
		/* MIG devices, by the names gpurun selects them with. */
		for (size_t m = 0; m < drv.nmigs && !q->csv; m++)
			if (drv.migs[m].gpu == g->index)
				printf("%-15s %u:%u %s (GPU instance %u, compute instance %u)\n",
				       "MIG Device:", g->index, drv.migs[m].index,
				       drv.migs[m].uuid[0] ? drv.migs[m].uuid : "n/a", drv.migs[m].gi, drv.migs[m].ci);
	}
	gpu_driver_free(&drv);
	if (fflush(stdout) != 0)
		return gerr_set(err, errno, "write the table");
	return 0;
}

static json_t *files_json(const struct inj_file *v, size_t n)
{
	json_t *a = json_array();
	for (size_t i = 0; i < n; i++)
		json_array_append_new(a, json_text(v[i].src));
	return a;
}

/* list --json: the same paths as the text, by kind, in the same order. */
static int list_json(const struct inj_set *set, struct gerr *err)
{
	json_t *doc = json_object(), *devs = json_array();
	for (size_t i = 0; i < set->ndevs; i++)
		json_array_append_new(devs, json_text(set->devs[i].dst));
	json_object_set_new(doc, "devices", devs);
	json_object_set_new(doc, "mig_capabilities", files_json(set->caps, set->ncaps));
	json_object_set_new(doc, "binaries", files_json(set->bins, set->nbins));
	json_object_set_new(doc, "libraries", files_json(set->libs, set->nlibs));
	json_object_set_new(doc, "libraries32", files_json(set->libs32, set->nlibs32));
	json_object_set_new(doc, "ipcs", files_json(set->ipcs, set->nipcs));
	json_object_set_new(doc, "firmware", files_json(set->firmware, set->nfirmware));
	json_object_set_new(doc, "configs", files_json(set->configs, set->nconfigs));
	return json_print(doc, err);
}

static void print_files(const struct inj_file *v, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		_cleanup_free_ char *src = xvisible(v[i].src);
		printf("%s\n", src);
	}
}

int gpu_list(const struct gpu_query *q, struct gerr *err)
{
	const char *root = gpu_default_root(q->driver_root);
	struct gpu_driver drv = {.rootfd = -1};
	struct gpu_request rq = {0};
	struct gpu_selection sel;
	struct inj_set set = {0};
	unsigned caps = DRVCAP_ALL;
	int r = -1;
	if (gpu_request_parse(q->gpus ? q->gpus : "all", "--gpus", &rq, err) < 0 ||
	    (q->caps && caps_parse(q->caps, &caps, err) < 0))
		goto out;
	if (q->caps && !caps)
		caps = DRVCAP_DEFAULT;
	if (gpu_discover(root, &drv, err) < 0 || gpu_select(&rq, &drv, "--gpus", root, NULL, 0, &sel, err) < 0)
		goto out;
	/* void: nothing would be injected, so nothing is listed. */
	if (sel.kind != SEL_VOID && inj_collect_all(&drv, &sel, caps_inject_flags(caps), &set, err) < 0)
		goto out;
	if (q->json) {
		r = list_json(&set, err);
		goto out;
	}
	if (sel.kind != SEL_VOID) {
		for (size_t i = 0; i < set.ndevs; i++) {
			_cleanup_free_ char *dst = xvisible(set.devs[i].dst);
			printf("%s\n", dst);
		}
		print_files(set.caps, set.ncaps);
		print_files(set.bins, set.nbins);
		print_files(set.libs, set.nlibs);
		print_files(set.libs32, set.nlibs32);
		print_files(set.ipcs, set.nipcs);
		print_files(set.firmware, set.nfirmware);
		print_files(set.configs, set.nconfigs);
	}
	r = fflush(stdout) == 0 ? 0 : gerr_set(err, errno, "write the list");
out:
	inj_free(&set);
	gpu_request_free(&rq);
	gpu_driver_free(&drv);
	return r;
}
