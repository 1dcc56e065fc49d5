/* ns/ns.h — what ns/ offers gpurun.c: carry out a plan inside fresh
 * namespaces (ns/launch.c: the host-side monitor, P0; ns/init.c: pid 1 and
 * the command), print it for --dry-run, and the in-root path helpers the
 * plan executor uses.
 *
 * Process model (DESIGN.md §2): P0 stays on the host and relays signals;
 * P1 is cloned into the new namespaces, runs the plan, pivots, and becomes a
 * small init; P2 is the command.  Setup errors travel from P1 to P0 over a
 * pipe and are printed by P0 as one line. */
#ifndef GPURUN_NS_H
#define GPURUN_NS_H

#include <stddef.h>
#include <sys/types.h>

#include "plan.h"
#include "util.h"

struct run_config {
	const char *image;     /* as given on the command line */
	int image_fd;          /* the archive, opened (and probed) by gpurun.c; -1 for a directory */
	int image_is_dir;
	int read_only;
	int unprivileged;      /* add a user namespace mapping the caller to root */
	uid_t host_uid;
	gid_t host_gid;
	int new_uts;           /* --hostname */
	int new_net;           /* --net none */
	int dry_run, verbose;
	int tty_foreground;    /* stdin is a terminal and gpurun its foreground job (set by ns_run) */
	const char *user_spec; /* --user, NULL for the default (0:0) */
	const char *workdir;   /* NULL: "/" */
	char **env;            /* "K=V" list, NULL-terminated; HOME added at run time if unset */
	char **argv;           /* the command, NULL-terminated */
	struct plan *plan;
};

/* Run it: returns the exit status gpurun should exit with. */
int ns_run(struct run_config *cfg);

/* The last step as a shell line: "exec chroot --userspec U:G / env -i ... CMD". */
void ns_describe_exec(const struct run_config *cfg, const char *userspec, struct sbuf *b);

/* --dry-run: print the whole plan as equivalent shell commands. */
void ns_print_plan(const struct run_config *cfg, FILE *out);

/* ns/path.c: paths inside the container root.  Every lookup goes through
 * openat2(RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS) from the root fd, so ".."
 * and absolute symlinks planted in the image stay inside the root. */
int root_open(int rootfd, const char *path, int flags, struct gerr *err);
/* mkdir -p inside the root; returns an O_PATH fd of the directory. */
int root_mkdir_p(int rootfd, const char *path, mode_t mode, struct gerr *err);
/* Make sure a mount target exists at path (a directory when dir, else an
 * empty file); with replace, a symlink the image placed there is removed
 * first.  Returns an O_PATH fd of the target. */
int root_mount_target(int rootfd, const char *path, int dir, int replace, struct gerr *err);
/* Open parent directory of path (created if missing) and return its fd;
 * *base points into path at the last component. */
int root_parent(int rootfd, const char *path, const char **base, struct gerr *err);

/* ns/security.c: what the command gets before exec. */
int sec_drop_caps(int keep_root_caps, struct gerr *err);
int sec_no_new_privs(struct gerr *err);
int sec_seccomp(struct gerr *err);

#endif
