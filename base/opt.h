/* base/opt.h — the one option parser of every verb: a verb describes its
 * options once, as a table of struct opt, and the same table parses the
 * words (opt_next) and writes the verb's usage (opt_help,
 * opt_print_uses), so that --help cannot drift from what is accepted; and
 * docker's options gpurun refuses, as such a table.  Also the values
 * options share: sizes, -e, --env-file, --ulimit, --tls-verify, and the
 * environment and argv lists they fill.  Parsing only: errors come back as
 * values, the caller decides to exit. */
#ifndef GPURUN_OPT_H
#define GPURUN_OPT_H

#include <stdio.h>
#include <sys/resource.h>

#include "base.h"

enum opt_arg {
	OPT_FLAG,     /* no value; "--flag=x" is refused */
	OPT_VALUE,    /* "--opt VALUE", "--opt=VALUE", "-o VALUE", "-oVALUE" */
	OPT_OPTIONAL, /* a value only as "--opt=VALUE" (podman's --tls-verify) */
	OPT_CHOICE,   /* as OPT_VALUE, one of value's words ("host|private") */
	OPT_REFUSED,  /* docker's option that gpurun does not have: help is the
		       * one line saying what gpurun does instead */
};

struct opt {
	int id;            /* what the verb switches on; 0 ends the table */
	const char *name;  /* long name without "--", or NULL */
	const char *alias; /* another long name (docker's spelling), or NULL */
	char letter;       /* short name, or 0 */
	enum opt_arg arg;
	const char *value; /* the value's name in the usage ("SPEC") */
	const char *help;  /* the usage text, "\n" between lines; NULL: not shown */
};

/* Where the parse of argv is.  Start with OPT_STATE(argc, argv): word 0 is
 * the verb, skipped. */
struct opt_state {
	int argc;
	char **argv;
	int i;                  /* the next word */
	const char *cluster;    /* the letters left of a group such as "-it" */
	int ended;              /* "--" was seen: no more options */
	int value_word;         /* the index of the last value that was a word of
			      * its own (--gpus VALUE), else 0 */
	char typed[64];         /* the last option as typed: "-h", "--network" */
	const struct opt *also; /* a second table, looked up after tab (or NULL) */
};
#define OPT_STATE(c, v)                          \
	{                                        \
		.argc = (c), .argv = (v), .i = 1 \
	}

/* The next option of tab in s.  1: *o is its entry and *val its value
 * (NULL for a flag, or an OPT_OPTIONAL given without one).  0: s->i is at
 * a word that is not an option (an operand; after "--", every word is one)
 * or at the end.  -1 with err: an unknown option, a missing or unexpected
 * value, or an OPT_REFUSED one ("-p/--publish: <its help>"). */
int opt_next(struct opt_state *s, const struct opt *tab, const struct opt **o, const char **val, struct gerr *err);

/* docker run's options that gpurun does not have (-p, -d, --privileged,
 * ...), each OPT_REFUSED with what gpurun does instead: run's s->also. */
extern const struct opt opt_docker_refused[];

/* One line per shown option ("  -e, --env K[=V]      help"), continued
 * lines aligned under the help.  The refused ones: with refused NULL, as
 * lines too; else named after that heading, a few to a line. */
void opt_help(FILE *out, const struct opt *tab, const char *refused);

/* One line of a usage: "gpurun [--driver-root DIR] VERB [SUB] [OPTIONS]
 * OPERANDS"; an entry with the verb of the one before continues its line
 * ("cache ls | rm DIGEST|IMAGE | prune"), unless apart is set. */
struct opt_use {
	const char *verb, *sub;
	const struct opt *tab;
	const char *operands;
	int global_root; /* takes the global --driver-root before the verb */
	int apart;       /* a line of its own, even after the same verb */
};
/* The usage lines of verb (NULL: all), the first starting with lead
 * ("usage: "), the others aligned under it. */
void opt_print_uses(FILE *out, const struct opt_use *uses, size_t n, const char *verb, const char *lead);

/* "10G", "500M", "1.5G", "0": bytes, in powers of 1000 (as `cache ls`
 * shows them).  -1 when s is not such a size. */
int opt_size1000(const char *s, unsigned long long *out);
/* docker's sizes: a whole number with an optional unit b, k, m or g (either
 * case; powers of 1024).  -1 when s is not one, or is 0. */
int opt_size1024(const char *s, unsigned long long *out);

/* One --ulimit NAME=SOFT[:HARD] (docker's names: nofile, nproc, core, ...;
 * "unlimited" or -1 for no limit). */
struct ulimit {
	const char *name; /* docker's: "nofile" */
	int resource;     /* RLIMIT_* */
	char letter;      /* the `ulimit -X` every sh shares, or 0 */
	unsigned shift;   /* that ulimit's unit: bytes >> shift */
	struct rlimit lim;
};
int opt_ulimit(const char *spec, struct ulimit *out, struct gerr *err);

/* docker's --env-file: each line K=V, K alone (the host's value, or
 * nothing when the host has none), # comments and blank lines skipped; no
 * quotes are removed.  Each K=V is added to out. */
int opt_env_file(const char *path, struct strv *out, struct gerr *err);

/* -e K=V, or -e K (the host's value; nothing when the host has none),
 * added to env. */
int opt_env(const char *arg, struct strv *env, struct gerr *err);
/* podman's --tls-verify[=true|false]: *insecure is 1 for false, *verify 1
 * for true (said outright: TLS verified even where plain HTTP is allowed by
 * default, a registry on a loopback address). */
int opt_tls_verify(const char *v, int *insecure, int *verify, struct gerr *err);
/* Set K=V in env, replacing an earlier K: the last one given wins. */
void env_set(struct strv *env, const char *kv);
/* a then b, as one new NULL-terminated list (the strings are not copied). */
char **argv_join(char **a, char **b);

#endif
