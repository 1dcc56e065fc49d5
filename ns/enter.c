/* ns/enter.c — `gpurun exec`: a command run inside a named container that
 * is running, with its first command's isolation.  From the run's record
 * (ns/record.c) it takes the command's pid, checked through a pidfd (its
 * start time and its parent, the container's init, are the ones the record
 * names, and the pidfd still names that process after the checks); enters
 * its namespaces in the order the kernel needs (the user namespace first,
 * then the others through the pidfd, which makes the root and working
 * directory the container's); forks, since only children join a pid
 * namespace; and the child takes the first command's limits, capability
 * sets, no_new_privs, seccomp filters, ids, groups and environment
 * (ns/command.c, the same code as the first command) before it execs.
 * This process waits, forwards the signals it gets, and exits with the
 * command's status.  What it does is printed as nsenter and setpriv lines
 * by ns_describe_enter (--dry-run). */
#include <errno.h>
#include <fcntl.h>
#include <linux/nsfs.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "exec.h"

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif
#ifndef SYS_pidfd_send_signal
#define SYS_pidfd_send_signal 424
#endif

static const int forwarded[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2};

/* The message alone (no strerror), errnum kept for the caller to test. */
static int fail_as(struct gerr *err, int errnum)
{
	err->errnum = errnum;
	return -1;
}

/* The command's process, as a pidfd, checked to be the one the record
 * names: the kernel reuses pids, and a record is a file. */
static int open_command(const struct record *r, const char *name, struct gerr *err)
{
	int pidfd = (int)syscall(SYS_pidfd_open, r->pid, 0);
	if (pidfd < 0) {
		if (errno == ESRCH)
			return gerr_set(err, 0, "container %s is not running: its command (pid %d) is gone", name,
					(int)r->pid),
			       fail_as(err, ESRCH);
		return gerr_set(err, errno, "container %s: pidfd_open pid %d", name, (int)r->pid);
	}
	/* After the pidfd: if pid was reused in between, the start time tells;
	 * if it is reused after the check, the signal 0 below fails. */
	if (!record_alive(r) || syscall(SYS_pidfd_send_signal, pidfd, 0, NULL, 0) < 0) {
		close(pidfd);
		gerr_set(
			err, 0,
			"container %s is not running: pid %d is not its command any more (another start time or parent)",
			name, (int)r->pid);
		return fail_as(err, ESRCH);
	}
	return pidfd;
}

/* The container's user namespace: the command's own, or with one id
 * mapped and another --user, the parent of the command's nested one. */
static int user_ns(const struct record *r, int pidfd, struct gerr *err)
{
	char path[64];
	snprintf(path, sizeof path, "/proc/%d/ns/user", (int)r->pid);
	_cleanup_fd_ int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return gerr_set(err, errno, "open %s", path);
	if (syscall(SYS_pidfd_send_signal, pidfd, 0, NULL, 0) < 0)
		return gerr_set(err, 0, "open %s: the command is gone", path), fail_as(err, ESRCH);
	if (!r->nested_user) {
		int keep = fd;
		fd = -1;
		return keep;
	}
	int parent = ioctl(fd, NS_GET_PARENT);
	if (parent < 0)
		return gerr_set(err, errno, "the parent of %s (NS_GET_PARENT)", path);
	return parent;
}

/* A numeric -u must be one uid, exactly: "4294967296" is no way to 0. */
static int user_spec_check(const char *spec, struct gerr *err)
{
	size_t n = strcspn(spec, ":");
	if (!n || (spec[n] == ':' && !spec[n + 1]))
		return gerr_set(err, 0, "-u '%s': expected UID[:GID] or NAME[:GROUP]", spec);
	for (const char *p = spec; *p; p += strcspn(p, ":") + (p[strcspn(p, ":")] == ':')) {
		size_t l = strcspn(p, ":");
		if (strspn(p, "0123456789") != l)
			continue; /* a name: the image's /etc/passwd or /etc/group says */
		errno = 0;
		char *end;
		unsigned long long v = strtoull(p, &end, 10);
		if (errno || end != p + l || v >= 0xffffffffULL || l > 10)
			return gerr_set(err, 0, "-u '%s': %.*s is not an id (0 to 4294967294)", spec, (int)l, p);
	}
	return 0;
}

/* Enter: the user namespace first (its capabilities are what every other
 * setns is checked against), then the others at once through the pidfd. */
static int enter(const struct record *r, const char *name, struct gerr *err)
{
	_cleanup_fd_ int pidfd = open_command(r, name, err);
	if (pidfd < 0)
		return -1;
	int rest = r->ns_flags & ~CLONE_NEWUSER;
	if (r->ns_flags & CLONE_NEWUSER) {
		_cleanup_fd_ int ufd = user_ns(r, pidfd, err);
		if (ufd < 0)
			return -1;
		if (setns(ufd, CLONE_NEWUSER) < 0)
			return gerr_set(err, errno, "container %s: enter its user namespace (setns)", name);
	}
	if (setns(pidfd, rest) < 0)
		return gerr_set(err, errno, "container %s: enter its namespaces (setns)", name);
	return 0;
}

int enter_user(const struct record *r, const char *spec, int rootfd, struct go_ahead *ga, struct gerr *err)
{
	struct run_config cfg = {
		.unprivileged = r->unprivileged, .fake_ids = r->one_id, .setgroups_denied = r->setgroups_denied};
	memset(ga, 0, sizeof *ga);
	if (!spec) {
		ga->uid = r->uid;
		ga->gid = r->gid;
		ga->ngroups = r->ngroups;
		memcpy(ga->groups, r->groups, r->ngroups * sizeof *ga->groups);
		snprintf(ga->home, sizeof ga->home, "%s", r->home ? r->home : "");
		return 0;
	}
	if (user_spec_check(spec, err) < 0)
		return -1;
	char *home = NULL;
	if (rootfs_lookup_user(rootfd, spec, &ga->uid, &ga->gid, &home, err) < 0)
		return gerr_prefix(err, "-u %s", spec);
	snprintf(ga->home, sizeof ga->home, "%s", home ? home : "");
	free(home);
	if (ns_takes_groups(&cfg, ga->uid, ga->gid) &&
	    rootfs_user_groups(rootfd, rootfd, spec, ga->gid, ga->groups, &ga->ngroups, err) < 0)
		return -1;
	return 0;
}

/* What the first command's run_config said that the command here needs. */
static void config_of(const struct record *r, const struct exec_request *rq, struct run_config *cfg, struct strv *env)
{
	memset(cfg, 0, sizeof *cfg);
	cfg->unprivileged = r->unprivileged;
	cfg->fake_ids = r->one_id;
	cfg->setgroups_denied = r->setgroups_denied;
	cfg->image_fd = cfg->kept_dirfd = cfg->joined_lockfd = cfg->ready_sock = cfg->tty_sock = -1;
	for (size_t i = 0; i < r->env.n; i++)
		strv_add(env, xstrdup(r->env.v[i]));
	for (size_t i = 0; rq->env && i < rq->env->n; i++)
		env_set(env, rq->env->v[i]);
	if (!env->v)
		strv_add(env, xstrdup("PATH=" NS_DEFAULT_PATH));
	cfg->env = env->v;
	cfg->workdir = rq->workdir ? rq->workdir : r->cwd;
	cfg->argv = rq->argv;
	cfg->tty = rq->tty;
	cfg->interactive = rq->interactive;
}

#define JOIN_WAIT_MS 60000 /* for a run that holds the layer to write its record */

int ns_join_wait(int kept_dirfd, const char *name, int (*running)(int dirfd), struct gerr *err)
{
	/* The record is renamed into the directory when the command has
	 * started (ns/record.c): watch for it, and for the run's end, rather
	 * than poll.  Without inotify, a tenth of a second at a time. */
	_cleanup_fd_ int in = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
	if (in >= 0) {
		char self[64];
		snprintf(self, sizeof self, "/proc/self/fd/%d", kept_dirfd);
		(void)inotify_add_watch(in, self, IN_MOVED_TO);
	}
	struct timespec t0, now;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		clock_gettime(CLOCK_MONOTONIC, &now);
		if ((now.tv_sec - t0.tv_sec) * 1000 + (now.tv_nsec - t0.tv_nsec) / 1000000 > JOIN_WAIT_MS)
			break;
		/* A record is there: entering checks whether it names the
		 * container's command (ns_enter says so when it does not). */
		struct record r;
		struct gerr ignore = {0};
		if (record_read(kept_dirfd, &r, &ignore) == 0) {
			record_free(&r);
			return 1;
		}
		if (!running(kept_dirfd))
			return 0; /* it ended (or failed) meanwhile */
		struct pollfd p = {.fd = in, .events = POLLIN};
		if (poll(&p, 1, 100) > 0) {
			char buf[4096];
			while (read(in, buf, sizeof buf) > 0)
				;
		}
	}
	return gerr_set(err, 0, "container %s: its run holds the layer but its command has not started in %d s", name,
			JOIN_WAIT_MS / 1000);
}

int ns_enter(int kept_dirfd, const struct exec_request *rq, struct gerr *err)
{
	struct record r;
	if (record_read(kept_dirfd, &r, err) < 0) {
		if (err->errnum == ENOENT)
			gerr_set(err, 0, "container %s is not running (gpurun ps)", rq->name), fail_as(err, ENOENT);
		return -1;
	}
	struct run_config cfg;
	struct strv env = {0};
	struct go_ahead ga;
	int rc = -1, sfd = -1, errp[2] = {-1, -1};
	struct tty_relay *tr = NULL;
	/* Before the namespaces are entered: a process of the container may
	 * not ptrace us or open our /proc/PID/fd (the child inherits this;
	 * its exec ends it). */
	if (prctl(PR_SET_DUMPABLE, 0) < 0) {
		record_free(&r);
		return gerr_set(err, errno, "prctl(PR_SET_DUMPABLE)");
	}
	config_of(&r, rq, &cfg, &env);
	if (enter(&r, rq->name, err) < 0)
		goto out;
	{
		_cleanup_fd_ int root = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (root < 0) {
			gerr_set(err, errno, "open the container's root");
			goto out;
		}
		if (enter_user(&r, rq->user, root, &ga, err) < 0)
			goto out;
	}

	if (pipe2(errp, O_CLOEXEC) < 0) {
		gerr_set(err, errno, "pipe");
		goto out;
	}
	sigset_t mask, orig;
	sigemptyset(&mask);
	for (size_t i = 0; i < COUNT_OF(forwarded); i++)
		sigaddset(&mask, forwarded[i]);
	sigaddset(&mask, SIGCHLD);
	if (cfg.tty)
		sigaddset(&mask, SIGWINCH);
	signal(SIGCHLD, SIG_DFL);
	sigprocmask(SIG_BLOCK, &mask, &orig);
	sfd = signalfd(-1, &mask, SFD_CLOEXEC);
	if (sfd < 0) {
		gerr_set(err, errno, "signalfd");
		goto out;
	}
	if (cfg.tty && !(tr = tty_relay_new(&cfg, err)))
		goto out;
	fflush(NULL);
	pid_t pid = fork();
	if (pid < 0) {
		gerr_set(err, errno, "fork the command");
		goto out;
	}
	if (pid == 0) {
		close(errp[0]);
		int slave = -1;
		if (cfg.tty) {
			/* The pty of the container's devpts, as P1 makes the
			 * first command's: the master to this process's parent,
			 * the slave to ourselves. */
			int sv[2];
			struct gerr e = {0};
			if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
				setup_failf(errp[1], errno, "socketpair");
			if (tty_hand_out(&cfg, sv[0], ga.uid, ga.gid, &e) < 0)
				setup_fail(errp[1], &e);
			slave = tty_recv_fd(sv[1]);
			if (slave < 0)
				setup_failf(errp[1], errno, "receive the pty");
			close(sv[0]);
			close(sv[1]);
		}
		/* In the container's pid namespace, its processes see us: no
		 * fd of the host's (the cache, the kept directory) may be
		 * reachable through /proc/PID/fd (runc's CVE-2016-9962), and we
		 * stay non-dumpable until the command's own exec. */
		for (int fd = 3; fd < 1024; fd++)
			if (fd != errp[1] && fd != slave)
				close(fd);
		if (close_range(1024, ~0U, 0) < 0 && errno != EINVAL)
			setup_failf(errp[1], errno, "close_range");
		command_enter(&cfg, &ga, r.limits, r.has_limit, &orig, slave, errp[1]);
	}
	close(errp[1]);
	errp[1] = -1;
	tty_relay_started(tr, &cfg);
	int status = 0, errfd = errp[0];
	errp[0] = -1;
	for (;;) {
		struct pollfd pfd[2 + TTY_RELAY_NFDS] = {{.fd = sfd, .events = POLLIN},
							 {.fd = errfd, .events = POLLIN}};
		nfds_t n = 2 + tty_relay_pollfds(tr, pfd + 2);
		if (poll(pfd, n, -1) < 0) {
			if (errno == EINTR)
				continue;
			gerr_set(err, errno, "poll");
			kill(pid, SIGKILL);
			break;
		}
		if (tty_relay_step(tr, pfd + 2, err) < 0) {
			kill(pid, SIGKILL);
			break;
		}
		if (errfd >= 0 && (pfd[1].revents & (POLLIN | POLLHUP))) {
			char buf[4096];
			ssize_t k = read(errfd, buf, sizeof buf);
			if (k > 0)
				tty_relay_say(tr, buf, (size_t)k);
			else if (k == 0) {
				close(errfd);
				errfd = -1;
			}
		}
		if (!(pfd[0].revents & POLLIN))
			continue;
		struct signalfd_siginfo si;
		if (read(sfd, &si, sizeof si) != (ssize_t)sizeof si)
			continue;
		if (si.ssi_signo == SIGWINCH)
			tty_relay_winch(tr);
		else if (si.ssi_signo != SIGCHLD)
			kill(pid, (int)si.ssi_signo);
		else if (waitpid(pid, &status, WNOHANG) == pid)
			break;
	}
	tty_relay_end(&tr);
	while (errfd >= 0) { /* its last words */
		char buf[4096];
		ssize_t k = read(errfd, buf, sizeof buf);
		if (k <= 0)
			break;
		(void)write_all(2, buf, (size_t)k);
	}
	if (errfd >= 0)
		close(errfd);
	rc = err->msg[0] ? -1 : ns_exit_status(status);
	if (rc == -1) {
		while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
			;
	}
out:
	tty_relay_end(&tr);
	for (size_t i = 0; i < 2; i++)
		if (errp[i] >= 0)
			close(errp[i]);
	if (sfd >= 0)
		close(sfd);
	strv_free(&env);
	record_free(&r);
	return rc;
}
