/* cli/smoke.c — `gpurun smoke [--gpus SPEC] [--json|--tap] [IMAGE]`: the
 * GPU smoke test a CI job runs, turned into an ordinary `run` of the probe
 * gpurun ships, bound read-only into the container (gpu/smoke.c finds it
 * and the host's facts it gets).  Without IMAGE the container's root is the
 * host's own /, read-only under gpurun's writable layer like any directory
 * image: the probe needs only the C library, and the host's is the one the
 * probe was built against.  Exit status: the probe's (0 all passed, 1 a
 * check failed), 125 gpurun failed. */
#include "cli.h"

#include <stdlib.h>
#include <string.h>

#include "../gpu/gpu.h"

/* clang-format off */
static const struct opt smoke_opts[] = {
	{V_GPUS, "gpus", NULL, 0, OPT_VALUE, "SPEC", "the GPUs to test, as run's --gpus (default all)"},
	{V_JSON, "json", NULL, 0, OPT_FLAG, NULL, "one JSON document (docs/json.md)"},
	{V_TAP, "tap", NULL, 0, OPT_FLAG, NULL, "Test Anything Protocol"},
	{V_DRIVER_ROOT, "driver-root", NULL, 0, OPT_VALUE, "DIR", "where the host driver lives"},
	{V_HELP, "help", NULL, 'h', OPT_FLAG, NULL, "this text"},
	{0},
};
static const struct opt_use smoke_uses[] = {{"smoke", NULL, smoke_opts, " [IMAGE]", 1, 0}};
/* clang-format on */

static void smoke_help(const struct verb *v)
{
	verb_print_uses(stdout, v, "usage: ");
	fputs("\nRun gpurun's GPU smoke test in IMAGE (default: the host's own root) on\n"
	      "the selected GPUs: a CUDA kernel on each, NVML's health, the driver's versions.\n"
	      "Exit status 0 all passed, 1 a check failed, 125 gpurun failed.\n\n",
	      stdout);
	opt_help(stdout, smoke_opts, NULL);
}

static int smoke_verb(const struct verb *v, int argc, char **argv, const char *driver_root)
{
	const char *gpus = "all", *form = NULL, *image = "/", *val;
	const struct opt *o;
	struct gerr err = {0};
	struct opt_state s = OPT_STATE(argc, argv);
	for (int r;;) {
		if ((r = opt_next(&s, smoke_opts, &o, &val, &err)) < 0)
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
		case V_GPUS: gpus = val; break;
		case V_JSON: form = "--json"; break;
		case V_TAP: form = "--tap"; break;
		case V_DRIVER_ROOT: driver_root = val; break;
		case V_HELP: smoke_help(v); return 0;
		}
	}
	_cleanup_free_ char *probe = smoke_probe_path(&err);
	if (!probe)
		gerr_die(&err);
	struct strv a = {0};
	strv_add(&a, xstrdup("run"));
	if (driver_root) {
		strv_add(&a, xstrdup("--driver-root"));
		strv_add(&a, xstrdup(driver_root));
	}
	strv_add(&a, xasprintf("--gpus=%s", gpus));
	strv_add(&a, xasprintf("--volume=%s:/.gpurun-smoke:ro", probe));
	strv_add(&a, xstrdup("--entrypoint=/.gpurun-smoke"));
	strv_add(&a, xstrdup("--"));
	strv_add(&a, xstrdup(image));
	if (form)
		strv_add(&a, xstrdup(form));
	smoke_probe_args(driver_root, &a);
	return run_main((int)a.n, a.v, NULL);
}

const struct verb verb_smoke = {"smoke", smoke_verb, smoke_uses, COUNT_OF(smoke_uses), 1};
