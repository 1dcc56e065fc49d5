/* ns/launch.c — P0, the host side: clone P1 into the new namespaces, take
 * the plan's steps that are the monitor's (its id maps, ns/steps.c), relay
 * signals to it (and with -t the pty, ns/tty.c), print what goes wrong
 * inside, give the caller's terminal back as it was
 * (ns/termkeep.c), and turn the command's wait status into gpurun's exit
 * status.
 *
 * P0 never dies of SIGINT/SIGTERM itself: it blocks them and forwards them,
 * so the shell does not reclaim the terminal while the command still runs
 * (a launcher that dies of ^C first leaves its command fighting the shell
 * for the terminal). */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "exec.h"
#include "steps.h"

static const int forwarded[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2};

static void clone_error(int e, const struct run_config *cfg, struct gerr *err)
{
	gerr_set(err, e, "clone new namespaces");
	if (cfg->unprivileged && (e == EPERM || e == EACCES))
		gerr_hint(err, "unprivileged user namespaces are disabled here: see "
			       "/proc/sys/kernel/unprivileged_userns_clone, "
			       "/proc/sys/kernel/apparmor_restrict_unprivileged_userns");
	else if (e == ENOSPC || e == EUSERS)
		gerr_hint(err, "a namespace limit is reached: see /proc/sys/user/max_*_namespaces");
	else if (e == EINVAL)
		gerr_hint(err, "the kernel lacks one of the namespaces asked for");
}

static void relay(int from, int to)
{
	char buf[4096];
	ssize_t r;
	while ((r = read(from, buf, sizeof buf)) > 0)
		(void)write_all(to, buf, (size_t)r);
}

int ns_exit_status(int status)
{
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return GPURUN_EXIT_FAIL;
}

/* The caller's terminal as it was (ns/termkeep.c), once no process of the
 * container can touch it again and before gpurun says anything more.  A
 * failure is a warning: the command ran, and its status stands. */
static void give_terminal_back(const struct termkeep *keep)
{
	struct gerr e = {0};
	if (termkeep_restore(keep, &e) < 0)
		warnx_("%s", e.msg);
}

/* P0 after a failed start: P1 must not outlive the launch.  Its exit waits
 * for every process of its pid namespace to be gone. */
static int abandon(pid_t pid, const struct termkeep *keep)
{
	kill(pid, SIGKILL);
	while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
		;
	give_terminal_back(keep);
	return -1;
}

int ns_run(struct run_config *cfg, struct gerr *err)
{
	int syncp[2], errp[2], statusp[2];
	if (pipe2(syncp, O_CLOEXEC) < 0)
		return gerr_set(err, errno, "pipe");
	if (pipe2(errp, O_CLOEXEC) < 0 || pipe2(statusp, O_CLOEXEC) < 0)
		return gerr_set(err, errno, "pipe");

	sigset_t mask, orig;
	sigemptyset(&mask);
	for (size_t i = 0; i < COUNT_OF(forwarded); i++)
		sigaddset(&mask, forwarded[i]);
	sigaddset(&mask, SIGCHLD);
	sigaddset(&mask, SIGTTOU); /* for giving the terminal back at the end (ns/termkeep.c) */
	if (cfg->tty)
		sigaddset(&mask, SIGWINCH); /* copied to the pty (ns/tty.c), not forwarded */
	/* An inherited SIG_IGN for SIGCHLD would make waitpid lose P1's status. */
	signal(SIGCHLD, SIG_DFL);
	sigprocmask(SIG_BLOCK, &mask, &orig);
	int sfd = signalfd(-1, &mask, SFD_CLOEXEC);
	if (sfd < 0)
		return gerr_set(err, errno, "signalfd");
	/* With -t the command has a terminal of its own (ns/tty.c). */
	cfg->tty_foreground = !cfg->tty && isatty(0) && tcgetpgrp(0) == getpgrp();
	struct tty_relay *tr __attribute__((cleanup(tty_relay_end))) = NULL;
	if (cfg->tty && !(tr = tty_relay_new(cfg, err)))
		return -1;
	struct stepper *sp __attribute__((cleanup(step_end))) = NULL;
	if (cfg->step && !(sp = step_new(cfg, err)))
		return -1;
	/* Without -t the command holds the caller's terminal: whatever it
	 * does to it is undone once it is gone. */
	struct termkeep keep;
	if (termkeep_save(&keep, err) < 0)
		return -1;

	if (cfg->verbose) {
		struct sbuf b = {0};
		ns_describe_head(cfg, &b);
		ns_trace(b.s);
		sbuf_free(&b);
	}
	/* --name: P1 says when the command has started, and P0 writes the
	 * run's record (ns/record.c). */
	int ready[2] = {-1, -1};
	if (cfg->name && record_sock_new(ready, err) < 0)
		return -1;
	cfg->ready_sock = ready[1];
	fflush(NULL);
	/* Raw clone: fork semantics (shared code path, copied memory) with
	 * the namespace flags; P1 is pid 1 of the new pid namespace. */
	pid_t pid = (pid_t)syscall(SYS_clone, (unsigned long)(ns_launch(cfg)->clone_flags | SIGCHLD), NULL, NULL, NULL,
				   NULL);
	if (pid < 0) {
		clone_error(errno, cfg, err);
		return -1;
	}
	if (pid == 0) {
		close(syncp[1]);
		close(errp[0]);
		close(statusp[0]);
		close(sfd);
		init_main(cfg, syncp[0], errp[1], statusp[1]);
	}
	close(syncp[0]);
	close(errp[1]);
	close(statusp[1]);
	if (ready[1] >= 0)
		close(ready[1]);
	tty_relay_started(tr, cfg);
	step_started(sp, cfg, pid);

	/* The plan's steps outside: the id maps (ns/steps.c). */
	struct step_ctx sc = {.cfg = cfg, .plan = cfg->plan, .l = ns_launch(cfg), .pid = pid, .slave = -1, .err = err};
	if (launch_run(&sc, ACT_MONITOR, 0) < 0)
		return abandon(pid, &keep);
	if (write_all(syncp[1], "g", 1) < 0) {
		gerr_set(err, errno, "start the container");
		return abandon(pid, &keep);
	}
	close(syncp[1]);

	/* Monitor: relay P1/P2's error text as it comes, forward signals,
	 * stop when P1 hands over the command's status or dies without it. */
	int errfd_open = 1;
	for (;;) {
		struct pollfd pfd[4 + TTY_RELAY_NFDS + STEP_NFDS] = {
			{.fd = sfd, .events = POLLIN},
			{.fd = statusp[0], .events = POLLIN},
			{.fd = errfd_open ? errp[0] : -1, .events = POLLIN},
			/* The record waits for the command's exec, which closes
			 * its copy of the error pipe (P1's goes after the go-
			 * ahead): until then it is gpurun's non-dumpable P2,
			 * whose namespaces a joining launch could not open. */
			{.fd = errfd_open ? -1 : ready[0], .events = POLLIN}};
		nfds_t n = 4 + tty_relay_pollfds(tr, pfd + 4);
		struct pollfd *stepfd = pfd + n;
		n += step_pollfds(sp, stepfd);
		if (poll(pfd, n, -1) < 0) {
			if (errno == EINTR)
				continue;
			gerr_set(err, errno, "poll");
			return abandon(pid, &keep);
		}
		if (tty_relay_step(tr, pfd + 4, err) < 0)
			return abandon(pid, &keep);
		int stepped = step_poll(sp, stepfd, err);
		if (stepped < 0)
			return abandon(pid, &keep);
		if (stepped == STEP_ENDED) {
			abandon(pid, &keep);
			return step_ended(sp, 0);
		}
		if (pfd[3].revents & (POLLIN | POLLHUP)) {
			struct gerr rerr = {0};
			if (record_ready(cfg, ready[0], pid, &rerr) < 0) { /* the run goes on; ps lacks it */
				_cleanup_free_ char *line = xasprintf("gpurun: warning: %s\n", rerr.msg);
				tty_relay_say(tr, line, strlen(line));
			}
			close(ready[0]);
			ready[0] = -1;
		}
		if (errfd_open && (pfd[2].revents & (POLLIN | POLLHUP))) {
			char buf[4096];
			ssize_t r = read(errp[0], buf, sizeof buf);
			if (r > 0)
				tty_relay_say(tr, buf, (size_t)r);
			else if (r == 0)
				errfd_open = 0;
		}
		if (pfd[1].revents & (POLLIN | POLLHUP))
			break;
		if (!(pfd[0].revents & POLLIN))
			continue;
		struct signalfd_siginfo si;
		if (read(sfd, &si, sizeof si) != (ssize_t)sizeof si)
			continue;
		if (step_ends_on(sp, (int)si.ssi_signo)) {
			abandon(pid, &keep);
			return step_ended(sp, (int)si.ssi_signo);
		}
		if (si.ssi_signo == SIGWINCH)
			tty_relay_winch(tr);
		else if (si.ssi_signo != SIGCHLD && si.ssi_signo != SIGTTOU)
			kill(pid, (int)si.ssi_signo);
	}
	tty_relay_end(&tr); /* the command's last output, then the caller's terminal out of raw mode */
	if (ready[0] >= 0)
		close(ready[0]);
	if (cfg->name)
		record_end(cfg);

	/* P1 is reaped here even though every process of the container is
	 * gone by its status: gpurun must not leave a zombie to a parent
	 * that never reaps (a shell as pid 1 of a CI container).  The wait
	 * is P1's mount namespace being taken apart, a tenth of a launch;
	 * bubblewrap returns before it. */
	struct exit_report rep;
	int status = 0;
	int have = read(statusp[0], &rep, sizeof rep) == (ssize_t)sizeof rep;
	int cmd_status = have ? rep.status : 0;
	if (have && rep.nstuck) {
		/* P1's exit waits in the kernel until they are gone: not us. */
		rep.stuck[sizeof rep.stuck - 1] = '\0';
		warnx_("%d process%s of the container outlived SIGKILL: %s; gpurun does not wait for %s (state D: in "
		       "the kernel, uninterruptible, where a GPU stuck in the driver holds its caller)",
		       rep.nstuck, rep.nstuck == 1 ? "" : "es", rep.stuck, rep.nstuck == 1 ? "it" : "them");
	} else {
		while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
			;
	}
	/* Only now: a P1 that was killed closed its pipes before the kernel
	 * ended the rest of its pid namespace, which its exit waits for. */
	give_terminal_back(&keep);
	relay(errp[0], 2);
	if (have)
		return ns_exit_status(cmd_status);
	if (WIFEXITED(status))
		return WEXITSTATUS(status) ? WEXITSTATUS(status) : GPURUN_EXIT_FAIL;
	/* Killed before the command's status was known, with no word of its
	 * own: say so, rather than exit 125 in silence. */
	return gerr_set(err, 0, "the container's init (pid 1) was killed by signal %d (%s)", WTERMSIG(status),
			strsignal(WTERMSIG(status)));
}
