/* gpu/probe/deadline.c — the probe's pieces that call the driver, each in
 * a child with a deadline.  A wedged GPU keeps its caller inside the
 * driver for good, so the parent, which never loads the driver, keeps the
 * clock: at the deadline it sends SIGKILL and gives the child a short grace
 * to go.  A child still there after it is in the kernel and not coming
 * back soon (state D, an uninterruptible sleep, is what a GPU stuck in the
 * driver looks like); it is named and left behind, never waited for, since
 * nothing from user space can end it.  Its standard streams are /dev/null
 * from the start, so that it holds no pipe a CI job reads to its end. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "smoke.h"

#define GRACE_S 2.0 /* from SIGKILL until a child still there counts as stuck */

/* SIGCHLD wakes the parent's poll through this pipe. */
static int chld_pipe[2] = {-1, -1};

static void on_chld(int sig)
{
	(void)sig;
	int e = errno;
	if (write(chld_pipe[1], "c", 1) < 0) {
		/* full: a wake-up is already pending */
	}
	errno = e;
}

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int write_all(int fd, const void *buf, size_t n)
{
	const char *p = buf;
	while (n) {
		ssize_t w = write(fd, p, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

int bounded_start(struct bounded *b, void (*fn)(void *arg, void *out), void *arg, void *out, size_t size)
{
	memset(b, 0, sizeof *b);
	b->fd = -1;
	b->out = out;
	b->size = size;
	if (chld_pipe[0] < 0) {
		struct sigaction sa;
		memset(&sa, 0, sizeof sa);
		sa.sa_handler = on_chld;
		sa.sa_flags = SA_RESTART | SA_NOCLDSTOP;
		if (pipe2(chld_pipe, O_CLOEXEC | O_NONBLOCK) < 0 || sigaction(SIGCHLD, &sa, NULL) < 0) {
			snprintf(b->why, sizeof b->why, "cannot watch its children: %s", strerror(errno));
			return -1;
		}
	}
	int p[2];
	if (pipe2(p, O_CLOEXEC) < 0) {
		snprintf(b->why, sizeof b->why, "pipe: %s", strerror(errno));
		return -1;
	}
	fflush(NULL);
	b->pid = fork();
	if (b->pid < 0) {
		snprintf(b->why, sizeof b->why, "fork: %s", strerror(errno));
		close(p[0]);
		close(p[1]);
		return -1;
	}
	if (b->pid == 0) {
		signal(SIGCHLD, SIG_DFL);
		close(chld_pipe[0]);
		close(chld_pipe[1]);
		close(p[0]);
		int null = open("/dev/null", O_RDWR | O_CLOEXEC);
		for (int fd = 0; fd < 3; fd++)
			if (null < 0 ? close(fd) : dup2(null, fd) < 0)
				_exit(3);
		fn(arg, out);
		_exit(write_all(p[1], out, size) < 0 ? 4 : 0);
	}
	close(p[1]);
	b->fd = p[0];
	return 0;
}

/* Reap what has exited, without waiting. */
static void reap(struct bounded *b, int n)
{
	for (int i = 0; i < n; i++) {
		if (b[i].pid <= 0 || b[i].exited)
			continue;
		pid_t w = waitpid(b[i].pid, &b[i].status, WNOHANG);
		if (w == b[i].pid || (w < 0 && errno == ECHILD))
			b[i].exited = 1;
	}
}

/* Read what the children wrote, until `until` (a time of now()) or until
 * every child is done with: all its answer read and reaped (or, with
 * exits_only, only reaped). */
static void watch(struct bounded *b, int n, double until, int exits_only)
{
	for (;;) {
		reap(b, n);
		struct pollfd pf[MAX_GPUS + 2];
		int k = 0, pending = 0;
		for (int i = 0; i < n && k < MAX_GPUS + 1; i++) {
			if (b[i].pid <= 0)
				continue;
			if (b[i].fd >= 0 && !exits_only) {
				pf[k++] = (struct pollfd){.fd = b[i].fd, .events = POLLIN};
				pending++;
			} else if (!b[i].exited) {
				pending++;
			}
		}
		double left = until - now();
		if (!pending || left <= 0)
			return;
		pf[k++] = (struct pollfd){.fd = chld_pipe[0], .events = POLLIN};
		int ms = (int)(left * 1000) + 1;
		if (poll(pf, (nfds_t)k, ms) < 0 && errno != EINTR)
			return;
		char drain[64];
		while (read(chld_pipe[0], drain, sizeof drain) > 0)
			;
		for (int i = 0; i < n; i++) {
			if (b[i].pid <= 0 || b[i].fd < 0 || exits_only)
				continue;
			struct pollfd one = {.fd = b[i].fd, .events = POLLIN};
			if (poll(&one, 1, 0) <= 0)
				continue;
			char scrap[4096];
			char *dst = b[i].got < b[i].size ? (char *)b[i].out + b[i].got : scrap;
			size_t cap = b[i].got < b[i].size ? b[i].size - b[i].got : sizeof scrap;
			ssize_t r = read(b[i].fd, dst, cap);
			if (r > 0 && dst != scrap)
				b[i].got += (size_t)r;
			else if (r == 0 || (r < 0 && errno != EINTR && errno != EAGAIN)) {
				close(b[i].fd);
				b[i].fd = -1;
			}
		}
	}
}

/* The state letter of /proc/PID/stat ('D', 'R', ...), '?' when unknown. */
static char proc_state(pid_t pid, char *comm, size_t cap)
{
	char path[64], buf[512];
	snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
	snprintf(comm, cap, "?");
	FILE *f = fopen(path, "re");
	if (!f)
		return '?';
	size_t n = fread(buf, 1, sizeof buf - 1, f);
	fclose(f);
	buf[n] = '\0';
	char *open = strchr(buf, '('), *close_ = strrchr(buf, ')');
	if (!open || !close_ || close_ < open || close_[1] != ' ' || !close_[2])
		return '?';
	snprintf(comm, cap, "%.*s", (int)(close_ - open - 1), open + 1);
	for (char *c = comm; *c; c++)
		if ((unsigned char)*c < 0x20 || (unsigned char)*c >= 0x7f)
			*c = '?';
	return close_[2];
}

int bounded_wait(struct bounded *b, int n, double seconds)
{
	watch(b, n, now() + seconds, 0);
	int late = 0;
	for (int i = 0; i < n; i++) {
		if (b[i].pid <= 0 || b[i].exited)
			continue;
		/* Still at work; or its answer is whole and its exit is what
		 * takes this long (the driver letting go of the GPU). */
		b[i].timed_out = b[i].got < b[i].size;
		kill(b[i].pid, SIGKILL);
		b[i].killed = late = 1;
	}
	if (late)
		watch(b, n, now() + GRACE_S, 1);
	int ok = 0;
	for (int i = 0; i < n; i++) {
		if (b[i].fd >= 0) {
			close(b[i].fd);
			b[i].fd = -1;
		}
		if (b[i].pid <= 0)
			continue;
		if (!b[i].exited) {
			char comm[64];
			char st = proc_state(b[i].pid, comm, sizeof comm);
			b[i].stuck = 1;
			snprintf(b[i].why, sizeof b[i].why,
				 "did not finish within %g s, and outlived SIGKILL: pid %d (%s) is in state %c%s; "
				 "gpurun leaves it behind: the GPU needs a reset or a reboot",
				 seconds, (int)b[i].pid, comm, st,
				 st == 'D' ? " (uninterruptible: stuck in the driver)" : "");
		} else if (b[i].timed_out) {
			snprintf(b[i].why, sizeof b[i].why, "did not finish within %g s: killed (SIGKILL)", seconds);
		} else if (b[i].got == b[i].size &&
			   (WIFSIGNALED(b[i].status) ? b[i].killed : WEXITSTATUS(b[i].status) == 0)) {
			ok++; /* whole, and ended (by our SIGKILL, when its exit was slow) */
		} else if (WIFSIGNALED(b[i].status)) {
			snprintf(b[i].why, sizeof b[i].why, "died of signal %d (%s)", WTERMSIG(b[i].status),
				 strsignal(WTERMSIG(b[i].status)));
		} else {
			snprintf(b[i].why, sizeof b[i].why, "ended without its answer (exit status %d)",
				 WEXITSTATUS(b[i].status));
		}
	}
	return ok;
}
