/* ns/entershow.c — what `gpurun exec` does (ns/enter.c), printed as the
 * host's commands that do the same (`gpurun exec --dry-run`): nsenter
 * into the command's namespaces (the user namespace first; the pid
 * namespace, then a fork) keeping the host's root, so that the host's
 * tools run: prlimit with the first command's limits, setpriv with its
 * capability sets and no_new_privs, env with its environment, and chroot
 * into the container's root with its ids and groups.  Where only gpurun
 * can do it (with one id mapped, a user namespace that no shell tool
 * reaches) the script says why and exits 125 before it does anything.
 * Every word from outside (the record's environment and paths, the
 * command) goes through the shell quoting function. */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "exec.h"

static void word(struct sbuf *b, const char *w)
{
	sbuf_puts(b, " ");
	sbuf_shquote(b, w);
}

static void limit_value(struct sbuf *b, rlim_t v)
{
	if (v == RLIM_INFINITY)
		sbuf_puts(b, "unlimited");
	else
		sbuf_printf(b, "%llu", (unsigned long long)v);
}

/* Why the host's tools cannot do what exec does, or NULL.  Both ways
 * need a user namespace only gpurun reaches: the container's, when its
 * command has one of its own (its init's /proc files are closed to the
 * caller, and NS_GET_PARENT is an ioctl), or a new one for the command,
 * which unshare(2) refuses to a process whose root is not its mount
 * namespace's, as the host's tools need the host's root. */
static const char *not_runnable(const struct record *r, uid_t uid, gid_t gid)
{
	if (r->unprivileged && r->nested_user)
		return "with one id mapped, the first command has a user namespace of its own (--user, or --userns "
		       "keep-id),\n# and gpurun enters its parent, the container's, which no shell tool can name "
		       "(NS_GET_PARENT; the\n# container's init keeps its /proc files from the caller)";
	if (r->one_id && (uid || gid))
		return "with one id mapped, gpurun gives a command of another user a user namespace of its own\n# "
		       "(unshare --user --map-user --map-group), which the kernel refuses to the host's tools: they need "
		       "the\n# host's root, and unshare(2) makes none for a process whose root is not its mount "
		       "namespace's";
	return NULL;
}

int ns_describe_enter(int kept_dirfd, const struct exec_request *rq, struct sbuf *b, struct gerr *err)
{
	struct record r;
	if (record_read(kept_dirfd, &r, err) < 0) {
		if (err->errnum == ENOENT)
			gerr_set(err, 0, "container %s is not running (gpurun ps)", rq->name);
		return -1;
	}
	if (!record_alive(&r)) {
		gerr_set(err, 0, "container %s is not running: its command (pid %d) is gone", rq->name, (int)r.pid);
		record_free(&r);
		return -1;
	}
	sbuf_puts(b, "# gpurun exec ");
	sbuf_showquote(b, rq->name);
	sbuf_printf(b,
		    ": the container's command is pid %d (its record, run.json; gpurun checks its start time,\n"
		    "# %llu ticks after boot, and its parent, the container's init %d, through a pidfd)\n",
		    (int)r.pid, r.pid_start, (int)r.init_pid);
	/* -u's user as exec finds it: in the container's own files, read
	 * through the command's root (reading changes nothing). */
	struct go_ahead ga;
	char root_path[64];
	snprintf(root_path, sizeof root_path, "/proc/%d/root", (int)r.pid);
	_cleanup_fd_ int root = rq->user ? open(root_path, O_PATH | O_DIRECTORY | O_CLOEXEC) : -1;
	if (rq->user && root < 0) {
		record_free(&r);
		return gerr_set(err, errno, "open %s", root_path);
	}
	if (enter_user(&r, rq->user, root, &ga, err) < 0) {
		record_free(&r);
		return -1;
	}
	uid_t uid = ga.uid;
	gid_t gid = ga.gid;
	const char *why = not_runnable(&r, uid, gid);
	/* In the run plan's words (ns/show.c). */
	sbuf_printf(b,
		    "# Only gpurun does: seccomp filters, closing the caller's fds, setsid(2), forwarding signals%s.\n",
		    rq->tty ? ", a pty of the container's own devpts (-t)" : "");
	if (r.one_id)
		sbuf_puts(
			b,
			"# With one id mapped, gpurun's filter also answers setgroups, set*id and chown to another id\n"
			"# with success (there is no other id): here they fail as the kernel says.\n");
	if (why) {
		sbuf_printf(b, "# cannot run as a script: %s\n", why);
		sbuf_puts(b, "echo 'gpurun exec: cannot run as a script (see its first lines)' >&2; exit 125\n");
		record_free(&r);
		return 0;
	}
	sbuf_printf(b, "P=%d\n", (int)r.pid);
	/* Opened now, with the caller's rights (the command may be another
	 * uid, which the capabilities left after setpriv may not look at);
	 * closed before the command runs. */
	sbuf_puts(b, "exec 9<\"/proc/$P/root\"   # the container's root, for chroot below\n");
	sbuf_puts(b, "# the user namespace first, then the others, and a fork into the pid namespace; the host's "
		     "root stays\n# the root (--root=/) so that the host's prlimit, setpriv, env and chroot run, "
		     "until chroot takes the container's\nnsenter --target \"$P\"");
	static const struct {
		int flag;
		const char *opt;
	} nss[] = {{CLONE_NEWUSER, "--user"}, {CLONE_NEWNS, "--mount"}, {CLONE_NEWPID, "--pid"},
		   {CLONE_NEWIPC, "--ipc"},   {CLONE_NEWUTS, "--uts"},  {CLONE_NEWNET, "--net"}};
	for (size_t i = 0; i < COUNT_OF(nss); i++)
		if (r.ns_flags & nss[i].flag)
			sbuf_printf(b, " %s", nss[i].opt);
	/* Unprivileged, the caller is already root of the container's user
	 * namespace, where setgroups may be denied. */
	sbuf_puts(b, r.unprivileged ? " --preserve-credentials --root=/ --wd=/ -- \\\n\tprlimit"
				    : " --root=/ --wd=/ -- \\\n\tprlimit");
	for (int k = 0; k < RLIM_NLIMITS; k++)
		if (r.has_limit[k]) {
			sbuf_printf(b, " --%s=", record_limit_names[k]);
			limit_value(b, r.limits[k].rlim_cur);
			sbuf_puts(b, ":");
			limit_value(b, r.limits[k].rlim_max);
		}
	sbuf_puts(b, " -- \\\n\tsetpriv --nnp --inh-caps=-all --ambient-caps=-all --bounding-set=-all");
	sec_describe_caps(b);
	sbuf_puts(b, " -- \\\n\tenv -i");
	struct strv env = {0};
	for (size_t i = 0; i < r.env.n; i++)
		strv_add(&env, xstrdup(r.env.v[i]));
	for (size_t i = 0; rq->env && i < rq->env->n; i++)
		env_set(&env, rq->env->v[i]);
	for (size_t i = 0; i < env.n; i++)
		word(b, env.v[i]);
	struct run_config cfg = {.unprivileged = r.unprivileged,
				 .fake_ids = r.one_id,
				 .setgroups_denied = r.setgroups_denied,
				 .env = env.v};
	_cleanup_free_ char *h = ns_home_entry(&cfg, uid, ga.home); /* as exec's command gets it */
	if (h)
		word(b, h);
	cfg.env = NULL;
	strv_free(&env);
	/* The container's root, its ids and groups (chroot(8) sets the
	 * groups, then the gid, then the uid, as gpurun does). */
	sbuf_puts(b, " \\\n\tchroot");
	if (ns_takes_groups(&cfg, uid, gid)) {
		sbuf_printf(b, " --userspec=%u:%u --groups=%u", (unsigned)uid, (unsigned)gid, (unsigned)gid);
		for (size_t i = 0; i < ga.ngroups; i++)
			sbuf_printf(b, ",%u", (unsigned)ga.groups[i]);
	} else if (!r.one_id && (uid || gid)) {
		sbuf_printf(b, " --userspec=%u:%u", (unsigned)uid, (unsigned)gid);
	}
	/* chroot(8) starts in "/", with fd 9 open: the image's sh goes to
	 * the working directory, leaves the environment as it found it and
	 * closes fd 9 as it execs the command. */
	const char *wd = rq->workdir ? rq->workdir : r.cwd ? r.cwd : "/";
	sbuf_puts(
		b,
		" /proc/self/fd/9 \\\n\t/bin/sh -c 'cd \"$1\" && shift && unset PWD OLDPWD SHLVL && exec \"$@\" 9<&-' sh ");
	sbuf_shquote(b, wd);
	sbuf_puts(b, " ");
	for (size_t i = 0; rq->argv[i]; i++) {
		if (i)
			sbuf_puts(b, " ");
		sbuf_shquote(b, rq->argv[i]);
	}
	sbuf_puts(b, "\n");
	record_free(&r);
	return 0;
}
