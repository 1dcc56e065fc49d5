/* base/plan.c — building the plan, the shared description of each kind of
 * op, and printing each op as the shell commands a person would type to do
 * the same step by hand (the seed walkthrough's vocabulary: mount, mkdir, ln,
 * pivot_root, ldconfig).  Execution lives in ns/exec.c and reads the same
 * tables; this file has no side effects. */
#include "plan.h"

#include <dirent.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>

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

static void add_data(struct sbuf *out, const char *data)
{
	if (!data || !*data)
		return;
	if (out->len)
		sbuf_puts(out, ",");
	sbuf_puts(out, data);
}

void op_mount_data(const struct op *op, struct sbuf *out)
{
	if (op->kind == OP_ROOTFS) {
		add_data(out, op->data);
		return;
	}
	if (!op_kinds[op->kind].fstype)
		return;
	add_data(out, op_kinds[op->kind].data);
	add_data(out, op->src);
}

const char *const proc_readonly_paths[] = {"sys", "sysrq-trigger", "irq", "bus", "fs"};
const size_t proc_nreadonly = COUNT_OF(proc_readonly_paths);

/* ldconfig.real first: on Ubuntu /sbin/ldconfig is a shell wrapper. */
const char *const ldconfig_paths[] = {"/sbin/ldconfig.real", "/sbin/ldconfig", "/usr/sbin/ldconfig"};
const size_t ldconfig_npaths = COUNT_OF(ldconfig_paths);
const char *const ldconfig_args[] = {"-f", "/etc/ld.so.conf", "-C", "/etc/ld.so.cache"};
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

struct op *plan_add(struct plan *p, enum op_kind kind, unsigned flags, const char *src,
		    const char *dst)
{
	if (p->n == p->cap) {
		p->cap = p->cap ? p->cap * 2 : 32;
		p->v = xrealloc(p->v, p->cap * sizeof *p->v);
	}
	struct op *op = &p->v[p->n++];
	memset(op, 0, sizeof *op);
	op->kind = kind;
	op->flags = flags;
	op->src = src ? xstrdup(src) : NULL;
	op->dst = dst ? xstrdup(dst) : NULL;
	op->fd = -1;
	return op;
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
		free(p->v[i].image_sel);
		free(p->v[i].layer_fds);
	}
	free(p->v);
	memset(p, 0, sizeof *p);
}

/* A path that may start with $LIBDIR or $LIBDIR32, which stay shell
 * variables (the dry-run view defines them); the rest is quoted. */
static void libdir_word(struct sbuf *b, const char *path)
{
	static const char *const vars[] = {LIBDIR32_VAR, LIBDIR_VAR};
	for (size_t i = 0; i < COUNT_OF(vars); i++) {
		size_t n = strlen(vars[i]);
		if (!strncmp(path, vars[i], n) && (path[n] == '/' || !path[n])) {
			if (!path[n]) { /* a directory name without blanks: bare, as typed */
				sbuf_puts(b, vars[i]);
				return;
			}
			sbuf_printf(b, "\"%s\"", vars[i]);
			sbuf_shquote(b, path + n);
			return;
		}
	}
	sbuf_shquote(b, path);
}

/* Paths inside the root are printed relative to it, as after `cd $ROOT`.
 * "$LIBDIR/x" stays a shell variable (the dry-run view defines it). */
static void rel(struct sbuf *b, const char *dst)
{
	size_t n = strlen(LIBDIR32_VAR);
	if (!strncmp(dst, LIBDIR32_VAR, n)) {
		sbuf_puts(b, "\"." LIBDIR32_VAR "\"");
		if (dst[n])
			sbuf_shquote(b, dst + n);
		return;
	}
	n = strlen(LIBDIR_VAR);
	if (!strncmp(dst, LIBDIR_VAR, n)) {
		sbuf_puts(b, "\"." LIBDIR_VAR "\"");
		if (dst[n])
			sbuf_shquote(b, dst + n);
		return;
	}
	while (*dst == '/')
		dst++;
	sbuf_shquote(b, *dst ? dst : ".");
}

/* " -o ro,nosuid,...,data" as mount(8) takes it: the per-mount flags and
 * the file system data in one list. */
static void mount_opts(struct sbuf *b, unsigned flags, const char *data)
{
	struct sbuf o = {0};
	for (size_t i = 0; i < COUNT_OF(op_flags); i++)
		if (flags & op_flags[i].flag)
			add_data(&o, op_flags[i].name);
	add_data(&o, data);
	if (o.len) {
		sbuf_puts(b, " -o ");
		sbuf_puts(b, o.s);
	}
	sbuf_free(&o);
}

static void describe_rootfs(const struct op *op, struct sbuf *b)
{
	sbuf_puts(b, "mount -t tmpfs");
	mount_opts(b, PLAN_SCRATCH_FLAGS, PLAN_SCRATCH_DATA);
	sbuf_puts(b, " gpurun " PLAN_SCRATCH "   # scratch, private to this mount namespace\n");
	if (op->flags & OPF_IMPORT) {
		sbuf_printf(b, "mkdir " PLAN_RUN_CACHE "   # --no-cache: the %zu layer%s of ", op->layers.n,
			    op->layers.n == 1 ? "" : "s");
		sbuf_showquote(b, op->src);
		sbuf_puts(b, " are unpacked and verified into this run's tmpfs, as a cache would hold them");
		sbuf_puts(b, "\n");
	}
	if (op->flags & OPF_LAYERS) {
		sbuf_puts(b, "mkdir " PLAN_LAYERS " " PLAN_UPPER " " PLAN_WORK " " PLAN_ROOT);
		for (size_t i = 0; i < op->layers.n; i++) {
			sbuf_printf(b, "\nmkdir " PLAN_LAYERS "/%zu && mount --bind", i);
			mount_opts(b, OPF_RO, NULL);
			sbuf_puts(b, " ");
			sbuf_shquote(b, op->layers.v[i]);
			sbuf_printf(b, " " PLAN_LAYERS "/%zu", i);
		}
		sbuf_puts(b, "\nmount -t overlay");
		struct sbuf data = {0};
		op_mount_data(op, &data);
		mount_opts(b, op->flags, data.s);
		sbuf_free(&data);
		sbuf_puts(b, " overlay " PLAN_ROOT);
	} else if (op->flags & OPF_DIR) {
		sbuf_puts(b, "mkdir " PLAN_LOWER " " PLAN_UPPER " " PLAN_WORK " " PLAN_ROOT " && mount --rbind ");
		sbuf_shquote(b, op->src);
		sbuf_puts(b, " " PLAN_LOWER "\nmount -t overlay");
		struct sbuf data = {0};
		op_mount_data(op, &data);
		mount_opts(b, op->flags, data.s);
		sbuf_free(&data);
		sbuf_puts(b, " overlay " PLAN_ROOT);
	} else {
		/* As root, GNU tar keeps the owners and modes (setuid bits too)
		 * of the entries; as a user it cannot, and neither does gpurun. */
		sbuf_puts(b, "mkdir " PLAN_ROOT " && tar -C " PLAN_ROOT " --exclude='dev/*'");
		sbuf_puts(b, (op->flags & OPF_KEEP_OWNER) ? " -xpf " : " --no-same-owner -xf ");
		sbuf_shquote(b, op->src);
		if (!(op->flags & OPF_KEEP_OWNER))
			sbuf_puts(b, "   # setuid and setgid bits are dropped");
		sbuf_puts(b, "\nmount --bind");
		mount_opts(b, op->flags, NULL);
		sbuf_puts(b, " " PLAN_ROOT " " PLAN_ROOT);
	}
	sbuf_puts(b, "\ncd " PLAN_ROOT);
}

/* A fresh file system: "mount -t TYPE -o FLAGS,DATA TYPE DST". */
static void describe_fresh(const struct op *op, struct sbuf *b)
{
	const char *type = op_kinds[op->kind].fstype;
	struct sbuf data = {0};
	op_mount_data(op, &data);
	if (op->kind == OP_DEVPTS) {
		sbuf_puts(b, "mkdir -p ");
		rel(b, op->dst);
		sbuf_puts(b, " && ");
	}
	sbuf_printf(b, "mount -t %s", type);
	mount_opts(b, op->flags, data.s);
	sbuf_printf(b, " %s ", type);
	rel(b, op->dst);
	sbuf_free(&data);
	if (op->kind != OP_PROC)
		return;
	for (size_t i = 0; i < proc_nreadonly; i++) {
		_cleanup_free_ char *sub = xasprintf("%s/%s", op->dst, proc_readonly_paths[i]);
		sbuf_puts(b, "\nmount --rbind");
		mount_opts(b, PROC_READONLY_FLAGS, NULL);
		sbuf_puts(b, " ");
		rel(b, sub);
		sbuf_puts(b, " ");
		rel(b, sub);
	}
}

static void describe_file(const struct op *op, struct sbuf *b)
{
	if (op->flags & OPF_OPTIONAL) {
		/* Only where the image has the directory (ns/exec.c). */
		const char *slash = strrchr(op->dst, '/');
		_cleanup_free_ char *dir = xstrndup(op->dst, slash && slash != op->dst ? (size_t)(slash - op->dst) : 1);
		sbuf_puts(b, "[ ! -d ");
		rel(b, dir);
		sbuf_puts(b, " ] || ");
	}
	/* Short files are shown in full (they are the point of the lesson,
	 * e.g. the rewritten params), long ones by size. */
	if (op->len >= 512) {
		sbuf_puts(b, "cat > ");
		rel(b, op->dst);
		sbuf_printf(b, "   # %zu bytes", op->len);
		return;
	}
	sbuf_puts(b, "printf '");
	for (size_t i = 0; i < op->len; i++) {
		char c = op->data[i];
		if (c == '\n')
			sbuf_puts(b, "\\n");
		else if (c == '%')
			sbuf_puts(b, "%%");
		else if (c == '\\')
			sbuf_puts(b, "\\\\");
		else if (c == '\'')
			sbuf_puts(b, "'\\''");
		else if ((unsigned char)c < 0x20 || (unsigned char)c >= 0x7f)
			sbuf_printf(b, "\\%03o", (unsigned char)c);
		else
			sbuf_add(b, &c, 1);
	}
	sbuf_puts(b, "' > ");
	rel(b, op->dst);
}

void op_describe(const struct op *op, struct sbuf *b)
{
	switch (op->kind) {
	case OP_ROOTFS:
		describe_rootfs(op, b);
		break;
	case OP_BIND:
		sbuf_puts(b, (op->flags & OPF_DIR) ? "mkdir -p " : "touch ");
		rel(b, op->dst);
		sbuf_puts(b, (op->flags & OPF_REC) ? " && mount --rbind" : " && mount --bind");
		mount_opts(b, op->flags, NULL);
		sbuf_puts(b, " ");
		sbuf_shquote(b, op->src);
		sbuf_puts(b, " ");
		rel(b, op->dst);
		break;
	case OP_TMPFS:
	case OP_PROC:
	case OP_SYSFS:
	case OP_DEVPTS:
		describe_fresh(op, b);
		break;
	case OP_MKDIR:
		sbuf_printf(b, "mkdir -p -m %04o ", (unsigned)op->mode);
		rel(b, op->dst);
		break;
	case OP_SYMLINK:
		sbuf_puts(b, "ln -sfn ");
		sbuf_shquote(b, op->src);
		sbuf_puts(b, " ");
		rel(b, op->dst);
		break;
	case OP_FILE:
		describe_file(op, b);
		break;
	case OP_REMOUNT:
		sbuf_puts(b, "mount -o remount,bind");
		mount_opts(b, op->flags, NULL);
		sbuf_puts(b, " ");
		rel(b, op->dst);
		break;
	case OP_HOSTNAME:
		sbuf_puts(b, "hostname ");
		sbuf_shquote(b, op->src);
		break;
	case OP_LOOPBACK:
		sbuf_puts(b, "ip link set lo up");
		break;
	case OP_PIVOT:
		sbuf_puts(b, "pivot_root . .\numount -l .   # detach the old root: the host is now unreachable");
		break;
	case OP_LDCONFIG:
		sbuf_puts(b, "ldconfig");
		for (size_t i = 0; i < ldconfig_nargs; i++)
			sbuf_printf(b, " %s", ldconfig_args[i]);
		if (op->data)
			sbuf_puts(b, " " CUDA_COMPAT_VAR);
		for (const char *s = op->src; s && *s;) {
			size_t n = strcspn(s, ":");
			_cleanup_free_ char *dir = xstrndup(s, n);
			sbuf_puts(b, " ");
			libdir_word(b, dir);
			s += n + (s[n] == ':');
		}
		break;
	case OP_KIND_COUNT:
		break;
	}
	if (op->why) { /* may name a CDI spec or a driver file: never end the comment */
		sbuf_puts(b, "   # ");
		sbuf_add_visible(b, op->why);
	}
}
