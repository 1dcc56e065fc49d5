/* ns/record.c — the record of a named container's run (run.json in its
 * kept directory, rootfs/cache/kept.c): written by P0 once P1 says the
 * command has started, removed when it ends, and read by `gpurun ps` and
 * `gpurun exec`.  It holds what exec needs to give a second command the
 * first one's isolation (namespaces, ids, groups, limits, environment) and
 * the command's host pid with its start time, so that a record whose
 * process is gone, or whose pid now names another process, is known for
 * stale.  The format is docs/containers.md's.
 *
 * The record lives in the caller's own cache area (0700, the caller's: root's
 * under root's), and a pid read from it is never trusted alone: exec takes
 * a pidfd and checks the start time and the parent through it (ns/enter.c). */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../base/json.h"
#include "exec.h"
#include "steps.h"

#define RECORD_FILE "run.json"
#define RECORD_MAX (4 << 20)

static const struct {
	int flag;
	const char *name; /* as /proc/PID/ns/ names it */
} ns_names[] = {
	{CLONE_NEWUSER, "user"}, {CLONE_NEWNS, "mnt"},  {CLONE_NEWPID, "pid"},
	{CLONE_NEWIPC, "ipc"},   {CLONE_NEWUTS, "uts"}, {CLONE_NEWNET, "net"},
};

/* The limits by index (RLIMIT_*), as prlimit(1) names them. */
const char *const record_limit_names[RLIM_NLIMITS] = {
	"cpu",     "fsize", "data",  "stack",      "core",     "rss",  "nproc",  "nofile",
	"memlock", "as",    "locks", "sigpending", "msgqueue", "nice", "rtprio", "rttime",
};

/* The start time of pid (field 22 of /proc/PID/stat, clock ticks after
 * boot) and its parent; -1 when it is gone. */
int record_proc_stat(pid_t pid, unsigned long long *start, pid_t *ppid)
{
	char path[64], buf[1024];
	snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
	_cleanup_fd_ int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ssize_t n = read(fd, buf, sizeof buf - 1);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	/* After the name, which may hold spaces and parentheses: the last ')'. */
	char *p = strrchr(buf, ')');
	if (!p)
		return -1;
	p += 2; /* field 3, the state */
	unsigned long long f[20];
	char state;
	if (sscanf(p,
		   "%c %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu",
		   &state, &f[0], &f[1], &f[2], &f[3], &f[4], &f[5], &f[6], &f[7], &f[8], &f[9], &f[10], &f[11], &f[12],
		   &f[13], &f[14], &f[15], &f[16], &f[17], &f[18]) != 20)
		return -1;
	if (ppid)
		*ppid = (pid_t)f[0]; /* field 4 */
	if (start)
		*start = f[18]; /* field 22 */
	return state == 'Z' || state == 'X' ? -1 : 0;
}

/* ---- P1 -> P0: the command has started ------------------------------- */

int record_sock_new(int sv[2], struct gerr *err)
{
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
		return gerr_set(err, errno, "socketpair");
	int on = 1;
	/* P0's end: the command's pid comes as the kernel translates it. */
	if (setsockopt(sv[0], SOL_SOCKET, SO_PASSCRED, &on, sizeof on) < 0)
		return gerr_set(err, errno, "setsockopt(SO_PASSCRED)");
	return 0;
}

void record_send_ready(int sock, pid_t command, const struct go_ahead *ga)
{
	struct iovec iov = {.iov_base = (void *)ga, .iov_len = sizeof *ga};
	union {
		char buf[CMSG_SPACE(sizeof(struct ucred))];
		struct cmsghdr align;
	} u;
	memset(&u, 0, sizeof u);
	struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf, .msg_controllen = sizeof u.buf};
	struct cmsghdr *c = CMSG_FIRSTHDR(&m);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_CREDENTIALS;
	c->cmsg_len = CMSG_LEN(sizeof(struct ucred));
	/* Another pid than our own: P1 is root of the pid namespace's owner. */
	struct ucred cr = {.pid = command, .uid = getuid(), .gid = getgid()};
	memcpy(CMSG_DATA(c), &cr, sizeof cr);
	/* Best effort: without it the run goes on, and ps shows no pid. */
	(void)!sendmsg(sock, &m, MSG_NOSIGNAL);
	close(sock);
}

/* ---- the record ------------------------------------------------------ */

static json_t *strv_json(char *const *v)
{
	json_t *a = json_array();
	for (; v && *v; v++)
		json_array_append_new(a, json_text(*v));
	return a;
}

static json_t *limit_json(rlim_t v)
{
	return v == RLIM_INFINITY ? json_integer(-1) : json_integer((json_int_t)v);
}

static int write_record(int dirfd, json_t *o, struct gerr *err)
{
	char *text = json_dumps(o, JSON_SORT_KEYS | JSON_INDENT(1));
	if (!text)
		return gerr_set(err, 0, "cannot build the container's record");
	int r = 0;
	int fd = openat(dirfd, RECORD_FILE ".new", O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0 || write_all(fd, text, strlen(text)) < 0 || write_all(fd, "\n", 1) < 0)
		r = gerr_set(err, errno, "write the record " RECORD_FILE ".new");
	if (fd >= 0)
		close(fd);
	if (r == 0 && renameat(dirfd, RECORD_FILE ".new", dirfd, RECORD_FILE) < 0)
		r = gerr_set(err, errno, "rename the record to " RECORD_FILE);
	free(text);
	return r;
}

int record_ready(const struct run_config *cfg, int sock, pid_t init_pid, struct gerr *err)
{
	struct go_ahead ga;
	union {
		char buf[CMSG_SPACE(sizeof(struct ucred))];
		struct cmsghdr align;
	} u;
	struct iovec iov = {.iov_base = &ga, .iov_len = sizeof ga};
	struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf, .msg_controllen = sizeof u.buf};
	ssize_t n = recvmsg(sock, &m, MSG_CMSG_CLOEXEC);
	if (n != (ssize_t)sizeof ga)
		return n < 0 ? gerr_set(err, errno, "read the container's start") : 0; /* P1 failed: it says why */
	struct cmsghdr *c = CMSG_FIRSTHDR(&m);
	if (!c || c->cmsg_type != SCM_CREDENTIALS)
		return gerr_set(err, 0, "the container's start came without the command's pid");
	struct ucred cr;
	memcpy(&cr, CMSG_DATA(c), sizeof cr);
	ga.home[sizeof ga.home - 1] = '\0';
	unsigned long long start = 0, init_start = 0;
	pid_t parent = 0;
	/* A command that is done already (`true`) leaves nothing to record;
	 * its status is on its way. */
	if (record_proc_stat(cr.pid, &start, &parent) < 0 || parent != init_pid ||
	    record_proc_stat(init_pid, &init_start, NULL) < 0)
		return 0;

	json_t *o = json_object();
	json_object_set_new(o, "version", json_integer(1));
	json_put_text(o, "name", cfg->name);
	json_put_text(o, "image", cfg->image);
	json_object_set_new(o, "state", json_string("running"));
	json_object_set_new(o, "pid", json_integer(cr.pid));
	json_object_set_new(o, "pid_start", json_integer((json_int_t)start));
	json_object_set_new(o, "init_pid", json_integer(init_pid));
	json_object_set_new(o, "init_start", json_integer((json_int_t)init_start));
	json_object_set_new(o, "monitor_pid", json_integer(getpid()));
	json_object_set_new(o, "started", json_integer((json_int_t)time(NULL)));
	json_t *nss = json_array();
	int flags = ns_launch(cfg)->clone_flags;
	for (size_t i = 0; i < COUNT_OF(ns_names); i++)
		if (flags & ns_names[i].flag)
			json_array_append_new(nss, json_string(ns_names[i].name));
	json_object_set_new(o, "namespaces", nss);
	json_object_set_new(o, "unprivileged", json_boolean(cfg->unprivileged));
	json_object_set_new(o, "one_id", json_boolean(cfg->fake_ids));
	json_object_set_new(o, "setgroups_denied", json_boolean(cfg->setgroups_denied));
	/* With one id mapped, a --user other than root is a nested user
	 * namespace of the command's own (ns/command.c). */
	json_object_set_new(o, "nested_user", json_boolean(cfg->fake_ids && (ga.uid || ga.gid)));
	json_object_set_new(o, "uid", json_integer(ga.uid));
	json_object_set_new(o, "gid", json_integer(ga.gid));
	json_t *groups = json_array();
	for (size_t i = 0; i < ga.ngroups && i < USER_GROUPS_MAX; i++)
		json_array_append_new(groups, json_integer(ga.groups[i]));
	json_object_set_new(o, "groups", groups);
	json_put_text(o, "home", ga.home);
	json_put_text(o, "cwd", cfg->workdir ? cfg->workdir : "/");
	json_object_set_new(o, "env", strv_json(cfg->env));
	json_object_set_new(o, "args", strv_json(cfg->argv));
	/* Every limit the command started with: P0's, which P1 and P2
	 * inherited, with --ulimit's over them. */
	json_t *lims = json_object();
	for (int r = 0; r < RLIM_NLIMITS; r++) {
		struct rlimit l;
		if (getrlimit(r, &l) < 0)
			continue;
		for (size_t i = 0; i < cfg->nulimits; i++)
			if (cfg->ulimits[i].resource == r)
				l = cfg->ulimits[i].lim;
		json_object_set_new(lims, record_limit_names[r],
				    json_pack("[o,o]", limit_json(l.rlim_cur), limit_json(l.rlim_max)));
	}
	json_object_set_new(o, "rlimits", lims);
	json_object_set_new(o, "no_new_privs", json_true());
	json_object_set_new(o, "seccomp", json_string(cfg->fake_ids ? "gpurun+one-id" : "gpurun"));
	json_put_text(o, "gpus", cfg->gpus_shown);
	int r = write_record(cfg->kept_dirfd, o, err);
	json_decref(o);
	return r;
}

void record_end(const struct run_config *cfg)
{
	if (cfg->kept_dirfd >= 0)
		(void)unlinkat(cfg->kept_dirfd, RECORD_FILE, 0);
}

/* ---- reading it ------------------------------------------------------ */

void record_free(struct record *r)
{
	free(r->name);
	free(r->image);
	free(r->home);
	free(r->cwd);
	free(r->gpus);
	strv_free(&r->env);
	strv_free(&r->args);
	memset(r, 0, sizeof *r);
}

static char *jdup(json_t *o, const char *key)
{
	const char *s = json_string_value(json_object_get(o, key));
	return s ? xstrdup(s) : NULL;
}

static long long jint(json_t *o, const char *key)
{
	return (long long)json_integer_value(json_object_get(o, key));
}

static void jstrv(json_t *a, struct strv *out)
{
	size_t i;
	json_t *v;
	json_array_foreach(a, i, v)
	{
		if (json_is_string(v))
			strv_add(out, xstrdup(json_string_value(v)));
	}
}

static rlim_t jlimit(json_t *v)
{
	json_int_t n = json_integer_value(v);
	return n < 0 ? RLIM_INFINITY : (rlim_t)n;
}

int record_read(int dirfd, struct record *r, struct gerr *err)
{
	memset(r, 0, sizeof *r);
	size_t len;
	_cleanup_free_ char *text = read_small_file_at(dirfd, RECORD_FILE, RECORD_MAX, &len, err);
	if (!text)
		return -1;
	json_error_t je;
	json_t *o = json_loadb(text, len, 0, &je);
	if (!json_is_object(o) || jint(o, "version") != 1) {
		json_decref(o);
		return gerr_set(err, 0, "the record " RECORD_FILE " is not one this gpurun reads");
	}
	r->name = jdup(o, "name");
	r->image = jdup(o, "image");
	r->pid = (pid_t)jint(o, "pid");
	r->pid_start = (unsigned long long)jint(o, "pid_start");
	r->init_pid = (pid_t)jint(o, "init_pid");
	r->init_start = (unsigned long long)jint(o, "init_start");
	r->monitor_pid = (pid_t)jint(o, "monitor_pid");
	r->started = jint(o, "started");
	json_t *nss = json_object_get(o, "namespaces"), *v;
	size_t i;
	json_array_foreach(nss, i, v)
	{
		for (size_t k = 0; k < COUNT_OF(ns_names); k++)
			if (json_is_string(v) && !strcmp(json_string_value(v), ns_names[k].name))
				r->ns_flags |= ns_names[k].flag;
	}
	r->unprivileged = json_is_true(json_object_get(o, "unprivileged"));
	r->one_id = json_is_true(json_object_get(o, "one_id"));
	r->setgroups_denied = json_is_true(json_object_get(o, "setgroups_denied"));
	r->nested_user = json_is_true(json_object_get(o, "nested_user"));
	r->uid = (uid_t)jint(o, "uid");
	r->gid = (gid_t)jint(o, "gid");
	json_array_foreach(json_object_get(o, "groups"), i, v)
	{
		if (r->ngroups < USER_GROUPS_MAX)
			r->groups[r->ngroups++] = (gid_t)json_integer_value(v);
	}
	r->home = jdup(o, "home");
	r->cwd = jdup(o, "cwd");
	r->gpus = jdup(o, "gpus");
	jstrv(json_object_get(o, "env"), &r->env);
	jstrv(json_object_get(o, "args"), &r->args);
	json_t *lims = json_object_get(o, "rlimits");
	for (int k = 0; k < RLIM_NLIMITS; k++) {
		json_t *l = json_object_get(lims, record_limit_names[k]);
		r->has_limit[k] = json_is_array(l) && json_array_size(l) == 2;
		if (r->has_limit[k]) {
			r->limits[k].rlim_cur = jlimit(json_array_get(l, 0));
			r->limits[k].rlim_max = jlimit(json_array_get(l, 1));
		}
	}
	json_decref(o);
	if (!r->name || r->pid <= 0 || r->init_pid <= 0)
		return gerr_set(err, 0, "the record " RECORD_FILE " lacks the container's pid"), record_free(r), -1;
	return 0;
}

int record_alive(const struct record *r)
{
	unsigned long long start, init_start;
	pid_t parent;
	return record_proc_stat(r->pid, &start, &parent) == 0 && start == r->pid_start && parent == r->init_pid &&
	       record_proc_stat(r->init_pid, &init_start, NULL) == 0 && init_start == r->init_start;
}

int record_clean_stale(int dirfd, const char *name, struct gerr *err)
{
	struct record r;
	struct gerr ignore = {0};
	if (record_read(dirfd, &r, &ignore) < 0) {
		(void)unlinkat(dirfd, RECORD_FILE, 0); /* none, or unreadable: nothing to keep */
		return 0;
	}
	/* Its run's lock is free, yet its processes are there: the monitor
	 * was killed and the kernel still holds one (a GPU stuck in the
	 * driver).  Its overlay may still be mounted: not a second one. */
	int alive = record_alive(&r);
	pid_t pid = r.pid;
	record_free(&r);
	if (alive)
		return gerr_set(
			err, 0,
			"container %s: the processes of its last run are still there (pid %d); gpurun starts no "
			"second run on its layer until they are gone",
			name, (int)pid);
	if (unlinkat(dirfd, RECORD_FILE, 0) < 0 && errno != ENOENT)
		return gerr_set(err, errno, "container %s: remove its stale record", name);
	return 0;
}
