/* gpu/info.c — the `gpurun info` and `gpurun list` verbs.
 *
 * Same fields, order and layout as `nvidia-container-cli info` and `list`
 * (reference §5), so scripts written for those read ours:
 *   info:  "NVRM version:   550.54.14" / "CUDA version:   12.4", then per
 *          GPU a blank line and Device Index, Device Minor, Model, Brand,
 *          GPU UUID, Bus Location, Architecture (labels padded to 15);
 *          --csv: the two headers and comma-separated rows.
 *   list:  control nodes, GPU nodes, binaries, libraries (64-bit, then
 *          32-bit), IPC paths, firmware.  Device nodes print as their
 *          /dev path (as the reference does); everything else as the host
 *          path, i.e. with the driver root in front.
 * Without options, list shows every GPU and every capability, like the
 * reference; --gpus and --caps show exactly what a launch would inject.
 * Where NVML would be asked, the values come from gpu/models.c and the
 * CUDA version from libcuda in a child (gpu/cudaver.c); "n/a" if unknown. */
#include "internal.h"

#include <stdio.h>
#include <string.h>

struct verb_args {
	const char *root;
	const char *gpus;
	const char *caps;
	int csv;
};

static int usage(const char *verb, const char *bad)
{
	FILE *f = bad ? stderr : stdout;
	if (bad)
		fprintf(stderr, "gpurun: %s: unknown option %s\n", verb, bad);
	if (!strcmp(verb, "info"))
		fprintf(f, "usage: gpurun info [--csv] [--driver-root DIR]\n");
	else
		fprintf(f, "usage: gpurun list [--gpus SPEC] [--caps LIST] [--driver-root DIR]\n");
	return bad ? GPURUN_EXIT_FAIL : 0;
}

/* "--opt VALUE" or "--opt=VALUE"; 1 when argv[*i] was that option. */
static int opt_value(int argc, char **argv, int *i, const char *name, const char **out)
{
	size_t n = strlen(name);
	if (strncmp(argv[*i], name, n) != 0)
		return 0;
	if (argv[*i][n] == '=') {
		*out = argv[*i] + n + 1;
		return 1;
	}
	if (argv[*i][n] || *i + 1 >= argc)
		return 0;
	*out = argv[++*i];
	return 1;
}

static int parse_args(int argc, char **argv, int list, struct verb_args *a)
{
	memset(a, 0, sizeof *a);
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help"))
			return usage(argv[0], NULL);
		if (opt_value(argc, argv, &i, "--driver-root", &a->root))
			continue;
		if (!list && !strcmp(argv[i], "--csv")) {
			a->csv = 1;
			continue;
		}
		if (list && (opt_value(argc, argv, &i, "--gpus", &a->gpus) ||
			     opt_value(argc, argv, &i, "--caps", &a->caps)))
			continue;
		return usage(argv[0], argv[i]);
	}
	a->root = gpu_default_root(a->root);
	return -1;
}

int gpu_main_info(int argc, char **argv)
{
	struct verb_args a;
	struct gerr err = {0};
	struct gpu_driver drv = {.rootfd = -1};
	int r = parse_args(argc, argv, 0, &a);
	if (r >= 0)
		return r;
	if (gpu_discover(a.root, &drv, &err) < 0) {
		gpu_driver_free(&drv);
		gerr_die(&err);
	}
	char cuda[32] = "n/a";
	struct gerr why = {0};
	if (cuda_driver_version(&drv, cuda, sizeof cuda, &why) < 0) {
		snprintf(cuda, sizeof cuda, "n/a");
		warnx_("CUDA version unknown: %s", why.msg);
	}
	if (a.csv)
		printf("NVRM version,CUDA version\n%s,%s\n\n"
		       "Device Index,Device Minor,Model,Brand,GPU UUID,Bus Location,Architecture\n",
		       drv.version, cuda);
	else
		printf("%-15s %s\n%-15s %s\n", "NVRM version:", drv.version, "CUDA version:", cuda);
	for (size_t i = 0; i < drv.ngpus; i++) {
		const struct gpu_dev *g = &drv.gpus[i];
		if (a.csv)
			printf("%u,%u,%s,%s,%s,%s,%s\n", g->index, g->minor, g->model, g->brand, g->uuid,
			       g->busid, g->arch);
		else
			printf("\n%-15s %u\n%-15s %u\n%-15s %s\n%-15s %s\n%-15s %s\n%-15s %s\n%-15s %s\n",
			       "Device Index:", g->index, "Device Minor:", g->minor, "Model:", g->model,
			       "Brand:", g->brand, "GPU UUID:", g->uuid, "Bus Location:", g->busid,
			       "Architecture:", g->arch);
	}
	gpu_driver_free(&drv);
	return fflush(stdout) == 0 ? 0 : GPURUN_EXIT_FAIL;
}

static void print_files(const struct inj_file *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		printf("%s\n", v[i].src);
}

int gpu_main_list(int argc, char **argv)
{
	struct verb_args a;
	struct gerr err = {0};
	struct gpu_driver drv = {.rootfd = -1};
	struct gpu_request rq = {0};
	struct gpu_selection sel;
	struct inj_set set = {0};
	unsigned caps = CAP_ALL;
	int r = parse_args(argc, argv, 1, &a);
	if (r >= 0)
		return r;
	r = GPURUN_EXIT_FAIL;
	if (gpu_request_parse(a.gpus ? a.gpus : "all", "--gpus", &rq, &err) < 0 ||
	    (a.caps && caps_parse(a.caps, &caps, &err) < 0))
		goto out;
	if (a.caps && !caps)
		caps = CAP_DEFAULT;
	if (gpu_discover(a.root, &drv, &err) < 0 ||
	    gpu_request_resolve(&rq, drv.gpus, drv.ngpus, "--gpus", a.root, &sel, &err) < 0)
		goto out;
	/* void: nothing would be injected, so nothing is listed. */
	if (sel.kind != SEL_VOID) {
		if (inj_collect(&drv, &sel, caps_inject_flags(caps), &set, &err) < 0)
			goto out;
		for (size_t i = 0; i < set.ndevs; i++)
			printf("%s\n", set.devs[i].dst);
		print_files(set.bins, set.nbins);
		print_files(set.libs, set.nlibs);
		print_files(set.libs32, set.nlibs32);
		print_files(set.ipcs, set.nipcs);
		print_files(set.firmware, set.nfirmware);
	}
	r = fflush(stdout) == 0 ? 0 : GPURUN_EXIT_FAIL;
out:
	inj_free(&set);
	gpu_request_free(&rq);
	gpu_driver_free(&drv);
	if (r && err.msg[0])
		gerr_die(&err);
	return r;
}
