/* cli/verb.c — how a verb ends: its usage lines, the line and usage for a
 * bad argument, the word-by-word reading of a verb's options, and the two
 * ways gpurun stops with its own failure (die, gerr_die).  The exit status
 * of gpurun's own failures is 125 (GPURUN_EXIT_FAIL). */
#include "cli.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

void verb_print_uses(FILE *out, const struct verb *v, const char *lead)
{
	opt_print_uses(out, v->uses, v->nuses, NULL, lead);
}

int usage_fail(const struct verb *v, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	_cleanup_free_ char *msg = xvasprintf(NULL, fmt, ap);
	va_end(ap);
	errorx_("%s", msg);
	verb_print_uses(stderr, v, "usage: ");
	return GPURUN_EXIT_FAIL;
}

int verb_next(struct opt_state *s, const struct verb *v, const struct opt *tab, const struct opt **o, const char **val)
{
	struct gerr err = {0};
	int r = opt_next(s, tab, o, val, &err);
	if (r < 0) /* argv[0] is the verb, or the subcommand of cache and cdi */
		exit(usage_fail(v, "%s%s%s: %s", v->name, strcmp(v->name, s->argv[0]) ? " " : "",
				strcmp(v->name, s->argv[0]) ? s->argv[0] : "", err.msg));
	if (r == 1 && (*o)->id == V_HELP) {
		verb_print_uses(stdout, v, "usage: ");
		exit(0);
	}
	if (r == 0 && s->i < s->argc) {
		*val = s->argv[s->i++];
		return 2;
	}
	return r;
}

void gerr_die(const struct gerr *err)
{
	struct sbuf b = {0};
	gerr_format(err, &b);
	fputs(b.s, stderr);
	exit(err->code ? err->code : GPURUN_EXIT_FAIL);
}

void die(int code, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	_cleanup_free_ char *msg = xvasprintf(NULL, fmt, ap);
	va_end(ap);
	errorx_("%s", msg);
	exit(code);
}
