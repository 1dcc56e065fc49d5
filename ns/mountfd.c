/* ns/mountfd.c — mounts made and attached through file descriptors (the
 * new mount API): a mount's attributes set on its fd, a detached tree
 * moved onto a target fd, and fresh file system instances (tmpfs, proc,
 * sysfs, devpts, the overlay) built with the fs-context calls, so that no
 * mount ever follows a path string the image could redirect. */
#include "ns.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "exec.h"

int mountfd_set_attrs(int fd, unsigned flags, int recursive, const char *what, struct gerr *err)
{
	struct mount_attr attr = {.attr_set = op_mount_attrs(flags)};
	if (!attr.attr_set)
		return 0;
	unsigned at = AT_EMPTY_PATH | (recursive ? AT_RECURSIVE : 0);
	if (mount_setattr(fd, "", at, &attr, sizeof attr) < 0)
		return gerr_set(err, errno, "set mount flags on %s", what);
	return 0;
}

int mountfd_attach(int tree, int target, const char *what, struct gerr *err)
{
	if (move_mount(tree, "", target, "", MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) < 0)
		return gerr_set(err, errno, "mount on %s", what);
	return 0;
}

/* The kernel refuses a fresh procfs (at create or at fsmount, depending on
 * the version) where parts of the current /proc are covered by locked
 * mounts: gpurun runs inside a container that masks /proc. */
static int proc_hint(int r, const char *type, struct gerr *err)
{
	if (err->errnum == EPERM && !strcmp(type, "proc"))
		gerr_hint(err, "procfs cannot be mounted here: a parent container masks parts of /proc "
			       "(run it with an unmasked /proc, e.g. --security-opt unmask=/proc); "
			       "`gpurun doctor` checks this");
	return r;
}

/* A fresh file system instance built with the fs-context API and attached
 * to target.  data is "k=v,flag,..." (op_mount_data); source is what
 * mountinfo shows in place of "none". */
int mountfd_fresh(const char *type, const char *source, const char *data, unsigned flags, int target, const char *what,
		  struct gerr *err)
{
	_cleanup_fd_ int fs = fsopen(type, FSOPEN_CLOEXEC);
	if (fs < 0)
		return gerr_set(err, errno, "fsopen %s for %s", type, what);
	if (fsconfig(fs, FSCONFIG_SET_STRING, "source", source, 0) < 0)
		return gerr_set(err, errno, "%s source for %s", type, what);
	_cleanup_free_ char *copy = xstrdup(data ? data : "");
	for (char *save = NULL, *kv = strtok_r(copy, ",", &save); kv; kv = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(kv, '=');
		int r;
		if (eq) {
			*eq = '\0';
			r = fsconfig(fs, FSCONFIG_SET_STRING, kv, eq + 1, 0);
		} else {
			r = fsconfig(fs, FSCONFIG_SET_FLAG, kv, NULL, 0);
		}
		/* huge= is refused by a kernel built without transparent huge
		 * pages; the scratch tmpfs asks for it only to be faster. */
		if (r < 0 && errno == EINVAL && !strcmp(kv, "huge"))
			continue;
		if (r < 0)
			return gerr_set(err, errno, "%s option %s for %s", type, kv, what);
	}
	if (fsconfig(fs, FSCONFIG_CMD_CREATE, NULL, NULL, 0) < 0)
		return proc_hint(gerr_set(err, errno, "mount %s on %s", type, what), type, err);
	_cleanup_fd_ int mnt = fsmount(fs, FSMOUNT_CLOEXEC, (unsigned)op_mount_attrs(flags));
	if (mnt < 0)
		return proc_hint(gerr_set(err, errno, "fsmount %s for %s", type, what), type, err);
	return mountfd_attach(mnt, target, what, err);
}

/* A fresh mount of op's kind (tmpfs, proc, sysfs, devpts) or the overlay of
 * a directory image, with the data the printer shows. */
int mountfd_op(const struct op *op, const char *type, int target, const char *what, struct gerr *err)
{
	struct sbuf data = {0};
	op_mount_data(op, &data);
	if (plan_fresh_sb_ro(op, type))
		op_data_add(&data, "ro");
	int r = mountfd_fresh(type, type, data.s, op->flags, target, what, err);
	sbuf_free(&data);
	return r;
}
