/* ns/tty.c — -t: the command's own pty, from the container's devpts.  P1
 * opens it once the root is built and hands the master to P0 and the slave
 * to the command (P2), which makes it its controlling terminal and its fds
 * 0-2; P0 relays between the master and the caller's terminal: raw mode
 * while it does (put back on every way out of ns_run), the window size at
 * the start and on SIGWINCH, the caller's keystrokes only with -i.
 *
 * The caller's terminal never reaches the command: a payload holding it
 * could push keystrokes into the caller's shell (TIOCSTI), swap its line
 * discipline or hang it up.  Behind the container's pty there is only P0. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>
#include <termios.h>
#include <unistd.h>

#include <linux/magic.h>

#include "exec.h"

#ifndef TIOCGPTPEER
#define TIOCGPTPEER _IO('T', 0x41)
#endif

/* One fd over a unix socket (SCM_RIGHTS), with a byte to carry it. */
static int send_fd(int sock, int fd)
{
	char byte = 't';
	struct iovec iov = {.iov_base = &byte, .iov_len = 1};
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(sizeof(int))];
	} u;
	memset(&u, 0, sizeof u);
	struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf, .msg_controllen = sizeof u.buf};
	struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(c), &fd, sizeof fd);
	ssize_t r;
	while ((r = sendmsg(sock, &msg, MSG_NOSIGNAL)) < 0 && errno == EINTR)
		;
	return r == 1 ? 0 : -1;
}

int tty_recv_fd(int sock)
{
	char byte;
	struct iovec iov = {.iov_base = &byte, .iov_len = 1};
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(sizeof(int))];
	} u;
	struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf, .msg_controllen = sizeof u.buf};
	ssize_t r;
	while ((r = recvmsg(sock, &msg, MSG_CMSG_CLOEXEC)) < 0 && errno == EINTR)
		;
	if (r <= 0) {
		if (r == 0)
			errno = 0; /* the sender is gone: it reports why */
		return -1;
	}
	struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
	int fd;
	if (!c || c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS || c->cmsg_len != CMSG_LEN(sizeof(int))) {
		errno = EPROTO;
		return -1;
	}
	memcpy(&fd, CMSG_DATA(c), sizeof fd);
	return fd;
}

int tty_hand_out(const struct run_config *cfg, int cmd_sock, uid_t uid, gid_t gid, struct gerr *err)
{
	/* With -t and no -i the caller's terminal stays cooked: its ^C would
	 * reach P1 as well as P0, and the command would get it twice. */
	if (setsid() < 0)
		return gerr_set(err, errno, "setsid");
	/* After the pivot "/" is the container's root. */
	_cleanup_fd_ int root = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (root < 0)
		return gerr_set(err, errno, "open /");
	/* Non-blocking for P0, which alone does I/O on it (the flag is the
	 * open file's, and travels with it). */
	_cleanup_fd_ int master =
		root_open(root, "/dev/pts/ptmx", O_RDWR | O_NOCTTY | O_NONBLOCK | O_CLOEXEC | O_NOFOLLOW, err);
	if (master < 0)
		return -1;
	/* The devpts instance the plan mounted, whatever ran since (the
	 * image's ldconfig): its ptmx, 5:2, on a devpts. */
	struct statfs sf;
	struct stat st;
	if (fstatfs(master, &sf) < 0 || fstat(master, &st) < 0)
		return gerr_set(err, errno, "stat /dev/pts/ptmx");
	if (sf.f_type != DEVPTS_SUPER_MAGIC || !S_ISCHR(st.st_mode) || st.st_rdev != makedev(5, 2))
		return gerr_set(err, 0, "/dev/pts/ptmx is not the ptmx of the container's devpts");
	if (unlockpt(master) < 0)
		return gerr_set(err, errno, "unlock the pty (/dev/pts/ptmx)");
	/* Before the command can ask: P0 only gets the master afterwards. */
	if (cfg->tty_size.ws_row && ioctl(master, TIOCSWINSZ, &cfg->tty_size) < 0)
		return gerr_set(err, errno, "set the pty's window size");
	/* The peer of this very master, not a name looked up in /dev/pts. */
	_cleanup_fd_ int slave = ioctl(master, TIOCGPTPEER, O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (slave < 0)
		return gerr_set(err, errno, "open the pty's slave (TIOCGPTPEER)");
	/* As root, --user's ids own their terminal, as with docker.  Not as
	 * a user: the one id mapped owns it, and --user's nested namespace
	 * maps it to them. */
	if (!cfg->unprivileged && (uid || gid) && fchown(slave, uid, gid) < 0)
		return gerr_set(err, errno, "chown the pty to %u:%u", (unsigned)uid, (unsigned)gid);
	if (send_fd(cfg->tty_sock, master) < 0)
		return gerr_set(err, errno, "hand the pty to gpurun");
	if (send_fd(cmd_sock, slave) < 0)
		return gerr_set(err, errno, "hand the pty to the command");
	close(cfg->tty_sock);
	return 0;
}

void tty_take(int slave, int err_fd)
{
	/* The caller of setsid(): a session leader with no terminal yet, so
	 * its shell gets job control (^Z, fg) on the container's pty. */
	if (ioctl(slave, TIOCSCTTY, 0) < 0)
		setup_failf(err_fd, errno, "make the pty the command's controlling terminal");
	for (int fd = 0; fd <= 2; fd++)
		if (dup2(slave, fd) < 0)
			setup_failf(err_fd, errno, "put the pty on fd %d", fd);
	if (slave > 2)
		close(slave);
}

/* P0's side.  Each direction has one buffer: the source is read only
 * when it is empty, and it is written only when poll says the
 * destination takes it, so a command that stops reading, or a caller
 * that stops reading its output, never blocks P0's signal relay.  The
 * caller's fds are never made non-blocking: their open file is the
 * caller's shell's too. */
struct tty_relay {
	int sock;       /* P1 sends the master here; -1 once it did or is gone */
	int master;     /* -1 until then */
	int master_hup; /* every slave fd is closed: nothing more to read */
	int in;         /* the caller's stdin with -i; -1 without, or after its end */
	int out_ok;     /* stdout still takes what is written */
	int raw;        /* the caller's terminal is in raw mode; saved has its modes */
	struct termios saved;
	char last; /* the last byte sent to the command */
	size_t inlen, inoff, outlen, outoff;
	char inbuf[4096], outbuf[4096];
};

enum { SLOT_SOCK, SLOT_IN, SLOT_MASTER, SLOT_OUT };

/* The caller's window: the first of fds 0-2 that is a terminal. */
static int caller_size(struct winsize *ws)
{
	for (int fd = 0; fd <= 2; fd++)
		if (ioctl(fd, TIOCGWINSZ, ws) == 0)
			return 0;
	return -1;
}

struct tty_relay *tty_relay_new(struct run_config *cfg, struct gerr *err)
{
	int sv[2];
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0) {
		gerr_set(err, errno, "socketpair");
		return NULL;
	}
	struct tty_relay *t = xcalloc(1, sizeof *t);
	t->sock = sv[0];
	t->master = -1;
	t->in = cfg->interactive ? 0 : -1;
	t->out_ok = 1;
	t->last = '\n';
	cfg->tty_sock = sv[1];
	memset(&cfg->tty_size, 0, sizeof cfg->tty_size);
	(void)caller_size(&cfg->tty_size);
	return t;
}

void tty_relay_started(struct tty_relay *t, struct run_config *cfg)
{
	if (t)
		close(cfg->tty_sock);
}

static void got_master(struct tty_relay *t, int fd)
{
	t->master = fd;
	/* A resize between the launch and now. */
	struct winsize ws;
	if (caller_size(&ws) == 0)
		(void)ioctl(fd, TIOCSWINSZ, &ws);
	/* A closed stdout is then EPIPE, not the death of P0 with the
	 * caller's terminal left raw. */
	signal(SIGPIPE, SIG_IGN);
	/* Raw only now, so that setup errors print as usual; ^C, ^Z and ^D
	 * then go through as bytes and the pty's line discipline makes of
	 * them what the command asked for. */
	if (t->in >= 0 && tcgetattr(t->in, &t->saved) == 0) {
		struct termios raw = t->saved;
		cfmakeraw(&raw);
		if (tcsetattr(t->in, TCSANOW, &raw) == 0)
			t->raw = 1;
	}
}

size_t tty_relay_pollfds(const struct tty_relay *t, struct pollfd *p)
{
	if (!t)
		return 0;
	int live = t->master >= 0 && !t->master_hup;
	p[SLOT_SOCK] = (struct pollfd){.fd = t->sock, .events = POLLIN};
	p[SLOT_IN] = (struct pollfd){.fd = live && t->in >= 0 && !t->inlen ? t->in : -1, .events = POLLIN};
	p[SLOT_MASTER] = (struct pollfd){
		.fd = live ? t->master : -1,
		.events = (short)((t->outlen ? 0 : POLLIN) | (t->inlen ? POLLOUT : 0)),
	};
	/* Nothing to read and nothing to write: poll would still report
	 * POLLHUP, over and over. */
	if (!p[SLOT_MASTER].events)
		p[SLOT_MASTER].fd = -1;
	p[SLOT_OUT] = (struct pollfd){.fd = t->outlen ? 1 : -1, .events = POLLOUT};
	return TTY_RELAY_NFDS;
}

/* The caller's input has ended (a pipe, a file): the command reads an end
 * of file, as at a ^D typed at the start of a line. */
static void input_ended(struct tty_relay *t)
{
	t->in = -1;
	struct termios tio;
	if (tcgetattr(t->master, &tio) < 0 || !(tio.c_lflag & ICANON))
		return;
	t->inoff = t->inlen = 0;
	if (t->last != '\n')
		t->inbuf[t->inlen++] = (char)tio.c_cc[VEOF]; /* hands over the partial line */
	t->inbuf[t->inlen++] = (char)tio.c_cc[VEOF];
}

int tty_relay_step(struct tty_relay *t, const struct pollfd *p, struct gerr *err)
{
	if (!t)
		return 0;
	if (p[SLOT_SOCK].revents) {
		int fd = tty_recv_fd(t->sock);
		close(t->sock);
		t->sock = -1;
		if (fd >= 0)
			got_master(t, fd);
		else if (errno) /* EOF: P1 failed first, and says why */
			return gerr_set(err, errno, "receive the pty from the container");
	}
	if (p[SLOT_IN].revents) {
		ssize_t r = read(t->in, t->inbuf, sizeof t->inbuf);
		if (r > 0) {
			t->inoff = 0;
			t->inlen = (size_t)r;
		} else if (r == 0 || (errno != EINTR && errno != EAGAIN)) {
			input_ended(t);
		}
	}
	if (p[SLOT_MASTER].revents & POLLOUT) {
		ssize_t r = write(t->master, t->inbuf + t->inoff, t->inlen - t->inoff);
		if (r > 0) {
			t->last = t->inbuf[t->inoff + (size_t)r - 1];
			t->inoff += (size_t)r;
		}
		if ((r > 0 && t->inoff == t->inlen) || (r < 0 && errno != EAGAIN && errno != EINTR))
			t->inoff = t->inlen = 0;
	}
	if (p[SLOT_MASTER].revents & (POLLIN | POLLHUP | POLLERR)) {
		ssize_t r = read(t->master, t->outbuf, sizeof t->outbuf);
		if (r > 0) {
			t->outoff = 0;
			t->outlen = t->out_ok ? (size_t)r : 0;
		} else if (r == 0 || (errno != EAGAIN && errno != EINTR)) {
			t->master_hup = 1; /* EIO: the command and all it started are gone */
		}
	}
	if (p[SLOT_OUT].revents) {
		ssize_t r = write(1, t->outbuf + t->outoff, t->outlen - t->outoff);
		if (r > 0)
			t->outoff += (size_t)r;
		else if (r < 0 && errno != EAGAIN && errno != EINTR)
			t->out_ok = 0; /* keep reading the master, so the command never blocks */
		if (!t->out_ok || t->outoff == t->outlen)
			t->outoff = t->outlen = 0;
	}
	return 0;
}

void tty_relay_winch(struct tty_relay *t)
{
	struct winsize ws;
	/* The kernel sends SIGWINCH to the pty's foreground job itself. */
	if (t && t->master >= 0 && caller_size(&ws) == 0)
		(void)ioctl(t->master, TIOCSWINSZ, &ws);
}

void tty_relay_say(const struct tty_relay *t, const char *buf, size_t n)
{
	if (!t || !t->raw) {
		(void)write_all(2, buf, n);
		return;
	}
	/* A raw terminal does not return the carriage at a newline. */
	for (size_t i = 0; i < n;) {
		size_t k = i;
		while (k < n && buf[k] != '\n')
			k++;
		(void)write_all(2, buf + i, k - i);
		if (k < n)
			(void)write_all(2, "\r\n", 2);
		i = k + 1;
	}
}

void tty_relay_end(struct tty_relay **tp)
{
	struct tty_relay *t = *tp;
	if (!t)
		return;
	*tp = NULL;
	if (t->master >= 0) {
		/* What the command wrote before it ended.  Once every slave fd is
		 * closed, the kernel hands over what is still buffered and then
		 * says EIO; a slave fd smuggled out of the container would keep
		 * it open, so stop at EAGAIN, and after 1 MiB in any case. */
		if (t->out_ok && t->outlen > t->outoff)
			(void)write_all(1, t->outbuf + t->outoff, t->outlen - t->outoff);
		for (int i = 0; i < 256 && !t->master_hup; i++) {
			ssize_t r = read(t->master, t->outbuf, sizeof t->outbuf);
			if (r < 0 && errno == EINTR)
				continue;
			if (r <= 0)
				break;
			if (t->out_ok && write_all(1, t->outbuf, (size_t)r) < 0)
				t->out_ok = 0;
		}
		close(t->master);
	}
	if (t->raw)
		(void)tcsetattr(0, TCSANOW, &t->saved);
	if (t->sock >= 0)
		close(t->sock);
	free(t);
}
