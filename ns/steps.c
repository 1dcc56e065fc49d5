/* ns/steps.c — the launch's steps around the mounts, each kind with how it
 * runs and how it prints side by side: the new namespaces and their id
 * maps (P0, or newuidmap for ranges), then what the command (P2) takes
 * before its exec: limits, environment, working directory, terminal,
 * nested user namespace, capabilities, no_new_privs, fds, seccomp, ids,
 * exec.  launch_build decides them once, from the run's config, and puts
 * them in the plan's one list (OP_LAUNCH) in the order they are taken:
 * the namespaces before the mount ops, the command's after them.  The
 * monitor, the command and the printer each loop over that list for the
 * steps that are theirs (launch_run, launch_describe). */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "exec.h"
#include "steps.h"
#include "userns/userns.h"

#ifndef CLOSE_RANGE_CLOEXEC
#define CLOSE_RANGE_CLOEXEC (1U << 2)
#endif

/* ---- the namespaces ------------------------------------------------------ */

static const struct {
	int flag;
	const char *name;
} ns_names[] = {{CLONE_NEWNS, "mount"},
		{CLONE_NEWPID, "pid"},
		{CLONE_NEWIPC, "ipc"},
		{CLONE_NEWUTS, "uts"},
		{CLONE_NEWNET, "net"}};

static int clone_flags(const struct run_config *cfg)
{
	int f = CLONE_NEWNS | CLONE_NEWPID | (cfg->share_ipc ? 0 : CLONE_NEWIPC);
	if (cfg->unprivileged)
		f |= CLONE_NEWUSER;
	if (cfg->hostname)
		f |= CLONE_NEWUTS;
	if (cfg->new_net)
		f |= CLONE_NEWNET;
	return f;
}

/* The clone itself is ns_run's (it is where P1 begins); this prints it,
 * as unshare's line, without its id maps (STEP_IDMAP's). */
static void describe_namespaces(const struct launch *l, const struct op *s, struct sbuf *b, struct step_print *p)
{
	(void)s;
	(void)p;
	struct sbuf names = {0}, opts = {0};
	for (size_t i = 0; i < COUNT_OF(ns_names); i++)
		if (l->clone_flags & ns_names[i].flag) {
			sbuf_printf(&names, "%s%s", names.len ? ", " : "", ns_names[i].name);
			sbuf_printf(&opts, " --%s", ns_names[i].name);
		}
	sbuf_printf(b, "# 1. New namespaces: %s%s; steps() runs in them\n", names.s,
		    !(l->clone_flags & CLONE_NEWUSER) ? ""
		    : l->idmap == LAUNCH_MAP_RANGES   ? ", and a user namespace mapping your subordinate ids"
						      : ", and a user namespace mapping you to root");
	sbuf_printf(b, "unshare%s --fork --kill-child --propagation slave", opts.s);
	sbuf_free(&names);
	sbuf_free(&opts);
}

/* ---- the id maps --------------------------------------------------------- */

static int write_map(pid_t pid, const char *file, const char *text, struct gerr *err)
{
	char path[64];
	snprintf(path, sizeof path, "/proc/%d/%s", (int)pid, file);
	_cleanup_fd_ int fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0 || write_all(fd, text, strlen(text)) < 0) {
		int e = errno;
		gerr_set(err, e, "write %s", path);
		if (e == EPERM || e == EACCES)
			gerr_hint(err, "user namespaces may be restricted: check "
				       "/proc/sys/kernel/apparmor_restrict_unprivileged_userns and "
				       "/proc/sys/user/max_user_namespaces");
		return -1;
	}
	return 0;
}

/* Single-id maps (no subuid ranges, no setuid helper): the caller becomes
 * root inside.  setgroups must be denied before an unprivileged gid_map. */
static int run_idmap(struct step_ctx *c, const struct op *s)
{
	(void)s;
	const struct launch *l = c->l;
	if (l->idmap == LAUNCH_MAP_RANGES)
		return subid_write_maps(l->subids, c->pid, c->err);
	char map[64];
	snprintf(map, sizeof map, "0 %u 1\n", (unsigned)l->host_uid);
	if (write_map(c->pid, "uid_map", map, c->err) < 0)
		return -1;
	if (write_map(c->pid, "setgroups", "deny", c->err) < 0)
		return -1;
	snprintf(map, sizeof map, "0 %u 1\n", (unsigned)l->host_gid);
	return write_map(c->pid, "gid_map", map, c->err);
}

/* util-linux runs newuidmap and newgidmap for ranges, as gpurun does. */
static void describe_idmap(const struct launch *l, const struct op *s, struct sbuf *b, struct step_print *p)
{
	(void)s;
	(void)p;
	sbuf_puts(b, " --map-root-user");
	if (l->idmap == LAUNCH_MAP_RANGES)
		sbuf_printf(b, " --map-users=%lu,1,%lu --map-groups=%lu,1,%lu", l->subids->uid_start,
			    l->subids->uid_count, l->subids->gid_start, l->subids->gid_count);
}

/* ---- --ulimit ------------------------------------------------------------ */

/* First: raising a hard limit needs CAP_SYS_RESOURCE, which the
 * capability drop takes away (runc sets them before it too). */
static int run_rlimits(struct step_ctx *c, const struct op *s)
{
	(void)s;
	for (size_t i = 0; i < c->l->nulimits; i++) {
		const struct ulimit *u = &c->l->ulimits[i];
		struct rlimit now;
		struct gerr err = {0};
		if (setrlimit(u->resource, &u->lim) == 0)
			continue;
		gerr_set(&err, errno, "--ulimit %s: setrlimit", u->name);
		if (err.errnum == EPERM && getrlimit(u->resource, &now) == 0 && now.rlim_max != RLIM_INFINITY)
			gerr_hint(&err,
				  "raising a hard limit needs CAP_SYS_RESOURCE, which gpurun's caller lacks; "
				  "the hard limit here is %llu",
				  (unsigned long long)now.rlim_max);
		setup_fail(c->err_fd, &err);
	}
	return 0;
}

/* One --ulimit as sh's ulimit (shell 1) or, where the shells differ, a
 * comment line (shell 0), which comes first.  Soft and hard apart: hard,
 * soft, hard again, so that it works whether the new limits are above or
 * below the old ones (P2 sets both at once); the first may fail (a hard
 * limit below the old soft one), and under set -e that must not end the
 * plan. */
static void describe_ulimit(const struct ulimit *u, int shell, struct sbuf *b)
{
	char v[2][24];
	rlim_t lim[2] = {u->lim.rlim_cur, u->lim.rlim_max}, mask = ((rlim_t)1 << u->shift) - 1;
	int fits = u->letter != 0;
	for (int k = 0; k < 2; k++) {
		fits &= lim[k] == RLIM_INFINITY || !(lim[k] & mask);
		if (lim[k] == RLIM_INFINITY)
			snprintf(v[k], sizeof v[k], "unlimited");
		else
			snprintf(v[k], sizeof v[k], "%llu", (unsigned long long)(lim[k] >> (shell ? u->shift : 0)));
	}
	if (!shell && !fits)
		sbuf_printf(b,
			    "# --ulimit %s=%s:%s: set by setrlimit before the exec (no ulimit every sh "
			    "shares says it)\n",
			    u->name, v[0], v[1]);
	else if (shell && fits && lim[0] == lim[1])
		sbuf_printf(b, "ulimit -%c %s; ", u->letter, v[0]);
	else if (shell && fits)
		sbuf_printf(b, "ulimit -H -%c %s 2>/dev/null || :; ulimit -S -%c %s; ulimit -H -%c %s; ", u->letter,
			    v[1], u->letter, v[0], u->letter, v[1]);
}

static void describe_rlimits(const struct launch *l, const struct op *s, struct sbuf *b, struct step_print *p)
{
	(void)s;
	(void)b;
	for (int shell = 0; shell < 2; shell++)
		for (size_t i = 0; i < l->nulimits; i++)
			describe_ulimit(&l->ulimits[i], shell, &p->lines);
	if (l->nulimits)
		sbuf_puts(&p->lines, "\n");
}

/* ---- the environment ----------------------------------------------------- */

static const char *env_get(char **env, const char *key)
{
	size_t kl = strlen(key);
	for (; env && *env; env++)
		if (!strncmp(*env, key, kl) && (*env)[kl] == '=')
			return *env + kl + 1;
	return NULL;
}

char *ns_home_entry(const struct run_config *cfg, uid_t uid, const char *home)
{
	if (env_get(cfg->env, "HOME"))
		return NULL;
	return xasprintf("HOME=%s", home && *home ? home : uid == 0 ? "/root" : "/");
}

static int run_env(struct step_ctx *c, const struct op *s)
{
	(void)s;
	size_t n = 0;
	while (c->l->env && c->l->env[n])
		n++;
	char **envp = xcalloc(n + 2, sizeof *envp);
	memcpy(envp, c->l->env, n * sizeof *envp);
	envp[n] = c->l->home_entry;
	c->envp = envp;
	return 0;
}

static void describe_env(const struct launch *l, const struct op *s, struct sbuf *b, struct step_print *p)
{
	(void)s;
	(void)b;
	for (char **e = l->env; e && *e; e++)
		strv_add(&p->words, xstrdup(*e));
	if (l->home_entry)
		strv_add(&p->words, xstrdup(l->home_entry));
}

/* ---- the working directory ----------------------------------------------- */

/* pivot_root moved our root; our cwd still points into the old tree. */
static int run_workdir(struct step_ctx *c, const struct op *s)
{
	(void)s;
	const char *wd = c->l->workdir ? c->l->workdir : "/";
	char cwd[PATH_MAX];
	if (chdir(wd) < 0)
		setup_failf(c->err_fd, errno, "workdir %s", wd);
	/* The cwd must be inside the new root (CVE-2024-21626). */
	if (!getcwd(cwd, sizeof cwd))
		setup_failf(c->err_fd, errno, "workdir %s", wd);
	if (cwd[0] != '/') /* glibc's "(unreachable)/..." */
		setup_failf(c->err_fd, EACCES, "workdir %s is outside the container", wd);
	return 0;
}

static void describe_workdir(const struct launch *l, const struct op *s, struct sbuf *b, struct step_print *p)
{
	(void)s;
	(void)b;
	p->workdir = l->workdir ? l->workdir : "/";
}

/* ---- the terminal -------------------------------------------------------- */

static int run_terminal(struct step_ctx *c, const struct op *s)
{
	(void)s;
	if (c->cfg->tty_foreground) {
		/* Own process group in the foreground: ^C reaches the command
		 * once, straight from the terminal.  P0 decided this: from in
		 * here the terminal's foreground group is invisible. */
		signal(SIGTTOU, SIG_IGN);
		if (setpgid(0, 0) < 0 || tcsetpgrp(0, getpid()) < 0)
			setup_failf(c->err_fd, errno, "make the command the terminal's foreground job");
		signal(SIGTTOU, SIG_DFL);
	} else if (setsid() < 0 && getsid(0) != getpid()) { /* exec's -t made the session already */
		/* No controlling terminal: TIOCSTI has nothing to inject into. */
		setup_failf(c->err_fd, errno, "setsid");
	}
	if (c->slave >= 0)
		tty_take(c->slave, c->err_fd);
	return 0;
}

/* ---- the nested user namespace ------------------------------------------- */

static int write_proc_self(const char *file, const char *text, struct gerr *err)
{
	char path[64];
	snprintf(path, sizeof path, "/proc/self/%s", file);
	_cleanup_fd_ int fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0 || write_all(fd, text, strlen(text)) < 0)
		return gerr_set(err, errno, "write %s", path);
	return 0;
}

/* Unprivileged --user: P1 must stay root in its user namespace to mount,
 * and a uid name is only known once the image is unpacked, so the command
 * gets a nested user namespace mapping the requested ids onto that root
 * (what bubblewrap does for --uid). */
static int run_userns(struct step_ctx *c, const struct op *s)
{
	(void)s;
	uid_t uid = c->l->user.uid;
	gid_t gid = c->l->user.gid;
	struct gerr err = {0};
	char map[64];
	if (!uid && !gid)
		return 0;
	if (unshare(CLONE_NEWUSER) < 0) {
		gerr_set(&err, errno, "unshare a user namespace for --user");
		setup_fail(c->err_fd, &err);
	}
	snprintf(map, sizeof map, "%u 0 1\n", (unsigned)uid);
	if (write_proc_self("uid_map", map, &err) < 0 || write_proc_self("setgroups", "deny", &err) < 0)
		setup_fail(c->err_fd, &err);
	snprintf(map, sizeof map, "%u 0 1\n", (unsigned)gid);
	if (write_proc_self("gid_map", map, &err) < 0)
		setup_fail(c->err_fd, &err);
	return 0;
}

static void describe_userns(const struct launch *l, const struct op *s, struct sbuf *b, struct step_print *p)
{
	(void)s;
	(void)b;
	if (l->user.uid || l->user.gid)
		sbuf_printf(&p->map, "unshare --user --map-user=%u --map-group=%u --keep-caps ", (unsigned)l->user.uid,
			    (unsigned)l->user.gid);
}

/* ---- capabilities, no_new_privs, fds, seccomp ------------------------------ */

/* As root, docker's set stays in the effective set for the ids step's
 * setresuid, which then clears it; with one id mapped a non-root --user
 * has its nested user namespace by now, which starts with every
 * capability. */
static int run_caps(struct step_ctx *c, const struct op *s)
{
	struct gerr err = {0};
	uid_t uid = s->after_go ? c->l->user.uid : 0;
	if (sec_drop_caps(!c->l->fake_ids || uid == 0, &err) < 0)
		setup_fail(c->err_fd, &err);
	return 0;
}

static void describe_caps(const struct launch *l, const struct op *s, struct sbuf *b, struct step_print *p)
{
	(void)l;
	(void)s;
	(void)b;
	sbuf_puts(&p->lines, "# hardening: docker's default capabilities\nCAPS=-all");
	sec_describe_caps(&p->lines);
	sbuf_puts(&p->lines, "\n");
}

/* The printed plan's run_as sets it (ns/plan.sh). */
static int run_no_new_privs(struct step_ctx *c, const struct op *s)
{
	(void)s;
	struct gerr err = {0};
	if (sec_no_new_privs(&err) < 0)
		setup_fail(c->err_fd, &err);
	return 0;
}

/* CVE-2024-21626: a leaked host fd is a way out; err_fd is already
 * close-on-exec.  No shell command does it: the plan says so in its head. */
static int run_fds(struct step_ctx *c, const struct op *s)
{
	(void)s;
	if (close_range(3, ~0U, CLOSE_RANGE_CLOEXEC) < 0)
		setup_failf(c->err_fd, errno, "close_range");
	return 0;
}

/* Last of the shedding: the filter also denies what the others use.  No
 * shell command loads one: the plan says so in its head. */
static int run_seccomp(struct step_ctx *c, const struct op *s)
{
	(void)s;
	struct gerr err = {0};
	if (sec_seccomp(&err) < 0)
		setup_fail(c->err_fd, &err);
	if (c->l->fake_ids && sec_seccomp_fake_ids(&err) < 0)
		setup_fail(c->err_fd, &err);
	return 0;
}

/* ---- the ids ------------------------------------------------------------- */

/* chroot --userspec's one group, plus the user's groups in the image as
 * docker's runtimes add them; never the caller's own. */
static int run_ids(struct step_ctx *c, const struct op *s)
{
	(void)s;
	const struct launch *l = c->l;
	uid_t uid = l->user.uid;
	gid_t gid = l->user.gid;
	if (l->takes_groups) {
		gid_t list[1 + USER_GROUPS_MAX];
		size_t n = l->user.ngroups < USER_GROUPS_MAX ? l->user.ngroups : USER_GROUPS_MAX;
		list[0] = gid;
		memcpy(list + 1, l->user.groups, n * sizeof *list);
		if (setgroups(1 + n, list) < 0)
			setup_failf(c->err_fd, errno, "set the groups of user %u:%u", (unsigned)uid, (unsigned)gid);
	}
	if (!l->fake_ids && (uid || gid) && (setresgid(gid, gid, gid) < 0 || setresuid(uid, uid, uid) < 0))
		setup_failf(c->err_fd, errno, "switch to user %u:%u", (unsigned)uid, (unsigned)gid);
	/* Checked, not trusted: no path here may leave the command root when
	 * it was to be another user (crun's CVE-2026-30892 was an exec -u
	 * that ran as uid 0). */
	if (getuid() != uid || geteuid() != uid || getgid() != gid || getegid() != gid)
		setup_failf(c->err_fd, EPERM, "the command is uid %u gid %u, not user %u:%u", (unsigned)geteuid(),
			    (unsigned)getegid(), (unsigned)uid, (unsigned)gid);
	return 0;
}

int ns_takes_groups(const struct run_config *cfg, uid_t uid, gid_t gid)
{
	if (cfg->fake_ids)
		return 0;
	if (cfg->unprivileged)
		return uid || gid;
	return !cfg->setgroups_denied;
}

void ns_setpriv_ids(int fake_ids, int takes_groups, const struct ns_user *u, struct sbuf *b)
{
	if (!fake_ids && (u->uid || u->gid))
		sbuf_printf(b, " --reuid=%u --regid=%u", (unsigned)u->uid, (unsigned)u->gid);
	if (takes_groups) {
		sbuf_printf(b, " --groups=%u", (unsigned)u->gid);
		for (size_t i = 0; i < u->ngroups; i++)
			sbuf_printf(b, ",%u", (unsigned)u->groups[i]);
	}
}

static void describe_ids(const struct launch *l, const struct op *s, struct sbuf *b, struct step_print *p)
{
	(void)s;
	(void)b;
	ns_setpriv_ids(l->fake_ids, l->takes_groups, &l->user, &p->ids);
}

/* ---- exec ---------------------------------------------------------------- */

/* execvp with the container's PATH (not P1's), and the exit codes a shell
 * uses: 127 not found, 126 found but not runnable. */
static int run_exec(struct step_ctx *c, const struct op *s)
{
	(void)s;
	struct gerr err = {0};
	char **argv = c->l->argv, **envp = c->envp;
	const char *cmd = argv[0], *hint = c->l->notfound_hint;
	if (strchr(cmd, '/')) {
		execve(cmd, argv, envp);
		int e = errno;
		if ((e == ENOENT || e == ENOTDIR) && faccessat(AT_FDCWD, cmd, F_OK, AT_EACCESS) < 0) {
			err.code = GPURUN_EXIT_NOTFOUND;
			gerr_set(&err, 0, "%s: command not found", cmd);
			if (hint)
				gerr_hint(&err, "%s", hint);
		} else {
			/* It exists: ENOENT now means a missing #! interpreter
			 * or ELF loader, which a shell reports as 126 too. */
			err.code = GPURUN_EXIT_NOEXEC;
			gerr_set(&err, e, "exec %s", cmd);
			if (e == ENOENT)
				gerr_hint(&err, "its interpreter or dynamic loader is missing from the image");
		}
		setup_fail(c->err_fd, &err);
	}
	/* The environment always has PATH (gpurun.c puts it first). */
	const char *path = env_get(envp, "PATH");
	int denied = 0, denied_errno = 0;
	char full[PATH_MAX], denied_path[PATH_MAX] = "";
	for (const char *p = path ? path : ""; *p;) {
		size_t n = strcspn(p, ":");
		if (n == 0)
			snprintf(full, sizeof full, "%s", cmd);
		else
			snprintf(full, sizeof full, "%.*s/%s", (int)n, p, cmd);
		execve(full, argv, envp);
		if (errno != ENOENT && errno != ENOTDIR && !denied) {
			denied = 1;
			denied_errno = errno;
			snprintf(denied_path, sizeof denied_path, "%s", full);
		}
		p += n;
		if (*p == ':')
			p++;
	}
	if (denied) {
		err.code = GPURUN_EXIT_NOEXEC;
		gerr_set(&err, denied_errno, "exec %s", denied_path);
	} else {
		err.code = GPURUN_EXIT_NOTFOUND;
		gerr_set(&err, 0, "%s: command not found", cmd);
		if (hint)
			gerr_hint(&err, "%s", hint);
	}
	setup_fail(c->err_fd, &err);
}

static void describe_exec(const struct launch *l, const struct op *s, struct sbuf *b, struct step_print *p)
{
	(void)s;
	(void)b;
	p->argv = l->argv;
}

/* ---- the table ----------------------------------------------------------- */

static const struct {
	int (*run)(struct step_ctx *c, const struct op *s); /* NULL: ns_run's clone */
	void (*describe)(const struct launch *l, const struct op *s, struct sbuf *b, struct step_print *p);
} kinds[STEP_KIND_COUNT] = {
	[STEP_NAMESPACES] = {NULL, describe_namespaces},
	[STEP_IDMAP] = {run_idmap, describe_idmap},
	[STEP_RLIMITS] = {run_rlimits, describe_rlimits},
	[STEP_ENV] = {run_env, describe_env},
	[STEP_WORKDIR] = {run_workdir, describe_workdir},
	[STEP_TERMINAL] = {run_terminal, NULL},
	[STEP_USERNS] = {run_userns, describe_userns},
	[STEP_CAPS] = {run_caps, describe_caps},
	[STEP_NO_NEW_PRIVS] = {run_no_new_privs, NULL},
	[STEP_FDS] = {run_fds, NULL},
	[STEP_SECCOMP] = {run_seccomp, NULL},
	[STEP_IDS] = {run_ids, describe_ids},
	[STEP_EXEC] = {run_exec, describe_exec},
};

/* The command's steps go at the end of the plan. */
static void add(struct plan *p, enum step_kind kind, int after_go)
{
	plan_add_step(p, p->n, kind, ACT_COMMAND, after_go);
}

/* What P2 sheds: capabilities, no_new_privs, every fd above 2, then
 * seccomp; with one id mapped, a --user gets its nested user namespace
 * first, since a new user namespace starts with every capability. */
static void add_shedding(struct plan *p, int after_go)
{
	if (after_go)
		add(p, STEP_USERNS, 1);
	add(p, STEP_CAPS, after_go);
	add(p, STEP_NO_NEW_PRIVS, after_go);
	add(p, STEP_FDS, after_go);
	add(p, STEP_SECCOMP, after_go);
}

void launch_build(struct plan *p, struct launch *l, const struct run_config *cfg, int early)
{
	memset(l, 0, sizeof *l);
	l->clone_flags = clone_flags(cfg);
	l->idmap = !cfg->unprivileged ? 0 : cfg->subids.uid_count ? LAUNCH_MAP_RANGES : LAUNCH_MAP_ONE;
	l->host_uid = cfg->host_uid;
	l->host_gid = cfg->host_gid;
	l->subids = &cfg->subids;
	l->ulimits = cfg->ulimits;
	l->nulimits = cfg->nulimits;
	l->fake_ids = cfg->fake_ids;
	l->env = cfg->env;
	l->workdir = cfg->workdir;
	l->argv = cfg->argv;
	l->notfound_hint = cfg->notfound_hint;
	/* The namespaces and their id maps before every mount op, in the
	 * order P0 takes them; the command's steps after them all. */
	plan_add_step(p, 0, STEP_NAMESPACES, ACT_MONITOR, 0);
	if (l->idmap)
		plan_add_step(p, 1, STEP_IDMAP, l->idmap == LAUNCH_MAP_RANGES ? ACT_IDMAP_HELPER : ACT_MONITOR, 0);
	add(p, STEP_RLIMITS, 0);
	if (early)
		add_shedding(p, 0);
	add(p, STEP_ENV, 1);
	add(p, STEP_WORKDIR, 1);
	add(p, STEP_TERMINAL, 1);
	if (!early)
		add_shedding(p, 1);
	add(p, STEP_IDS, 1);
	add(p, STEP_EXEC, 1);
}

void launch_set_user(struct launch *l, const struct run_config *cfg, const struct ns_user *u, const char *home)
{
	l->user = *u;
	l->user_known = 1;
	l->takes_groups = ns_takes_groups(cfg, u->uid, u->gid);
	snprintf(l->home, sizeof l->home, "%s", home ? home : "");
	free(l->home_entry);
	l->home_entry = ns_home_entry(cfg, u->uid, home);
}

const char *ns_keep_id_home(const struct run_config *cfg, int (*exists)(const void *arg, const char *path),
			    const void *arg)
{
	if (!cfg->keep_id)
		return NULL;
	if (cfg->keep_home && cfg->keep_home[0] == '/' && exists(arg, cfg->keep_home))
		return cfg->keep_home;
	return cfg->workdir ? cfg->workdir : "/";
}

int launch_lookup_user(struct launch *l, const struct run_config *cfg, int passwd_root, int group_root,
		       int (*exists)(const void *arg, const char *path), const void *arg, struct gerr *err)
{
	struct ns_user u = {0};
	_cleanup_free_ char *home = NULL;
	if (cfg->user_spec && rootfs_lookup_user(passwd_root, cfg->user_spec, &u.uid, &u.gid, &home, err) < 0)
		return -1;
	if (ns_takes_groups(cfg, u.uid, u.gid) &&
	    rootfs_user_groups(passwd_root, group_root, cfg->user_spec ? cfg->user_spec : "0", u.gid, u.groups,
			       &u.ngroups, err) < 0)
		return -1;
	launch_set_user(l, cfg, &u, home ? home : ns_keep_id_home(cfg, exists, arg));
	return 0;
}

void launch_free(struct launch *l)
{
	free(l->home_entry);
	l->home_entry = NULL;
}

struct launch *ns_launch(const struct run_config *cfg)
{
	return cfg->plan->launch;
}

void ns_plan_launch(struct run_config *cfg)
{
	struct launch *l = xmalloc(sizeof *l);
	launch_build(cfg->plan, l, cfg, !(cfg->fake_ids && cfg->user_spec));
	cfg->plan->launch = l;
}

static int takes(const struct op *s, enum plan_actor actor)
{
	if (s->kind != OP_LAUNCH)
		return 0;
	/* The id maps are P0's to start, newuidmap's or its own. */
	if (actor == ACT_MONITOR)
		return s->actor == ACT_MONITOR || s->actor == ACT_IDMAP_HELPER;
	return s->actor == actor;
}

int launch_run(struct step_ctx *ctx, enum plan_actor actor, int after_go)
{
	for (size_t i = 0; i < ctx->plan->n; i++) {
		const struct op *s = &ctx->plan->v[i];
		if (takes(s, actor) && s->after_go == after_go && kinds[s->step].run && kinds[s->step].run(ctx, s) < 0)
			return -1;
	}
	return 0;
}

void launch_describe(const struct plan *plan, enum plan_actor actor, struct sbuf *b, struct step_print *p)
{
	for (size_t i = 0; i < plan->n; i++) {
		const struct op *s = &plan->v[i];
		if (takes(s, actor) && kinds[s->step].describe)
			kinds[s->step].describe(plan->launch, s, b, p);
	}
}
