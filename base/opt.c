/* base/opt.c — the one option parser of every verb, the usage it writes
 * from the same table, and the values options share (sizes, --ulimit,
 * --env-file, environment lists).  See opt.h. */
#include "opt.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static const struct opt *find_long(const struct opt *tab, const char *name, size_t n)
{
	for (; tab->id; tab++)
		if ((tab->name && strlen(tab->name) == n && !strncmp(tab->name, name, n)) ||
		    (tab->alias && strlen(tab->alias) == n && !strncmp(tab->alias, name, n)))
			return tab;
	return NULL;
}

static const struct opt *find_letter(const struct opt *tab, char c)
{
	for (; tab->id; tab++)
		if (tab->letter && tab->letter == c)
			return tab;
	return NULL;
}

const char *opt_label(const struct opt *o, char *buf, size_t cap)
{
	if (o->letter && o->name)
		snprintf(buf, cap, "-%c/--%s", o->letter, o->name);
	else if (o->letter)
		snprintf(buf, cap, "-%c", o->letter);
	else
		snprintf(buf, cap, "--%s", o->name);
	return buf;
}

/* The value of o, typed as s->typed: glued (inline, may be NULL) or the
 * next word.  An option that takes a value always takes the next word, as
 * docker does, even one that looks like an option or the image. */
static int take_value(struct opt_state *s, const struct opt *o, const char *inline_val, const char **val,
		      struct gerr *err)
{
	char label[64];
	if (o->arg == OPT_REFUSED)
		return gerr_set(err, 0, "%s: %s", opt_label(o, label, sizeof label), o->help);
	if (o->arg == OPT_FLAG) {
		if (inline_val)
			return gerr_set(err, 0, "%s takes no value", s->typed);
		*val = NULL;
		return 1;
	}
	if (inline_val || o->arg == OPT_OPTIONAL) {
		*val = inline_val;
		return 1;
	}
	if (s->i >= s->argc)
		return gerr_set(err, 0, "%s needs a value", s->typed);
	s->value_word = s->i;
	*val = s->argv[s->i++];
	return 1;
}

int opt_next(struct opt_state *s, const struct opt *tab, const struct opt **o, const char **val,
	     struct gerr *err)
{
	if (s->cluster && *s->cluster) {
		/* The rest of "-it": each letter an option; one that takes a
		 * value takes what is left of the group, else the next word. */
		const char *group = s->argv[s->i - 1];
		char c = *s->cluster++;
		snprintf(s->typed, sizeof s->typed, "-%c", c);
		if (!(*o = find_letter(tab, c)))
			return gerr_set(err, 0, "unknown option -%c (in %s)", c, group);
		const char *rest = *s->cluster && (*o)->arg == OPT_VALUE ? s->cluster : NULL;
		if (rest)
			s->cluster = NULL;
		return take_value(s, *o, rest, val, err);
	}
	s->cluster = NULL;
	if (s->ended || s->i >= s->argc)
		return 0;
	const char *w = s->argv[s->i];
	if (w[0] != '-' || !w[1])
		return 0; /* an operand; "-" alone is one too */
	if (!strcmp(w, "--")) {
		s->ended = 1;
		s->i++;
		return 0;
	}
	s->i++;
	if (w[1] == '-') {
		const char *name = w + 2, *eq = strchr(name, '=');
		size_t n = eq ? (size_t)(eq - name) : strlen(name);
		snprintf(s->typed, sizeof s->typed, "--%.*s", (int)(n < 60 ? n : 60), name);
		if (!(*o = find_long(tab, name, n)))
			return gerr_set(err, 0, "unknown option %s", w);
		return take_value(s, *o, eq ? eq + 1 : NULL, val, err);
	}
	s->cluster = w + 1;
	return opt_next(s, tab, o, val, err);
}

static int shown(const struct opt *o)
{
	return o->help && o->arg != OPT_REFUSED;
}

void opt_synopsis(struct sbuf *b, const struct opt *tab)
{
	for (; tab->id; tab++) {
		if (!shown(tab) || (tab->name && !strcmp(tab->name, "help")))
			continue;
		if (tab->name)
			sbuf_printf(b, " [--%s", tab->name);
		else
			sbuf_printf(b, " [-%c", tab->letter);
		if (tab->arg == OPT_VALUE)
			sbuf_printf(b, " %s", tab->value);
		else if (tab->arg == OPT_OPTIONAL)
			sbuf_printf(b, "=%s", tab->value);
		sbuf_puts(b, "]");
	}
}

#define HELP_COLUMN 23

void opt_help(FILE *out, const struct opt *tab)
{
	struct sbuf b = {0};
	for (const struct opt *o = tab; o->id; o++) {
		if (!shown(o))
			continue;
		sbuf_reset(&b);
		sbuf_puts(&b, o->letter ? "  -" : "      ");
		if (o->letter)
			sbuf_printf(&b, "%c%s", o->letter, o->name ? ", " : "");
		if (o->name)
			sbuf_printf(&b, "--%s", o->name);
		if (o->alias)
			sbuf_printf(&b, ", --%s", o->alias);
		if (o->arg == OPT_VALUE)
			sbuf_printf(&b, " %s", o->value);
		else if (o->arg == OPT_OPTIONAL)
			sbuf_printf(&b, "=%s", o->value);
		fputs(b.s, out);
		fprintf(out, "%*s", b.len < HELP_COLUMN - 1 ? (int)(HELP_COLUMN - b.len) : 2, "");
		for (const char *h = o->help; *h;) {
			size_t n = strcspn(h, "\n");
			fprintf(out, "%.*s\n", (int)n, h);
			h += n;
			if (*h == '\n' && *++h)
				fprintf(out, "%*s", HELP_COLUMN, "");
		}
	}
	const char *sep = "docker's options gpurun does not have, each refused with what to do instead:\n ";
	size_t col = 0;
	for (const struct opt *o = tab; o->id; o++) {
		if (o->arg != OPT_REFUSED)
			continue;
		char label[64];
		opt_label(o, label, sizeof label);
		if (col + strlen(label) > 72) {
			fputs("\n ", out);
			col = 0;
		}
		fprintf(out, "%s %s", sep, label);
		col += strlen(label) + 1;
		sep = "";
	}
	if (!*sep)
		fputs("\n", out);
	sbuf_free(&b);
}

int opt_size1000(const char *s, unsigned long long *out)
{
	char *end;
	errno = 0;
	double v = strtod(s, &end);
	if (errno || end == s || v < 0)
		return -1;
	static const char units[] = "BKMGT";
	const char *u = *end ? strchr(units, *end & ~0x20) : units;
	if (!u || (*end && end[1] && strcasecmp(end + 1, "B")))
		return -1;
	for (const char *p = units; p < u; p++)
		v *= 1000;
	*out = (unsigned long long)v;
	return 0;
}

int opt_size1024(const char *s, unsigned long long *out)
{
	static const char units[] = "bkmg";
	char *end;
	if (*s < '0' || *s > '9')
		return -1;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	const char *u = *end ? strchr(units, *end | 0x20) : units;
	if (errno || !u || (*end && end[1]) || v == 0)
		return -1;
	for (const char *p = units; p < u; p++) {
		if (v > (~0ULL >> 10))
			return -1;
		v <<= 10;
	}
	*out = v;
	return 0;
}

/* docker's --ulimit names, with bash's `ulimit` letter for the plan. */
static const struct {
	const char *name;
	int resource;
	char letter;
} ulimits[] = {
	{"core", RLIMIT_CORE, 'c'},	    {"cpu", RLIMIT_CPU, 't'},		{"data", RLIMIT_DATA, 'd'},
	{"fsize", RLIMIT_FSIZE, 'f'},	    {"locks", RLIMIT_LOCKS, 'x'},	{"memlock", RLIMIT_MEMLOCK, 'l'},
	{"msgqueue", RLIMIT_MSGQUEUE, 'q'}, {"nice", RLIMIT_NICE, 'e'},		{"nofile", RLIMIT_NOFILE, 'n'},
	{"nproc", RLIMIT_NPROC, 'u'},	    {"rss", RLIMIT_RSS, 'm'},		{"rtprio", RLIMIT_RTPRIO, 'r'},
	{"rttime", RLIMIT_RTTIME, 'R'},	    {"sigpending", RLIMIT_SIGPENDING, 'i'}, {"stack", RLIMIT_STACK, 's'},
	{"as", RLIMIT_AS, 'v'},
};

static int ulimit_value(const char *s, size_t n, rlim_t *out)
{
	if ((n == 9 && !strncmp(s, "unlimited", 9)) || (n == 2 && !strncmp(s, "-1", 2))) {
		*out = RLIM_INFINITY;
		return 0;
	}
	unsigned long v;
	if (n == 0 || n > 19 || parse_decimal(s, n, ~0UL, &v) < 0)
		return -1;
	*out = v;
	return 0;
}

int opt_ulimit(const char *spec, struct ulimit *out, struct gerr *err)
{
	const char *eq = strchr(spec, '=');
	size_t i = 0;
	while (eq && i < COUNT_OF(ulimits) &&
	       (strlen(ulimits[i].name) != (size_t)(eq - spec) || strncmp(ulimits[i].name, spec, eq - spec)))
		i++;
	if (!eq || i == COUNT_OF(ulimits))
		return gerr_set(err, 0, "--ulimit '%s': expected NAME=SOFT[:HARD], NAME one of core, cpu, data, "
				"fsize, locks, memlock, msgqueue, nice, nofile, nproc, rss, rtprio, rttime, "
				"sigpending, stack, as", spec);
	const char *v = eq + 1, *colon = strchr(v, ':');
	size_t sn = colon ? (size_t)(colon - v) : strlen(v);
	out->resource = ulimits[i].resource;
	out->letter = ulimits[i].letter;
	if (ulimit_value(v, sn, &out->lim.rlim_cur) < 0 ||
	    ulimit_value(colon ? colon + 1 : v, colon ? strlen(colon + 1) : sn, &out->lim.rlim_max) < 0)
		return gerr_set(err, 0, "--ulimit '%s': a limit is a number, or unlimited", spec);
	/* RLIM_INFINITY is the largest rlim_t: a soft "unlimited" fits only
	 * under a hard one. */
	if (out->lim.rlim_cur > out->lim.rlim_max)
		return gerr_set(err, 0, "--ulimit '%s': the soft limit is above the hard one", spec);
	return 0;
}

int opt_env_file(const char *path, struct strv *out, struct gerr *err)
{
	FILE *f = fopen(path, "re");
	if (!f)
		return gerr_set(err, errno, "--env-file %s", path);
	char *line = NULL;
	size_t cap = 0;
	ssize_t n;
	int r = 0;
	for (unsigned lineno = 1; r == 0 && (n = getline(&line, &cap, f)) >= 0; lineno++) {
		if (n && line[n - 1] == '\n')
			line[--n] = '\0';
		char *l = line;
		if (lineno == 1 && !strncmp(l, "\xef\xbb\xbf", 3))
			l += 3; /* a byte order mark, as docker skips it */
		l += strspn(l, " \t\r\v\f");
		if (!*l || *l == '#')
			continue;
		size_t kl = strcspn(l, "=");
		if (kl == 0)
			r = gerr_set(err, 0, "--env-file %s: line %u: no variable name", path, lineno);
		else if (strcspn(l, " \t\r\v\f") < kl)
			r = gerr_set(err, 0, "--env-file %s: line %u: the variable name contains white space", path,
				     lineno);
		else if (l[kl] == '=')
			strv_add(out, xstrdup(l));
		else if (getenv(l))
			strv_add(out, xasprintf("%s=%s", l, getenv(l)));
	}
	if (r == 0 && ferror(f))
		r = gerr_set(err, errno, "read %s", path);
	fclose(f);
	free(line);
	return r;
}

void env_set(struct strv *env, const char *kv)
{
	size_t kl = strcspn(kv, "=");
	for (size_t i = 0; i < env->n; i++)
		if (!strncmp(env->v[i], kv, kl) && env->v[i][kl] == '=') {
			free(env->v[i]);
			env->v[i] = xstrdup(kv);
			return;
		}
	strv_add(env, xstrdup(kv));
}
