/* ns/init.c — P1, the container's pid 1.  The command it forks (P2) is
 * ns/command.c.
 *
 * P1 waits until P0 has written the id maps, runs the plan (rootfs, mounts,
 * pivot), then forks the command (P2) and stays behind as pid 1: a pid
 * namespace's init ignores every signal it has no handler for, and orphans
 * are re-parented to it, so it must reap them and relay what P0 forwards.
 * When P2 exits, P1 kills and reaps whatever is left in the pid namespace,
 * hands P2's wait status to P0 and exits.  What outlives SIGKILL for a
 * moment (a process in the kernel, uninterruptible, as a GPU stuck in the
 * driver leaves its caller) is waited for a little, then named to P0 and
 * left: P1's exit then blocks in the kernel until it is gone, and P0 does
 * not wait for that. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../rootfs/rootfs.h"
#include "exec.h"
#include "steps.h"

/* P1 lives on as pid 1 next to the command: any fd it inherited from the
 * caller (a host directory, say) would be reachable through /proc/1/fd.
 * Close everything but our own pipes and the image. */
static void close_inherited(const int *keep, size_t n)
{
	unsigned lo = 3;
	for (;;) {
		unsigned next = ~0U;
		for (size_t i = 0; i < n; i++)
			if (keep[i] >= (int)lo && (unsigned)keep[i] < next)
				next = (unsigned)keep[i];
		if (next > lo)
			close_range(lo, next == ~0U ? ~0U : next - 1, 0);
		if (next == ~0U)
			return;
		lo = next + 1;
	}
}

#define REAP_GRACE_MS 2000 /* after SIGKILL, before what is left counts as stuck */

static long long now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* The processes of this pid namespace but us, as "pid N (COMM) in state
 * S", from this namespace's /proc (ours since the pivot). */
static void name_left(struct exit_report *rep)
{
	DIR *d = opendir("/proc");
	struct dirent *de;
	size_t used = 0;
	while (d && (de = readdir(d))) {
		char *end;
		long pid = strtol(de->d_name, &end, 10);
		if (*end || pid <= 1)
			continue;
		char path[64], buf[512] = "", comm[32] = "?", state = '?';
		snprintf(path, sizeof path, "/proc/%ld/stat", pid);
		int fd = open(path, O_RDONLY | O_CLOEXEC);
		ssize_t n = fd >= 0 ? read(fd, buf, sizeof buf - 1) : -1;
		if (fd >= 0)
			close(fd);
		buf[n > 0 ? n : 0] = '\0';
		char *open_ = strchr(buf, '('), *close_ = strrchr(buf, ')');
		if (open_ && close_ > open_ && close_[1] == ' ') {
			snprintf(comm, sizeof comm, "%.*s", (int)(close_ - open_ - 1), open_ + 1);
			state = close_[2];
		}
		_cleanup_free_ char *shown = xvisible(comm);
		int w = snprintf(rep->stuck + used, sizeof rep->stuck - used, "%spid %ld (%s) in state %c",
				 rep->nstuck ? ", " : "", pid, shown, state);
		rep->nstuck++;
		if (w > 0 && (size_t)w < sizeof rep->stuck - used)
			used += (size_t)w;
	}
	if (d)
		closedir(d);
}

/* Reap the rest of the pid namespace after SIGKILL; what is still there
 * after the grace goes into rep instead of being waited for. */
static void reap_rest(int sfd, struct exit_report *rep)
{
	long long until = now_ms() + REAP_GRACE_MS;
	for (;;) {
		pid_t w;
		while ((w = waitpid(-1, NULL, WNOHANG)) > 0)
			;
		if (w < 0 && errno == ECHILD)
			return;
		long long left = until - now_ms();
		if (w < 0 && errno != EINTR)
			return;
		if (left <= 0)
			break;
		struct pollfd pfd = {.fd = sfd, .events = POLLIN};
		if (poll(&pfd, 1, (int)left) > 0) {
			struct signalfd_siginfo si;
			(void)!read(sfd, &si, sizeof si);
		}
	}
	name_left(rep);
}

/* A named container's first command is done: the launches that joined it
 * (pyxis's tasks of one step) each hold its "joined" lock shared while
 * their command runs, and the container lives until the last has ended.
 * flock cannot be polled with the signalfd, so the lock is tried every
 * JOINED_POLL_MS; a signal relayed by P0 (the caller's ^C, scancel's
 * SIGTERM) ends the wait, and the container with it. */
#define JOINED_POLL_MS 50
static void wait_joined(int sfd, int lockfd)
{
	while (flock(lockfd, LOCK_EX | LOCK_NB) < 0 && (errno == EWOULDBLOCK || errno == EINTR)) {
		struct pollfd pfd = {.fd = sfd, .events = POLLIN};
		if (poll(&pfd, 1, JOINED_POLL_MS) <= 0)
			continue;
		struct signalfd_siginfo si;
		if (read(sfd, &si, sizeof si) == (ssize_t)sizeof si && si.ssi_signo != SIGCHLD)
			return;
		while (waitpid(-1, NULL, WNOHANG) > 0) /* orphans of the joined commands */
			;
	}
}

void init_main(const struct run_config *cfg, int sync_fd, int err_fd, int status_fd)
{
	const int image_fd = cfg->image_fd;
	struct gerr err = {0};
	char go;

	if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0)
		setup_failf(err_fd, errno, "prctl(PR_SET_PDEATHSIG)");
	const int keep[] = {image_fd,
			    sync_fd,
			    err_fd,
			    status_fd,
			    cfg->tty ? cfg->tty_sock : -1,
			    cfg->step ? cfg->step_sock : -1,
			    cfg->name ? cfg->ready_sock : -1,
			    cfg->name ? cfg->joined_lockfd : -1};
	close_inherited(keep, COUNT_OF(keep));
	/* EOF instead of "g": P0 died or could not write the id maps. */
	if (read(sync_fd, &go, 1) != 1)
		_exit(GPURUN_EXIT_FAIL);
	close(sync_fd);
	/* --userns keep-id with a range: the caller is its own uid inside, so
	 * P1 starts as that user; root of the map (a subordinate id) makes
	 * the container, as without it. */
	if ((cfg->subids.in_uid || cfg->subids.in_gid) && (setresgid(0, 0, 0) < 0 || setresuid(0, 0, 0) < 0))
		setup_failf(err_fd, errno, "become root of the container's user namespace");
	/* Not before the maps are written: a non-dumpable process's /proc
	 * files belong to the host's root, and P0 could not write them.
	 * After this, the container's root cannot ptrace or read P1. */
	if (prctl(PR_SET_DUMPABLE, 0) < 0)
		setup_failf(err_fd, errno, "prctl(PR_SET_DUMPABLE)");

	sigset_t all, orig;
	sigemptyset(&all);
	static const int relayed[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGWINCH, SIGCHLD};
	for (size_t i = 0; i < COUNT_OF(relayed); i++)
		sigaddset(&all, relayed[i]);
	sigprocmask(SIG_BLOCK, &all, &orig);
	/* P0 blocked these before clone(); the command must start with the
	 * mask the user's shell gave gpurun. */
	for (size_t i = 0; i < COUNT_OF(relayed); i++)
		sigdelset(&orig, relayed[i]);
	sigdelset(&orig, SIGTTOU); /* blocked by P0 to take its terminal back */
	int sfd = signalfd(-1, &all, SFD_CLOEXEC);
	if (sfd < 0)
		setup_failf(err_fd, errno, "signalfd");

	/* A socket, not a pipe: with -t it also carries the pty (ns/tty.c). */
	int gop[2];
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, gop) < 0)
		setup_failf(err_fd, errno, "socketpair");
	struct cpu_spread cpus;
	cpu_spread_init(&cpus);
	pid_t child = fork();
	if (child < 0)
		setup_failf(err_fd, errno, "fork the command");
	if (child == 0) {
		close(gop[1]);
		close(sfd);
		close(status_fd);
		if (image_fd >= 0)
			close(image_fd);
		if (cfg->step)
			close(cfg->step_sock);
		if (cfg->name)
			close(cfg->joined_lockfd);
		command_main(cfg, gop[0], &orig, err_fd, &cpus);
	}
	close(gop[0]);
	/* P2 starts on the other CPU instead of waiting behind this one
	 * (base/cpu.c): it sheds its privileges while P1 works.  The go-ahead
	 * comes after this, and P2 restores the mask only then. */
	cpu_spread_child(&cpus, child);

	struct exec_state st = {.cfg = cfg, .rootfd = -1, .dirs = {.fd = -1}};
	if (plan_execute(&st, &err) < 0)
		setup_fail(err_fd, &err);
	if (image_fd >= 0)
		close(image_fd);

	/* The credentials step and HOME, decided once (before the image's
	 * ldconfig, if it runs); the go-ahead carries them to the command. */
	struct go_ahead ga = {0};
	if (exec_user(&st, &err) < 0)
		setup_fail(err_fd, &err);
	const struct launch *l = ns_launch(cfg);
	ga.uid = l->user.uid;
	ga.gid = l->user.gid;
	ga.ngroups = l->user.ngroups;
	memcpy(ga.groups, l->user.groups, sizeof ga.groups);
	snprintf(ga.home, sizeof ga.home, "%s", l->home);
	close(st.rootfd);
	if (cfg->verbose) {
		struct sbuf b = {0};
		ns_describe_exec(cfg, &st.view, &b);
		ns_trace(b.s);
		sbuf_free(&b);
	}
	if (step_exec(&st, &err) < 0)
		setup_fail(err_fd, &err);
	/* Last: P0 makes the caller's terminal raw once it has the pty. */
	if (cfg->tty && tty_hand_out(cfg, gop[1], ga.uid, ga.gid, &err) < 0)
		setup_fail(err_fd, &err);
	if (write_all(gop[1], &ga, sizeof ga) < 0) {
		if (errno == EPIPE) /* P2 failed first (--ulimit, its privileges) and said why */
			_exit(GPURUN_EXIT_FAIL);
		setup_failf(err_fd, errno, "start the command");
	}
	close(gop[1]);
	if (cfg->name)
		record_send_ready(cfg->ready_sock, child, &ga);
	close(err_fd);
	prctl(PR_SET_NAME, "gpurun-init");

	for (;;) {
		struct signalfd_siginfo si;
		ssize_t r = read(sfd, &si, sizeof si);
		if (r < 0 && errno == EINTR)
			continue;
		if (r != (ssize_t)sizeof si)
			_exit(GPURUN_EXIT_FAIL);
		if (si.ssi_signo != SIGCHLD) {
			kill(child, (int)si.ssi_signo);
			continue;
		}
		int status;
		pid_t w;
		while ((w = waitpid(-1, &status, WNOHANG)) > 0) {
			if (w != child)
				continue; /* a reaped orphan */
			/* The command is done: end the rest of the pid namespace
			 * here and reap it (the kernel would do it in P1's exit,
			 * after taking the mount namespace apart), so that no
			 * process of the container outlives the status, but
			 * for one the kernel holds: that one is named.  A named
			 * container first waits for the launches that joined it. */
			if (cfg->name)
				wait_joined(sfd, cfg->joined_lockfd);
			(void)kill(-1, SIGKILL);
			struct exit_report rep = {.status = status};
			reap_rest(sfd, &rep);
			(void)write_all(status_fd, &rep, sizeof rep);
			_exit(0);
		}
	}
}
