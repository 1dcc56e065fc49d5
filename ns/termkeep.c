/* ns/termkeep.c — the caller's terminal as P0 found it before the launch,
 * given back once every process of the container is gone, before gpurun
 * writes another word.
 *
 * Without -t the command holds that terminal on fds 0-2 and needs no
 * capability to leave it broken for the caller: exclusive (TIOCEXCL: no one
 * but root opens it again, so less, vim, ssh and sudo's prompts fail), its
 * output stopped with IXON off (TCOOFF: the shell's next write blocks for
 * good, and ^Q cannot restart it), O_NONBLOCK on the open file it shares
 * with the caller's shell, other modes, another foreground job.  The filter
 * denies TIOCEXCL too, but a deny-list of ioctls never ends: P0, which keeps
 * the caller's credentials and needs nothing they lack over their own
 * terminal, puts the whole state back instead.
 *
 * The foreground job and the modes only when gpurun was the terminal's
 * foreground job as it started: the terminal was then lent to the command.
 * Run in the background, they belong to the job in the foreground (a
 * shell's line editor, an editor), and old modes given back would break it.
 * The modes not in a pipeline either (a pipe or a socket on fds 0-2): the
 * commands beside gpurun share the terminal, and `gpurun ... | less` must
 * keep the modes less set, whenever it set them.  Never the window size:
 * the caller may resize the window meanwhile, and the size the terminal has
 * is the true one. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <termios.h>
#include <unistd.h>

#include "exec.h"

#ifndef TIOCGEXCL
#define TIOCGEXCL _IOR('T', 0x40, int) /* Linux 3.8 */
#endif

int termkeep_save(struct termkeep *k, struct gerr *err)
{
	memset(k, 0, sizeof *k);
	int pipeline = 0;
	for (int fd = 0; fd <= 2; fd++) {
		struct stat st;
		k->flags[fd] = -1;
		if (!isatty(fd)) {
			pipeline |= fstat(fd, &st) == 0 && (S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode));
			continue;
		}
		if (fstat(fd, &st) < 0)
			return gerr_set(err, errno, "stat the terminal on fd %d", fd);
		k->flags[fd] = fcntl(fd, F_GETFL);
		if (k->flags[fd] < 0)
			return gerr_set(err, errno, "read the file status flags of the terminal on fd %d", fd);
		size_t i = 0;
		while (i < k->ntty && k->tty[i].rdev != st.st_rdev)
			i++;
		if (i < k->ntty)
			continue; /* the same terminal as a lower fd */
		struct kept_tty *t = &k->tty[k->ntty++];
		t->fd = fd;
		t->rdev = st.st_rdev;
		if (tcgetattr(fd, &t->modes) < 0)
			return gerr_set(err, errno, "read the modes of the terminal on fd %d", fd);
		if (ioctl(fd, TIOCGEXCL, &t->excl) < 0)
			return gerr_set(err, errno, "read the exclusive flag of the terminal on fd %d", fd);
		/* -1 (ENOTTY) for a terminal that is not gpurun's controlling
		 * one: no job of gpurun's session has it. */
		pid_t fg = tcgetpgrp(fd);
		t->fg = fg > 0 && fg == getpgrp() ? fg : 0;
	}
	for (size_t i = 0; i < k->ntty; i++)
		k->tty[i].own_modes = k->tty[i].fg && !pipeline;
	return 0;
}

/* One step of the restore: the first failure is the one reported, and the
 * steps after it are still taken.  EIO is a terminal hung up (the caller's
 * window closed, the connection lost): there is nothing to give back. */
static void step(int rc, struct gerr *err, int *failed, const char *what, int fd)
{
	if (rc >= 0 || errno == EIO || *failed)
		return;
	*failed = 1;
	gerr_set(err, errno, "give the terminal back: %s of the terminal on fd %d", what, fd);
}

int termkeep_restore(const struct termkeep *k, struct gerr *err)
{
	int failed = 0;
	/* The command may have left another job in the foreground: as a
	 * background job P0 would be stopped by each of these calls. */
	sigset_t ttou, old;
	sigemptyset(&ttou);
	sigaddset(&ttou, SIGTTOU);
	if (sigprocmask(SIG_BLOCK, &ttou, &old) < 0)
		return gerr_set(err, errno, "give the terminal back: block SIGTTOU");
	for (size_t i = 0; i < k->ntty; i++) {
		const struct kept_tty *t = &k->tty[i];
		/* First: everything written from here on, by gpurun or the
		 * shell, would wait for a ^Q that IXON off ignores.  TCOON
		 * restarts only what TCOOFF stopped; a ^S stop is the caller's. */
		step(tcflow(t->fd, TCOON), err, &failed, "restart the output", t->fd);
		step(ioctl(t->fd, t->excl ? TIOCEXCL : TIOCNXCL), err, &failed, "the exclusive flag", t->fd);
		/* TCSANOW: TCSADRAIN would wait for output still held back. */
		if (t->own_modes)
			step(tcsetattr(t->fd, TCSANOW, &t->modes), err, &failed, "the modes", t->fd);
		if (t->fg && tcgetpgrp(t->fd) != t->fg)
			step(tcsetpgrp(t->fd, t->fg), err, &failed, "the foreground job", t->fd);
	}
	/* The open file is the caller's shell's too: an O_NONBLOCK left on it
	 * turns the shell's reads into EAGAIN. */
	for (int fd = 0; fd <= 2; fd++)
		if (k->flags[fd] >= 0)
			step(fcntl(fd, F_SETFL, k->flags[fd]), err, &failed, "the file status flags", fd);
	if (sigprocmask(SIG_SETMASK, &old, NULL) < 0 && !failed)
		return gerr_set(err, errno, "give the terminal back: unblock SIGTTOU");
	return failed ? -1 : 0;
}
