/* ns/steps.h — private to ns/: the launch's steps around the mounts (the
 * new namespaces and their id maps, then what the command takes before its
 * exec), each decided once when the plan is built (or, for --user's ids,
 * once the image's /etc/passwd is read), each with the process that takes
 * it.  They are ops of the plan's one list (OP_LAUNCH); the monitor
 * (ns/launch.c), the command (ns/command.c) and the printer (ns/show.c)
 * each loop over it, and each kind's run and print stand side by side in
 * ns/steps.c's table. */
#ifndef GPURUN_STEPS_H
#define GPURUN_STEPS_H

#include <limits.h>
#include <signal.h>

#include "ns.h"

enum step_kind {
	STEP_NAMESPACES, /* P0 clones P1 into them (the clone itself is ns_run's) */
	STEP_IDMAP,      /* the user namespace's id maps */
	STEP_RLIMITS,    /* --ulimit: before the capabilities go */
	STEP_ENV,        /* the environment, HOME included */
	STEP_WORKDIR,    /* chdir, checked to be inside the root */
	STEP_TERMINAL,   /* the caller's foreground job, or a session of its own; -t's pty */
	STEP_USERNS,     /* one id mapped, --user: a nested user namespace of the command's own */
	STEP_CAPS,       /* the bounding set kept: docker's default capabilities */
	STEP_NO_NEW_PRIVS,
	STEP_FDS,     /* every fd above 2 close-on-exec */
	STEP_SECCOMP, /* the filter (with one id mapped, its fake ids too) */
	STEP_IDS,     /* groups, gid, uid: --user's */
	STEP_EXEC,
	STEP_KIND_COUNT
};

/* The decisions the steps carry out. */
struct launch {
	int clone_flags; /* CLONE_NEW* */
	int idmap;       /* STEP_IDMAP: LAUNCH_MAP_* */
	uid_t host_uid;
	gid_t host_gid;
	const struct subids *subids;
	const struct ulimit *ulimits;
	size_t nulimits;
	int fake_ids;
	char **env; /* without HOME's entry */
	const char *workdir;
	char **argv;
	const char *notfound_hint;
	/* --user, set by launch_set_user once the image's passwd is read */
	int user_known;
	struct ns_user user;
	int takes_groups;    /* ns_takes_groups */
	char *home_entry;    /* "HOME=..." the command gets, or NULL: its environment has one */
	char home[PATH_MAX]; /* --user's home, as the go-ahead carries it */
};
#define LAUNCH_MAP_ONE 1    /* the caller mapped to root, written by P0 */
#define LAUNCH_MAP_RANGES 2 /* subordinate ranges, by newuidmap and newgidmap */

/* The launch of cfg: its decisions into l, its steps into p (OP_LAUNCH
 * ops: the namespaces first, the command's last).  early: the command
 * sheds its privileges before the go-ahead (all but a --user with one id
 * mapped). */
void launch_build(struct plan *p, struct launch *l, const struct run_config *cfg, int early);
/* --user's ids, groups and home (NULL or "": none in the image): the
 * credentials step and HOME are decided here, for the command and the
 * printed plan alike. */
void launch_set_user(struct launch *l, const struct run_config *cfg, const struct ns_user *u, const char *home);
/* --user looked up, the one place it is: its ids, home and (where
 * ns_takes_groups says so) groups, from passwd_root's /etc/passwd and
 * group_root's /etc/group, the keep-id home where the image gives none
 * (exists(arg, path): the container has that directory), into l by
 * launch_set_user.  P1 looks in the built root, before the image's
 * ldconfig runs (exec_user); the printer, in the image's layers that hold
 * each file (ns/show.c). */
int launch_lookup_user(struct launch *l, const struct run_config *cfg, int passwd_root, int group_root,
		       int (*exists)(const void *arg, const char *path), const void *arg, struct gerr *err);
void launch_free(struct launch *l);
/* The launch of cfg's plan (ns_plan_launch made it). */
struct launch *ns_launch(const struct run_config *cfg);

/* What a step's run needs of the process that takes it. */
struct step_ctx {
	const struct run_config *cfg;
	const struct plan *plan; /* whose steps (OP_LAUNCH) are taken */
	struct launch *l;        /* the decisions they carry out */
	pid_t pid;               /* ACT_MONITOR, ACT_IDMAP_HELPER: P1 */
	int err_fd;              /* ACT_COMMAND: where its failure goes */
	int slave;               /* -t: the pty, or -1 */
	char **envp;             /* STEP_ENV's, for STEP_EXEC */
	struct gerr *err;        /* ACT_MONITOR, ACT_IDMAP_HELPER */
};

/* What the printed steps build: lines before the command's, the nested
 * user namespace's line, and the command's run_as words. */
struct step_print {
	struct sbuf lines;
	struct sbuf map;
	struct sbuf ids;   /* setpriv's options, with a leading space */
	struct strv words; /* the environment */
	const char *workdir;
	char **argv;
};

/* Run every step of ctx->plan that actor takes, in the list's order
 * (ACT_COMMAND: those before the go-ahead, or after it): -1 with ctx->err
 * for P0's, a setup_fail for the command's. */
int launch_run(struct step_ctx *ctx, enum plan_actor actor, int after_go);
/* Print every step of plan that actor takes (ACT_COMMAND: all of them)
 * into p, in the list's order; the head's go straight into b. */
void launch_describe(const struct plan *plan, enum plan_actor actor, struct sbuf *b, struct step_print *p);

#endif
