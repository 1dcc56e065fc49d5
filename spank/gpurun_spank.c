/* spank/gpurun_spank.c — a Slurm SPANK plugin that runs each task of a
 * step in a gpurun container, with pyxis's option names so that job
 * scripts carry over: `srun --container-image=IMAGE CMD` becomes, in every
 * task, `gpurun [options] IMAGE CMD`.
 *
 * How: in slurm_spank_task_init, which slurmstepd calls in the task's own
 * process, as the job's user, just before it would exec the command, the
 * plugin execs gpurun instead, with the task's argv and environment.  So
 * every task is its own container with its own GPUs (gpurun reads the
 * task's SLURM_STEP_GPUS: gpu/slurm.c; a task with GPUs runs with --gpus
 * all, which there means its own), the image is unpacked once per node
 * (gpurun's cache lock), and everything that touches the image, the cache
 * or a mount runs with the job user's credentials.  The hooks that run as
 * root in slurmstepd (the option callbacks in remote context) only keep
 * their argument; nothing is checked, opened or run there.
 *
 * Options (and, when an option is not given, the variable of the job's
 * environment named after it: gpurun's, GPURUN_CONTAINER_IMAGE, ..., else
 * pyxis's, PYXIS_CONTAINER_IMAGE, ...; a switch's value read as pyxis
 * reads it, 1/true/yes/y or 0/false/no/n, and any other refused):
 *   --container-image=IMAGE   anything gpurun runs; a pyxis/enroot name
 *                             "REGISTRY#REPO:TAG" or "REPO:TAG" is docker://
 *   --container-mounts=SRC[:DST[:ro|rw]],...   -v SRC:DST[:ro]
 *   --container-workdir=DIR   -w DIR
 *   --container-env=NAME,...  -e NAME: the host's value replaces the image's
 *   --container-writable / --container-readonly   (--read-only)
 *   --[no-]container-mount-home   -v $HOME:$HOME (default: not mounted)
 *   --[no-]container-remap-root   root inside (the default) or --userns
 *                             keep-id: the job's uid, gid and home
 *   --[no-]container-entrypoint   the image's Entrypoint runs before the
 *                             command (the default), or not: --entrypoint=''
 *                             (the command alone, as pyxis runs it)
 *   --container-name=NAME[:FLAG]  --name NAME[:FLAG]: the container's
 *                             writable layer kept under NAME; the tasks of
 *                             a step join the one that runs (pyxis's auto,
 *                             create, exec, no_exec: docs/containers.md);
 *                             with --container-image, whose image gpurun
 *                             checks against the kept one; NAME:exec alone
 *                             is `gpurun exec NAME`, NAME or NAME:no_exec
 *                             alone `gpurun start NAME` (the kept one's
 *                             image); NAME:create needs an image
 * pyxis options gpurun has no counterpart for (--container-save,
 * --container-entrypoint-log, --container-unshare) are refused with one
 * line each, and so are their variables.  The job's SLURM_* and PMI*
 * variables are copied into the container, as pyxis does.
 *
 * plugstack.conf: `optional /usr/local/lib/slurm/gpurun.so [gpurun=PATH]`
 * (PATH: the gpurun binary, default BINDIR/gpurun).  Built by `make spank`
 * against libslurm-dev; docs/slurm.md. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <slurm/slurm.h>
#include <slurm/spank.h>

SPANK_PLUGIN(gpurun, 1);

#ifndef GPURUN_BIN
#define GPURUN_BIN "/usr/local/bin/gpurun"
#endif

enum opt_id {
	O_IMAGE,
	O_MOUNTS,
	O_WORKDIR,
	O_ENV,
	O_WRITABLE,
	O_READONLY,
	O_MOUNT_HOME,
	O_NO_MOUNT_HOME,
	O_REMAP_ROOT,
	O_NO_REMAP_ROOT,
	O_ENTRYPOINT,
	O_NO_ENTRYPOINT,
	O_NAME,
	O_UNSUPPORTED_FIRST,
	O_SAVE = O_UNSUPPORTED_FIRST,
	O_ENTRYPOINT_LOG,
	O_UNSHARE,
	O_COUNT
};

/* What the options said: a string each (kept as given), NULL when unset. */
static char *given[O_COUNT];

static int keep(int val, const char *optarg, int remote)
{
	(void)remote;
	if (val < 0 || val >= O_COUNT)
		return -1;
	free(given[val]);
	given[val] = strdup(optarg ? optarg : "1");
	return given[val] ? 0 : -1;
}

/* Refused in srun (local context), before anything is started. */
static int refuse(int val, const char *optarg, int remote)
{
	static const char *const names[] = {"--container-save", "--container-entrypoint-log", "--container-unshare"};
	(void)optarg;
	if (!remote)
		slurm_error("gpurun: %s: pyxis's option has no counterpart in gpurun",
			    names[val - O_UNSUPPORTED_FIRST]);
	return -1;
}

struct spank_option spank_options[] = {
	{"container-image", "[SCHEME://][REGISTRY#]IMAGE[:TAG]|PATH", "gpurun: run each task in this image", 1, O_IMAGE,
	 keep},
	{"container-mounts", "SRC[:DST[:ro|rw]][,...]", "gpurun: bind host paths", 1, O_MOUNTS, keep},
	{"container-workdir", "DIR", "gpurun: working directory inside", 1, O_WORKDIR, keep},
	{"container-env", "NAME[,NAME...]", "gpurun: host variables whose values replace the image's", 1, O_ENV, keep},
	{"container-writable", NULL, "gpurun: writable root file system (the default)", 0, O_WRITABLE, keep},
	{"container-readonly", NULL, "gpurun: read-only root file system", 0, O_READONLY, keep},
	{"container-mount-home", NULL, "gpurun: bind $HOME", 0, O_MOUNT_HOME, keep},
	{"no-container-mount-home", NULL, "gpurun: do not bind $HOME (the default)", 0, O_NO_MOUNT_HOME, keep},
	{"container-remap-root", NULL, "gpurun: root inside the container (the default)", 0, O_REMAP_ROOT, keep},
	{"no-container-remap-root", NULL, "gpurun: the job's uid and gid inside (--userns keep-id)", 0, O_NO_REMAP_ROOT,
	 keep},
	{"container-entrypoint", NULL, "gpurun: run the image's Entrypoint before the command (the default)", 0,
	 O_ENTRYPOINT, keep},
	{"no-container-entrypoint", NULL, "gpurun: run the command without the image's Entrypoint", 0, O_NO_ENTRYPOINT,
	 keep},
	{"container-name", "NAME[:FLAG]", "gpurun: keep the container's writable layer under NAME (gpurun --name)", 1,
	 O_NAME, keep},
	{"container-save", "PATH", "gpurun: not supported", 1, O_SAVE, refuse},
	{"container-entrypoint-log", NULL, "gpurun: not supported", 0, O_ENTRYPOINT_LOG, refuse},
	{"container-unshare", "NS", "gpurun: not supported", 1, O_UNSHARE, refuse},
	SPANK_OPTIONS_TABLE_END};

/* A variable that stands for an option: PREFIX and the option's name in
 * capitals, '-' as '_' (--container-image -> GPURUN_CONTAINER_IMAGE). */
static void env_name(const char *prefix, const char *opt, char *out, size_t cap)
{
	size_t i = 0;
	for (const char *p = prefix; *p && i + 1 < cap; p++)
		out[i++] = *p;
	for (; *opt && i + 1 < cap; opt++)
		out[i++] = *opt == '-' ? '_' : (char)(*opt >= 'a' && *opt <= 'z' ? *opt - 32 : *opt);
	out[i] = '\0';
}

/* The job's variables, in the order they are read: gpurun's own (which
 * sbatch's and salloc's options become) before pyxis's, so that a job
 * script written for pyxis runs unchanged and a gpurun name says what it
 * means over it. */
static const char *const prefixes[] = {"GPURUN_", "PYXIS_"};

/* The option's variable of that prefix into buf, its name into name, when
 * the job's environment has it not empty.  pyxis names a switch after its
 * option that turns it on (PYXIS_CONTAINER_MOUNT_HOME=0 is
 * --no-container-mount-home), so it has none for the no- options. */
static const char *job_var(spank_t sp, const char *prefix, int id, char *name, size_t ncap, char *buf, size_t cap)
{
	if (!strcmp(prefix, "PYXIS_") && !strncmp(spank_options[id].name, "no-", 3))
		return NULL;
	env_name(prefix, spank_options[id].name, name, ncap);
	if (spank_getenv(sp, name, buf, (int)cap) == ESPANK_SUCCESS && *buf)
		return buf;
	return NULL;
}

/* The option's value, else its variable: GPURUN_'s, then PYXIS_'s. */
static const char *value(spank_t sp, int id, char *buf, size_t cap)
{
	char name[96];
	if (given[id])
		return given[id];
	for (size_t i = 0; i < sizeof prefixes / sizeof *prefixes; i++)
		if (job_var(sp, prefixes[i], id, name, sizeof name, buf, cap))
			return buf;
	return NULL;
}

/* pyxis's values of a switch: 1 on, 0 off, -1 neither. */
static int parse_switch(const char *s)
{
	static const char *const on[] = {"1", "true", "yes", "y"}, *const off[] = {"0", "false", "no", "n"};
	for (size_t i = 0; i < sizeof on / sizeof *on; i++) {
		if (!strcmp(s, on[i]))
			return 1;
		if (!strcmp(s, off[i]))
			return 0;
	}
	return -1;
}

/* A switch gpurun turns on from its default: the option that turns it on,
 * the one that turns it off, and what the switch is (1 on, 0 off) when one
 * level (the command line, or one prefix's variables) says both: the
 * winner of docs/slurm.md's rows. */
struct sw {
	int on, off, winner;
};
static const struct sw SW_READONLY = {O_READONLY, O_WRITABLE, 1}, SW_MOUNT_HOME = {O_MOUNT_HOME, O_NO_MOUNT_HOME, 0},
		       SW_KEEP_ID = {O_NO_REMAP_ROOT, O_REMAP_ROOT, 0},
		       SW_NO_ENTRYPOINT = {O_NO_ENTRYPOINT, O_ENTRYPOINT, 0};

/* Whether the switch is on: the command line's pair, else the first
 * prefix whose variables say anything (GPURUN_CONTAINER_WRITABLE=1 is off,
 * PYXIS_CONTAINER_REMAP_ROOT=0 on), else off.  -1, said in one line, for
 * a variable read whose value is no switch. */
static int switch_on(spank_t sp, const struct sw *s)
{
	if (given[s->on] || given[s->off])
		return given[s->on] && given[s->off] ? s->winner : given[s->on] != NULL;
	for (size_t p = 0; p < sizeof prefixes / sizeof *prefixes; p++) {
		int says[2] = {-1, -1};
		for (int k = 0; k < 2; k++) {
			char name[96], buf[4096];
			const char *v =
				job_var(sp, prefixes[p], k ? s->off : s->on, name, sizeof name, buf, sizeof buf);
			int b = v ? parse_switch(v) : -2;
			if (b == -1) {
				slurm_error("gpurun: %s=%.64s: a switch is 1, true, yes or y, or 0, false, no or n",
					    name, v);
				return -1;
			}
			if (b >= 0)
				says[k] = k ? !b : b;
		}
		if (says[0] >= 0 && says[1] >= 0 && says[0] != says[1])
			return s->winner;
		if (says[0] >= 0 || says[1] >= 0)
			return says[0] >= 0 ? says[0] : says[1];
	}
	return 0;
}

/* A variable of an option the plugin refuses asks for what gpurun does
 * not do: refused too, in one line, rather than dropped. */
static int refused_vars(spank_t sp)
{
	for (int id = O_UNSUPPORTED_FIRST; id < O_COUNT; id++)
		for (size_t p = 0; p < sizeof prefixes / sizeof *prefixes; p++) {
			char name[96], buf[4096];
			const char *v = job_var(sp, prefixes[p], id, name, sizeof name, buf, sizeof buf);
			if (!v || (!spank_options[id].has_arg && parse_switch(v) == 0))
				continue;
			slurm_error("gpurun: %s: stands for pyxis's --%s, which has no counterpart in gpurun", name,
				    spank_options[id].name);
			return -1;
		}
	return 0;
}

struct argv {
	char **v;
	size_t n, cap;
};

static int push(struct argv *a, const char *s)
{
	if (a->n + 2 > a->cap) {
		size_t cap = a->cap ? 2 * a->cap : 32;
		char **v = realloc(a->v, cap * sizeof *v);
		if (!v)
			return -1;
		a->v = v;
		a->cap = cap;
	}
	if (!(a->v[a->n] = strdup(s)))
		return -1;
	a->v[++a->n] = NULL;
	return 0;
}

static int push2(struct argv *a, const char *opt, const char *arg)
{
	return push(a, opt) < 0 ? -1 : push(a, arg);
}

/* pyxis's image names: "nvcr.io#nvidia/pytorch:24.01" (enroot's) and
 * "ubuntu:22.04" are registry references; a path or a SCHEME:// is
 * gpurun's own. */
static int image_arg(struct argv *a, const char *image)
{
	if (strstr(image, "://") || image[0] == '/' || image[0] == '.')
		return push(a, image);
	char buf[4096];
	const char *hash = strchr(image, '#');
	int n = hash ? snprintf(buf, sizeof buf, "docker://%.*s/%s", (int)(hash - image), image, hash + 1)
		     : snprintf(buf, sizeof buf, "docker://%s", image);
	if (n < 0 || (size_t)n >= sizeof buf)
		return -1;
	return push(a, buf);
}

/* --container-mounts: SRC[:DST[:FLAGS]] items, comma-separated; -2 for
 * an item it refused, in one line. */
static int mounts_arg(struct argv *a, const char *list)
{
	char *copy = strdup(list), *save = NULL;
	int r = copy ? 0 : -1;
	for (char *m = copy ? strtok_r(copy, ",", &save) : NULL; m && r == 0; m = strtok_r(NULL, ",", &save)) {
		char *dst = strchr(m, ':'), *flags = NULL, buf[8192];
		if (dst) {
			*dst++ = '\0';
			flags = strchr(dst, ':');
			if (flags)
				*flags++ = '\0';
		}
		if (!*m || (dst && !*dst) || (flags && strcmp(flags, "ro") && strcmp(flags, "rw"))) {
			slurm_error("gpurun: --container-mounts: %s%s%s%s%s: want SRC[:DST[:ro|rw]]", m, dst ? ":" : "",
				    dst ? dst : "", flags ? ":" : "", flags ? flags : "");
			r = -2;
			break;
		}
		int n = snprintf(buf, sizeof buf, "%s:%s%s", m, dst ? dst : m,
				 flags && !strcmp(flags, "ro") ? ":ro" : "");
		r = n < 0 || (size_t)n >= sizeof buf ? -1 : push2(a, "-v", buf);
	}
	free(copy);
	return r;
}

/* The variables a task's command gets from the job: --container-env's
 * names, each gpurun's -e NAME (the host's value), and what MPI and the
 * job's scripts need inside, as pyxis copies it. */
static int env_args(spank_t sp, char **env, struct argv *a)
{
	char buf[4096];
	const char *v;
	if ((v = value(sp, O_ENV, buf, sizeof buf))) {
		char *copy = strdup(v), *save = NULL;
		if (!copy)
			return -1;
		for (char *n = strtok_r(copy, ",", &save); n; n = strtok_r(NULL, ",", &save))
			if (push2(a, "-e", n) < 0) {
				free(copy);
				return -1;
			}
		free(copy);
	}
	for (size_t i = 0; env && env[i]; i++)
		if (!strncmp(env[i], "SLURM_", 6) || !strncmp(env[i], "PMI", 3)) {
			size_t k = strcspn(env[i], "=");
			char name[256];
			if (k >= sizeof name)
				continue;
			memcpy(name, env[i], k);
			name[k] = '\0';
			if (push2(a, "-e", name) < 0)
				return -1;
		}
	return 0;
}

/* The gpurun command line of one task: options, the image, the task's
 * argv; without an image, `gpurun start [options] NAME[:FLAG] argv`, which
 * is the same run with the image the kept container NAME was made from.
 * -1 when out of memory, -2 when it said in one line what it refused. */
static int build(spank_t sp, const char *gpurun, const char *image, const char *name_flag, struct argv *a)
{
	char buf[4096], home[4096];
	const char *v;
	char **argv = NULL, **env = NULL;
	int argc = 0, r;
	int readonly = switch_on(sp, &SW_READONLY), mount_home = switch_on(sp, &SW_MOUNT_HOME),
	    keep_id = switch_on(sp, &SW_KEEP_ID), no_entrypoint = switch_on(sp, &SW_NO_ENTRYPOINT);
	if (readonly < 0 || mount_home < 0 || keep_id < 0 || no_entrypoint < 0 || refused_vars(sp) < 0)
		return -2;
	if (spank_get_item(sp, S_JOB_ARGV, &argc, &argv) != ESPANK_SUCCESS ||
	    spank_get_item(sp, S_JOB_ENV, &env) != ESPANK_SUCCESS)
		return -1;
	if (push(a, gpurun) < 0 || (!image && push(a, "start") < 0))
		return -1;
	/* A task with GPUs gets them all, which in a step means its own
	 * (gpurun's ceiling); without, the image's NVIDIA_VISIBLE_DEVICES
	 * gets none there either. */
	if ((spank_getenv(sp, "SLURM_STEP_GPUS", buf, sizeof buf) == ESPANK_SUCCESS && *buf) &&
	    push2(a, "--gpus", "all") < 0)
		return -1;
	if ((v = value(sp, O_MOUNTS, buf, sizeof buf)) && (r = mounts_arg(a, v)) < 0)
		return r;
	if ((v = value(sp, O_WORKDIR, buf, sizeof buf)) && push2(a, "-w", v) < 0)
		return -1;
	if (readonly && push(a, "--read-only") < 0)
		return -1;
	if (mount_home && spank_getenv(sp, "HOME", home, sizeof home) == ESPANK_SUCCESS && home[0] == '/') {
		char vol[8200];
		snprintf(vol, sizeof vol, "%s:%s", home, home);
		if (push2(a, "-v", vol) < 0)
			return -1;
	}
	/* gpurun runs as the job's user: keeping its ids is gpurun's own
	 * --userns keep-id (its home too, and with subordinate ranges the
	 * image's other owners). */
	if (keep_id && push2(a, "--userns", "keep-id") < 0)
		return -1;
	/* pyxis's --no-container-entrypoint: the task's command alone.  srun
	 * always gives one, so the image's Cmd is not what runs either. */
	if (no_entrypoint && push(a, "--entrypoint=") < 0)
		return -1;
	/* pyxis's NAME[:FLAG] is gpurun's: a second task of the step joins
	 * the container the first one runs. */
	if (image && name_flag && push2(a, "--name", name_flag) < 0)
		return -1;
	if (env_args(sp, env, a) < 0)
		return -1;
	if ((image ? image_arg(a, image) : push(a, name_flag)) < 0)
		return -1;
	for (int i = 0; i < argc; i++)
		if (push(a, argv[i]) < 0)
			return -1;
	return 0;
}

/* pyxis's --container-name=NAME:exec without --container-image: the
 * container runs already, so the task is `gpurun exec NAME COMMAND`, with
 * what applies to a command joining a container (its variables and its
 * working directory; mounts, GPUs and the other switches belong to the
 * container, made already). */
static int build_exec(spank_t sp, const char *gpurun, const char *name_flag, struct argv *a)
{
	char buf[4096];
	const char *v;
	char **argv = NULL, **env = NULL;
	int argc = 0;
	if (spank_get_item(sp, S_JOB_ARGV, &argc, &argv) != ESPANK_SUCCESS ||
	    spank_get_item(sp, S_JOB_ENV, &env) != ESPANK_SUCCESS)
		return -1;
	if (push(a, gpurun) < 0 || push(a, "exec") < 0)
		return -1;
	if ((v = value(sp, O_WORKDIR, buf, sizeof buf)) && push2(a, "-w", v) < 0)
		return -1;
	if (env_args(sp, env, a) < 0)
		return -1;
	char *name = strndup(name_flag, strcspn(name_flag, ":"));
	int r = name ? push2(a, name, "--") : -1;
	free(name);
	if (r < 0)
		return -1;
	for (int i = 0; i < argc; i++)
		if (push(a, argv[i]) < 0)
			return -1;
	return 0;
}

/* The plugstack.conf argument gpurun=PATH, else the installed binary. */
static const char *gpurun_path(int ac, char **av)
{
	for (int i = 0; i < ac; i++)
		if (!strncmp(av[i], "gpurun=", 7) && av[i][7] == '/')
			return av[i] + 7;
	return GPURUN_BIN;
}

int slurm_spank_init(spank_t sp, int ac, char **av)
{
	(void)ac;
	(void)av;
	/* sbatch and salloc take the options too (the table only reaches srun
	 * and slurmstepd); their steps read them back from the environment. */
	if (spank_context() == S_CTX_ALLOCATOR)
		for (struct spank_option *o = spank_options; o->name; o++)
			if (spank_option_register(sp, o) != ESPANK_SUCCESS)
				return -1;
	return 0;
}

/* sbatch/salloc: what was given goes into the job's environment, where
 * its steps find it (value()). */
int slurm_spank_init_post_opt(spank_t sp, int ac, char **av)
{
	(void)ac;
	(void)av;
	if (spank_context() != S_CTX_ALLOCATOR)
		return 0;
	for (int id = 0; id < O_UNSUPPORTED_FIRST; id++) {
		char name[96];
		if (!given[id])
			continue;
		env_name("GPURUN_", spank_options[id].name, name, sizeof name);
		if (setenv(name, given[id], 1) < 0)
			return -1;
	}
	(void)sp;
	return 0;
}

int slurm_spank_task_init(spank_t sp, int ac, char **av)
{
	char buf[4096], name[4096];
	uint32_t step = 0;
	const char *image = value(sp, O_IMAGE, buf, sizeof buf);
	const char *cname = value(sp, O_NAME, name, sizeof name);
	if (image && !*image)
		image = NULL;
	if (!image && !cname)
		return 0;
	/* The batch script itself stays on the host: its steps are the
	 * containers. */
	if (spank_get_item(sp, S_JOB_STEPID, &step) == ESPANK_SUCCESS && step == SLURM_BATCH_SCRIPT)
		return 0;
	/* Without an image, pyxis's rules: NAME:exec joins the running
	 * container, NAME (auto) and NAME:no_exec start from the kept one
	 * (gpurun start refuses a name never made, in one line); only
	 * NAME:create needs the image to make it from. */
	const char *colon = cname ? strchr(cname, ':') : NULL;
	int exec_only = colon && !strcmp(colon + 1, "exec");
	if (!image && colon && !strcmp(colon + 1, "create")) {
		slurm_error("gpurun: --container-name=%s needs --container-image: a container is made from an image "
			    "(without :create, a kept container starts from the image it was made from)",
			    cname);
		return -1;
	}
	const char *gpurun = gpurun_path(ac, av);
	struct argv a = {0};
	char **env = NULL;
	int r = image || !exec_only ? build(sp, gpurun, image, cname, &a) : build_exec(sp, gpurun, cname, &a);
	if (r == -2)
		return -1;
	if (r < 0 || spank_get_item(sp, S_JOB_ENV, &env) != ESPANK_SUCCESS) {
		slurm_error("gpurun: cannot build the command line of the task");
		return -1;
	}
	execve(gpurun, a.v, env);
	slurm_error("gpurun: execve %s: %s", gpurun, strerror(errno));
	return -1;
}
