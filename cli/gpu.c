/* cli/gpu.c — the verbs that show the host's GPUs and their CDI view:
 * `gpurun info` and `gpurun list` (what gpu/info.c prints), and `gpurun cdi
 * generate|list` (gpu/cdi/): their options, usage lines and exit status. */
#include "cli.h"

#include <string.h>

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

/* `gpurun info` and `gpurun list`. */
static int gpu_verb(const struct verb *v, int argc, char **argv, const char *driver_root)
{
	int list = !strcmp(v->name, "list");
	struct gpu_query q = {.driver_root = driver_root};
	struct gerr err = {0};
	const char *val;
	const struct opt *o;
	struct opt_state s = OPT_STATE(argc, argv);
	for (int r; (r = verb_next(&s, v, list ? list_opts : info_opts, &o, &val));) {
		if (r == 2)
			return usage_fail(v, "%s: unexpected argument %s", argv[0], val);
		switch (o->id) {
		case V_DRIVER_ROOT: q.driver_root = val; break;
		case V_CSV: q.csv = 1; break;
		case V_JSON: q.json = 1; break;
		case V_GPUS: q.gpus = val; break;
		case V_CAPS: q.caps = val; break;
		}
	}
	if ((list ? gpu_list(&q, &err) : gpu_info(&q, &err)) < 0)
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
