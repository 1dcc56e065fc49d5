/* ns/command.c — P2, the command: forked by P1 (ns/init.c) before the
 * setup, it takes the plan's steps that are its own (ns/steps.c: the
 * --ulimit limits, then the privileges it sheds), waits for the go-ahead,
 * which brings --user's ids, and takes the rest (working directory,
 * terminal, ids, exec); and the rules of the command's credentials that
 * the launch, `gpurun exec` and the printed plan share. */
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
#include "steps.h"

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

/* Whether the built root has the directory path (ns_keep_id_home). */
static int dir_in_root(const void *arg, const char *path)
{
	struct gerr ignored = {0};
	int fd = root_open(*(const int *)arg, path, O_PATH | O_DIRECTORY | O_CLOEXEC, &ignored);
	if (fd >= 0)
		close(fd);
	return fd >= 0;
}

int exec_user(struct exec_state *st, struct gerr *err)
{
	struct launch *l = ns_launch(st->cfg);
	if (!l->user_known && launch_lookup_user(l, st->cfg, st->rootfd, st->rootfd, dir_in_root, &st->rootfd, err) < 0)
		return -1;
	return 0;
}

void ns_ldconfig_ids(const struct run_config *cfg, const struct ns_user *u, uid_t *uid, gid_t *gid)
{
	*uid = cfg->fake_ids ? 0 : u->uid;
	*gid = cfg->fake_ids ? 0 : u->gid;
}

/* From the go-ahead on (P2, or exec's command): its credentials, then
 * the steps after it.  The exec step does not return. */
__attribute__((noreturn)) static void become(struct step_ctx *c, const struct go_ahead *ga_in, const sigset_t *orig)
{
	struct go_ahead ga = *ga_in;
	ga.home[sizeof ga.home - 1] = '\0';
	struct ns_user u = {.uid = ga.uid, .gid = ga.gid, .ngroups = ga.ngroups};
	memcpy(u.groups, ga.groups, sizeof u.groups);
	launch_set_user(c->l, c->cfg, &u, ga.home);

	sigprocmask(SIG_SETMASK, orig, NULL);
	/* P1 is non-dumpable; P2 is about to become the command (exec would
	 * reset this anyway) and must own its /proc/self for the nested user
	 * namespace.  Not before the go-ahead: the image's ldconfig runs
	 * meanwhile. */
	prctl(PR_SET_DUMPABLE, 1);
	launch_run(c, ACT_COMMAND, 1);
	_exit(GPURUN_EXIT_FAIL);
}

/* P2: the command.  It is forked before the setup and sheds what it can
 * while P1 builds the root (on two cores the seccomp JIT and the
 * capability drop then cost the launch nothing).  Only a --user with one
 * id mapped waits: its nested user namespace needs unshare(2), which the
 * filter denies, and its ids are known only from the image.  As root,
 * --user's ids are switched after the go-ahead with the CAP_SETUID and
 * CAP_SETGID that docker's set keeps.  Which steps come before the
 * go-ahead the plan decided (ns/steps.c). */
void command_main(const struct run_config *cfg, int go_fd, const sigset_t *orig, int err_fd,
		  const struct cpu_spread *cpus)
{
	struct step_ctx c = {.cfg = cfg, .plan = cfg->plan, .l = ns_launch(cfg), .err_fd = err_fd, .slave = -1};
	for (int s = 1; s < NSIG; s++)
		signal(s, SIG_DFL);
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	launch_run(&c, ACT_COMMAND, 0);

	struct go_ahead ga;
	/* EOF: the setup failed, and P1 reports why.  With -t the pty's
	 * slave comes first (ns/tty.c). */
	c.slave = cfg->tty ? tty_recv_fd(go_fd) : -1;
	if ((cfg->tty && c.slave < 0) || read(go_fd, &ga, sizeof ga) != (ssize_t)sizeof ga)
		_exit(GPURUN_EXIT_FAIL);
	close(go_fd);
	cpu_spread_restore(cpus); /* the command gets gpurun's CPU mask */
	become(&c, &ga, orig);
}

/* A command of `gpurun exec`, in the container's namespaces and root
 * (ns/enter.c): the first command's limits, then what P2 does, its steps
 * decided as a launch's are, with the ids it runs as known already. */
void command_enter(const struct run_config *cfg, const struct go_ahead *ga, const struct rlimit *limits,
		   const int *has_limit, const sigset_t *orig, int slave, int err_fd)
{
	struct launch l;
	struct plan steps = {0};
	launch_build(&steps, &l, cfg, !(cfg->fake_ids && (ga->uid || ga->gid)));
	struct step_ctx c = {.cfg = cfg, .plan = &steps, .l = &l, .err_fd = err_fd, .slave = slave};
	for (int s = 1; s < NSIG; s++)
		signal(s, SIG_DFL);
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	/* Before the capabilities go, as --ulimit's are. */
	for (int r = 0; r < RLIM_NLIMITS; r++)
		if (has_limit[r] && setrlimit(r, &limits[r]) < 0)
			setup_failf(err_fd, errno, "set the container's limit %s (setrlimit)", record_limit_names[r]);
	launch_run(&c, ACT_COMMAND, 0);
	become(&c, ga, orig);
}
