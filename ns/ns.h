/* ns/ns.h — what ns/ offers gpurun.c: the baseline layout of a container as
 * plan ops, carrying out a plan inside fresh namespaces (ns/launch.c: the
 * host-side monitor, P0; ns/init.c: pid 1; ns/command.c: the command), the teaching
 * view of a launch, the in-root path and security helpers the executor
 * and the init use, and for named containers the record of a run
 * (ns/record.c) and `gpurun exec` into it (ns/enter.c, ns/entershow.c).
 *
 * Process model: P0 stays on the host and relays signals;
 * P1 is cloned into the new namespaces, runs the plan, pivots, and becomes a
 * small init; P2 is the command.  Setup errors travel from P1 to P0 over a
 * pipe and are printed by P0 as one line. */
#ifndef GPURUN_NS_H
#define GPURUN_NS_H

#include <stddef.h>
#include <stdio.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/types.h>

#include "../base/base.h"
#include "../base/opt.h"
#include "../base/plan/plan.h"
#include "../rootfs/rootfs.h"

struct run_config {
	const char *image; /* as given on the command line; absolute for a directory */
	int image_fd;      /* the archive, opened (and probed) by gpurun.c; for a directory, an
				* O_PATH fd of the tree gpurun.c looked at */
	int image_is_dir;
	const struct image *layered; /* an image from the cache: its layers make the root, else NULL */
	const char *import_sel;      /* --no-cache with a layered image: unpack it in the run (image_fd),
				      * picking this NAME:TAG (NULL: the only one); import_run says so */
	int import_run;
	int read_only;
	int unprivileged;     /* add a user namespace mapping the caller to root */
	struct subids subids; /* unprivileged with ranges and Debian's uidmap: a full id map (ns/userns/idmap.c) */
	int fake_ids;         /* one id mapped: setgroups, set*id and chown succeed doing nothing
				* (ns/security.c), so that package managers run */
	int keep_owner;       /* root with every id mapped, or the range's map: archives keep their owners */
	int setgroups_denied; /* root of a user namespace that denies setgroups (ns_takes_groups) */
	uid_t host_uid;
	gid_t host_gid;
	int keep_id;                  /* --userns keep-id, unprivileged: the caller's ids inside, as the
				* command's default user (and, with ranges, in the map itself) */
	const char *keep_home;        /* with keep_id: the caller's home on the host, HOME inside when it
				* is there and the image's /etc/passwd gives the user none */
	const char *hostname;         /* --hostname: a new UTS namespace with it; NULL shares the host's */
	int new_net;                  /* --net none */
	int share_ipc;                /* --ipc host: no new IPC namespace */
	unsigned long long shm_size;  /* --shm-size in bytes; 0: no cap on /dev/shm */
	const struct ulimit *ulimits; /* --ulimit, set on the command before exec */
	size_t nulimits;
	int verbose;
	int step;                  /* --step: stop after each section (ns/step.c) */
	int step_tty;              /* --step: /dev/tty, opened before anything is set up */
	int step_sock;             /* --step, set by ns_run: P1's end of the socket of the stops */
	int tty_foreground;        /* stdin is a terminal and gpurun its foreground job (set by ns_run) */
	int tty;                   /* -t: the command gets a pty of the container's devpts (ns/tty.c) */
	int interactive;           /* -i: with -t, the caller's keystrokes are relayed to it */
	int tty_sock;              /* -t, set by ns_run: P1's end of the socket that hands P0 the master */
	struct winsize tty_size;   /* -t, set by ns_run: the caller's window when the launch began */
	const char *user_spec;     /* --user, NULL for the default (0:0) */
	const char *driver_root;   /* --driver-root, for the printed plan's "$D"; NULL: "/" */
	const char *notfound_hint; /* the command not found: which --caps would bring it, or NULL */
	const char *workdir;       /* NULL: "/" */
	const char *kept_dir;      /* --name: the kept container's directory (rootfs/cache/kept.c) */
	const char *name;          /* --name: its name, for the run's record (ns/record.c) */
	int kept_dirfd;            /* --name: that directory, open; the record is written there */
	int joined_lockfd;         /* --name: its "joined" lock, which every launch that joins the
				    * running container holds shared (rootfs/cache/kept.c) */
	const char *gpus_shown;    /* --name: the GPUs as the record shows them (--gpus, or NULL) */
	int ready_sock;            /* --name, set by ns_run: P1's end of the socket that tells P0 the
				    * command has started (ns/record.c) */
	char **env;                /* "K=V" list, NULL-terminated; HOME added at run time if unset */
	char **argv;               /* the command, NULL-terminated */
	struct plan *plan;
	const struct strv *host_steps; /* --dry-run: commands a launch runs on the host before
					* the namespaces (gpu/nodes.c's nvidia-modprobe), or NULL */
};

/* ns/layout.c: the baseline ops of every container, in the order a launch
 * needs them.  layout_base: root, hostname, lo, /proc, /dev, /sys, /tmp,
 * /run, the host's network files (GPU injection comes after it);
 * layout_volume: one -v SRC:DST[:OPTS] (-1 with err when malformed or the
 * source is missing); layout_mounts: every -v, --tmpfs DST[:OPTS] and
 * --mount type=bind|tmpfs,... (docker's syntax); layout_finish: workdir,
 * pivot, ldconfig over ldconfig_dirs (NULL: none; with compat_driver, the
 * host driver's version, CUDA_COMPAT_DIR first when the image's is newer),
 * --read-only. */
void layout_base(struct plan *p, const struct run_config *cfg);
int layout_volume(struct plan *p, const char *spec, struct gerr *err);
/* One --device /dev/X[:/dev/Y][:rw[m]]: the host's character device X
 * bound at Y (X when not given), checked to be that device when bound. */
int layout_device(struct plan *p, const char *spec, struct gerr *err);
/* Each of specs in the order given: 'v', 't' or 'm' (-v, --tmpfs, --mount)
 * then the option's value. */
int layout_mounts(struct plan *p, const struct strv *specs, struct gerr *err);
void layout_finish(struct plan *p, const struct run_config *cfg, const char *ldconfig_dirs, const char *compat_driver);

/* ns/command.c: the container's environment: PATH, the image's Env (its
 * PATH wins), TERM when the command gets a terminal, HOSTNAME, then the
 * command line's (-e, --env-file), which wins over all of them. */
char **ns_container_env(char **image_env, int terminal, const char *hostname, const struct strv *cli_env);

/* ns/subid.c: ns_caller() fills in who runs gpurun (host_uid, host_gid,
 * unprivileged, subids, fake_ids, keep_owner). */
void ns_caller(struct run_config *cfg);

/* ns/launch.c: run it.  Returns the exit status gpurun should exit with,
 * or -1 with err when the launch could not start. */
int ns_run(struct run_config *cfg, struct gerr *err);

/* `gpurun doctor`'s kernel checks (ns/doctor.c): user namespaces, a fresh
 * /proc and an overlay (over cache_dir when it exists), each tried in a
 * throw-away child in this caller's mode.  -1 only when no child could be
 * started. */
int ns_doctor(struct checks *ck, const char *cache_dir, struct gerr *err);

/* The command's credentials: --user's ids as the image's /etc/passwd
 * gives them (0:0 without), and the supplementary groups of the image's
 * /etc/group where ns_takes_groups() says they are set.  The image's
 * ldconfig, run before the command, gets these too and never more. */
struct ns_user {
	uid_t uid;
	gid_t gid;
	size_t ngroups;
	gid_t groups[USER_GROUPS_MAX];
};

/* The launch's steps around the plan's mount ops (the namespaces and id
 * maps first; the command's limits, credentials, capabilities,
 * environment, exec last), added to the plan's list (OP_LAUNCH), what
 * they carry decided once into cfg->plan->launch (ns/steps.c).  Call once
 * the plan's ops, the environment, the command and its hint are final. */
void ns_plan_launch(struct run_config *cfg);
/* "HOME=..." for the command when its environment has none: --user's home
 * in the image, else / (or /root for root); NULL when it has one.  Decided
 * with the credentials step (ns/steps.c), which the command and the
 * printed plan both read. */
char *ns_home_entry(const struct run_config *cfg, uid_t uid, const char *home);

/* ns/show.c: the teaching view of a whole launch — what --dry-run prints,
 * and the pieces --verbose prints around the ops as they run. */
void ns_print_plan(const struct run_config *cfg, FILE *out);
/* The plan's first lines, through the unshare into the new namespaces. */
void ns_describe_head(const struct run_config *cfg, struct sbuf *b);
/* Op i of cfg->plan as the plan's lines (the pivot with the steps after it;
 * nothing for those); user: the command's, whose ids ldconfig runs with. */
void ns_describe_op(const struct run_config *cfg, const struct plan_view *v, size_t i, const struct ns_user *user,
		    struct sbuf *b);
/* The command, prepared before the pivot, and the plan's closing lines:
 * the shell functions the steps call, the files' bodies. */
void ns_describe_exec(const struct run_config *cfg, const struct plan_view *v, struct sbuf *b);

/* The command's HOME when the image's /etc/passwd gives its user none:
 * with --userns keep-id, the caller's host home when exists(arg, path)
 * says the container has that directory, else the working directory (as
 * podman does); NULL otherwise (ns_home_entry, ns/steps.c: "/root" or "/"). */
const char *ns_keep_id_home(const struct run_config *cfg, int (*exists)(const void *arg, const char *path),
			    const void *arg);
/* Whether the command's groups are set (setgroups) to its gid and its
 * supplementary groups from the image: as root always, as docker does, so
 * the caller's own groups never reach the container; with a full subuid
 * map for a --user other than root (the container's root keeps the
 * caller's groups, which the host's device nodes may need); never with
 * one id mapped, where setgroups is denied. */
int ns_takes_groups(const struct run_config *cfg, uid_t uid, gid_t gid);
/* The ids the image's ldconfig switches to: the command's (u), except
 * with one id mapped, where the command's --user is a nested user
 * namespace over the one id there is, which ldconfig keeps. */
void ns_ldconfig_ids(const struct run_config *cfg, const struct ns_user *u, uid_t *uid, gid_t *gid);
/* What the printed lines know of this launch: $LIBDIR and $LIBDIR32 from
 * the image tree when it is known before the launch, the driver root. */
void ns_view(const struct run_config *cfg, struct plan_view *v);
/* Read the host's mount table into every OP_BIND (see struct op), and mark
 * an OPF_OPTIONAL bind whose source is missing as skipped.  Call before the
 * run mounts anything (the scratch covers /tmp). */
void ns_capture_mounts(struct plan *p);
/* The upper-layer directories of an unprivileged directory image (struct
 * op's upper_dirs), from the image tree. */
void ns_view_upper(const struct run_config *cfg);
/* ---- the plan's steps as printed (ns/opshow.c; each kind's own line beside
 * the code that runs it: ns/ophome.h) ---- */
/* One op as equivalent shell commands (no trailing newline; several lines
 * for some kinds), the way the walkthrough would type them, with the
 * plan's shell functions (ns/plan.sh: bind_file, make_dir, ...) that keep
 * gpurun's guards: paths inside the root relative to it, after "cd $ROOT".
 * OP_LDCONFIG prints its directories only (ns_describe_pivot prints the step). */
void op_describe(const struct plan_view *v, const struct op *op, struct sbuf *out);
/* Op i of the view's plan as its step: a run of binds of one form and
 * flags, or of links in one directory, shares one line (bind_files,
 * bind_each, link_in, driver_text).  Returns how many ops the line holds, 0 when op i is
 * on the line of an op before it (nothing printed). */
size_t op_describe_step(const struct plan_view *v, size_t i, struct sbuf *out);
/* Whether an OP_FILE prints as a copy of the driver's file it was read
 * from (driver_text, driver_params: "$D"/PATH, or /PATH where the view
 * names no driver root), with no body of its own. */
int plan_file_from_driver(const struct plan_view *v, const struct op *op);
/* The definition of the shell function that prints an OP_FILE's body in
 * the printed plan ("body_" and the file's name), after the plan's steps. */
void plan_describe_body(const struct plan_view *v, const struct op *op, struct sbuf *out);
/* " --reuid=U --regid=G --groups=G,...": setpriv's options for u's ids
 * and groups, as the command and the image's ldconfig take them. */
void ns_setpriv_ids(int fake_ids, int takes_groups, const struct ns_user *u, struct sbuf *b);
/* The pivot (plan op i) and what follows it up to the command, as the plan
 * prints them: the helper in the host's root, ldconfig, pivot_root. */
void ns_describe_pivot(const struct run_config *cfg, const struct plan_view *v, size_t i, const struct ns_user *user,
		       struct sbuf *b);
/* "+ line" on stderr for each line of text, as `sh -x` shows commands. */
void ns_trace(const char *text);
/* The command's PATH unless -e or the image sets one. */
#define NS_DEFAULT_PATH "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

/* ns/path.c: paths inside the container root.  Every lookup goes through
 * openat2(RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS) from the root fd, so ".."
 * and absolute symlinks planted in the image stay inside the root. */
int root_open(int rootfd, const char *path, int flags, struct gerr *err);
/* mkdir -p inside the root; returns an O_PATH fd of the directory. */
int root_mkdir_p(int rootfd, const char *path, mode_t mode, struct gerr *err);
/* The directory of the last file mount target or symlink, kept while the
 * ops in a row bind files or make symlinks (a GPU's libraries and their
 * SONAME links): a mount on a file, or a new name in a directory, cannot
 * change what that directory's path resolves to.  Any other op may, and
 * drops it. */
struct dir_cache {
	char *path;
	int fd; /* -1 when empty */
};
void path_dir_cache_drop(struct dir_cache *c);
/* root_parent through the cache (c may be NULL); *owned says whether the
 * caller must close the fd. */
int root_parent_cached(int rootfd, const char *path, const char **base, struct dir_cache *c, int *owned,
		       struct gerr *err);
/* Make sure a mount target exists at path (a directory when dir, else an
 * empty file); with replace, a symlink the image placed there is removed
 * first.  Returns an fd of the target (O_PATH, or O_RDONLY for a file it
 * created).  c, when not NULL, caches the parent directory. */
int root_mount_target(int rootfd, const char *path, int dir, int replace, struct dir_cache *c, struct gerr *err);
/* Open parent directory of path (created if missing) and return its fd;
 * *base points into path at the last component. */
int root_parent(int rootfd, const char *path, const char **base, struct gerr *err);

/* ns/record.c: the record of a named container's run (run.json in its
 * kept directory; docs/containers.md).  P0 writes it once the command has
 * started (record_ready, from what P1 sent on cfg->ready_sock) and removes
 * it when the run ends (record_end).  record_read: the record in dirfd;
 * record_alive: its command and init are the processes it names (pid,
 * start time, parent); record_clean_stale: before a run takes the layer,
 * a record left by a killed run is removed, and refused (EBUSY) while its
 * processes are still there. */
struct record {
	char *name, *image;
	pid_t pid, init_pid, monitor_pid;         /* the command, the container's init, P0 (host pids) */
	unsigned long long pid_start, init_start; /* /proc/PID/stat's start times */
	long long started;                        /* seconds since the epoch */
	int ns_flags;                             /* CLONE_NEW* of the container */
	int unprivileged, one_id, setgroups_denied, nested_user;
	uid_t uid;
	gid_t gid;
	size_t ngroups;
	gid_t groups[USER_GROUPS_MAX];
	char *home, *cwd, *gpus;
	struct strv env, args;
	struct rlimit limits[RLIM_NLIMITS];
	int has_limit[RLIM_NLIMITS];
};
int record_sock_new(int sv[2], struct gerr *err);
int record_ready(const struct run_config *cfg, int sock, pid_t init_pid, struct gerr *err);
void record_end(const struct run_config *cfg);
int record_read(int dirfd, struct record *r, struct gerr *err);
void record_free(struct record *r);
int record_alive(const struct record *r);
int record_clean_stale(int dirfd, const char *name, struct gerr *err);
extern const char *const record_limit_names[RLIM_NLIMITS];
/* The start time and parent of pid from /proc/PID/stat; -1 when it is gone. */
int record_proc_stat(pid_t pid, unsigned long long *start, pid_t *ppid);

/* ns/enter.c: `gpurun exec`, a command in the running container whose
 * kept directory is kept_dirfd, with its first command's isolation.
 * Returns the command's exit status, or -1 with err when it could not be
 * started.  ns_describe_enter: the same as nsenter and setpriv lines
 * (--dry-run), from the record. */
struct exec_request {
	const char *name;
	char **argv;
	const struct strv *env; /* -e K=V, over the container's environment */
	const char *user;       /* -u U[:G], or NULL: the first command's */
	const char *workdir;    /* -w DIR, or NULL: the first command's */
	int tty, interactive;
};
int ns_enter(int kept_dirfd, const struct exec_request *rq, struct gerr *err);
/* A run that holds the layer (running(dirfd) says so) may not have started
 * its command yet: wait for its record.  1 when the record is there (not
 * yet checked: ns_enter does), 0 when the run ended meanwhile, -1 with err
 * after a minute. */
int ns_join_wait(int kept_dirfd, const char *name, int (*running)(int dirfd), struct gerr *err);
int ns_describe_enter(int kept_dirfd, const struct exec_request *rq, struct sbuf *b, struct gerr *err);

/* ns/security.c: what the command gets before exec. */
int sec_drop_caps(int keep_root_caps, struct gerr *err);
/* For the image's ldconfig: no capability at all, switching to uid (its
 * gid and groups already set) on the way when it is not 0. */
int sec_drop_all_caps(uid_t uid, struct gerr *err);
int sec_no_new_privs(struct gerr *err);
int sec_seccomp(struct gerr *err);
int sec_seccomp_fake_ids(struct gerr *err);
/* ",+chown,+dac_override,...": the capabilities the command keeps, for setpriv. */
void sec_describe_caps(struct sbuf *b);

#endif
