/* ns/op_bind.c — binds of host paths into the root, and remounts of
 * what is mounted there: how P1 attaches and flags each (through fds,
 * ns/mountfd.c), and the step the plan prints for it. */
#include "ophome.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <unistd.h>

static int do_bind(struct exec_state *st, struct op *op, const char *dst, struct gerr *err)
{
	if (op->skipped)
		return 0;
	_cleanup_fd_ int target =
		root_mount_target(st->rootfd, dst, !!(op->flags & OPF_DIR), !!(op->flags & OPF_REPLACE),
				  (op->flags & OPF_DIR) ? NULL : &st->dirs, err);
	if (target < 0 && (op->flags & OPF_OPTIONAL) &&
	    (err->errnum == EACCES || err->errnum == EROFS || err->errnum == EPERM)) {
		warnx_("%s; %s not bound", err->msg, op->src);
		gerr_clear(err);
		return 0;
	}
	if (target < 0)
		return -1;
	if (mountfd_set_attrs(op->fd, op->flags, (op->flags & OPF_REC) && !(op->flags & OPF_TOP), dst, err) < 0)
		return -1;
	if (mountfd_attach(op->fd, target, dst, err) < 0)
		return -1;
	close(op->fd);
	op->fd = -1;
	return 0;
}

/* util-linux 2.38 sets -o on the top mount only; the executor sets the
 * flags on every mount below it too (CVE-2022-0492: a writable cgroup v1
 * tree under a read-only /sys): "remount OPTS SUB...", a line for each
 * set of flags, the first after a newline where asked. */
static void describe_below(const struct plan_view *v, const struct op *op, int newline, struct sbuf *b)
{
	size_t line = 0;
	unsigned last = ~0u;
	for (size_t i = 0; i < op->subs.n; i++) {
		unsigned f = (op->flags & OPF_MOUNT_MASK) | op->sub_flags[i];
		struct sbuf one = {0};
		_cleanup_free_ char *sub = xasprintf("%s/%s", op->dst, op->subs.v[i]);
		plan_rel(v, &one, sub);
		if (f != last || b->len - line + one.len > 150) {
			if (newline || i)
				sbuf_puts(b, "\n");
			line = b->len;
			sbuf_puts(b, "remount ");
			plan_opts_word(b, f, NULL);
			last = f;
		}
		sbuf_puts(b, " ");
		sbuf_puts(b, one.s);
		sbuf_free(&one);
	}
}

static void describe_bind(const struct plan_view *v, const struct op *op, struct sbuf *b)
{
	if (op->skipped) /* an optional source missing on this host: no step */
		return;
	/* mount(8) remounts a bind with exactly the flags it is given: the
	 * source mount's own flags are kept as the executor's
	 * mount_setattr(2) keeps them. */
	unsigned fl = (op->flags & OPF_MOUNT_MASK) | op->src_flags;
	if (op->flags & OPF_DIR)
		sbuf_puts(b, (op->flags & OPF_REC) ? "rbind_dir " : "bind_dir ");
	else if (op->flags & OPF_REC) /* a file has no mounts below it, but gpurun's clone is recursive */
		sbuf_puts(b, "rbind_file ");
	else
		sbuf_puts(b, (op->flags & OPF_REPLACE) ? "bind_over " : "bind_file ");
	plan_opts_word(b, fl, NULL);
	sbuf_puts(b, " ");
	plan_src_word(v, b, op->src);
	sbuf_puts(b, " ");
	plan_rel(v, b, op->dst);
	plan_comment(b, op); /* on its first line, before the mounts below it */
	if ((op->flags & OPF_REC) && (op->flags & OPF_MOUNT_MASK) && !(op->flags & OPF_TOP))
		describe_below(v, op, 1, b);
}

const struct op_home op_home_bind = {do_bind, describe_bind, 1};

static int run_remount(struct exec_state *st, struct op *op, const char *dst, struct gerr *err)
{
	_cleanup_fd_ int target = root_open(st->rootfd, dst, O_PATH, err);
	if (target < 0)
		return -1;
	return mountfd_set_attrs(target, op->flags, !!(op->flags & OPF_BELOW), dst, err);
}

static void describe_remount(const struct plan_view *v, const struct op *op, struct sbuf *b)
{
	if (op->flags & OPF_BELOW) {
		describe_below(v, op, 0, b);
		return;
	}
	sbuf_puts(b, "remount ");
	plan_opts_word(b, op->flags, NULL);
	sbuf_puts(b, " ");
	plan_rel(v, b, op->dst);
}

const struct op_home op_home_remount = {run_remount, describe_remount, 0};
