/* base/plan/plan.c — building the plan, and the shared description of each kind
 * of op (file system types, flag names and bits, mount data, the library
 * directory rules) that the executor (ns/exec.c) and the printer
 * (base/plan/planshow.c) both read.  This file has no side effects. */
#include "plan.h"

#include <dirent.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

const struct op_kind_desc op_kinds[OP_KIND_COUNT] = {
	[OP_TMPFS] = {"tmpfs", NULL},
	[OP_PROC] = {"proc", NULL},
	[OP_SYSFS] = {"sysfs", NULL},
	/* newinstance: our own pty namespace, not the host's ptys; ptmxmode:
	 * /dev/ptmx links to pts/ptmx, which must be usable by everyone. */
	[OP_DEVPTS] = {"devpts", "newinstance,ptmxmode=0666,mode=0620"},
};

const struct op_flag_desc op_flags[4] = {
	{OPF_RO, "ro", MOUNT_ATTR_RDONLY, MS_RDONLY},
	{OPF_NOSUID, "nosuid", MOUNT_ATTR_NOSUID, MS_NOSUID},
	{OPF_NODEV, "nodev", MOUNT_ATTR_NODEV, MS_NODEV},
	{OPF_NOEXEC, "noexec", MOUNT_ATTR_NOEXEC, MS_NOEXEC},
};

/* The per-mount flags of an op in one of the kernel's two encodings. */
static unsigned long mount_bits(unsigned flags, int ms)
{
	unsigned long bits = 0;
	for (size_t i = 0; i < COUNT_OF(op_flags); i++)
		if (flags & op_flags[i].flag)
			bits |= ms ? op_flags[i].ms : op_flags[i].attr;
	return bits;
}

unsigned long op_mount_msflags(unsigned flags)
{
	return mount_bits(flags, 1);
}

unsigned long op_mount_attrs(unsigned flags)
{
	return mount_bits(flags, 0);
}

void op_data_add(struct sbuf *out, const char *data)
{
	if (!data || !*data)
		return;
	if (out->len)
		sbuf_puts(out, ",");
	sbuf_puts(out, data);
}

void op_flags_add(struct sbuf *out, unsigned flags)
{
	for (size_t i = 0; i < COUNT_OF(op_flags); i++)
		if (flags & op_flags[i].flag)
			op_data_add(out, op_flags[i].name);
}

void op_mount_data(const struct op *op, struct sbuf *out)
{
	if (op->kind == OP_ROOTFS) {
		op_data_add(out, op->data);
		return;
	}
	if (!op_kinds[op->kind].fstype)
		return;
	op_data_add(out, op_kinds[op->kind].data);
	op_data_add(out, op->src);
}

const char *const proc_readonly_paths[] = {"sys", "sysrq-trigger", "irq", "bus", "fs"};
const size_t proc_nreadonly = COUNT_OF(proc_readonly_paths);

/* ldconfig.real first: on Ubuntu /sbin/ldconfig is a shell wrapper. */
const char *const ldconfig_paths[] = {"/sbin/ldconfig.real", "/sbin/ldconfig", "/usr/sbin/ldconfig"};
const size_t ldconfig_npaths = COUNT_OF(ldconfig_paths);
const char *const ldconfig_args[] = {"-f", "/etc/ld.so.conf", "-C"};
const size_t ldconfig_nargs = COUNT_OF(ldconfig_args);

/* nvidia-container-cli's rule, per architecture: Debian-like images keep
 * libraries in the multiarch directory, every other distro in /usr/lib64. */
static const struct {
	const char *machine;
	const char *debian;
} libdirs[] = {
	{"x86_64", "/usr/lib/x86_64-linux-gnu"},
	{"aarch64", "/usr/lib/aarch64-linux-gnu"},
	{"ppc64le", "/usr/lib/powerpc64le-linux-gnu"},
};

unsigned long plan_compat_major(const char *dir)
{
	DIR *d = opendir(dir);
	if (!d)
		return 0;
	unsigned long best = 0;
	struct dirent *de;
	while ((de = readdir(d))) {
		static const char prefix[] = "libcuda.so.";
		if (strncmp(de->d_name, prefix, sizeof prefix - 1))
			continue;
		/* libcuda.so.<M>.<m>...: the file, not the libcuda.so.1 link. */
		const char *v = de->d_name + sizeof prefix - 1, *dot = strchr(v, '.');
		unsigned long major;
		if (dot && dot[1] && parse_decimal(v, (size_t)(dot - v), 1000000, &major) == 0 && major > best)
			best = major;
	}
	closedir(d);
	return best;
}

const char *plan_libdir_debian(const char *machine)
{
	for (size_t i = 0; i < COUNT_OF(libdirs); i++)
		if (!strcmp(machine, libdirs[i].machine))
			return libdirs[i].debian;
	return NULL;
}

const char *plan_libdir_for_machine(const char *machine, int has_marker)
{
	return has_marker ? plan_libdir_debian(machine) : LIBDIR_OTHER;
}

const char *plan_libdir_for(int has_marker)
{
	const char *d = plan_libdir_for_machine(HOST_MACHINE, has_marker);
	return d ? d : LIBDIR_OTHER;
}

const char *plan_expand_libdir(const char *path, const char *libdir, char *buf, size_t cap)
{
	size_t n = strlen(LIBDIR_VAR);
	if (strncmp(path, LIBDIR_VAR, n) != 0 || !strncmp(path, LIBDIR32_VAR, strlen(LIBDIR32_VAR)))
		return path;
	snprintf(buf, cap, "%s%s", libdir, path + n);
	return buf;
}

/* The 32-bit kin of each machine's loader (what compat32 libraries are). */
static const struct {
	const char *machine;
	const char *debian32;
} libdirs32[] = {
	{"x86_64", "/usr/lib/i386-linux-gnu"},
	{"aarch64", "/usr/lib/arm-linux-gnueabihf"},
};

const char *plan_libdir32_debian(const char *machine)
{
	for (size_t i = 0; i < COUNT_OF(libdirs32); i++)
		if (!strcmp(machine, libdirs32[i].machine))
			return libdirs32[i].debian32;
	return NULL;
}

const char *plan_libdir32_for(int has_marker, int has_lib32, int lib_is_lib64)
{
	const char *d = has_marker ? plan_libdir32_debian(HOST_MACHINE) : NULL;
	if (d)
		return d;
	return has_lib32 || lib_is_lib64 ? LIBDIR32_OTHER : LIBDIR32_PLAIN;
}

const char *plan_expand_libdir32(const char *path, const char *libdir32, char *buf, size_t cap)
{
	size_t n = strlen(LIBDIR32_VAR);
	if (strncmp(path, LIBDIR32_VAR, n) != 0)
		return path;
	snprintf(buf, cap, "%s%s", libdir32, path + n);
	return buf;
}

struct op *plan_add(struct plan *p, enum op_kind kind, unsigned flags, const char *src, const char *dst)
{
	if (p->n == p->cap) {
		p->cap = p->cap ? p->cap * 2 : 32;
		p->v = xrealloc(p->v, p->cap * sizeof *p->v);
	}
	struct op *op = &p->v[p->n++];
	memset(op, 0, sizeof *op);
	op->kind = kind;
	op->actor = kind == OP_LDCONFIG ? ACT_LDCONFIG_HELPER : ACT_CONTAINER;
	op->section = p->section;
	op->flags = flags;
	op->src = src ? xstrdup(src) : NULL;
	op->dst = dst ? xstrdup(dst) : NULL;
	op->fd = -1;
	return op;
}

struct op *plan_add_step(struct plan *p, size_t at, int step, enum plan_actor actor, int after_go)
{
	plan_add(p, OP_LAUNCH, 0, NULL, NULL);
	if (at > p->n - 1)
		at = p->n - 1;
	struct op op = p->v[p->n - 1];
	memmove(&p->v[at + 1], &p->v[at], (p->n - 1 - at) * sizeof *p->v);
	op.step = step;
	op.actor = actor;
	op.after_go = after_go;
	op.section = actor == ACT_COMMAND ? SEC_COMMAND : SEC_NAMESPACES;
	p->v[at] = op;
	return &p->v[at];
}

struct op *plan_find(const struct plan *p, enum op_kind kind)
{
	for (size_t i = 0; i < p->n; i++)
		if (p->v[i].kind == kind)
			return &p->v[i];
	return NULL;
}

struct op *plan_rootfs(const struct plan *p)
{
	return plan_find(p, OP_ROOTFS);
}

struct op *plan_bind(struct plan *p, const char *host_src, const char *dst, unsigned flags)
{
	return plan_add(p, OP_BIND, flags, host_src, dst);
}

struct op *plan_tmpfs(struct plan *p, const char *dst, const char *data, unsigned flags)
{
	return plan_add(p, OP_TMPFS, flags, data, dst);
}

struct op *plan_mkdir(struct plan *p, const char *dst, mode_t mode)
{
	struct op *op = plan_add(p, OP_MKDIR, 0, NULL, dst);
	op->mode = mode;
	return op;
}

struct op *plan_symlink(struct plan *p, const char *target, const char *dst)
{
	return plan_add(p, OP_SYMLINK, 0, target, dst);
}

struct op *plan_file(struct plan *p, const char *dst, const void *data, size_t len, mode_t mode)
{
	struct op *op = plan_add(p, OP_FILE, OPF_REPLACE, NULL, dst);
	op->data = xmalloc(len + 1);
	memcpy(op->data, data, len);
	op->data[len] = '\0';
	op->len = len;
	op->mode = mode;
	return op;
}

void plan_why(struct op *op, const char *fmt, ...)
{
	va_list ap;
	free(op->why);
	va_start(ap, fmt);
	if (vasprintf(&op->why, fmt, ap) < 0)
		op->why = NULL;
	va_end(ap);
}

void plan_free(struct plan *p)
{
	for (size_t i = 0; i < p->n; i++) {
		free(p->v[i].src);
		free(p->v[i].dst);
		free(p->v[i].data);
		free(p->v[i].why);
		strv_free(&p->v[i].layers);
		strv_free(&p->v[i].subs);
		strv_free(&p->v[i].upper_dirs);
		free(p->v[i].sub_flags);
		free(p->v[i].image_sel);
		free(p->v[i].kept);
		free(p->v[i].layer_fds);
	}
	free(p->v);
	memset(p, 0, sizeof *p);
}

/* A read-only tmpfs is read-only itself as well as its mount, as mount(2)
 * makes it with MS_RDONLY (and docker's masks): nothing is ever written to
 * it, so one mount -o ro says it.  Another file system's superblock may be
 * shared (sysfs within a network namespace): only its mount is made
 * read-only, which mount(8) says as a remount. */
int plan_fresh_sb_ro(const struct op *op, const char *type)
{
	return (op->flags & OPF_RO) && !strcmp(type, "tmpfs");
}
