/* base/opt.h — the one option parser of every verb: a verb describes its
 * options once, as a table of struct opt, and the same table parses the
 * words (opt_next) and writes the verb's usage (opt_synopsis, opt_help),
 * so that --help cannot drift from what is accepted.  Also the values
 * options share: sizes, docker's --ulimit and --env-file, and environment
 * lists.  Parsing only:
 * errors come back as values, the caller decides to exit. */
#ifndef GPURUN_OPT_H
#define GPURUN_OPT_H

#include <stdio.h>
#include <sys/resource.h>

#include "base.h"

enum opt_arg {
	OPT_FLAG,     /* no value; "--flag=x" is refused */
	OPT_VALUE,    /* "--opt VALUE", "--opt=VALUE", "-o VALUE", "-oVALUE" */
	OPT_OPTIONAL, /* a value only as "--opt=VALUE" (podman's --tls-verify) */
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
	int i;               /* the next word */
	const char *cluster; /* the letters left of a group such as "-it" */
	int ended;           /* "--" was seen: no more options */
	int value_word;      /* the index of the last value that was a word of
			      * its own (--gpus VALUE), else 0 */
	char typed[64];      /* the last option as typed: "-h", "--network" */
};
#define OPT_STATE(c, v) {.argc = (c), .argv = (v), .i = 1}

/* The next option of tab in s.  1: *o is its entry and *val its value
 * (NULL for a flag, or an OPT_OPTIONAL given without one).  0: s->i is at
 * a word that is not an option (an operand; after "--", every word is one)
 * or at the end.  -1 with err: an unknown option, a missing or unexpected
 * value, or an OPT_REFUSED one ("-p/--publish: <its help>"). */
int opt_next(struct opt_state *s, const struct opt *tab, const struct opt **o, const char **val,
	     struct gerr *err);

/* "-e/--env": how messages name an option. */
const char *opt_label(const struct opt *o, char *buf, size_t cap);

/* " [--csv] [--driver-root DIR]": the options of tab that are shown, for a
 * usage line. */
void opt_synopsis(struct sbuf *b, const struct opt *tab);
/* One line per shown option ("  -e, --env K[=V]      help"), continued
 * lines aligned under the help; then one line naming the refused ones. */
void opt_help(FILE *out, const struct opt *tab);

/* "10G", "500M", "1.5G", "0": bytes, in powers of 1000 (as `cache ls`
 * shows them).  -1 when s is not such a size. */
int opt_size1000(const char *s, unsigned long long *out);
/* docker's sizes: a whole number with an optional unit b, k, m or g (either
 * case; powers of 1024).  -1 when s is not one, or is 0. */
int opt_size1024(const char *s, unsigned long long *out);

/* One --ulimit NAME=SOFT[:HARD] (docker's names: nofile, nproc, core, ...;
 * "unlimited" or -1 for no limit). */
struct ulimit {
	int resource;     /* RLIMIT_* */
	char letter;      /* the shell's `ulimit -X` (bash) */
	struct rlimit lim;
};
int opt_ulimit(const char *spec, struct ulimit *out, struct gerr *err);

/* docker's --env-file: each line K=V, K alone (the host's value, or
 * nothing when the host has none), # comments and blank lines skipped; no
 * quotes are removed.  Each K=V is added to out. */
int opt_env_file(const char *path, struct strv *out, struct gerr *err);

/* Set K=V in env, replacing an earlier K: the last one given wins. */
void env_set(struct strv *env, const char *kv);

#endif
