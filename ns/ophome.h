/* ns/ophome.h — the one home of each kind of op: how P1 carries it out
 * and how the plan prints it, side by side in the file of its kind
 * (ns/rootbuild.c, ns/op_fresh.c, ns/op_bind.c, ns/op_node.c, ns/op_net.c,
 * ns/op_pivot.c); ns/ophome.c lists them, ns/opshow.c prints the lines
 * that several ops of one form share. */
#ifndef GPURUN_NS_OPHOME_H
#define GPURUN_NS_OPHOME_H

#include "exec.h"

struct op_home {
	/* P1 carries op out; dst is its target with $LIBDIR expanded. */
	int (*run)(struct exec_state *st, struct op *op, const char *dst, struct gerr *err);
	/* Its step in the printed plan, as typed by hand (no newline at the end). */
	void (*describe)(const struct plan_view *v, const struct op *op, struct sbuf *b);
	int own_comment; /* describe prints op->why itself, where it belongs */
};

/* The home of kind, or NULL for a kind that has none. */
const struct op_home *op_home(enum op_kind kind);

extern const struct op_home op_home_rootfs, op_home_fresh, op_home_proc_ro, op_home_bind, op_home_remount,
	op_home_mkdir, op_home_symlink, op_home_file, op_home_hostname, op_home_loopback, op_home_pivot,
	op_home_ldconfig;

#endif
