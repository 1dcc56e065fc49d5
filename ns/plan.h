/* ns/plan.h — the plan: an ordered list of typed setup operations.
 *
 * gpurun.c turns the command line (and gpu/ its GPU discovery) into a plan;
 * one loop in ns/exec.c carries it out inside the new namespaces, and the
 * same list prints itself as equivalent shell commands for --dry-run and
 * --verbose.  Nothing outside ns/ mounts anything: other modules only add ops.
 *
 * Paths:
 *   - op->src of a bind is a HOST path.  Every bind source is opened (as a
 *     detached clone of its mount, open_tree(2)) before the scratch tmpfs is
 *     mounted, so sources anywhere on the host, /tmp included, stay reachable.
 *   - op->dst is a path INSIDE the container root ("/dev/null"), resolved with
 *     openat2(RESOLVE_IN_ROOT) against the root directory fd, so a symlink in
 *     the image can never send a mount or a file creation onto the host.
 *     A dst starting with "$LIBDIR" is expanded when the op runs, to the
 *     image's library directory: /usr/lib/x86_64-linux-gnu when the image has
 *     /etc/debian_version, else /usr/lib64 (what nvidia-container-cli does).
 */
#ifndef GPURUN_PLAN_H
#define GPURUN_PLAN_H

#include <stdio.h>
#include <sys/types.h>

#include "util.h"

enum op_kind {
	OP_ROOTFS,   /* scratch tmpfs + unpack (tar) or overlay (dir) + self-bind */
	OP_BIND,     /* bind host src onto dst (file or dir, created when missing) */
	OP_TMPFS,    /* fresh tmpfs on dst; src = extra mount data ("mode=0755") or NULL */
	OP_PROC,     /* fresh procfs of the new pid namespace on dst */
	OP_SYSFS,    /* fresh sysfs on dst (only with a new net namespace) */
	OP_DEVPTS,   /* devpts newinstance on dst */
	OP_MKDIR,    /* directory dst (and parents), mode */
	OP_SYMLINK,  /* symlink dst -> src (src is the link text) */
	OP_FILE,     /* regular file dst with contents data/len, mode; replaces a symlink */
	OP_REMOUNT,  /* set flags (OPF_RO/NOSUID/NODEV/NOEXEC) on the mount at dst */
	OP_HOSTNAME, /* sethostname(src) */
	OP_LOOPBACK, /* bring lo up in the new net namespace */
	OP_PIVOT,    /* pivot_root into the root, detach the old root */
	OP_LDCONFIG, /* after the pivot: the image's ldconfig over the dirs in src (':' list) */
};

/* op->flags */
#define OPF_RO 0x0001       /* read-only */
#define OPF_NOSUID 0x0002
#define OPF_NODEV 0x0004
#define OPF_NOEXEC 0x0008
#define OPF_REC 0x0010      /* recursive bind (submounts too) */
#define OPF_OPTIONAL 0x0020 /* missing source: skip; a target the image will not let us
			     * create (EACCES, EROFS): skip with a warning */
#define OPF_DEVICE 0x0040   /* bind: source must be a char device with st_rdev == op->rdev */
#define OPF_DIR 0x0080      /* bind: the source must be a directory */
#define OPF_NOCREATE 0x0100 /* bind: dst must already exist in the image */
#define OPF_REPLACE 0x0200  /* bind/file: an image symlink at dst is replaced by a plain node */

struct op {
	enum op_kind kind;
	unsigned flags;
	char *src;    /* see enum op_kind */
	char *dst;    /* path inside the root, absolute */
	char *data;   /* OP_FILE contents */
	size_t len;   /* OP_FILE length */
	mode_t mode;  /* OP_MKDIR, OP_FILE, OP_TMPFS root mode */
	dev_t rdev;   /* OPF_DEVICE: expected device number */
	char *why;    /* optional comment printed after the shell line ("# why") */
	/* runtime state, owned by ns/exec.c */
	int fd;       /* detached clone of the bind source, -1 */
	int skipped;  /* OPF_OPTIONAL source was missing */
};

struct plan {
	struct op *v;
	size_t n, cap;
};

/* Append an op; strings are copied.  Each returns the new op so callers can
 * set rarer fields (rdev, why). */
struct op *plan_add(struct plan *p, enum op_kind kind, unsigned flags, const char *src,
		    const char *dst);
struct op *plan_bind(struct plan *p, const char *host_src, const char *dst, unsigned flags);
struct op *plan_tmpfs(struct plan *p, const char *dst, const char *data, unsigned flags);
struct op *plan_mkdir(struct plan *p, const char *dst, mode_t mode);
struct op *plan_symlink(struct plan *p, const char *target, const char *dst);
struct op *plan_file(struct plan *p, const char *dst, const void *data, size_t len, mode_t mode);
void plan_why(struct op *op, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void plan_free(struct plan *p);

/* One op as an equivalent shell command (no trailing newline), the way the
 * seed walkthrough would type it: relative paths inside the root after
 * "cd $ROOT". */
void op_describe(const struct op *op, struct sbuf *out);

#endif
