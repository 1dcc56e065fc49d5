/* cli/cli.h — what the command line's files share: a verb (its name, the
 * function that runs it, its usage lines with their option tables, whether
 * it takes the global --driver-root), one per cli/ file that defines it, and
 * how a verb reports a bad argument and ends.  gpurun.c keeps the one table
 * of verbs that dispatch and --help read.  Only cli/ and gpurun.c decide to
 * exit: the libraries below return errors as values. */
#ifndef GPURUN_CLI_H
#define GPURUN_CLI_H

#include <stdio.h>

#include "../base/opt.h"

struct verb {
	const char *name;
	/* argv[0] is the verb; driver_root the global --driver-root (NULL:
	 * none).  Returns the exit status. */
	int (*run)(const struct verb *v, int argc, char **argv, const char *driver_root);
	const struct opt_use *uses; /* its usage lines (run, version and help: NULL) */
	size_t nuses;
	int driver_root; /* takes the global --driver-root before it */
};

extern const struct verb verb_run, verb_start, verb_info, verb_list, verb_pull, verb_cache, verb_doctor, verb_cdi,
	verb_smoke;
extern const struct verb verb_ps, verb_exec, verb_rm; /* cli/container.c */

/* The run options' part of `gpurun --help`, which gpurun.c prints after
 * every verb's usage lines. */
void cli_run_help(FILE *out);
/* A launch: argv[0] is "run" or gpurun's own name, the options and IMAGE
 * follow; driver_root the global --driver-root.  Returns the exit status,
 * or CLI_HELP for run's --help (and -h alone), which is the whole of
 * `gpurun --help`: the verb table's to print. */
#define CLI_HELP (-1)
int run_main(int argc, char **argv, const char *driver_root);
/* The usage lines of v, the first after lead ("usage: "). */
void verb_print_uses(FILE *out, const struct verb *v, const char *lead);

/* A verb's bad argument: the line (arguments shown, never sent raw to the
 * terminal), then its usage; the status to exit with (125). */
__attribute__((format(printf, 2, 3))) int usage_fail(const struct verb *v, const char *fmt, ...);
/* The next word of a verb other than run: 1 an option (*o, *val), 2 an
 * operand (*val), 0 the end.  --help prints the verb's usage and exits; a
 * bad option ends gpurun with its line and the usage.  argv[0] of s is the
 * verb, or the subcommand of cache and cdi. */
int verb_next(struct opt_state *s, const struct verb *v, const struct opt *tab, const struct opt **o, const char **val);

/* The one line (gerr_format) on stderr, then exit with err's code or 125. */
__attribute__((noreturn)) void gerr_die(const struct gerr *err);
/* "gpurun: <message>" on stderr, then exit(code). */
__attribute__((noreturn, format(printf, 2, 3))) void die(int code, const char *fmt, ...);

/* The options every verb but run may share, with the ids below. */
enum {
	V_HELP = 1,
	V_DRIVER_ROOT,
	V_CSV,
	V_JSON,
	V_GPUS,
	V_CAPS,
	V_PLATFORM,
	V_TLS_VERIFY,
	V_QUIET,
	V_VERBOSE,
	V_MAX_SIZE,
	V_FORMAT,
	V_OUTPUT,
	V_CDI_SPEC_DIR,
	V_TAP
};
#define HELP_OPT                                                       \
	{                                                              \
		V_HELP, "help", NULL, 'h', OPT_FLAG, NULL, "this text" \
	}
#define DRIVER_ROOT_OPT                                                                                \
	{                                                                                              \
		V_DRIVER_ROOT, "driver-root", NULL, 0, OPT_VALUE, "DIR", "where the host driver lives" \
	}
#define JSON_OPT                                                                            \
	{                                                                                   \
		V_JSON, "json", NULL, 0, OPT_FLAG, NULL, "one JSON document (docs/json.md)" \
	}

#endif
