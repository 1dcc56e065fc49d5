/* gpurun.c — the command line's front door: the one table of verbs, which
 * both dispatch and --help read, and the global --driver-root and
 * --dry-run.  Each verb lives in cli/ (cli/run.c is `run`, the default
 * verb, and the story of a launch), with its option tables: a verb's table
 * is its whole interface, its usage lines and its parse come from it
 * (base/opt.h).  Only the command line (this file and cli/) decides to
 * exit; the libraries below it return errors as values. */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"

/* Every verb, in the order --help lists them; run first. */
static const struct verb *const verbs[] = {
	&verb_run, &verb_start, &verb_info, &verb_list,   &verb_pull, &verb_cache,
	&verb_ps,  &verb_exec,  &verb_rm,   &verb_doctor, &verb_cdi,  &verb_smoke,
};

static void usage(FILE *out);

static int version_verb(const struct verb *v, int argc, char **argv, const char *driver_root)
{
	(void)v, (void)argc, (void)argv, (void)driver_root;
	printf("gpurun %s\n", GPURUN_VERSION);
	return 0;
}

static int help_verb(const struct verb *v, int argc, char **argv, const char *driver_root)
{
	(void)v, (void)argc, (void)argv, (void)driver_root;
	usage(stdout);
	return 0;
}

static const struct verb verb_version = {"version", version_verb, NULL, 0, 0};
static const struct verb verb_help = {"help", help_verb, NULL, 0, 0};

static void usage(FILE *out)
{
	fputs("usage: gpurun [run] [OPTIONS] IMAGE[@NAME:TAG] [--] [COMMAND [ARG...]]\n", out);
	for (size_t i = 0; i < COUNT_OF(verbs); i++)
		if (verbs[i]->nuses)
			verb_print_uses(out, verbs[i], "       ");
	fputs("       gpurun version | help\n"
	      "\n"
	      "Run COMMAND in IMAGE (a root file system directory or archive, a `docker save`\n"
	      "archive, an OCI or dir: layout, or docker://REF) in new namespaces, with the\n"
	      "selected NVIDIA GPUs injected; without COMMAND, the image's Entrypoint and Cmd,\n"
	      "or /bin/sh.  Images are unpacked once into a cache.  The reference: gpurun(1).\n"
	      "\n",
	      out);
	cli_run_help(out);
	fputs("\n"
	      "Exit status: the command's; 128+N if it died of signal N; 125 gpurun failed;\n"
	      "126 the command cannot be executed; 127 the command was not found.\n",
	      out);
}

/* The verb argv[i] names exactly, or NULL: an image file called "info" is
 * given as ./info. */
static const struct verb *verb_named(const char *word)
{
	static const struct verb *const more[] = {&verb_version, &verb_help};
	for (size_t i = 0; i < COUNT_OF(verbs); i++)
		if (!strcmp(word, verbs[i]->name))
			return verbs[i];
	for (size_t i = 0; i < COUNT_OF(more); i++)
		if (!strcmp(word, more[i]->name))
			return more[i];
	return NULL;
}

/* Global options before the verb, as nvidia-container-cli takes them
 * (`nvidia-container-cli --root DIR info`): `gpurun --driver-root DIR info`,
 * and --dry-run, which `gpurun --dry-run IMAGE` gives `run`, the default
 * verb, and so gives any verb that has one.  They end where the first
 * other word is.  Returns the index of that word; *root gets the last
 * --driver-root given, *dry_run whether --dry-run was. */
static int global_opts(int argc, char **argv, const char **root, int *dry_run)
{
	enum { G_DRY_RUN = V_DRIVER_ROOT + 1 };
	static const struct opt tab[] = {DRIVER_ROOT_OPT, {G_DRY_RUN, "dry-run", NULL, 0, OPT_FLAG, NULL, NULL}, {0}};
	struct opt_state s = OPT_STATE(argc, argv);
	const struct opt *o;
	const char *v;
	struct gerr err = {0};
	int at = 1;
	while (opt_next(&s, tab, &o, &v, &err) == 1 && !s.cluster) {
		if (o->id == G_DRY_RUN)
			*dry_run = 1;
		else
			*root = v;
		at = s.i;
	}
	return at;
}

/* Whether verb v has a --dry-run of its own (run's is in cli/run.c). */
static int has_dry_run(const struct verb *v)
{
	if (v == &verb_run)
		return 1;
	for (size_t i = 0; i < v->nuses; i++)
		for (const struct opt *o = v->uses[i].tab; o && o->id; o++)
			if (o->name && !strcmp(o->name, "dry-run"))
				return 1;
	return 0;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return GPURUN_EXIT_FAIL;
	}
	/* The global --driver-root is the default of the verb's own (a later
	 * one wins), and reaches `run` the same way. */
	const char *root = NULL;
	int dry_run = 0;
	int at = global_opts(argc, argv, &root, &dry_run);
	const struct verb *v = at < argc ? verb_named(argv[at]) : NULL;
	/* `gpurun [--driver-root DIR] IMAGE ...` */
	int to_run = !v || (root && !v->driver_root);
	if (dry_run && !to_run) {
		/* `gpurun --dry-run exec NAME ...` is `gpurun exec --dry-run NAME ...`. */
		if (!has_dry_run(v))
			die(GPURUN_EXIT_FAIL, "--dry-run: `gpurun %s` has none", v->name);
		char **args = xcalloc((size_t)(argc - at) + 2, sizeof *args);
		args[0] = argv[at];
		args[1] = "--dry-run";
		memcpy(args + 2, argv + at + 1, (size_t)(argc - at - 1) * sizeof *args);
		argc = argc - at + 1;
		argv = args;
		at = 0;
	}
	int status = to_run ? run_main(argc, argv, NULL) : v->run(v, argc - at, argv + at, root);
	if (status == CLI_HELP) {
		usage(stdout);
		return 0;
	}
	return status;
}
