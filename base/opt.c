/* base/opt.c — the one option parser of every verb, the usage it writes
 * from the same table, docker's refused options, and the values options
 * share (sizes, -e, --env-file, --ulimit, --tls-verify, environment and
 * argv lists).  See opt.h. */
#include "opt.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define NO_PORTS                                                                                   \
	"gpurun has no port mapping: the network is the host's (the default), so a server in the " \
	"container listens on the host's ports as it is"
#define NO_LIMITS                                                                           \
	"gpurun sets no cgroup limits: run it inside the batch job's allocation, or under " \
	"systemd-run --user --scope -p MemoryMax=... -p CPUQuota=..."
#define NO_CAPS                                                                                    \
	"gpurun always keeps docker's default capabilities, no_new_privs and its seccomp filter, " \
	"and changes none of them"
#define NO_HOSTS                                                                        \
	"the container has the host's /etc/hosts and /etc/resolv.conf (host network); " \
	"bind another with -v FILE:/etc/hosts:ro"
const struct opt opt_docker_refused[] = {
	{1, "publish", NULL, 'p', OPT_REFUSED, NULL, NO_PORTS},
	{1, "publish-all", NULL, 'P', OPT_REFUSED, NULL, NO_PORTS},
	{1, "expose", NULL, 0, OPT_REFUSED, NULL, NO_PORTS},
	{1, "detach", NULL, 'd', OPT_REFUSED, NULL,
	 "gpurun runs in the foreground, as the caller's own "
	 "process: use nohup, tmux or a batch job to keep it running"},
	{1, "privileged", NULL, 0, OPT_REFUSED, NULL,
	 "gpurun never gives the host's devices or every "
	 "capability: choose GPUs with --gpus or --device, bind paths with -v"},
	{1, "cap-add", NULL, 0, OPT_REFUSED, NULL, NO_CAPS},
	{1, "cap-drop", NULL, 0, OPT_REFUSED, NULL, NO_CAPS},
	{1, "security-opt", NULL, 0, OPT_REFUSED, NULL, NO_CAPS},
	{1, "pid", NULL, 0, OPT_REFUSED, NULL,
	 "the container always has its own pid namespace, with "
	 "gpurun's init as pid 1"},
	{1, "restart", NULL, 0, OPT_REFUSED, NULL, "gpurun restarts nothing: loop in the shell or the batch script"},
	{1, "label", NULL, 'l', OPT_REFUSED, NULL,
	 "gpurun keeps no labels: a kept container has its name alone (--name)"},
	{1, "log-driver", NULL, 0, OPT_REFUSED, NULL, "the command's output is gpurun's own stdout and stderr"},
	{1, "runtime", NULL, 0, OPT_REFUSED, NULL, "gpurun is the runtime: GPUs come from --gpus or --device"},
	{1, "memory", NULL, 'm', OPT_REFUSED, NULL, NO_LIMITS},
	{1, "memory-swap", NULL, 0, OPT_REFUSED, NULL, NO_LIMITS},
	{1, "cpus", NULL, 0, OPT_REFUSED, NULL, NO_LIMITS},
	{1, "cpuset-cpus", NULL, 0, OPT_REFUSED, NULL, NO_LIMITS " (or taskset -c)"},
	{1, "pids-limit", NULL, 0, OPT_REFUSED, NULL, NO_LIMITS},
	{1, "group-add", NULL, 0, OPT_REFUSED, NULL,
	 "the command gets its user's groups from the image's /etc/group (docker's rule for -u); "
	 "add the user to the group there, or run with -u USER:GROUP"},
	{1, "stop-signal", NULL, 0, OPT_REFUSED, NULL,
	 "gpurun stops nothing by itself: the signals it gets (SIGINT, SIGTERM, SIGHUP, SIGQUIT, "
	 "SIGUSR1, SIGUSR2) reach the command as they are, so send the one it wants (kill -s)"},
	{1, "stop-timeout", NULL, 0, OPT_REFUSED, NULL,
	 "gpurun stops nothing by itself: the command ends when it does, or when a signal sent to "
	 "gpurun ends it"},
	{1, "sysctl", NULL, 0, OPT_REFUSED, NULL,
	 "the container has the host's kernel settings (with --net none, a new network namespace's "
	 "defaults); gpurun sets none: set them on the host (sysctl -w) or in the batch system"},
	{1, "add-host", NULL, 0, OPT_REFUSED, NULL, NO_HOSTS},
	{1, "dns", NULL, 0, OPT_REFUSED, NULL, NO_HOSTS},
	{0},
};

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

static const char *opt_label(const struct opt *o, char *buf, size_t cap)
{
	if (o->letter && o->name)
		snprintf(buf, cap, "-%c/--%s", o->letter, o->name);
	else if (o->letter)
		snprintf(buf, cap, "-%c", o->letter);
	else
		snprintf(buf, cap, "--%s", o->name);
	return buf;
}

static int check_choice(const struct opt_state *s, const struct opt *o, const char *v, struct gerr *err)
{
	size_t n = strlen(v);
	for (const char *w = o->value; n && *w; w += strcspn(w, "|"), w += *w == '|')
		if (strcspn(w, "|") == n && !strncmp(w, v, n))
			return 1;
	return gerr_set(err, 0, "%s '%s': expected one of %s", s->typed, v, o->value);
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
		return o->arg == OPT_CHOICE ? check_choice(s, o, *val, err) : 1;
	}
	if (s->i >= s->argc)
		return gerr_set(err, 0, "%s needs a value", s->typed);
	s->value_word = s->i;
	*val = s->argv[s->i++];
	return o->arg == OPT_CHOICE ? check_choice(s, o, *val, err) : 1;
}

int opt_next(struct opt_state *s, const struct opt *tab, const struct opt **o, const char **val, struct gerr *err)
{
	if (s->cluster && *s->cluster) {
		/* The rest of "-it": each letter an option; one that takes a
		 * value takes what is left of the group, else the next word. */
		const char *group = s->argv[s->i - 1];
		char c = *s->cluster++;
		snprintf(s->typed, sizeof s->typed, "-%c", c);
		if (!(*o = find_letter(tab, c)) && !(s->also && (*o = find_letter(s->also, c))))
			return gerr_set(err, 0, "unknown option -%c (in %s)", c, group);
		const char *rest =
			*s->cluster && ((*o)->arg == OPT_VALUE || (*o)->arg == OPT_CHOICE) ? s->cluster : NULL;
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
		if (!(*o = find_long(tab, name, n)) && !(s->also && (*o = find_long(s->also, name, n))))
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

static void opt_synopsis(struct sbuf *b, const struct opt *tab)
{
	for (; tab->id; tab++) {
		if (!shown(tab) || (tab->name && !strcmp(tab->name, "help")))
			continue;
		if (tab->name)
			sbuf_printf(b, " [--%s", tab->name);
		else
			sbuf_printf(b, " [-%c", tab->letter);
		if (tab->arg == OPT_VALUE || tab->arg == OPT_CHOICE)
			sbuf_printf(b, " %s", tab->value);
		else if (tab->arg == OPT_OPTIONAL)
			sbuf_printf(b, "=%s", tab->value);
		sbuf_puts(b, "]");
	}
}

#define HELP_COLUMN 23

void opt_help(FILE *out, const struct opt *tab, const char *refused)
{
	struct sbuf b = {0};
	for (const struct opt *o = tab; o->id; o++) {
		if (!o->help || (o->arg == OPT_REFUSED && refused))
			continue;
		sbuf_reset(&b);
		sbuf_puts(&b, o->letter ? "  -" : "      ");
		if (o->letter)
			sbuf_printf(&b, "%c%s", o->letter, o->name ? ", " : "");
		if (o->name)
			sbuf_printf(&b, "--%s", o->name);
		if (o->alias)
			sbuf_printf(&b, ", --%s", o->alias);
		if (o->arg == OPT_VALUE || o->arg == OPT_CHOICE)
			sbuf_printf(&b, " %s", o->value);
		else if (o->arg == OPT_OPTIONAL)
			sbuf_printf(&b, "=%s", o->value);
		fputs(b.s, out);
		fprintf(out, "%*s", b.len < HELP_COLUMN - 1 ? (int)(HELP_COLUMN - b.len) : 2, "");
		/* A refused option's line: its reason's first words. */
		for (const char *h = o->help; *h;) {
			size_t n = strcspn(h, o->arg == OPT_REFUSED ? ":\n" : "\n");
			if (o->arg == OPT_REFUSED) {
				fprintf(out, "%.*s\n", (int)n, h);
				break;
			}
			fprintf(out, "%.*s\n", (int)n, h);
			h += n;
			if (*h == '\n' && *++h)
				fprintf(out, "%*s", HELP_COLUMN, "");
		}
	}
	const char *sep = refused;
	size_t col = 0;
	for (const struct opt *o = tab; refused && o->id; o++) {
		if (o->arg != OPT_REFUSED)
			continue;
		char label[64];
		opt_label(o, label, sizeof label);
		if (col + strlen(label) > 72) {
			fputs("\n", out);
			col = 0;
		}
		fprintf(out, "%s%s %s", sep, col ? "" : " ", label);
		col += strlen(label) + 1;
		sep = "";
	}
	if (sep != refused)
		fputs("\n", out);
	sbuf_free(&b);
}

void opt_print_uses(FILE *out, const struct opt_use *uses, size_t n, const char *verb, const char *lead)
{
	struct sbuf b = {0};
	for (size_t i = 0; i < n; i++) {
		const struct opt_use *u = &uses[i];
		if (verb && strcmp(verb, u->verb))
			continue;
		if (i && !u->apart && !strcmp(u->verb, uses[i - 1].verb)) {
			sbuf_puts(&b, " |");
		} else {
			if (b.len)
				fprintf(out, "%s\n", b.s);
			sbuf_reset(&b);
			sbuf_printf(&b, "%sgpurun%s %s", lead, u->global_root ? " [--driver-root DIR]" : "", u->verb);
			lead = "       ";
		}
		if (u->sub)
			sbuf_printf(&b, " %s", u->sub);
		opt_synopsis(&b, u->tab);
		sbuf_puts(&b, u->operands);
	}
	if (b.len)
		fprintf(out, "%s\n", b.s);
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

/* docker's --ulimit names.  For the plan, the `ulimit` letter and unit
 * (bytes >> shift) that dash, bash and busybox sh share, else 0: nproc is
 * -p in dash and -u in bash, core and fsize count blocks of 512 bytes in
 * one and 1024 in another. */
static const struct {
	const char *name;
	int resource;
	char letter;
	unsigned char shift;
} ulimits[] = {
	{"as", RLIMIT_AS, 'v', 10},
	{"core", RLIMIT_CORE, 0, 0},
	{"cpu", RLIMIT_CPU, 't', 0},
	{"data", RLIMIT_DATA, 'd', 10},
	{"fsize", RLIMIT_FSIZE, 0, 0},
	{"locks", RLIMIT_LOCKS, 0, 0},
	{"memlock", RLIMIT_MEMLOCK, 'l', 10},
	{"msgqueue", RLIMIT_MSGQUEUE, 0, 0},
	{"nice", RLIMIT_NICE, 0, 0},
	{"nofile", RLIMIT_NOFILE, 'n', 0},
	{"nproc", RLIMIT_NPROC, 0, 0},
	{"rss", RLIMIT_RSS, 'm', 10},
	{"rtprio", RLIMIT_RTPRIO, 'r', 0},
	{"rttime", RLIMIT_RTTIME, 0, 0},
	{"sigpending", RLIMIT_SIGPENDING, 0, 0},
	{"stack", RLIMIT_STACK, 's', 10},
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
		return gerr_set(err, 0,
				"--ulimit '%s': expected NAME=SOFT[:HARD], NAME one of as, core, cpu, "
				"data, fsize, locks, memlock, msgqueue, nice, nofile, nproc, rss, rtprio, rttime, "
				"sigpending, stack",
				spec);
	const char *v = eq + 1, *colon = strchr(v, ':');
	size_t sn = colon ? (size_t)(colon - v) : strlen(v);
	out->name = ulimits[i].name;
	out->resource = ulimits[i].resource;
	out->letter = ulimits[i].letter;
	out->shift = ulimits[i].shift;
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

int opt_env(const char *arg, struct strv *env, struct gerr *err)
{
	if (!*arg || *arg == '=')
		return gerr_set(err, 0, "--env '%s': expected K=V or K", arg);
	if (strchr(arg, '='))
		strv_add(env, xstrdup(arg));
	else if (getenv(arg))
		strv_add(env, xasprintf("%s=%s", arg, getenv(arg)));
	return 0;
}

int opt_tls_verify(const char *v, int *insecure, int *verify, struct gerr *err)
{
	if (v && strcmp(v, "true") && strcmp(v, "false"))
		return gerr_set(err, 0, "--tls-verify: invalid value '%s' (expected true or false)", v);
	*insecure = v && !strcmp(v, "false");
	*verify = !*insecure;
	return 0;
}

char **argv_join(char **a, char **b)
{
	size_t n = 0, i = 0;
	for (char **p = a; p && *p; p++)
		n++;
	for (char **p = b; p && *p; p++)
		n++;
	char **v = xcalloc(n + 1, sizeof *v);
	for (char **p = a; p && *p; p++)
		v[i++] = *p;
	for (char **p = b; p && *p; p++)
		v[i++] = *p;
	return v;
}
