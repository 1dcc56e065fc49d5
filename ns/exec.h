/* ns/exec.h — private to ns/: what the plan executor (ns/exec.c), the
 * container's pid 1 (ns/init.c), the command (ns/command.c), their error
 * report (ns/report.c), -t's pty (ns/tty.c) and the caller's terminal kept
 * by P0 (ns/termkeep.c) share. */
#ifndef GPURUN_EXEC_H
#define GPURUN_EXEC_H

#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <termios.h>

#include "ns.h"

struct exec_state {
	const struct run_config *cfg;
	int rootfd;                /* O_PATH fd of the container root mount */
	const char *libdir;        /* $LIBDIR once known */
	const char *libdir32;      /* $LIBDIR32 once known */
	struct unpack_job *unpack; /* a tar image's unpack, started ahead */
	struct dir_cache dirs;     /* of the file binds in a row (a GPU's libraries) */
	struct plan_view view;     /* --verbose: what the printed steps know */
	struct step_state *step;   /* --step: what the last stop saw (ns/step.c) */
};

/* Run the whole plan (rootfs, mounts, pivot, ldconfig, final remounts). */
int plan_execute(struct exec_state *st, struct gerr *err);
/* The command's credentials from the root's /etc/passwd and /etc/group,
 * into the launch (launch_lookup_user: ns_launch(cfg)->user); looked up
 * once, when the root is built and before the image's ldconfig runs,
 * which gets the same ones. */
int exec_user(struct exec_state *st, struct gerr *err);

/* ns/mountfd.c: what is mounted, always through fds (what names the mount
 * in messages). */
/* Set a mount's flags (OPF_RO, nosuid, ...) on fd, below it too when recursive. */
int mountfd_set_attrs(int fd, unsigned flags, int recursive, const char *what, struct gerr *err);
/* Move the detached tree onto target. */
int mountfd_attach(int tree, int target, const char *what, struct gerr *err);
/* A fresh instance of type with data and flags, attached onto target. */
int mountfd_fresh(const char *type, const char *source, const char *data, unsigned flags, int target, const char *what,
		  struct gerr *err);
/* A fresh mount of op's kind (or the overlay of the image) onto target. */
int mountfd_op(const struct op *op, const char *type, int target, const char *what, struct gerr *err);

/* ns/rootbuild.c: steps 2 and 3. */
/* $LIBDIR and $LIBDIR32 of the tree at dirfd. */
const char *image_libdir(int dirfd);
const char *image_libdir32(int dirfd);
/* path with a leading $LIBDIR or $LIBDIR32 expanded for the root being
 * built (st->rootfd; looked up once, into st), into buf; path itself when
 * it has none. */
const char *image_expand_libdir(struct exec_state *st, const char *path, char *buf, size_t cap);
/* Open every bind source and cached layer as a detached clone. */
int rootbuild_preopen_sources(struct plan *p, int image_fd, struct gerr *err);
/* Unprivileged directory image: the directories of the lower tree (an
 * O_PATH fd) mirrored into the overlay's upper layer before it is
 * mounted, "MODE PATH" each (relative), parents first. */
void rootbuild_upper_mirror_list(const struct plan *p, int lowerfd, struct strv *out);
/* The root on the scratch tmpfs; st->rootfd is set. */
int rootbuild_rootfs(struct exec_state *st, struct op *op, struct gerr *err);

/* What P1 tells P2 once the root is ready.  P2 is forked before the setup
 * so that it is pid 2 however many helpers (an unpack thread, ldconfig)
 * the setup used; pivot_root moves its root along with P1's. */
struct go_ahead {
	uid_t uid;
	gid_t gid;
	size_t ngroups; /* supplementary groups, from the image's /etc/group */
	gid_t groups[USER_GROUPS_MAX];
	char home[PATH_MAX];
};

/* ns/record.c: P1 tells P0 that the command (pid, in P1's pid namespace;
 * the kernel gives P0 its host pid) has started with ga's credentials;
 * closes sock. */
void record_send_ready(int sock, pid_t command, const struct go_ahead *ga);

/* ns/report.c.  A setup error from P1 or P2: written to err_fd for P0 to print, then
 * _exit() with the error's code (125 by default). */
__attribute__((noreturn)) void setup_fail(int err_fd, const struct gerr *err);
/* setup_fail() with a fresh message: "what: strerror(errnum)". */
__attribute__((noreturn, format(printf, 3, 4))) void setup_failf(int err_fd, int errnum, const char *fmt, ...);

/* P2 (ns/command.c): shed privileges, wait on go_fd for the go-ahead,
 * exec the command.  Never returns. */
__attribute__((noreturn)) void command_main(const struct run_config *cfg, int go_fd, const sigset_t *orig, int err_fd,
					    const struct cpu_spread *cpus);

/* ns/enter.c: the user of an exec'd command, into ga: -u spec's from the
 * /etc/passwd and /etc/group of the container's root rootfd (a numeric id
 * exactly one id), else (spec NULL) the first command's from r. */
int enter_user(const struct record *r, const char *spec, int rootfd, struct go_ahead *ga, struct gerr *err);

/* `gpurun exec`'s command (ns/enter.c), forked in the container's
 * namespaces: the recorded limits (has_limit[r]: limits[r] is set), then
 * what P2 does after its go-ahead.  Never returns. */
__attribute__((noreturn)) void command_enter(const struct run_config *cfg, const struct go_ahead *ga,
					     const struct rlimit *limits, const int *has_limit, const sigset_t *orig,
					     int slave, int err_fd);

/* P1: everything after clone() — wait for the id maps, run the plan, fork
 * the command, reap.  Never returns. */
__attribute__((noreturn)) void init_main(const struct run_config *cfg, int sync_fd, int err_fd, int status_fd);

/* What P1 hands P0 when the command is done: its wait status and the
 * processes of the container that outlived SIGKILL (a GPU stuck in the
 * driver holds its caller in an uninterruptible sleep).  P1's own exit
 * then waits in the kernel until they are gone, so P0 must not wait for
 * P1 when there are any.  One write, less than PIPE_BUF: it comes whole. */
struct exit_report {
	int status;
	int nstuck;
	char stuck[512]; /* "pid 7 (fake-cuda-hang) in state D", ", " between them */
};

/* ns/tty.c: -t, the command's own pty.  P1, after the pivot: open it in
 * the container's devpts, send the master to P0 over cfg->tty_sock and the
 * slave to the command over cmd_sock; as root, uid:gid own the slave. */
int tty_hand_out(const struct run_config *cfg, int cmd_sock, uid_t uid, gid_t gid, struct gerr *err);
/* P2: the fd sent over sock; -1 with errno (0: the sender is gone). */
int tty_recv_fd(int sock);
/* P2, in a new session: the slave becomes the controlling terminal and
 * fds 0-2. */
void tty_take(int slave, int err_fd);
/* P0: the relay.  tty_relay_new() before clone (sets cfg->tty_sock and
 * tty_size), tty_relay_started() after it; every call takes NULL (no -t)
 * and does nothing; tty_relay_end() drains the command's output, puts the
 * caller's terminal back and frees (a cleanup function). */
#define TTY_RELAY_NFDS 4
struct tty_relay *tty_relay_new(struct run_config *cfg, struct gerr *err);
void tty_relay_started(struct tty_relay *t, struct run_config *cfg);
size_t tty_relay_pollfds(const struct tty_relay *t, struct pollfd *p);
int tty_relay_step(struct tty_relay *t, const struct pollfd *p, struct gerr *err);
void tty_relay_winch(struct tty_relay *t);
/* gpurun's own text on stderr, while the caller's terminal may be raw. */
void tty_relay_say(const struct tty_relay *t, const char *buf, size_t n);
void tty_relay_end(struct tty_relay **t);

/* ns/termkeep.c: P0's note of the terminals on fds 0-2, taken before the
 * launch, and the state given back from it once the container is gone. */
struct termkeep {
	struct kept_tty {
		int fd;     /* the first of fds 0-2 on this terminal */
		dev_t rdev; /* which terminal */
		struct termios modes;
		int excl;      /* TIOCGEXCL */
		pid_t fg;      /* gpurun's process group, in the foreground; 0 when another job had it */
		int own_modes; /* the modes are given back (ns/termkeep.c says when) */
	} tty[3];
	size_t ntty;
	int flags[3]; /* F_GETFL of each of fds 0-2 that is a terminal, else -1 */
};
int termkeep_save(struct termkeep *k, struct gerr *err);
/* With SIGTTOU blocked: the output restarted first, the exclusive flag, the
 * file status flags, and where gpurun had the foreground, the modes (not in
 * a pipeline) and the foreground job.  Every step is taken; -1 with the
 * first failure. */
int termkeep_restore(const struct termkeep *k, struct gerr *err);

/* ns/step.c: --step.  P1: step_at before its op i of the plan (and with
 * i the plan's length, after the last; the launch's own steps, OP_LAUNCH,
 * are not P1's and do not count), a stop where a section ends or before
 * the first: what it added, sent to P0, then the wait for the go-ahead;
 * nothing where i is no section's end.  step_exec, the last
 * stop, before the command's go-ahead. */
int step_at(struct exec_state *st, size_t i, struct gerr *err);
int step_exec(struct exec_state *st, struct gerr *err);
/* P0: step_new() before clone (sets cfg->step_sock), step_started() after
 * it; every call takes NULL (no --step) and does nothing.  step_poll:
 * STEP_ENDED when the caller ends the launch at a stop (q, or the end of
 * the terminal's input).  step_ends_on: whether signo, come now, ends the
 * launch (the setup is not done).  step_ended: the last line; returns
 * gpurun's exit status.  step_end frees (a cleanup function). */
#define STEP_NFDS 2
#define STEP_ENDED 1
struct stepper *step_new(struct run_config *cfg, struct gerr *err);
void step_started(struct stepper *s, const struct run_config *cfg, pid_t pid);
size_t step_pollfds(const struct stepper *s, struct pollfd *p);
int step_poll(struct stepper *s, const struct pollfd *p, struct gerr *err);
int step_ends_on(const struct stepper *s, int signo);
int step_ended(const struct stepper *s, int signo);
void step_end(struct stepper **s);

/* ns/show.c: the heading of a section of p's printed plan ("# 4. The GPU...");
 * section 5 names ldconfig only where p runs it. */
const char *ns_section_heading(const struct plan *p, enum plan_section s);
/* ns/show.c: a field of /proc/PID/mountinfo with its "\\ooo" escapes undone
 * in place, and the per-mount flags (OPF_RO...) named in its options. */
void ns_mountinfo_unescape(char *s);
unsigned ns_mount_flags_of(const char *opts);

/* ns/launch.c: a wait status as gpurun's exit status (128+N for signal N). */
int ns_exit_status(int status);

#endif
