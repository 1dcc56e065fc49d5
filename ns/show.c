/* ns/show.c — the teaching view of a whole launch, as a shell script that
 * runs (`sh plan.sh`, as root or as a user): its head (what no shell tool
 * can do, the scratch directory, the unshare into the new namespaces, as
 * the plan's steps print it (ns/steps.c), with the rest as a quoted
 * here-document), the ops under their sections' headings (op_describe,
 * ns/opshow.c, with the libdirs resolved from the image tree when it is
 * known before the launch; the pivot's lines, ns/op_pivot.c), the command,
 * started with the host's setpriv before the pivot and waiting for its
 * go-ahead, and the shell functions the steps call (ns/plan.sh).
 * --dry-run prints all of it at once; --verbose prints the same lines,
 * each as its step is done (ns/launch.c, ns/exec.c, ns/init.c call in
 * here), so the two views cannot differ. */
#include "ns.h"
#include "exec.h"
#include "steps.h"
#include "plan_sh.h"

#include <ctype.h>
#include <fcntl.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static void ns_describe_image(const struct run_config *cfg, struct sbuf *b);

/* The image tree as gpurun knows it when the plan is printed: a directory
 * image, or the top cached layer that has the path (whiteouts aside); -1
 * when unknown or missing. */
static int tree_root_with(const struct run_config *cfg, const char *path)
{
	if (cfg->image_is_dir && cfg->image_fd >= 0) {
		_cleanup_fd_ int fd = open_in_root(cfg->image_fd, path, O_PATH);
		return fd < 0 ? -1 : open_in_root(cfg->image_fd, "/", O_PATH | O_DIRECTORY);
	}
	if (!cfg->layered || cfg->import_run)
		return -1;
	for (size_t i = cfg->layered->layers.n; i-- > 0;) {
		int d = open(cfg->layered->layers.v[i], O_PATH | O_DIRECTORY | O_CLOEXEC);
		_cleanup_fd_ int fd = d < 0 ? -1 : open_in_root(d, path, O_PATH);
		if (fd >= 0)
			return d;
		if (d >= 0)
			close(d);
	}
	return -1;
}

static int tree_open(const struct run_config *cfg, const char *path, int flags)
{
	_cleanup_fd_ int root = tree_root_with(cfg, path);
	return root < 0 ? -1 : open_in_root(root, path, flags);
}

static int tree_known(const struct run_config *cfg)
{
	if (cfg->image_is_dir)
		return cfg->image_fd >= 0;
	if (!cfg->layered || cfg->import_run)
		return 0;
	for (size_t i = 0; i < cfg->layered->layers.n; i++)
		if (access(cfg->layered->layers.v[i], F_OK) < 0)
			return 0;
	return 1;
}

void ns_view_upper(const struct run_config *cfg)
{
	struct op *root = plan_rootfs(cfg->plan);
	if (!root || root->kind != OP_ROOTFS || !(root->flags & OPF_DIR) || !cfg->unprivileged || cfg->image_fd < 0)
		return;
	strv_free(&root->upper_dirs);
	rootbuild_upper_mirror_list(cfg->plan, cfg->image_fd, &root->upper_dirs);
}

void ns_view(const struct run_config *cfg, struct plan_view *v)
{
	*v = (struct plan_view){.plan = cfg->plan, .driver_root = cfg->driver_root};
	if (!tree_known(cfg))
		return;
	_cleanup_fd_ int marker = tree_open(cfg, LIBDIR_MARKER, O_PATH);
	_cleanup_fd_ int lib32 = tree_open(cfg, LIBDIR32_OTHER, O_PATH | O_DIRECTORY);
	_cleanup_fd_ int lib = tree_open(cfg, LIBDIR32_PLAIN, O_PATH | O_DIRECTORY);
	_cleanup_fd_ int lib64 = tree_open(cfg, LIBDIR_OTHER, O_PATH | O_DIRECTORY);
	struct stat a, b;
	int same = lib >= 0 && lib64 >= 0 && fstat(lib, &a) == 0 && fstat(lib64, &b) == 0 && a.st_dev == b.st_dev &&
		   a.st_ino == b.st_ino;
	v->libdir = plan_libdir_for(marker >= 0);
	v->libdir32 = plan_libdir32_for(marker >= 0, lib32 >= 0, same);
}

/* The host's mount table, for the binds (struct op's src_flags, subs). */
void ns_mountinfo_unescape(char *s)
{
	char *w = s;
	for (; *s; s++) {
		if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' && s[2] >= '0' && s[2] <= '7' && s[3] >= '0' &&
		    s[3] <= '7') {
			*w++ = (char)((s[1] - '0') * 64 + (s[2] - '0') * 8 + (s[3] - '0'));
			s += 3;
		} else {
			*w++ = *s;
		}
	}
	*w = '\0';
}

unsigned ns_mount_flags_of(const char *opts)
{
	unsigned f = 0;
	_cleanup_free_ char *copy = xstrdup(opts);
	for (char *save = NULL, *o = strtok_r(copy, ",", &save); o; o = strtok_r(NULL, ",", &save))
		for (size_t i = 0; i < COUNT_OF(op_flags); i++)
			if (!strcmp(o, op_flags[i].name))
				f |= op_flags[i].flag;
	return f;
}

static int path_under(const char *path, const char *dir)
{
	size_t n = strlen(dir);
	if (!strcmp(dir, "/"))
		return 1;
	return !strncmp(path, dir, n) && (path[n] == '/' || !path[n]);
}

void ns_capture_mounts(struct plan *p)
{
	struct strv targets = {0};
	size_t cap = 0;
	unsigned *flags = NULL;
	FILE *f = fopen("/proc/self/mountinfo", "re");
	char *line = NULL;
	size_t n = 0;
	while (f && getline(&line, &n, f) > 0) {
		char target[4096], opts[1024];
		if (sscanf(line, "%*s %*s %*s %*s %4095s %1023s", target, opts) != 2)
			continue;
		ns_mountinfo_unescape(target);
		if (targets.n == cap) {
			cap = cap ? cap * 2 : 64;
			flags = xrealloc(flags, cap * sizeof *flags);
		}
		flags[targets.n] = ns_mount_flags_of(opts);
		strv_add(&targets, xstrdup(target));
	}
	free(line);
	if (f)
		fclose(f);
	for (size_t i = 0; i < p->n; i++) {
		struct op *op = &p->v[i];
		if (op->kind != OP_BIND && !(op->kind == OP_REMOUNT && (op->flags & OPF_BELOW)))
			continue;
		strv_free(&op->subs); /* a second capture replaces the first */
		free(op->sub_flags);
		op->sub_flags = NULL;
		struct stat st;
		if ((op->flags & OPF_OPTIONAL) && stat(op->src, &st) < 0)
			op->skipped = 1;
		/* The last mount listed at the longest prefix is the top one. */
		size_t best = 0;
		int found = 0;
		for (size_t j = 0; j < targets.n; j++)
			if (path_under(op->src, targets.v[j]) &&
			    (!found || strlen(targets.v[j]) >= strlen(targets.v[best]))) {
				best = j;
				found = 1;
			}
		op->src_flags = found ? flags[best] : 0;
		/* The mounts below: where a step remounts them (OPF_TOP: a
		 * later OPF_BELOW remount does it for this bind). */
		if (!(op->flags & (OPF_REC | OPF_BELOW)) || (op->flags & OPF_TOP))
			continue;
		for (size_t j = 0; j < targets.n; j++) {
			const char *t = targets.v[j];
			if (!path_under(t, op->src) || !strcmp(t, op->src) || !strcmp(op->src, "/"))
				continue;
			size_t k = op->subs.n;
			op->sub_flags = xrealloc(op->sub_flags, (k + 1) * sizeof *op->sub_flags);
			op->sub_flags[k] = flags[j];
			strv_add(&op->subs, xstrdup(t + strlen(op->src) + 1));
		}
	}
	strv_free(&targets);
	free(flags);
}

/* Why this launch cannot be printed as a script that runs, or NULL. */
static const char *not_runnable(const struct run_config *cfg)
{
	if (cfg->subids.in_uid || cfg->subids.in_gid)
		return "--userns keep-id with subordinate ranges maps three ranges, where util-linux's unshare "
		       "--map-users writes one";
	if (cfg->import_run)
		return "--no-cache unpacks with gpurun's own unpacker; launch it once without it, then print the plan";
	if (cfg->layered && !tree_known(cfg))
		return "launch it once to fill the cache, then print the plan";
	if (tree_known(cfg)) {
		_cleanup_fd_ int sh = tree_open(cfg, "/bin/sh", O_PATH);
		if (sh < 0)
			return "the image has no /bin/sh, which the plan runs after pivot_root";
	}
	if (cfg->user_spec && !tree_known(cfg)) {
		const char *c = strchr(cfg->user_spec, ':');
		if (!c || strspn(cfg->user_spec, "0123456789:") != strlen(cfg->user_spec))
			return "--user names a user or group of an image whose files are not known yet";
	}
	return NULL;
}

static void plan_delim(const struct run_config *cfg, char *out, size_t cap)
{
	plan_delimiter("GPURUN_PLAN_END", cfg->plan, out, cap);
}

/* The host's tools the plan's steps run besides sh: util-linux and
 * coreutils always, GNU tar where it unpacks the root from an archive,
 * awk where it copies the driver's params (driver_params), uidmap's
 * newuidmap and newgidmap where unshare maps subordinate ranges,
 * hostname(1) for --hostname, iproute2's ip(8) for --net none. */
static void describe_tools(const struct run_config *cfg, struct sbuf *b)
{
	const struct plan_view v = {.plan = cfg->plan, .driver_root = cfg->driver_root};
	int tar = 0, awk = 0;
	for (size_t i = 0; i < cfg->plan->n; i++) {
		const struct op *op = &cfg->plan->v[i];
		tar |= op->kind == OP_ROOTFS && !op->layers.n && !(op->flags & OPF_DIR);
		awk |= op->kind == OP_FILE && (op->flags & OPF_PARAMS) && plan_file_from_driver(&v, op);
	}
	const char *tools[] = {"util-linux",
			       "coreutils",
			       tar ? "tar" : NULL,
			       awk ? "awk" : NULL,
			       ns_launch(cfg)->idmap == LAUNCH_MAP_RANGES ? "uidmap (newuidmap, newgidmap)" : NULL,
			       cfg->hostname ? "hostname" : NULL,
			       cfg->new_net ? "iproute2 (ip)" : NULL};
	size_t n = 0;
	for (size_t i = 0; i < COUNT_OF(tools); i++)
		if (tools[i])
			tools[n++] = tools[i];
	for (size_t i = 0; i < n; i++)
		sbuf_printf(b, "%s%s", i == 0 ? "" : i + 1 == n ? " and " : ", ", tools[i]);
}

void ns_describe_head(const struct run_config *cfg, struct sbuf *b)
{
	sbuf_puts(b, "#!/bin/sh\n# gpurun plan: `sh plan.sh` builds the same container with ");
	describe_tools(cfg, b);
	sbuf_puts(b, ".\n");
	const char *why = not_runnable(cfg);
	struct sbuf img = {0};
	ns_describe_image(cfg, &img);
	if (img.len)
		sbuf_printf(b, "%s\n", img.s);
	sbuf_free(&img);
	sbuf_puts(b, "# Only gpurun does: seccomp, an init as pid 1, setsid(2), closing inherited fds, restoring the "
		     "terminal.\n");
	if (cfg->fake_ids)
		sbuf_puts(
			b,
			"# With one id mapped, gpurun's filter also answers setgroups, set*id and chown to another id\n"
			"# with success (there is no other id): here they fail as the kernel says.\n");
	for (size_t i = 0; cfg->host_steps && i < cfg->host_steps->n; i++)
		sbuf_printf(b, "%s\n", cfg->host_steps->v[i]);
	sbuf_puts(b, "set -eu\n");
	if (why) {
		/* Said where it stops, so that a student who runs it reads why. */
		_cleanup_free_ char *msg = xasprintf("gpurun plan: cannot run as a script: %s", why);
		sbuf_puts(b, "echo ");
		sbuf_shquote(b, msg);
		sbuf_puts(b, " >&2; exit 125\n");
	}
	sbuf_puts(b, "S=$(mktemp -d /tmp/gpurun-plan.XXXXXX); trap 'rmdir \"$S\"' EXIT\n");
	/* The plan's steps outside: the namespaces and their id maps. */
	launch_describe(cfg->plan, ACT_MONITOR, b, NULL);
	char delim[64];
	plan_delim(cfg, delim, sizeof delim);
	sbuf_printf(b, " \\\n\tsh -euc \"$(cat <<'%s'\nsteps() {", delim);
}

/* The plan's own lines for the libdirs when the tree is not known at print
 * time: gpurun's rule, as shell tests, once the root is built. */
static void libdir_tests(const struct run_config *cfg, struct sbuf *b)
{
	if (tree_known(cfg))
		return;
	/* Only the variables a step names. */
	int lib = 0, lib32 = 0;
	size_t n = strlen(LIBDIR_VAR);
	for (size_t i = 0; i < cfg->plan->n; i++) {
		const struct op *op = &cfg->plan->v[i];
		const char *s = op->kind == OP_LDCONFIG ? op->src : op->dst;
		for (const char *at = s ? strstr(s, LIBDIR_VAR) : NULL; at; at = strstr(at + n, LIBDIR_VAR)) {
			if (!strncmp(at, LIBDIR32_VAR, strlen(LIBDIR32_VAR)))
				lib32 = 1;
			else
				lib = 1;
		}
	}
	if (lib)
		sbuf_printf(b, "\nif [ -e .%s ]; then LIBDIR=%s; else LIBDIR=%s; fi", LIBDIR_MARKER, plan_libdir_for(1),
			    LIBDIR_OTHER);
	if (lib32)
		sbuf_printf(b,
			    "\nif [ -e .%s ]; then LIBDIR32=%s; elif [ -d .%s ] || [ .%s -ef .%s ]; then "
			    "LIBDIR32=%s; \\\n\telse LIBDIR32=%s; fi",
			    LIBDIR_MARKER, plan_libdir32_for(1, 0, 0), LIBDIR32_OTHER, LIBDIR32_PLAIN, LIBDIR_OTHER,
			    LIBDIR32_OTHER, LIBDIR32_PLAIN);
}

/* Section 5's heading in a plan that runs no ldconfig. */
#define PIVOT_HEADING "# 5. pivot_root into the new root"
/* The headings of the plan's sections, in the walkthrough's order (1 is
 * the unshare line of the head, 6 the command's). */
static const char *const section_heading[] = {
	[SEC_ROOT] = "# 2. The root file system: the image on a tmpfs",
	[SEC_STANDARD] = "# 3. The standard mounts: /proc, /dev, /sys, /tmp, /run",
	[SEC_HARDEN] = "# Hardening the walkthrough does not have: docker's masked and read-only paths",
	[SEC_GPU] = "# 4. The GPU, as nvidia-container-cli configure does it",
	[SEC_MOUNTS] = "# Your mounts and working directory (-v, --tmpfs, --mount, -w)",
	[SEC_PIVOT] = "# 5. pivot_root, then the image's ldconfig (the GPU's last step)",
};

const char *ns_section_heading(const struct plan *p, enum plan_section s)
{
	/* Section 5 names ldconfig only where the plan runs it. */
	return s == SEC_PIVOT && !plan_find(p, OP_LDCONFIG) ? PIVOT_HEADING : section_heading[s];
}

/* Whether op prints any line. */
static int op_printed(const struct op *op)
{
	return op->kind != OP_LAUNCH && !(op->kind == OP_BIND && op->skipped);
}

static int uses_driver_root(const struct plan_view *v, const struct op *op)
{
	size_t n = v->driver_root ? strlen(v->driver_root) : 0;
	return (op->kind == OP_BIND || plan_file_from_driver(v, op)) && op_printed(op) && n > 1 &&
	       !strncmp(op->src, v->driver_root, n) && op->src[n] == '/';
}

void ns_describe_op(const struct run_config *cfg, const struct plan_view *v, size_t i, const struct ns_user *user,
		    struct sbuf *b)
{
	const struct op *op = &cfg->plan->v[i];
	for (size_t j = 0; j < i; j++)
		if (cfg->plan->v[j].kind == OP_PIVOT)
			return; /* printed with the pivot */
	if (!op_printed(op))
		return;
	/* A heading where the section changes, from the last op printed. */
	size_t j = i;
	while (j > 0 && !op_printed(&cfg->plan->v[j - 1]))
		j--;
	if (j == 0 || cfg->plan->v[j - 1].section != op->section)
		sbuf_printf(b, "%s\n", ns_section_heading(cfg->plan, op->section));
	if (uses_driver_root(v, op)) {
		int first = 1;
		for (size_t k = 0; k < i && first; k++)
			first = !uses_driver_root(v, &cfg->plan->v[k]);
		if (first) {
			sbuf_puts(b, PLAN_DRIVER_VAR "=");
			sbuf_shquote(b, v->driver_root);
			sbuf_puts(b, "   # the driver root\n");
		}
	}
	if (op->kind == OP_PIVOT) {
		ns_describe_pivot(cfg, v, i, user, b);
		return;
	}
	op_describe_step(v, i, b);
	if (op->kind == OP_ROOTFS)
		libdir_tests(cfg, b);
}

/* Whether name stands in text as a word of its own. */
static int has_word(const char *text, const char *name)
{
	size_t n = strlen(name);
	for (const char *at = strstr(text, name); at; at = strstr(at + 1, name)) {
		int before = at > text && (isalnum((unsigned char)at[-1]) || at[-1] == '_');
		int after = isalnum((unsigned char)at[n]) || at[n] == '_';
		if (!before && !after)
			return 1;
	}
	return 0;
}

/* The length of the name line defines, a function ("name() ") or a
 * variable ("NAME="), else 0. */
static size_t defined_name(const char *line)
{
	size_t n = strspn(line, "abcdefghijklmnopqrstuvwxyz_");
	if (n && !strncmp(line + n, "() ", 3))
		return n;
	n = strspn(line, "ABCDEFGHIJKLMNOPQRSTUVWXYZ_");
	return n && line[n] == '=' ? n : 0;
}

/* Of the plan's shell functions (text: ns/plan.sh with its constants put
 * in), the units a step calls, directly or through another: a unit is a
 * run of comment lines and the definitions under them, or a definition
 * whose comment ends its line, each printed whole or not at all. */
static void used_functions(const char *text, const char *steps, struct sbuf *b)
{
	struct strv units = {0};
	const char *start = text;
	for (const char *l = text; *l;) {
		const char *next = l + strcspn(l, "\n");
		next += *next == '\n';
		/* A comment line or a definition after a line of code starts the next unit. */
		if ((*next == '#' || defined_name(next)) && *l != '#') {
			strv_add(&units, xstrndup(start, (size_t)(next - start)));
			start = next;
		}
		l = next;
	}
	if (*start)
		strv_add(&units, xstrdup(start));
	struct sbuf called = {0};
	sbuf_puts(&called, steps);
	int *used = xcalloc(units.n ? units.n : 1, sizeof *used);
	for (int more = 1; more;) {
		more = 0;
		for (size_t i = 0; i < units.n; i++) {
			if (used[i])
				continue;
			/* The names it defines: "name() " at the start of a line. */
			for (const char *l = units.v[i]; *l && !used[i]; l += strcspn(l, "\n"), l += *l == '\n') {
				size_t n = defined_name(l);
				if (!n)
					continue;
				_cleanup_free_ char *name = xstrndup(l, n);
				used[i] = has_word(called.s, name);
			}
			if (used[i]) {
				sbuf_puts(&called, units.v[i]);
				more = 1;
			}
		}
	}
	for (size_t i = 0; i < units.n; i++)
		if (used[i] || i == 0) /* the first: what the helpers are */
			sbuf_puts(b, units.v[i]);
	free(used);
	sbuf_free(&called);
	strv_free(&units);
}

/* The plan's shell functions (ns/plan.sh, embedded by the build) that
 * the steps call, with gpurun's constants put in for their @NAMES@. */
static void describe_functions(const char *steps, struct sbuf *out)
{
	struct sbuf all = {0}, *b = &all;
	struct sbuf paths = {0}, args = {0};
	for (size_t k = 0; k < ldconfig_npaths; k++)
		sbuf_printf(&paths, "%s%s", k ? " " : "", ldconfig_paths[k]);
	for (size_t k = 0; k < ldconfig_nargs; k++)
		sbuf_printf(&args, "%s%s", k ? " " : "", ldconfig_args[k]);
	char max[32];
	snprintf(max, sizeof max, "%ld", LDCONFIG_CACHE_MAX);
	const char *const names[][2] = {
		{"LDCONFIG_SCRATCH", LDCONFIG_SCRATCH},
		{"LDCONFIG_CACHE", &LDCONFIG_CACHE_DIR[1]},
		{"LDCONFIG_CACHE_NAME", LDCONFIG_CACHE_NAME},
		{"LDCONFIG_CACHE_MAX", max},
		{"CUDA_COMPAT_DIR", CUDA_COMPAT_DIR},
		{"LDCONFIG_PATHS", paths.s},
		{"LDCONFIG_ARGS", args.s},
	};
	for (const char *t = plan_sh; *t;) {
		const char *at = strchr(t, '@');
		const char *end = at ? strchr(at + 1, '@') : NULL;
		size_t k = COUNT_OF(names);
		if (end)
			for (k = 0; k < COUNT_OF(names); k++)
				if (strlen(names[k][0]) == (size_t)(end - at - 1) &&
				    !strncmp(at + 1, names[k][0], end - at - 1))
					break;
		if (k == COUNT_OF(names)) { /* no name: the @ is the shell's */
			sbuf_add(b, t, at ? (size_t)(at - t) + 1 : strlen(t));
			t = at ? at + 1 : t + strlen(t);
			continue;
		}
		sbuf_add(b, t, (size_t)(at - t));
		sbuf_puts(b, names[k][1]);
		if (!strcmp(names[k][0], "LDCONFIG_CACHE"))
			sbuf_puts(b, "/" LDCONFIG_CACHE_NAME);
		t = end + 1;
	}
	sbuf_free(&paths);
	sbuf_free(&args);
	used_functions(all.s, steps, out);
	sbuf_free(&all);
}

void ns_describe_exec(const struct run_config *cfg, const struct plan_view *v, struct sbuf *b)
{
	sbuf_puts(b, "# 6. Drop to the user and exec\n");
	/* The command's steps, each printing its part (ns/steps.c). */
	struct step_print p = {0};
	launch_describe(cfg->plan, ACT_COMMAND, b, &p);
	sbuf_add(b, p.lines.s ? p.lines.s : "", p.lines.len);
	struct sbuf cmd = {0};
	sbuf_add(&cmd, p.map.s ? p.map.s : "", p.map.len);
	sbuf_printf(&cmd, "setpriv --nnp --inh-caps=-all --ambient-caps=-all --bounding-set=\"$CAPS\"%s -- env -i",
		    p.ids.len ? p.ids.s : "");
	size_t line = 0;
	/* The environment's words, then the waiting shell, the directory
	 * and the command, which stay on the last line. */
	struct strv words = {0};
	for (size_t i = 0; i < p.words.n; i++) {
		struct sbuf w = {0};
		sbuf_shquote(&w, p.words.v[i]);
		strv_add(&words, xstrdup(w.s));
		sbuf_free(&w);
	}
	size_t tail = words.n;
	struct sbuf last = {0};
	sbuf_puts(&last, "/bin/sh -c \"$WAIT_GO\" \"$S/go\" ");
	sbuf_shquote(&last, p.workdir ? p.workdir : "/");
	for (char **a = p.argv; a && *a; a++) {
		sbuf_puts(&last, " ");
		sbuf_shquote(&last, *a);
	}
	strv_add(&words, xstrdup(last.s));
	sbuf_free(&last);
	strv_free(&p.words);
	sbuf_free(&p.lines);
	sbuf_free(&p.map);
	sbuf_free(&p.ids);
	for (size_t i = 0; i < words.n; i++) {
		size_t w = strlen(words.v[i]);
		if (cmd.len - line + 1 + w > (i == tail ? 150 : 120)) {
			sbuf_puts(&cmd, " \\\n\t");
			line = cmd.len - 1;
		} else {
			sbuf_puts(&cmd, " ");
		}
		sbuf_puts(&cmd, words.v[i]);
	}
	strv_free(&words);
	sbuf_printf(b, "%s\n}\n", cmd.s);
	sbuf_free(&cmd);
	/* What the steps call: the ops' lines, the pivot's and the command's. */
	struct sbuf steps = {0};
	sbuf_puts(&steps, "after_pivot WAIT_GO LD_GO\n");
	for (size_t i = 0; i < cfg->plan->n; i++) {
		op_describe_step(v, i, &steps);
		sbuf_puts(&steps, "\n");
		if (cfg->plan->v[i].kind == OP_LDCONFIG)
			sbuf_puts(&steps, cfg->plan->v[i].data ? "cuda_compat\n" : "image_ldconfig\n");
	}
	describe_functions(steps.s, b);
	sbuf_free(&steps);
	for (size_t i = 0; i < cfg->plan->n; i++)
		if (cfg->plan->v[i].kind == OP_FILE && !plan_file_from_driver(v, &cfg->plan->v[i])) {
			plan_describe_body(v, &cfg->plan->v[i], b);
			sbuf_puts(b, "\n");
		}
	char delim[64];
	plan_delim(cfg, delim, sizeof delim);
	sbuf_printf(b, "S=$1; umask 022; steps\n%s\n)\" sh \"$S\"", delim);
}

/* Whether the container will have the directory path, as the plan knows
 * it: made or mounted there by an op, under a directory a volume binds
 * (then the host's), or in the image's tree. */
static int dir_in_plan(const void *arg, const char *path)
{
	const struct run_config *cfg = arg;
	for (size_t i = cfg->plan->n; i-- > 0;) {
		const struct op *op = &cfg->plan->v[i];
		if (!op->dst || (op->kind != OP_BIND && op->kind != OP_TMPFS && op->kind != OP_MKDIR))
			continue;
		const char *rest = str_after(path, op->dst);
		if (!rest || (*rest && *rest != '/'))
			continue;
		if (!*rest)
			return op->kind != OP_BIND || (op->flags & OPF_DIR);
		if (op->kind != OP_BIND || !(op->flags & OPF_DIR))
			return 0;
		_cleanup_free_ char *host = xasprintf("%s%s", op->src, rest);
		struct stat st;
		return stat(host, &st) == 0 && S_ISDIR(st.st_mode);
	}
	_cleanup_fd_ int fd = tree_open(cfg, path, O_PATH | O_DIRECTORY);
	return fd >= 0;
}

/* The command's ids and home as the plan knows them when printed: looked
 * up as the launch looks them up, in the image's layers that hold
 * /etc/passwd and /etc/group; else the numeric ids as given. */
static void ns_plan_user(const struct run_config *cfg)
{
	struct gerr err = {0};
	struct launch *l = ns_launch(cfg);
	_cleanup_fd_ int root = tree_root_with(cfg, "/etc/passwd");
	_cleanup_fd_ int group_root = tree_root_with(cfg, "/etc/group");
	if (root >= 0 &&
	    launch_lookup_user(l, cfg, root, group_root >= 0 ? group_root : root, dir_in_plan, cfg, &err) == 0)
		return;
	/* Not known before the launch (or a launch that fails there). */
	const char *c = cfg->user_spec ? strchr(cfg->user_spec, ':') : NULL;
	struct ns_user u = {.uid = cfg->user_spec ? (uid_t)strtoul(cfg->user_spec, NULL, 10) : 0};
	u.gid = c ? (gid_t)strtoul(c + 1, NULL, 10) : u.uid;
	launch_set_user(l, cfg, &u, ns_keep_id_home(cfg, dir_in_plan, cfg));
}

static void describe_list(struct sbuf *b, const char *label, char **v)
{
	sbuf_printf(b, "\n#   %s", label);
	for (; v && *v; v++) {
		sbuf_puts(b, " ");
		sbuf_showquote(b, *v);
	}
}

/* "\n#   LABEL VALUE": a comment line, so the value must not end it. */
static void describe_field(struct sbuf *b, const char *label, const char *v)
{
	sbuf_printf(b, "\n#   %s ", label);
	sbuf_showquote(b, v);
}

static void ns_describe_image(const struct run_config *cfg, struct sbuf *b)
{
	const struct image *img = cfg->layered;
	if (!img)
		return;
	sbuf_puts(b, "# image ");
	sbuf_showquote(b, img->source);
	if (img->ref) {
		sbuf_puts(b, "@");
		sbuf_showquote(b, img->ref);
	}
	sbuf_printf(b, ": %zu layer%s%s", img->layers.n, img->layers.n == 1 ? "" : "s",
		    cfg->import_run ? ", unpacked into this run's tmpfs (--no-cache)"
		    : img->hit      ? ", from the cache"
		    : img->missing  ? "" /* the line that stops the plan says so */
				    : ", unpacked into the cache");
	const struct image_config *c = &img->config;
	if (c->env || c->entrypoint || c->cmd || c->workdir || c->user) {
		sbuf_puts(b, "\n# the image's config (the command line overrides it):");
		if (c->env)
			describe_list(b, "Env:", c->env);
		if (c->entrypoint)
			describe_list(b, "Entrypoint:", c->entrypoint);
		if (c->cmd)
			describe_list(b, "Cmd:", c->cmd);
		if (c->workdir)
			describe_field(b, "WorkingDir:", c->workdir);
		if (c->user)
			describe_field(b, "User:", c->user);
	}
}

/* -t: what stands in for the terminal (ns/tty.c); no shell command does it. */
static void print_tty(const struct run_config *cfg, FILE *out)
{
	if (cfg->tty)
		fprintf(out,
			"# -t: stdin, stdout and stderr are a new pty of that devpts (/dev/pts/0, the controlling\n"
			"#  terminal); %s\n",
			cfg->interactive ? "gpurun relays it to and from this terminal (-i), which is raw meanwhile"
					 : "gpurun relays its output here, and reads no keystrokes (no -i)");
}

void ns_print_plan(const struct run_config *cfg, FILE *out)
{
	struct sbuf b = {0};
	struct plan_view v;
	ns_capture_mounts(cfg->plan);
	ns_view(cfg, &v);
	ns_view_upper(cfg);
	ns_describe_head(cfg, &b);
	fprintf(out, "%s\n", b.s);
	ns_plan_user(cfg);
	for (size_t i = 0; i < cfg->plan->n; i++) {
		sbuf_reset(&b);
		ns_describe_op(cfg, &v, i, &ns_launch(cfg)->user, &b);
		if (b.len)
			fprintf(out, "%s\n", b.s);
	}
	sbuf_reset(&b);
	print_tty(cfg, out);
	ns_describe_exec(cfg, &v, &b);
	fprintf(out, "%s\n", b.s);
	sbuf_free(&b);
}
