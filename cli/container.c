/* cli/container.c — the verbs of named containers (--name): `gpurun ps`
 * (the kept containers, running or not), `gpurun exec NAME COMMAND` (a
 * command in a running one) and `gpurun rm NAME`: their options, usage
 * lines, what they print (ps's table or docs/json.md's document) and exit
 * status.  The kept layers are rootfs/cache/kept.c's, the run's record
 * ns/record.c's, the entering ns/enter.c's; docs/containers.md tells the
 * whole story. */
#include "cli.h"

#include <errno.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../base/json.h"
#include "../ns/ns.h"
#include "../rootfs/rootfs.h"

enum { C_TTY = 100, C_INTERACTIVE, C_ENV, C_USER, C_WORKDIR, C_DRY_RUN };

/* clang-format off */
static const struct opt ps_opts[] = {JSON_OPT, HELP_OPT, {0}};
static const struct opt rm_opts[] = {HELP_OPT, {0}};
static const struct opt exec_opts[] = {
	{C_TTY, "tty", NULL, 't', OPT_FLAG, NULL, "a pty of the container's own, relayed to this terminal"},
	{C_INTERACTIVE, "interactive", NULL, 'i', OPT_FLAG, NULL, "with -t, relay this terminal's keys"},
	{C_ENV, "env", NULL, 'e', OPT_VALUE, "K[=V]", "set a variable over the container's (repeatable)"},
	{C_USER, "user", NULL, 'u', OPT_VALUE, "U[:G]", "another user of the image (default: the first command's)"},
	{C_WORKDIR, "workdir", NULL, 'w', OPT_VALUE, "DIR", "working directory inside (default: the first command's)"},
	{C_DRY_RUN, "dry-run", NULL, 0, OPT_FLAG, NULL, "print the nsenter and setpriv lines; change nothing"},
	HELP_OPT, {0}};
static const struct opt_use ps_uses[] = {{"ps", NULL, ps_opts, "", 0, 0}};
static const struct opt_use rm_uses[] = {{"rm", NULL, rm_opts, " NAME...", 0, 0}};
static const struct opt_use exec_uses[] = {{"exec", NULL, exec_opts, " NAME COMMAND [ARG...]", 0, 0}};
/* clang-format on */

/* The caller's cache: its containers are in any of its areas (kept_find). */
static void open_cache(struct cache *c)
{
	struct gerr err = {0};
	if (cache_open(c, 0, &err) < 0 && err.errnum != ENOENT)
		gerr_die(&err);
}

struct row {
	struct kept k;
	struct record r;
	int running; /* a run holds its lock and the record's processes are there */
	int stale;   /* a record whose processes are gone (a killed run) */
};

static void rows_read(struct cache *c, struct row **out, size_t *n)
{
	struct kept *v = NULL;
	size_t nv = 0;
	struct gerr err = {0};
	if (kept_list_all(c, &v, &nv, &err) < 0)
		gerr_die(&err);
	*out = xcalloc(nv ? nv : 1, sizeof **out);
	*n = nv;
	for (size_t i = 0; i < nv; i++) {
		struct row *w = &(*out)[i];
		w->k = v[i];
		struct gerr ignore = {0};
		int have = record_read(w->k.dirfd, &w->r, &ignore) == 0;
		w->running = have && record_alive(&w->r);
		w->stale = have && !w->running && !w->k.running;
		/* A killed run's record, its processes gone: cleaned here. */
		if (w->stale && record_clean_stale(w->k.dirfd, w->k.name, &ignore) == 0) {
			record_free(&w->r);
			have = 0;
		}
		if (!have)
			memset(&w->r, 0, sizeof w->r);
	}
	free(v);
}

static void rows_free(struct row *v, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		kept_free(&v[i].k);
		record_free(&v[i].r);
	}
	free(v);
}

static const char *state_of(const struct row *w)
{
	return w->running ? "running" : w->k.running ? "starting" : "kept";
}

static json_t *row_json(const struct row *w)
{
	json_t *o = json_object();
	json_put_text(o, "name", w->k.name);
	json_put_text(o, "image", w->k.image);
	json_put_text(o, "ref", w->k.ref);
	json_object_set_new(o, "image_chain_id", json_string(w->k.chain));
	json_object_set_new(o, "state", json_string(state_of(w)));
	json_object_set_new(o, "pid", w->running ? json_integer(w->r.pid) : json_null());
	json_put_text(o, "gpus", w->running ? w->r.gpus : NULL);
	json_object_set_new(o, "started", w->running ? json_integer(w->r.started) : json_null());
	json_object_set_new(o, "created", json_integer(w->k.created));
	json_put_text(o, "dir", w->k.dir);
	return o;
}

static int ps_verb(const struct verb *v, int argc, char **argv, const char *driver_root)
{
	(void)driver_root;
	int json = 0;
	const char *val;
	const struct opt *o;
	struct opt_state s = OPT_STATE(argc, argv);
	for (int r; (r = verb_next(&s, v, ps_opts, &o, &val));) {
		if (r == 2)
			return usage_fail(v, "ps: unexpected argument %s", val);
		json = 1;
	}
	struct cache c;
	open_cache(&c);
	struct row *rows;
	size_t n;
	rows_read(&c, &rows, &n);
	struct gerr err = {0};
	if (json) {
		json_t *doc = json_object(), *list = json_array();
		for (size_t i = 0; i < n; i++)
			json_array_append_new(list, row_json(&rows[i]));
		json_object_set_new(doc, "containers", list);
		if (json_print(doc, &err) < 0)
			gerr_die(&err);
	} else {
		printf("%-20s %-9s %-8s %-10s %-16s %s\n", "NAME", "STATE", "PID", "GPUS", "STARTED", "IMAGE");
		for (size_t i = 0; i < n; i++) {
			const struct row *w = &rows[i];
			char pid[16] = "-", when[32] = "-";
			if (w->running) {
				struct tm tm;
				time_t t = (time_t)w->r.started;
				snprintf(pid, sizeof pid, "%d", (int)w->r.pid);
				strftime(when, sizeof when, "%Y-%m-%d %H:%M", localtime_r(&t, &tm));
			}
			_cleanup_free_ char *image = xvisible(w->k.image ? w->k.image : "?");
			_cleanup_free_ char *ref = xvisible(w->k.ref ? w->k.ref : "");
			_cleanup_free_ char *gpus = xvisible(w->running && w->r.gpus ? w->r.gpus : "-");
			printf("%-20s %-9s %-8s %-10s %-16s %s%s%s\n", w->k.name, state_of(w), pid, gpus, when, image,
			       *ref ? "@" : "", ref);
		}
		if (fflush(stdout) != 0)
			die(GPURUN_EXIT_FAIL, "write the list: %s", strerror(errno));
	}
	rows_free(rows, n);
	cache_close(&c);
	return 0;
}

static int rm_verb(const struct verb *v, int argc, char **argv, const char *driver_root)
{
	(void)driver_root;
	const char *val;
	const struct opt *o;
	struct strv names = {0};
	struct opt_state s = OPT_STATE(argc, argv);
	for (int r; (r = verb_next(&s, v, rm_opts, &o, &val));)
		if (r == 2)
			strv_add(&names, xstrdup(val));
	if (!names.n)
		return usage_fail(v, "rm: missing NAME");
	struct cache c;
	open_cache(&c);
	int rc = 0;
	for (size_t i = 0; i < names.n; i++) {
		struct gerr err = {0};
		struct cache area;
		struct kept k;
		int r = kept_find(&c, names.v[i], &area, &k, &err);
		if (r == 0) {
			kept_free(&k);
			r = kept_remove(&area, names.v[i], &err);
			cache_close(&area);
		}
		if (r < 0) {
			struct sbuf b = {0};
			gerr_format(&err, &b);
			fputs(b.s, stderr);
			sbuf_free(&b);
			rc = GPURUN_EXIT_FAIL;
			continue;
		}
		printf("%s\n", names.v[i]);
	}
	strv_free(&names);
	cache_close(&c);
	return rc;
}

static int exec_verb(const struct verb *v, int argc, char **argv, const char *driver_root)
{
	(void)driver_root;
	struct strv env = {0};
	struct exec_request rq = {.env = &env};
	int dry_run = 0;
	const char *val;
	const struct opt *o;
	struct gerr err = {0};
	struct opt_state s = OPT_STATE(argc, argv);
	int r;
	while ((r = verb_next(&s, v, exec_opts, &o, &val)) == 1) {
		switch (o->id) {
		case C_TTY: rq.tty = 1; break;
		case C_INTERACTIVE: rq.interactive = 1; break;
		case C_ENV:
			if (opt_env(val, &env, &err) < 0)
				gerr_die(&err);
			break;
		case C_USER: rq.user = val; break;
		case C_WORKDIR: rq.workdir = val; break;
		case C_DRY_RUN: dry_run = 1; break;
		}
	}
	if (r != 2)
		return usage_fail(v, "exec: missing NAME");
	rq.name = val;
	if (s.i < argc && !strcmp(argv[s.i], "--"))
		s.i++;
	if (s.i >= argc)
		return usage_fail(v, "exec %s: missing COMMAND", rq.name);
	rq.argv = argv + s.i;
	if (rq.workdir && rq.workdir[0] != '/')
		die(GPURUN_EXIT_FAIL, "exec: -w '%s': must be an absolute path", rq.workdir);
	if (rq.tty && rq.interactive && !dry_run && !isatty(0))
		die(GPURUN_EXIT_FAIL, "exec -it: the input device is not a TTY");
	if (kept_name_check(rq.name, &err) < 0)
		gerr_die(&err);
	struct cache c, area;
	open_cache(&c);
	struct kept k;
	if (kept_find(&c, rq.name, &area, &k, &err) < 0)
		gerr_die(&err);
	cache_close(&area);
	/* Launched a moment ago: its record comes once its command starts. */
	if (k.running && ns_join_wait(k.dirfd, rq.name, kept_dir_running, &err) < 0)
		gerr_die(&err);
	int code;
	if (dry_run) {
		struct sbuf b = {0};
		code = ns_describe_enter(k.dirfd, &rq, &b, &err);
		if (code == 0)
			fputs(b.s, stdout);
		sbuf_free(&b);
	} else {
		code = ns_enter(k.dirfd, &rq, &err);
	}
	if (code < 0)
		gerr_die(&err);
	kept_free(&k);
	strv_free(&env);
	return code;
}

const struct verb verb_ps = {"ps", ps_verb, ps_uses, COUNT_OF(ps_uses), 0};
const struct verb verb_rm = {"rm", rm_verb, rm_uses, COUNT_OF(rm_uses), 0};
const struct verb verb_exec = {"exec", exec_verb, exec_uses, COUNT_OF(exec_uses), 0};
