/* base/plan/plan.h — the plan: an ordered list of typed setup operations, and
 * the one description of each kind of op that both the executor and the
 * printer read.
 *
 * gpurun.c and ns/layout.c turn the command line into a plan, gpu/ adds the
 * ops of GPU injection, ns/steps.c the launch's steps around them (OP_LAUNCH:
 * the namespaces first, the command's credentials and exec last), so the
 * one list holds the whole launch, each op with the process that takes it
 * (enum plan_actor).  Each process loops over the list for its own: P0
 * for the namespaces (ns/launch.c), P1 for the mounts (ns/exec.c), the
 * command for its steps (ns/command.c); and the same list prints itself
 * as equivalent shell commands for --dry-run and --verbose (a script that
 * runs: ns/show.c).  Nothing
 * outside ns/ mounts anything: other directories only add ops.  The plan lives in base/ (next to the helpers it
 * uses, and nothing else) so that gpu/ can add ops without depending on the
 * namespace code.
 *
 * What the executor does and what the printer shows must not drift apart, so
 * every fact they share is defined once, here: the file system type and the
 * fixed mount data of each kind (op_kinds[]), the flag names and their
 * mount_setattr(2) bits (op_flags[]), the full mount data of an op
 * (op_mount_data), the scratch paths, the paths of /proc bound read-only,
 * the ldconfig arguments and the $LIBDIR rule.  tests/plan_truth.bats checks
 * the printed lines against the mounts the executor really makes.
 *
 * Paths:
 *   - op->src of a bind is a HOST path.  Every bind source is opened (as a
 *     detached clone of its mount, open_tree(2)) before the scratch tmpfs is
 *     mounted, so sources anywhere on the host, /tmp included, stay reachable.
 *   - op->dst is a path INSIDE the container root ("/dev/null"), resolved with
 *     openat2(RESOLVE_IN_ROOT) against the root directory fd, so a symlink in
 *     the image can never send a mount or a file creation onto the host.
 *     A dst starting with "$LIBDIR" is expanded when the op runs, to the
 *     image's library directory (plan_libdir_for: the Debian multiarch
 *     directory when the image has /etc/debian_version, else /usr/lib64, the
 *     rule nvidia-container-cli follows); "$LIBDIR32" likewise, to its
 *     32-bit directory (plan_libdir32_for: compat32 libraries).
 */
#ifndef GPURUN_PLAN_H
#define GPURUN_PLAN_H

#include <stdio.h>
#include <sys/types.h>

#include "../base.h"

enum op_kind {
	OP_ROOTFS,   /* scratch tmpfs + unpack (tar) or overlay (dir) + self-bind */
	OP_BIND,     /* bind host src onto dst (file or dir, created when missing) */
	OP_TMPFS,    /* fresh tmpfs on dst; src = extra mount data ("mode=0755") or NULL */
	OP_PROC,     /* fresh procfs of the new pid namespace on dst */
	OP_PROC_RO,  /* hardening: proc_readonly_paths[] of the procfs at dst, each
		      * bound onto itself read-only */
	OP_SYSFS,    /* fresh sysfs on dst (only with a new net namespace) */
	OP_DEVPTS,   /* devpts newinstance on dst */
	OP_MKDIR,    /* directory dst (and parents), mode */
	OP_SYMLINK,  /* symlink dst -> src (src is the link text) */
	OP_FILE,     /* regular file dst with contents data/len, mode; replaces a symlink */
	OP_REMOUNT,  /* set flags (OPF_RO/NOSUID/NODEV/NOEXEC) on the mount at dst */
	OP_HOSTNAME, /* sethostname(src) */
	OP_LOOPBACK, /* bring lo up in the new net namespace */
	OP_PIVOT,    /* pivot_root into the root, detach the old root */
	OP_LDCONFIG, /* after the pivot: the image's ldconfig over the dirs in src (':' list);
		      * data: the host driver's version when the image's CUDA forward
		      * compatibility libraries (CUDA_COMPAT_DIR) go first if newer, or NULL */
	OP_LAUNCH,   /* a step of the launch around the mounts, taken by its actor (the
		      * namespaces, the id maps, the command's credentials, exec...):
		      * op->step says which (ns/steps.h); no path */
	OP_KIND_COUNT
};

/* op->flags.  The first four are per-mount flags (op_flags[]). */
#define OPF_RO 0x0001 /* read-only */
#define OPF_NOSUID 0x0002
#define OPF_NODEV 0x0004
#define OPF_NOEXEC 0x0008
#define OPF_MOUNT_MASK (OPF_RO | OPF_NOSUID | OPF_NODEV | OPF_NOEXEC)
#define OPF_REC 0x0010 /* bind: recursive (submounts too) */
#define OPF_OPTIONAL \
	0x0020             /* file: skipped when the image lacks its directory.
			     * bind: a missing source is skipped; a target the image will
			     * not let us create (EACCES, EROFS, EPERM) is skipped with a warning */
#define OPF_DEVICE 0x0040  /* bind: source must be a char device with st_rdev == op->rdev */
#define OPF_DIR 0x0080     /* bind, rootfs: the source is a directory (else a file) */
#define OPF_REPLACE 0x0100 /* bind/file: an image symlink at dst is replaced by a plain node */
#define OPF_KEEP_OWNER \
	0x0200            /* rootfs from an archive: keep the entries' owners and
			       * setuid bits (root runs); without it both are dropped */
#define OPF_LAYERS 0x0400 /* rootfs: an overlay of the unpacked layers in op->layers */
#define OPF_IMPORT \
	0x0800           /* rootfs with OPF_LAYERS: unpack the layers first, into
			     * PLAN_RUN_CACHE (--no-cache); op->data2 is IMAGE@NAME:TAG */
#define OPF_TOP 0x2000   /* recursive bind: its flags on the top mount only (an OPF_BELOW remount follows) */
#define OPF_BELOW 0x4000 /* remount: every mount below dst too, the host's below src (hardening) */
#define OPF_PARAMS \
	0x1000 /* file read from the driver (op->src): its params, ModifyDeviceFiles
		* set to 0 (gpu/procfs.c's rule, which the printed plan repeats) */

/* Where a step stands in the printed plan, which reads as the walkthrough:
 * the plan is built in this order, and each section prints under its
 * heading (ns/show.c). */
enum plan_section {
	SEC_ROOT,       /* the root file system */
	SEC_STANDARD,   /* /proc, /dev, /sys, /tmp, /run, the host name */
	SEC_HARDEN,     /* hardening the walkthrough does not have: docker's masks */
	SEC_GPU,        /* the GPU, as nvidia-container-cli configure does it */
	SEC_MOUNTS,     /* the command line's mounts and working directory */
	SEC_PIVOT,      /* pivot_root, then what runs in the new root (ldconfig) */
	SEC_NAMESPACES, /* the launch's first steps: the new namespaces, their id maps */
	SEC_COMMAND,    /* its last: the command's limits, credentials... exec */
};

/* Which process takes a step: the plan records it with each step, the
 * mount ops as much as the launch's own steps (ns/steps.h). */
enum plan_actor {
	ACT_MONITOR,         /* P0, on the host (ns/launch.c) */
	ACT_CONTAINER,       /* P1, the container's pid 1, in the new namespaces (ns/init.c) */
	ACT_IDMAP_HELPER,    /* newuidmap and newgidmap, for subordinate ranges */
	ACT_LDCONFIG_HELPER, /* the image's ldconfig, in a pid namespace of its own (ns/exec.c) */
	ACT_COMMAND,         /* P2, before its exec (ns/command.c) */
	ACT_COUNT
};

struct op {
	enum op_kind kind;
	enum plan_actor actor;     /* ACT_CONTAINER; ACT_LDCONFIG_HELPER for OP_LDCONFIG; OP_LAUNCH: its own */
	enum plan_section section; /* the plan's section when the op was added */
	int step;                  /* OP_LAUNCH: which (enum step_kind, ns/steps.h) */
	int after_go;              /* OP_LAUNCH of ACT_COMMAND: after the go-ahead, else while P1 builds */
	unsigned flags;
	char *src;          /* see enum op_kind; OP_FILE: the host file data was read from, or NULL */
	char *dst;          /* path inside the root, absolute */
	char *data;         /* OP_FILE contents; OP_ROOTFS of a directory: the overlay's mount data */
	size_t len;         /* OP_FILE length */
	mode_t mode;        /* OP_MKDIR, OP_FILE */
	dev_t rdev;         /* OPF_DEVICE: expected device number */
	char *why;          /* optional comment printed after the shell line ("# why") */
	struct strv layers; /* OP_ROOTFS with OPF_LAYERS: host paths, lowest layer first */
	char *image_sel;    /* OPF_IMPORT: the NAME:TAG to pick, or NULL */
	char *kept;         /* OP_ROOTFS with OPF_LAYERS, --name: the kept container's directory on
			     * the host, whose upper/ and work/ take the run's writes (bound on
			     * PLAN_KEPT) instead of the scratch tmpfs's; NULL otherwise */
	/* runtime state, owned by ns/exec.c */
	int fd;         /* detached clone of the bind source, -1 */
	int *layer_fds; /* OPF_LAYERS: detached clones of the layers */
	int skipped;    /* OPF_OPTIONAL source was missing */
	/* OP_BIND, filled by ns_capture_mounts (ns/show.c) before anything is mounted:
	 * the per-mount flags (OPF_RO...) of the host mount holding src, and
	 * for a recursive bind the mounts below src with their own flags,
	 * which the executor's recursive mount_setattr also changes and the
	 * printed plan remounts one by one. */
	unsigned src_flags;
	struct strv subs; /* paths relative to src */
	/* OP_ROOTFS of a directory, unprivileged: the directories the printed
	 * plan mirrors into the overlay's upper layer, "MODE PATH" each (the
	 * executor makes the same: ns/rootbuild.c). */
	struct strv upper_dirs;
	unsigned *sub_flags;
};

struct launch; /* ns/steps.h */
struct plan {
	struct op *v;
	size_t n, cap;
	enum plan_section section; /* of the ops added next */
	/* What the launch's steps (OP_LAUNCH) carry out: the namespaces, the
	 * id maps, the command's limits, credentials, environment...; ns/
	 * decides them once the mount ops are there, and frees them. */
	struct launch *launch;
};

/* ---- the shared description --------------------------------------------- */

/* What every op of a kind has in common. */
struct op_kind_desc {
	const char *fstype; /* file system a fresh mount of this kind creates, or NULL */
	const char *data;   /* fixed mount data, before the op's own (op->src), or NULL */
};
extern const struct op_kind_desc op_kinds[OP_KIND_COUNT];

/* The per-mount flags: the name mount(8) uses and the mount_setattr(2) bit. */
struct op_flag_desc {
	unsigned flag;
	const char *name;
	unsigned long attr; /* MOUNT_ATTR_* */
	unsigned long ms;   /* MS_*, for mount(2) */
};
extern const struct op_flag_desc op_flags[4];
/* OPF_RO... -> MOUNT_ATTR_RDONLY... */
unsigned long op_mount_attrs(unsigned flags);
/* OPF_RO... -> MS_RDONLY... */
unsigned long op_mount_msflags(unsigned flags);

/* Append one item to a comma-separated list of mount data (base/plan/plan.c). */
void op_data_add(struct sbuf *out, const char *data);
/* Append the names of the per-mount flags (op_flags[]) set in flags: "ro,nosuid,...". */
void op_flags_add(struct sbuf *out, unsigned flags);
/* The file system data of a mount op, as given to the kernel ("k=v,flag"):
 * the kind's fixed data, then op->src (tmpfs); for OP_ROOTFS of a directory
 * the overlay's data.  Appended to out; nothing for ops without any. */
void op_mount_data(const struct op *op, struct sbuf *out);

/* The run's scratch: a tmpfs on /tmp that exists only in the new mount
 * namespace (the host's /tmp is untouched).  The printed plan, which cannot
 * open its bind sources first, puts its scratch on a fresh directory
 * instead ("$S", from mktemp), so that sources under /tmp stay in view.  The root is built in it;
 * huge=within_size lets the unpacker's big files (sized first, see
 * rootfs/unpack/place.c) take 2 MiB pages, which a --no-cache launch of Debian
 * makes and frees faster. */
#define PLAN_SCRATCH "/tmp"
#define PLAN_SCRATCH_DATA "mode=0755,huge=within_size"
#define PLAN_SCRATCH_FLAGS (OPF_NOSUID | OPF_NODEV)
#define PLAN_ROOT PLAN_SCRATCH "/root"
#define PLAN_LOWER PLAN_SCRATCH "/lower"
#define PLAN_UPPER PLAN_SCRATCH "/upper"
#define PLAN_WORK PLAN_SCRATCH "/work"
#define PLAN_LAYERS PLAN_SCRATCH "/layers"   /* layer N is bound on PLAN_LAYERS/N */
#define PLAN_KEPT PLAN_SCRATCH "/kept"       /* --name: the kept container's directory, bound */
#define PLAN_RUN_CACHE PLAN_SCRATCH "/cache" /* --no-cache: the image's layers, unpacked for this run */

/* What of a fresh procfs still reaches host-wide kernel knobs (docker's
 * read-only paths): OP_PROC_RO binds each onto itself with these flags. */
extern const char *const proc_readonly_paths[];
extern const size_t proc_nreadonly;
#define PROC_READONLY_FLAGS (OPF_RO | OPF_NOSUID | OPF_NODEV | OPF_NOEXEC)

/* OP_LDCONFIG: the image's ldconfig, the first of these that exists, run
 * with these arguments and then the op's directories. */
extern const char *const ldconfig_paths[];
extern const size_t ldconfig_npaths;
extern const char *const ldconfig_args[];
extern const size_t ldconfig_nargs;
/* It runs as the command's user, who may not be able to write the image's
 * /etc: its cache (its -C, after these arguments) goes into a directory
 * made for it in the root, LDCONFIG_SCRATCH and six random characters,
 * that user's and 0700; once ldconfig and all it started are gone, root
 * puts the file in place in the image's LDCONFIG_CACHE_DIR (a regular
 * file of that user's, LDCONFIG_CACHE_MAX bytes at most) and removes the
 * directory (the plan's after_pivot, ns/plan.sh, does the same). */
#define LDCONFIG_SCRATCH ".gpurun-ldconfig."
#define LDCONFIG_CACHE_DIR "/etc"
#define LDCONFIG_CACHE_NAME "ld.so.cache"
#define LDCONFIG_CACHE_MAX (16L << 20)

/* CUDA forward compatibility (the toolkit's default, "ldconfig" mode): an
 * image newer than the driver may ship the newer user-mode driver here
 * (the cuda-compat package).  When its libcuda.so.<M>.<m>... has a major M
 * above the host driver's, OP_LDCONFIG puts this directory first on
 * ldconfig's command line, so its libcuda.so.1 is the one the cache lists
 * first and the loader takes. */
#define CUDA_COMPAT_DIR "/usr/local/cuda/compat"
#define CUDA_COMPAT_VAR "$CUDA_COMPAT"
/* The highest major of the libcuda.so.<M>.* files in dir (as the loader
 * will see it: call after the pivot), 0 when there is none. */
unsigned long plan_compat_major(const char *dir);

/* $LIBDIR */
#define LIBDIR_VAR "$LIBDIR"
#define LIBDIR_MARKER "/etc/debian_version"
#define LIBDIR_OTHER "/usr/lib64"
/* The Debian multiarch library directory of a machine ("aarch64" ->
 * "/usr/lib/aarch64-linux-gnu"), or NULL for one gpurun does not know. */
const char *plan_libdir_debian(const char *machine);
/* The library directory of an image of machine, given whether it has
 * LIBDIR_MARKER (NULL for an unknown machine with the marker). */
const char *plan_libdir_for_machine(const char *machine, int has_marker);
/* The same for HOST_MACHINE (/usr/lib64 on a machine gpurun does not know). */
const char *plan_libdir_for(int has_marker);
/* path with a leading "$LIBDIR" replaced by libdir, into buf; path itself
 * when it has none (or has "$LIBDIR32"). */
const char *plan_expand_libdir(const char *path, const char *libdir, char *buf, size_t cap);

/* $LIBDIR32: where 32-bit driver libraries go (compat32), nvidia-container-cli's
 * rule: the Debian multiarch directory of the 32-bit kin of the machine
 * (/usr/lib/i386-linux-gnu) when the image has LIBDIR_MARKER; else
 * /usr/lib32 when the image has it; else /usr/lib, unless that is the same
 * directory as /usr/lib64 (a merged lib), where it is /usr/lib32 after all. */
#define LIBDIR32_VAR "$LIBDIR32"
#define LIBDIR32_OTHER "/usr/lib32"
#define LIBDIR32_PLAIN "/usr/lib"
/* The Debian 32-bit multiarch directory of a machine, or NULL. */
const char *plan_libdir32_debian(const char *machine);
/* The same, as the rule above gives it for HOST_MACHINE. */
const char *plan_libdir32_for(int has_marker, int has_lib32, int lib_is_lib64);
/* path with a leading "$LIBDIR32" replaced by libdir32, into buf; else path. */
const char *plan_expand_libdir32(const char *path, const char *libdir32, char *buf, size_t cap);

/* ---- building ----------------------------------------------------------- */

/* Append an op; strings are copied.  Each returns the new op so callers can
 * set rarer fields (rdev, why). */
struct op *plan_add(struct plan *p, enum op_kind kind, unsigned flags, const char *src, const char *dst);
struct op *plan_bind(struct plan *p, const char *host_src, const char *dst, unsigned flags);
struct op *plan_tmpfs(struct plan *p, const char *dst, const char *data, unsigned flags);
struct op *plan_mkdir(struct plan *p, const char *dst, mode_t mode);
struct op *plan_symlink(struct plan *p, const char *target, const char *dst);
struct op *plan_file(struct plan *p, const char *dst, const void *data, size_t len, mode_t mode);
void plan_why(struct op *op, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Whether op's fresh file system of this type is read-only itself (a
 * read-only tmpfs), not only its mount: the executor and the printer ask. */
int plan_fresh_sb_ro(const struct op *op, const char *type);
/* A step of the launch (OP_LAUNCH), at index at (p->n: the end). */
struct op *plan_add_step(struct plan *p, size_t at, int step, enum plan_actor actor, int after_go);
/* The plan's first op of that kind, or NULL (as strchr(3), the plan's own
 * op, not const). */
struct op *plan_find(const struct plan *p, enum op_kind kind);
/* The root file system's op (OP_ROOTFS, before any mount), or NULL. */
struct op *plan_rootfs(const struct plan *p);
void plan_free(struct plan *p);

/* ---- printing ----------------------------------------------------------- */

/* What the printed lines know of the launch beyond the op itself. */
struct plan_view {
	const struct plan *plan; /* the whole plan (a file's body is named in it), or NULL */
	const char *libdir;      /* "$LIBDIR" as printed; NULL: the shell variable */
	const char *libdir32;    /* "$LIBDIR32" likewise */
	const char *driver_root; /* bind sources under it print as "$D"/...; NULL: none */
};
#define PLAN_DRIVER_VAR "D"

/* A here-document delimiter "base" or "base_N" that is no line of any
 * OP_FILE's contents in p. */
void plan_delimiter(const char *base, const struct plan *p, char *out, size_t cap);

/* Whether a path of a fresh procfs exists on this kernel (the executor
 * skips the read-only bind of one that does not). */
int proc_path_present(const char *name);

/* The words of a printed step (each kind's line: ns/ophome.h).  path with
 * $LIBDIR32 and $LIBDIR replaced where the view knows them (into buf), else
 * path itself; */
const char *plan_view_expand(const struct plan_view *v, const char *path, char *buf, size_t cap);
/* a path that may start with $LIBDIR or $LIBDIR32, which stay variables;
 * the rest quoted; */
void plan_libdir_word(const struct plan_view *v, struct sbuf *b, const char *path);
/* a path inside the root, relative to it as after `cd $ROOT`; */
void plan_rel(const struct plan_view *v, struct sbuf *b, const char *dst);
/* " -o FLAGS,DATA" as mount(8) takes them; */
void plan_mount_opts(struct sbuf *b, unsigned flags, const char *data);
/* the same as one word for the plan's functions ('' for none); */
void plan_opts_word(struct sbuf *b, unsigned flags, const char *data);
/* a bind source, "$D" and the rest under the driver root; */
void plan_src_word(const struct plan_view *v, struct sbuf *b, const char *src);
/* "   # WHY", the op's reason, made harmless. */
void plan_comment(struct sbuf *b, const struct op *op);

#endif
