/* ns/ophome.c — which home (ns/ophome.h) each kind of op has: the one
 * table the executor (ns/exec.c) and the printer (ns/opshow.c) read. */
#include "ophome.h"

static const struct op_home *const homes[OP_KIND_COUNT] = {
	[OP_ROOTFS] = &op_home_rootfs,     [OP_BIND] = &op_home_bind,       [OP_TMPFS] = &op_home_fresh,
	[OP_PROC] = &op_home_fresh,        [OP_PROC_RO] = &op_home_proc_ro, [OP_SYSFS] = &op_home_fresh,
	[OP_DEVPTS] = &op_home_fresh,      [OP_MKDIR] = &op_home_mkdir,     [OP_SYMLINK] = &op_home_symlink,
	[OP_FILE] = &op_home_file,         [OP_REMOUNT] = &op_home_remount, [OP_HOSTNAME] = &op_home_hostname,
	[OP_LOOPBACK] = &op_home_loopback, [OP_PIVOT] = &op_home_pivot,     [OP_LDCONFIG] = &op_home_ldconfig,
};

const struct op_home *op_home(enum op_kind kind)
{
	return (unsigned)kind < OP_KIND_COUNT ? homes[kind] : NULL;
}
