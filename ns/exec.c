/* ns/exec.c — the one loop that carries out a plan, inside the new mount
 * namespace (P1, before the pivot and just after it).
 *
 * Order of business:
 *   1. make "/" a slave mount tree: nothing we mount propagates to the host;
 *   2. open every bind source as a detached clone of its mount (open_tree):
 *      the host is still fully visible, and later steps cover /tmp;
 *   3. build the root on a scratch tmpfs that exists only in this mount
 *      namespace (unpack, or overlay a directory image), so a SIGKILL at any
 *      point leaves nothing behind on the host;
 *   4. run the ops; every target is resolved inside the root (ns/path.c) and
 *      every mount is attached through file descriptors (move_mount), never
 *      through a path string the image could redirect.
 * Steps 2 and 3 are ns/rootbuild.c; the mount calls, ns/mountfd.c; each
 * op is run by its kind's home (ns/ophome.h).  The launch's own steps in
 * the same list (OP_LAUNCH) are the monitor's and the command's. */
#include "ns.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <net/if.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../rootfs/rootfs.h"
#include "exec.h"
#include "ophome.h"
#include "steps.h"

static int run_op(struct exec_state *st, struct op *op, struct gerr *err)
{
	char buf[4096];
	const char *dst = op->dst ? image_expand_libdir(st, op->dst, buf, sizeof buf) : NULL;
	const struct op_home *h = op_home(op->kind);
	if (!h)
		return gerr_set(err, EINVAL, "unknown plan op %d", (int)op->kind);
	return h->run(st, op, dst, err);
}

static int plan_run(struct exec_state *st, struct plan *p, struct gerr *err);

int plan_execute(struct exec_state *st, struct gerr *err)
{
	struct plan *p = st->cfg->plan;
	/* A tar image starts decompressing now, while the mounts before the
	 * unpack are made (the one that needs it is the scratch tmpfs). */
	for (size_t i = 0; i < p->n; i++) {
		const struct op *op = &p->v[i];
		if (op->kind == OP_ROOTFS && !(op->flags & (OPF_DIR | OPF_LAYERS))) {
			st->unpack = rootfs_unpack_start(st->cfg->image_fd, st->cfg->image, err);
			if (!st->unpack)
				return -1;
			break;
		}
	}
	int r = plan_run(st, p, err);
	rootfs_unpack_abandon(st->unpack); /* only left when the plan stopped before it */
	st->unpack = NULL;
	return r;
}

static int plan_run(struct exec_state *st, struct plan *p, struct gerr *err)
{
	/* Without this, in root mode every mount below would propagate to the
	 * host's shared mounts. */
	if (mount(NULL, "/", NULL, MS_REC | MS_SLAVE, NULL) < 0)
		return gerr_set(err, errno, "make / a slave mount");
	umask(022);
	if (st->cfg->verbose) { /* the host's mounts, before the scratch covers /tmp */
		ns_capture_mounts(p);
		ns_view(st->cfg, &st->view);
		ns_view_upper(st->cfg);
	}
	if (rootbuild_preopen_sources(p, st->cfg->image_fd, err) < 0)
		return -1;
	struct sbuf line = {0};
	int r = 0;
	for (size_t i = 0; i < p->n && r == 0; i++) {
		const struct op *op = &p->v[i];
		if (op->kind == OP_LAUNCH) /* the monitor's or the command's (ns/steps.c) */
			continue;
		if ((r = step_at(st, i, err)) < 0)
			break;
		if (st->cfg->verbose) {
			/* The pivot's lines name ldconfig's ids: the root is built. */
			if (op->kind == OP_PIVOT && (r = exec_user(st, err)) < 0)
				break;
			sbuf_reset(&line);
			ns_describe_op(st->cfg, &st->view, i, &ns_launch(st->cfg)->user, &line);
			if (line.len)
				ns_trace(line.s);
		}
		if (!(op->kind == OP_BIND && !(op->flags & OPF_DIR)) && op->kind != OP_SYMLINK)
			path_dir_cache_drop(&st->dirs);
		r = run_op(st, &p->v[i], err);
	}
	path_dir_cache_drop(&st->dirs);
	if (r == 0)
		r = step_at(st, p->n, err);
	sbuf_free(&line);
	return r;
}
