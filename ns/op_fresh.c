/* ns/op_fresh.c — the fresh file systems of a plan (tmpfs, proc, sysfs,
 * devpts) and docker's read-only paths of /proc: how P1 mounts each, and
 * the step the plan prints for it. */
#include "ophome.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <unistd.h>

static int run_fresh(struct exec_state *st, struct op *op, const char *dst, struct gerr *err)
{
	_cleanup_fd_ int target = root_mount_target(st->rootfd, dst, 1, 0, NULL, err);
	if (target < 0 || mountfd_op(op, op_kinds[op->kind].fstype, target, dst, err) < 0)
		return -1;
	return 0;
}

/* A fresh file system: "make_dir DST; mount -t TYPE -o FLAGS,DATA TYPE DST";
 * within /proc, "inroot DST;" (nothing can be made there). */
static void describe_fresh(const struct plan_view *v, const struct op *op, struct sbuf *b)
{
	const char *type = op_kinds[op->kind].fstype;
	struct sbuf data = {0};
	op_mount_data(op, &data);
	int in_proc = op->kind == OP_PROC || !strncmp(op->dst, "/proc/", 6);
	int sb_ro = plan_fresh_sb_ro(op, type);
	sbuf_puts(b, in_proc ? "inroot " : "make_dir ");
	plan_rel(v, b, op->dst);
	sbuf_printf(b, "; mount -t %s", type);
	plan_mount_opts(b, sb_ro ? op->flags : op->flags & ~OPF_RO, data.s);
	sbuf_printf(b, " %s ", type);
	plan_rel(v, b, op->dst);
	sbuf_free(&data);
	if ((op->flags & OPF_RO) && !sb_ro) {
		sbuf_puts(b, "; remount ");
		plan_opts_word(b, op->flags & OPF_MOUNT_MASK, NULL);
		sbuf_puts(b, " ");
		plan_rel(v, b, op->dst);
	}
}

const struct op_home op_home_fresh = {run_fresh, describe_fresh, 0};

/* The fresh procfs still reaches host-wide kernel knobs through a few
 * paths: each is bound onto itself read-only (recursively: binfmt_misc
 * may be mounted under sys/fs). */
static int proc_readonly(int procfd, struct gerr *err)
{
	for (size_t i = 0; i < proc_nreadonly; i++) {
		const char *name = proc_readonly_paths[i];
		_cleanup_fd_ int t = open_tree(procfd, name, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE);
		if (t < 0) {
			if (errno == ENOENT)
				continue;
			return gerr_set(err, errno, "bind /proc/%s", name);
		}
		if (mountfd_set_attrs(t, PROC_READONLY_FLAGS, 1, name, err) < 0)
			return -1;
		if (move_mount(t, "", procfd, name, MOVE_MOUNT_F_EMPTY_PATH) < 0)
			return gerr_set(err, errno, "mount /proc/%s read-only", name);
	}
	return 0;
}

static int run_proc_ro(struct exec_state *st, struct op *op, const char *dst, struct gerr *err)
{
	(void)op;
	_cleanup_fd_ int procfd = root_open(st->rootfd, dst, O_PATH | O_DIRECTORY, err);
	return procfd < 0 ? -1 : proc_readonly(procfd, err);
}

/* docker's read-only paths of /proc, each bound read-only onto itself,
 * one line. */
static void describe_proc_ro(const struct plan_view *v, const struct op *op, struct sbuf *b)
{
	for (size_t i = 0, n = 0; i < proc_nreadonly; i++) {
		if (!proc_path_present(proc_readonly_paths[i]))
			continue; /* the executor finds it missing and skips it */
		_cleanup_free_ char *sub = xasprintf("%s/%s", op->dst, proc_readonly_paths[i]);
		if (!n++) {
			sbuf_puts(b, "rbind_self ");
			plan_opts_word(b, PROC_READONLY_FLAGS, NULL);
		}
		sbuf_puts(b, " ");
		plan_rel(v, b, sub);
	}
}

const struct op_home op_home_proc_ro = {run_proc_ro, describe_proc_ro, 0};
