/* cli/gpu.c — the verbs that show the host's GPUs and their CDI view:
 * `gpurun info` and `gpurun list` (what gpu/info.c reads, printed as
 * nvidia-container-cli prints it, or as JSON: docs/json.md), and `gpurun
 * cdi generate|list` (gpu/cdi/): their options, usage lines, output and
 * exit status. */
#include "cli.h"

#include <errno.h>
#include <string.h>

#include "../base/json.h"

#include "../gpu/cdi/cdi.h"
#include "../gpu/gpu.h"

/* clang-format off */
static const struct opt info_opts[] = {
	{V_CSV, "csv", NULL, 0, OPT_FLAG, NULL, "comma-separated values"}, JSON_OPT, DRIVER_ROOT_OPT, HELP_OPT, {0}};
static const struct opt list_opts[] = {
	{V_GPUS, "gpus", NULL, 0, OPT_VALUE, "SPEC", "the GPUs, as run's --gpus"},
	{V_CAPS, "caps", NULL, 0, OPT_VALUE, "LIST", "the driver capabilities, as run's --caps"}, JSON_OPT,
	DRIVER_ROOT_OPT, HELP_OPT, {0}};
static const struct opt cdi_generate_opts[] = {
	DRIVER_ROOT_OPT, {V_FORMAT, "format", NULL, 0, OPT_VALUE, "yaml|json", "the spec's format"},
	{V_OUTPUT, "output", NULL, 0, OPT_VALUE, "FILE", "where to write it (default: stdout)"}, HELP_OPT, {0}};
static const struct opt cdi_list_opts[] = {
	{V_CDI_SPEC_DIR, "cdi-spec-dir", NULL, 0, OPT_VALUE, "DIR", "where CDI specs are (repeatable)"}, HELP_OPT, {0}};
static const struct opt_use info_uses[] = {{"info", NULL, info_opts, "", 1, 0}};
static const struct opt_use list_uses[] = {{"list", NULL, list_opts, "", 1, 0}};
static const struct opt_use cdi_uses[] = {
	{"cdi", "generate", cdi_generate_opts, "", 1, 0},
	{"cdi", "list", cdi_list_opts, "...", 0, 1},
};
/* clang-format on */

/* info --json: the same facts as the table, null where it says "n/a". */
static int info_json(const struct gpu_inventory *inv, struct gerr *err)
{
	json_t *doc = json_object(), *gpus = json_array();
	json_put_text(doc, "driver_version", inv->driver_version);
	json_put_text(doc, "cuda_version", inv->cuda);
	json_put_text(doc, "slurm_ceiling", inv->slurm_ceiling);
	for (size_t i = 0; i < inv->ngpus; i++) {
		const struct gpu_inventory_gpu *g = &inv->gpus[i];
		json_t *o = json_object(), *migs = json_array();
		json_object_set_new(o, "index", json_integer(g->index));
		json_object_set_new(o, "minor", json_integer(g->minor));
		json_put_text(o, "model", g->model);
		json_put_text(o, "brand", g->brand);
		json_put_text(o, "uuid", g->uuid);
		json_put_text(o, "bus_location", g->busid);
		json_put_text(o, "architecture", g->arch);
		json_object_set_new(o, "slurm_index", g->slurm_index < 0 ? json_null() : json_integer(g->slurm_index));
		for (size_t m = 0; m < inv->nmigs; m++) {
			const struct gpu_inventory_mig *d = &inv->migs[m];
			if (d->gpu != g->index)
				continue;
			json_t *mo = json_object();
			json_object_set_new(mo, "index", json_integer(d->index));
			json_put_text(mo, "uuid", d->uuid);
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

/* `gpurun info`: nvidia-container-cli's fields, order and layout (labels
 * padded to 15; --csv: the two headers and comma-separated rows), so that
 * scripts written for it read ours, and gpurun's own "Slurm ceiling:" and
 * "MIG Device:" lines.  The driver root's words are shown, never sent raw
 * to the terminal. */
static void info_table(const struct gpu_inventory *inv, int csv)
{
	_cleanup_free_ char *version = xvisible(inv->driver_version);
	const char *cuda = inv->cuda ? inv->cuda : "n/a";
	if (csv)
		printf("NVRM version,CUDA version\n%s,%s\n\n"
		       "Device Index,Device Minor,Model,Brand,GPU UUID,Bus Location,Architecture\n",
		       version, cuda);
	else
		printf("%-15s %s\n%-15s %s\n", "NVRM version:", version, "CUDA version:", cuda);
	if (inv->slurm_ceiling && !csv)
		printf("%-15s %s\n", "Slurm ceiling:", inv->slurm_ceiling);
	for (size_t i = 0; i < inv->ngpus; i++) {
		const struct gpu_inventory_gpu *g = &inv->gpus[i];
		_cleanup_free_ char *uuid = xvisible(g->uuid ? g->uuid : "n/a");
		_cleanup_free_ char *model = xvisible(g->model), *brand = xvisible(g->brand);
		_cleanup_free_ char *busid = xvisible(g->busid), *arch = xvisible(g->arch ? g->arch : "n/a");
		if (csv)
			printf("%u,%u,%s,%s,%s,%s,%s\n", g->index, g->minor, model, brand, uuid, busid, arch);
		else
			printf("\n%-15s %u\n%-15s %u\n%-15s %s\n%-15s %s\n%-15s %s\n%-15s %s\n%-15s %s\n",
			       "Device Index:", g->index, "Device Minor:", g->minor, "Model:", model, "Brand:", brand,
			       "GPU UUID:", uuid, "Bus Location:", busid, "Architecture:", arch);
		/* gpurun's own line in a Slurm step: what --gpus N means there. */
		if (inv->slurm_ceiling && !csv && g->slurm_index >= 0)
			printf("%-15s %d\n", "Slurm Index:", g->slurm_index);
		else if (inv->slurm_ceiling && !csv)
			printf("%-15s %s\n", "Slurm Index:", "n/a (not allocated to this step)");
		/* MIG devices, by the names gpurun selects them with. */
		for (size_t m = 0; m < inv->nmigs && !csv; m++) {
			const struct gpu_inventory_mig *d = &inv->migs[m];
			if (d->gpu != g->index)
				continue;
			_cleanup_free_ char *muuid = xvisible(d->uuid ? d->uuid : "n/a");
			printf("%-15s %u:%u %s (GPU instance %u, compute instance %u)\n", "MIG Device:", g->index,
			       d->index, muuid, d->gi, d->ci);
		}
	}
}

static json_t *paths_json(const struct strv *v)
{
	json_t *a = json_array();
	for (size_t i = 0; i < v->n; i++)
		json_array_append_new(a, json_text(v->v[i]));
	return a;
}

/* list --json: the same paths as the text, by kind, in the same order,
 * then the GPUs they belong to and a Slurm step's ceiling. */
static int list_json(const struct gpu_listing *l, struct gerr *err)
{
	json_t *doc = json_object();
	json_object_set_new(doc, "devices", paths_json(&l->devices));
	json_object_set_new(doc, "mig_capabilities", paths_json(&l->mig_capabilities));
	json_object_set_new(doc, "binaries", paths_json(&l->binaries));
	json_object_set_new(doc, "libraries", paths_json(&l->libraries));
	json_object_set_new(doc, "libraries32", paths_json(&l->libraries32));
	json_object_set_new(doc, "ipcs", paths_json(&l->ipcs));
	json_object_set_new(doc, "firmware", paths_json(&l->firmware));
	json_object_set_new(doc, "configs", paths_json(&l->configs));
	json_t *gpus = json_array();
	for (size_t i = 0; i < l->ngpus; i++) {
		const struct gpu_listing_gpu *g = &l->gpus[i];
		json_t *o = json_object();
		json_object_set_new(o, "index", json_integer(g->index));
		json_object_set_new(o, "slurm_index", g->slurm_index < 0 ? json_null() : json_integer(g->slurm_index));
		json_put_text(o, "uuid", g->uuid);
		json_put_text(o, "bus_location", g->busid);
		json_array_append_new(gpus, o);
	}
	json_object_set_new(doc, "gpus", gpus);
	json_put_text(doc, "slurm_ceiling", l->slurm_ceiling);
	return json_print(doc, err);
}

/* `gpurun list`: one path a line, as nvidia-container-cli lists them. */
static void list_lines(const struct gpu_listing *l)
{
	const struct strv *kinds[] = {&l->devices, &l->mig_capabilities, &l->binaries, &l->libraries, &l->libraries32,
				      &l->ipcs,    &l->firmware,         &l->configs};
	for (size_t k = 0; k < COUNT_OF(kinds); k++)
		for (size_t i = 0; i < kinds[k]->n; i++) {
			_cleanup_free_ char *shown = xvisible(kinds[k]->v[i]);
			printf("%s\n", shown);
		}
}

/* `gpurun info` and `gpurun list`. */
static int gpu_verb(const struct verb *v, int argc, char **argv, const char *driver_root)
{
	int list = !strcmp(v->name, "list"), csv = 0, json = 0, r;
	const char *gpus = NULL, *caps = NULL, *val;
	struct gerr err = {0};
	const struct opt *o;
	struct opt_state s = OPT_STATE(argc, argv);
	for (int w; (w = verb_next(&s, v, list ? list_opts : info_opts, &o, &val));) {
		if (w == 2)
			return usage_fail(v, "%s: unexpected argument %s", argv[0], val);
		switch (o->id) {
		case V_DRIVER_ROOT: driver_root = val; break;
		case V_CSV: csv = 1; break;
		case V_JSON: json = 1; break;
		case V_GPUS: gpus = val; break;
		case V_CAPS: caps = val; break;
		}
	}
	if (list) {
		struct gpu_listing l;
		r = gpu_listing_read(driver_root, gpus, caps, &l, &err);
		if (r == 0 && json)
			r = list_json(&l, &err);
		else if (r == 0)
			list_lines(&l);
		gpu_listing_free(&l);
	} else {
		struct gpu_inventory inv;
		r = gpu_inventory_read(driver_root, !csv, &inv, &err);
		if (r == 0 && json)
			r = info_json(&inv, &err);
		else if (r == 0)
			info_table(&inv, csv);
		gpu_inventory_free(&inv);
	}
	if (r == 0 && !json && fflush(stdout) != 0)
		r = gerr_set(&err, errno, list ? "write the list" : "write the table");
	if (r < 0)
		gerr_die(&err);
	return 0;
}

/* `gpurun cdi generate|list`; argv[0] is the subcommand. */
static int cdi_verb(const struct verb *v, int argc, char **argv, const char *driver_root)
{
	argc--; /* "cdi SUB": argv[0] is now the subcommand */
	argv++;
	struct gerr err = {0};
	const char *sub = argc ? argv[0] : "";
	if (!strcmp(sub, "-h") || !strcmp(sub, "--help")) {
		verb_print_uses(stdout, v, "usage: ");
		return 0;
	}
	int gen = !strcmp(sub, "generate");
	if (!gen && strcmp(sub, "list")) {
		if (!argc)
			return usage_fail(v, "cdi: missing command (generate or list)");
		die(GPURUN_EXIT_FAIL, "cdi: unknown command '%s' (expected generate or list)", sub);
	}
	struct cdi_gen_opts go = {.driver_root = driver_root};
	struct strv given = {0}, dirs = {0};
	const char *val;
	const struct opt *o;
	struct opt_state s = OPT_STATE(argc, argv);
	for (int r; (r = verb_next(&s, v, gen ? cdi_generate_opts : cdi_list_opts, &o, &val));) {
		if (r == 2)
			return usage_fail(v, "cdi %s: unexpected argument %s", sub, val);
		switch (o->id) {
		case V_DRIVER_ROOT: go.driver_root = val; break;
		case V_FORMAT: go.format = val; break;
		case V_OUTPUT: go.output = val; break;
		case V_CDI_SPEC_DIR: strv_add(&given, xstrdup(val)); break;
		}
	}
	int r;
	if (gen) {
		r = cdi_generate(&go, &err);
	} else {
		cdi_spec_dirs(given.v, given.n, &dirs);
		r = cdi_list(&dirs, &err);
	}
	strv_free(&given);
	strv_free(&dirs);
	if (r < 0)
		gerr_die(&err);
	return 0;
}

const struct verb verb_info = {"info", gpu_verb, info_uses, COUNT_OF(info_uses), 1};
const struct verb verb_list = {"list", gpu_verb, list_uses, COUNT_OF(list_uses), 1};
const struct verb verb_cdi = {"cdi", cdi_verb, cdi_uses, COUNT_OF(cdi_uses), 1};
