/* ns/command.c — P2, the command: forked by P1 (ns/init.c) before the
 * setup, it sheds its privileges (capabilities, no_new_privs, inherited
 * fds, seccomp; for a --user with one id mapped a nested user namespace), waits
 * for the go-ahead, takes its working directory and terminal, switches to
 * --user's ids as root and execs the command with the container's PATH,
 * under the --ulimit limits. */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <termios.h>
#include <unistd.h>

#include "exec.h"

#ifndef CLOSE_RANGE_CLOEXEC
#define CLOSE_RANGE_CLOEXEC (1U << 2)
#endif

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
static int nested_userns(uid_t uid, gid_t gid, struct gerr *err)
{
	char map[64];
	if (unshare(CLONE_NEWUSER) < 0)
		return gerr_set(err, errno, "unshare a user namespace for --user");
	snprintf(map, sizeof map, "%u 0 1\n", (unsigned)uid);
	if (write_proc_self("uid_map", map, err) < 0)
		return -1;
	if (write_proc_self("setgroups", "deny", err) < 0)
		return -1;
	snprintf(map, sizeof map, "%u 0 1\n", (unsigned)gid);
	return write_proc_self("gid_map", map, err);
}

static const char *env_get(char **env, const char *key)
{
	size_t kl = strlen(key);
	for (; env && *env; env++)
		if (!strncmp(*env, key, kl) && (*env)[kl] == '=')
			return *env + kl + 1;
	return NULL;
}

/* execvp with the container's PATH (not P1's), and the exit codes a shell
 * uses: 127 not found, 126 found but not runnable. */
__attribute__((noreturn)) static void exec_command(const struct run_config *cfg, char **argv, char **envp, int err_fd)
{
	struct gerr err = {0};
	const char *cmd = argv[0];
	if (strchr(cmd, '/')) {
		execve(cmd, argv, envp);
		int e = errno;
		if ((e == ENOENT || e == ENOTDIR) && faccessat(AT_FDCWD, cmd, F_OK, AT_EACCESS) < 0) {
			err.code = GPURUN_EXIT_NOTFOUND;
			gerr_set(&err, 0, "%s: command not found", cmd);
			if (cfg->notfound_hint)
				gerr_hint(&err, "%s", cfg->notfound_hint);
		} else {
			/* It exists: ENOENT now means a missing #! interpreter
			 * or ELF loader, which a shell reports as 126 too. */
			err.code = GPURUN_EXIT_NOEXEC;
			gerr_set(&err, e, "exec %s", cmd);
			if (e == ENOENT)
				gerr_hint(&err, "its interpreter or dynamic loader is missing from the image");
		}
		setup_fail(err_fd, &err);
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
		if (cfg->notfound_hint)
			gerr_hint(&err, "%s", cfg->notfound_hint);
	}
	setup_fail(err_fd, &err);
}

char **ns_container_env(char **image_env, int terminal, const char *hostname, const struct strv *cli_env)
{
	struct strv env = {0};
	strv_add(&env, xstrdup("PATH=" NS_DEFAULT_PATH));
	for (char **e = image_env; e && *e; e++)
		if (strchr(*e, '=') && **e != '=')
			env_set(&env, *e);
	if (terminal) {
		const char *term = getenv("TERM");
		strv_add(&env, xasprintf("TERM=%s", term && *term ? term : "xterm"));
	}
	if (hostname)
		strv_add(&env, xasprintf("HOSTNAME=%s", hostname));
	for (size_t i = 0; i < cli_env->n; i++)
		env_set(&env, cli_env->v[i]);
	return env.v;
}

char *ns_home_entry(const struct run_config *cfg, uid_t uid, const char *home)
{
	if (env_get(cfg->env, "HOME"))
		return NULL;
	return xasprintf("HOME=%s", home && *home ? home : uid == 0 ? "/root" : "/");
}

static char **command_env(const struct run_config *cfg, uid_t uid, const char *home)
{
	size_t n = 0;
	while (cfg->env && cfg->env[n])
		n++;
	char **envp = xcalloc(n + 2, sizeof *envp);
	memcpy(envp, cfg->env, n * sizeof *envp);
	envp[n] = ns_home_entry(cfg, uid, home);
	return envp;
}

/* What P2 sheds before exec: capabilities (as root, docker's set stays
 * in the effective set for --user's setresuid, which then clears it;
 * with one id mapped, a non-root --user gets its nested user namespace first,
 * since a new user namespace starts with every capability), no_new_privs,
 * every fd above 2 (CVE-2024-21626: a leaked host fd is a way out; err_fd
 * is already close-on-exec), then seccomp, which also denies what the
 * other steps use. */
static void shed_privileges(const struct run_config *cfg, uid_t uid, gid_t gid, int err_fd)
{
	struct gerr err = {0};
	if (cfg->fake_ids && (uid || gid) && nested_userns(uid, gid, &err) < 0)
		setup_fail(err_fd, &err);
	if (sec_drop_caps(!cfg->fake_ids || uid == 0, &err) < 0)
		setup_fail(err_fd, &err);
	if (sec_no_new_privs(&err) < 0)
		setup_fail(err_fd, &err);
	if (close_range(3, ~0U, CLOSE_RANGE_CLOEXEC) < 0)
		setup_failf(err_fd, errno, "close_range");
	if (sec_seccomp(&err) < 0)
		setup_fail(err_fd, &err);
	if (cfg->fake_ids && sec_seccomp_fake_ids(&err) < 0)
		setup_fail(err_fd, &err);
}

/* --ulimit, first: raising a hard limit needs CAP_SYS_RESOURCE, which the
 * capability drop takes away (runc sets them before it too). */
static void set_ulimits(const struct run_config *cfg, int err_fd)
{
	for (size_t i = 0; i < cfg->nulimits; i++) {
		const struct ulimit *u = &cfg->ulimits[i];
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
		setup_fail(err_fd, &err);
	}
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

int ns_takes_groups(const struct run_config *cfg, uid_t uid, gid_t gid)
{
	if (cfg->fake_ids)
		return 0;
	if (cfg->unprivileged)
		return uid || gid;
	return !cfg->setgroups_denied;
}

int ns_user_lookup(const struct run_config *cfg, int passwd_root, int group_root, struct ns_user *u, char **home,
		   struct gerr *err)
{
	*u = (struct ns_user){0};
	*home = NULL;
	if (cfg->user_spec && rootfs_lookup_user(passwd_root, cfg->user_spec, &u->uid, &u->gid, home, err) < 0)
		return -1;
	if (ns_takes_groups(cfg, u->uid, u->gid) &&
	    rootfs_user_groups(passwd_root, group_root, cfg->user_spec ? cfg->user_spec : "0", u->gid, u->groups,
			       &u->ngroups, err) < 0)
		return -1;
	return 0;
}

void ns_ldconfig_ids(const struct run_config *cfg, const struct ns_user *u, uid_t *uid, gid_t *gid)
{
	*uid = cfg->fake_ids ? 0 : u->uid;
	*gid = cfg->fake_ids ? 0 : u->gid;
}

/* From the go-ahead on (P2, or exec's command): the working directory,
 * the terminal, the ids and groups, and exec.  early: the privileges
 * were shed before (all but a --user with one id mapped, whose nested
 * user namespace is made here). */
__attribute__((noreturn)) static void become(const struct run_config *cfg, const struct go_ahead *ga_in, int slave,
					     int early, const sigset_t *orig, int err_fd)
{
	struct go_ahead ga = *ga_in;
	ga.home[sizeof ga.home - 1] = '\0';
	uid_t uid = ga.uid;
	gid_t gid = ga.gid;
	char **envp = command_env(cfg, uid, ga.home);

	sigprocmask(SIG_SETMASK, orig, NULL);
	/* P1 is non-dumpable; P2 is about to become the command (exec would
	 * reset this anyway) and must own its /proc/self for nested_userns.
	 * Not before the go-ahead: the image's ldconfig runs meanwhile. */
	prctl(PR_SET_DUMPABLE, 1);

	/* pivot_root moved our root; our cwd still points into the old tree. */
	const char *wd = cfg->workdir ? cfg->workdir : "/";
	char cwd[PATH_MAX];
	if (chdir(wd) < 0)
		setup_failf(err_fd, errno, "workdir %s", wd);
	/* The cwd must be inside the new root (CVE-2024-21626). */
	if (!getcwd(cwd, sizeof cwd))
		setup_failf(err_fd, errno, "workdir %s", wd);
	if (cwd[0] != '/') /* glibc's "(unreachable)/..." */
		setup_failf(err_fd, EACCES, "workdir %s is outside the container", wd);

	if (cfg->tty_foreground) {
		/* Own process group in the foreground: ^C reaches the command
		 * once, straight from the terminal.  P0 decided this: from in
		 * here the terminal's foreground group is invisible. */
		signal(SIGTTOU, SIG_IGN);
		if (setpgid(0, 0) < 0 || tcsetpgrp(0, getpid()) < 0)
			setup_failf(err_fd, errno, "make the command the terminal's foreground job");
		signal(SIGTTOU, SIG_DFL);
	} else if (setsid() < 0 && getsid(0) != getpid()) { /* exec's -t made the session already */
		/* No controlling terminal: TIOCSTI has nothing to inject into. */
		setup_failf(err_fd, errno, "setsid");
	}
	if (slave >= 0)
		tty_take(slave, err_fd);
	if (!early)
		shed_privileges(cfg, uid, gid, err_fd);
	/* chroot --userspec's one group, plus the user's groups in the
	 * image as docker's runtimes add them; never the caller's own. */
	if (ns_takes_groups(cfg, uid, gid)) {
		gid_t list[1 + USER_GROUPS_MAX];
		size_t n = ga.ngroups < USER_GROUPS_MAX ? ga.ngroups : USER_GROUPS_MAX;
		list[0] = gid;
		memcpy(list + 1, ga.groups, n * sizeof *list);
		if (setgroups(1 + n, list) < 0)
			setup_failf(err_fd, errno, "set the groups of user %u:%u", (unsigned)uid, (unsigned)gid);
	}
	if (!cfg->fake_ids && (uid || gid) && (setresgid(gid, gid, gid) < 0 || setresuid(uid, uid, uid) < 0))
		setup_failf(err_fd, errno, "switch to user %u:%u", (unsigned)uid, (unsigned)gid);
	/* Checked, not trusted: no path here may leave the command root when
	 * it was to be another user (crun's CVE-2026-30892 was an exec -u
	 * that ran as uid 0). */
	if (getuid() != uid || geteuid() != uid || getgid() != gid || getegid() != gid)
		setup_failf(err_fd, EPERM, "the command is uid %u gid %u, not user %u:%u", (unsigned)geteuid(),
			    (unsigned)getegid(), (unsigned)uid, (unsigned)gid);
	exec_command(cfg, cfg->argv, envp, err_fd);
}

/* P2: the command.  It is forked before the setup and sheds what it can
 * while P1 builds the root (on two cores the seccomp JIT and the
 * capability drop then cost the launch nothing).  Only a --user with one
 * id mapped waits: its nested user namespace needs unshare(2), which the
 * filter denies, and its ids are known only from the image.  As root,
 * --user's ids are switched after the go-ahead with the CAP_SETUID and
 * CAP_SETGID that docker's set keeps. */
void command_main(const struct run_config *cfg, int go_fd, const sigset_t *orig, int err_fd,
		  const struct cpu_spread *cpus)
{
	const int early = !(cfg->fake_ids && cfg->user_spec);
	for (int s = 1; s < NSIG; s++)
		signal(s, SIG_DFL);
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	set_ulimits(cfg, err_fd);
	if (early)
		shed_privileges(cfg, 0, 0, err_fd);

	struct go_ahead ga;
	/* EOF: the setup failed, and P1 reports why.  With -t the pty's
	 * slave comes first (ns/tty.c). */
	int slave = cfg->tty ? tty_recv_fd(go_fd) : -1;
	if ((cfg->tty && slave < 0) || read(go_fd, &ga, sizeof ga) != (ssize_t)sizeof ga)
		_exit(GPURUN_EXIT_FAIL);
	close(go_fd);
	cpu_spread_restore(cpus); /* the command gets gpurun's CPU mask */
	become(cfg, &ga, slave, early, orig, err_fd);
}

/* A command of `gpurun exec`, in the container's namespaces and root
 * (ns/enter.c): the first command's limits, then what P2 does. */
void command_enter(const struct run_config *cfg, const struct go_ahead *ga, const struct rlimit *limits,
		   const int *has_limit, const sigset_t *orig, int slave, int err_fd)
{
	for (int s = 1; s < NSIG; s++)
		signal(s, SIG_DFL);
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	/* Before the capabilities go, as --ulimit's are. */
	for (int r = 0; r < RLIM_NLIMITS; r++)
		if (has_limit[r] && setrlimit(r, &limits[r]) < 0)
			setup_failf(err_fd, errno, "set the container's limit %s (setrlimit)", record_limit_names[r]);
	const int early = !(cfg->fake_ids && (ga->uid || ga->gid));
	if (early)
		shed_privileges(cfg, 0, 0, err_fd);
	become(cfg, ga, slave, early, orig, err_fd);
}
