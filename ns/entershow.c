/* ns/entershow.c — what `gpurun exec` does (ns/enter.c), printed as the
 * util-linux commands that do the same (`gpurun exec --dry-run`): nsenter
 * into the command's namespaces (the user namespace first; the pid
 * namespace, then a fork), prlimit with the first command's limits,
 * setpriv with its capability sets, no_new_privs and ids, and env with its
 * environment.  Every word from outside (the record's environment and
 * paths, the command) goes through the shell quoting function. */
#include <errno.h>
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
	sbuf_printf(b, "P=%d\n", (int)r.pid);
	if (r.nested_user)
		sbuf_puts(b, "# the command's user namespace is a nested one (--user with one id mapped): gpurun "
			     "enters its parent (NS_GET_PARENT)\n");
	sbuf_puts(b, "# the user namespace first, then the others; nsenter forks into the pid namespace\nnsenter "
		     "--target \"$P\"");
	static const struct {
		int flag;
		const char *opt;
	} nss[] = {{CLONE_NEWUSER, "--user"}, {CLONE_NEWNS, "--mount"}, {CLONE_NEWPID, "--pid"},
		   {CLONE_NEWIPC, "--ipc"},   {CLONE_NEWUTS, "--uts"},  {CLONE_NEWNET, "--net"}};
	for (size_t i = 0; i < COUNT_OF(nss); i++)
		if (r.ns_flags & nss[i].flag)
			sbuf_printf(b, " %s", nss[i].opt);
	if (r.ns_flags & CLONE_NEWUSER)
		sbuf_puts(b, " --preserve-credentials");
	const char *wd = rq->workdir ? rq->workdir : r.cwd ? r.cwd : "/";
	sbuf_puts(b, " --wdns=");
	sbuf_shquote(b, wd);
	sbuf_puts(b, " -- \\\n\tprlimit");
	for (int k = 0; k < RLIM_NLIMITS; k++)
		if (r.has_limit[k]) {
			sbuf_printf(b, " --%s=", record_limit_names[k]);
			limit_value(b, r.limits[k].rlim_cur);
			sbuf_puts(b, ":");
			limit_value(b, r.limits[k].rlim_max);
		}
	sbuf_puts(b, " -- \\\n\tsetpriv --nnp --inh-caps=-all --ambient-caps=-all --bounding-set=-all");
	sec_describe_caps(b);
	uid_t uid = r.uid;
	gid_t gid = r.gid;
	if (rq->user) {
		sbuf_puts(b, " \\\n\t\t");
		sbuf_puts(b, "--reuid=\"$U\" --regid=\"$G\" --groups=\"$GROUPS\"   # -u ");
		sbuf_showquote(b, rq->user);
		sbuf_puts(b, ": from the container's /etc/passwd and /etc/group");
	} else if (r.one_id && (uid || gid)) {
		sbuf_printf(b, " -- \\\n\tunshare --user --map-user=%u --map-group=%u --keep-caps", (unsigned)uid,
			    (unsigned)gid);
	} else if (!r.one_id && (uid || gid || r.ngroups)) {
		sbuf_printf(b, " --reuid=%u --regid=%u", (unsigned)uid, (unsigned)gid);
		if (!r.unprivileged || uid || gid) {
			sbuf_printf(b, " --groups=%u", (unsigned)gid);
			for (size_t i = 0; i < r.ngroups; i++)
				sbuf_printf(b, ",%u", (unsigned)r.groups[i]);
		}
	}
	sbuf_puts(b, " -- \\\n\tenv -i");
	struct strv env = {0};
	for (size_t i = 0; i < r.env.n; i++)
		strv_add(&env, xstrdup(r.env.v[i]));
	for (size_t i = 0; rq->env && i < rq->env->n; i++)
		env_set(&env, rq->env->v[i]);
	int has_home = 0;
	for (size_t i = 0; i < env.n; i++) {
		has_home |= !strncmp(env.v[i], "HOME=", 5);
		word(b, env.v[i]);
	}
	if (!has_home && !rq->user) {
		_cleanup_free_ char *h = xasprintf("HOME=%s", r.home && *r.home ? r.home : uid ? "/" : "/root");
		word(b, h);
	}
	strv_free(&env);
	sbuf_puts(b, " \\\n\t");
	for (size_t i = 0; rq->argv[i]; i++) {
		if (i)
			sbuf_puts(b, " ");
		sbuf_shquote(b, rq->argv[i]);
	}
	sbuf_printf(b, "\n# and gpurun's seccomp filter%s, which setpriv cannot load, last before the exec\n",
		    r.one_id ? "s (the deny-list, and the one answering the id calls)" : " (the deny-list)");
	record_free(&r);
	return 0;
}
