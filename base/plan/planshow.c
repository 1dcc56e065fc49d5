/* base/plan/planshow.c — printing each op of the plan as the shell commands a
 * person would type to do the same step by hand, in the runnable plan's
 * form (mount, mkdir, ln, head -c of a here-document, each path checked by
 * the plan's inroot first), and the host facts that printout needs: the
 * mounts a recursive read-only bind makes read-only, which /proc entries
 * exist.  It reads the tables of base/plan/plan.c, as the executor does. */
#include "plan.h"

#include <dirent.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

/* The library directories of the printed view (op_describe_libdirs). */
static const char *view_libdir, *view_libdir32;

/* path with $LIBDIR32 and $LIBDIR replaced by the view's directories where
 * it knows them (into buf), else path itself. */
static const char *view_expand(const char *path, char *buf, size_t cap)
{
	if (view_libdir32)
		path = plan_expand_libdir32(path, view_libdir32, buf, cap);
	if (view_libdir && path != buf)
		path = plan_expand_libdir(path, view_libdir, buf, cap);
	return path;
}

/* A path that may start with $LIBDIR or $LIBDIR32, which stay shell
 * variables (the dry-run view defines them); the rest is quoted. */
static void libdir_word(struct sbuf *b, const char *path)
{
	char buf[4096];
	path = view_expand(path, buf, sizeof buf);
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

/* The library directories the printed plan uses; NULL: the image tree is
 * not known when the plan is printed, and "$LIBDIR" stays a shell variable
 * that the plan sets by gpurun's own rule (ns/show.c). */
void op_describe_libdirs(const char *libdir, const char *libdir32)
{
	view_libdir = libdir;
	view_libdir32 = libdir32;
}

/* Paths inside the root are printed relative to it, as after `cd $ROOT`.
 * "$LIBDIR/x" is resolved when the view knows it. */
static void rel(struct sbuf *b, const char *dst)
{
	char buf[4096];
	dst = view_expand(dst, buf, sizeof buf);
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
			op_data_add(&o, op_flags[i].name);
	op_data_add(&o, data);
	if (o.len) {
		sbuf_puts(b, " -o ");
		sbuf_puts(b, o.s);
	}
	sbuf_free(&o);
}

/* "\ooo" escapes of /proc/self/mountinfo, undone in place. */
static void unescape_octal(char *s)
{
	char *w = s;
	for (; *s; s++) {
		if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' && s[2] >= '0' && s[2] <= '7' && s[3] >= '0' &&
		    s[3] <= '7') {
			*w++ = (char)((s[1] - '0') * 64 + (s[2] - '0') * 8 + (s[3] - '0'));
			s += 3;
		} else {
			*w++ = *s;
		}
	}
	*w = '\0';
}

static unsigned flags_of_opts(const char *opts)
{
	unsigned f = 0;
	_cleanup_free_ char *copy = xstrdup(opts);
	for (char *save = NULL, *o = strtok_r(copy, ",", &save); o; o = strtok_r(NULL, ",", &save))
		for (size_t i = 0; i < COUNT_OF(op_flags); i++)
			if (!strcmp(o, op_flags[i].name))
				f |= op_flags[i].flag;
	return f;
}

static int path_under(const char *path, const char *dir)
{
	size_t n = strlen(dir);
	if (!strcmp(dir, "/"))
		return 1;
	return !strncmp(path, dir, n) && (path[n] == '/' || !path[n]);
}

void plan_capture_mounts(struct plan *p)
{
	struct strv targets = {0};
	size_t cap = 0;
	unsigned *flags = NULL;
	FILE *f = fopen("/proc/self/mountinfo", "re");
	char *line = NULL;
	size_t n = 0;
	while (f && getline(&line, &n, f) > 0) {
		char target[4096], opts[1024];
		if (sscanf(line, "%*s %*s %*s %*s %4095s %1023s", target, opts) != 2)
			continue;
		unescape_octal(target);
		if (targets.n == cap) {
			cap = cap ? cap * 2 : 64;
			flags = xrealloc(flags, cap * sizeof *flags);
		}
		flags[targets.n] = flags_of_opts(opts);
		strv_add(&targets, xstrdup(target));
	}
	free(line);
	if (f)
		fclose(f);
	for (size_t i = 0; i < p->n; i++) {
		struct op *op = &p->v[i];
		if (op->kind != OP_BIND)
			continue;
		strv_free(&op->subs); /* a second capture replaces the first */
		free(op->sub_flags);
		op->sub_flags = NULL;
		struct stat st;
		if ((op->flags & OPF_OPTIONAL) && stat(op->src, &st) < 0)
			op->skipped = 1;
		/* The last mount listed at the longest prefix is the top one. */
		size_t best = 0;
		int found = 0;
		for (size_t j = 0; j < targets.n; j++)
			if (path_under(op->src, targets.v[j]) &&
			    (!found || strlen(targets.v[j]) >= strlen(targets.v[best]))) {
				best = j;
				found = 1;
			}
		op->src_flags = found ? flags[best] : 0;
		if (!(op->flags & OPF_REC))
			continue;
		for (size_t j = 0; j < targets.n; j++) {
			const char *t = targets.v[j];
			if (!path_under(t, op->src) || !strcmp(t, op->src) || !strcmp(op->src, "/"))
				continue;
			size_t k = op->subs.n;
			op->sub_flags = xrealloc(op->sub_flags, (k + 1) * sizeof *op->sub_flags);
			op->sub_flags[k] = flags[j];
			strv_add(&op->subs, xstrdup(t + strlen(op->src) + 1));
		}
	}
	strv_free(&targets);
	free(flags);
}

int proc_path_present(const char *name)
{
	char path[128];
	struct stat st;
	snprintf(path, sizeof path, "/proc/%s", name);
	return lstat(path, &st) == 0;
}

/* Mount data naming scratch paths, in double quotes with "$S". */
static void scratch_opts(struct sbuf *b, unsigned flags, const char *data)
{
	struct sbuf o = {0}, d = {0};
	mount_opts(&o, flags, data);
	for (const char *s = o.s ? o.s : ""; *s;) {
		const char *hit = strstr(s, PLAN_SCRATCH "/");
		if (!hit) {
			sbuf_puts(&d, s);
			break;
		}
		sbuf_add(&d, s, (size_t)(hit - s));
		sbuf_puts(&d, "$S/");
		s = hit + strlen(PLAN_SCRATCH "/");
	}
	/* " -o LIST": the list quoted, as it names "$S". */
	if (d.len > 4) {
		sbuf_puts(b, " -o \"");
		sbuf_puts(b, d.s + 4);
		sbuf_puts(b, "\"");
	}
	sbuf_free(&o);
	sbuf_free(&d);
}

/* The overlay of the layers or the directory image onto "$S/root". */
static void overlay_line(const struct op *op, struct sbuf *b)
{
	struct sbuf data = {0};
	sbuf_puts(b, "\nmount -t overlay");
	op_mount_data(op, &data);
	scratch_opts(b, op->flags, data.s);
	sbuf_free(&data);
	sbuf_puts(b, " overlay \"$S/root\"");
}

static void describe_rootfs(const struct op *op, struct sbuf *b)
{
	sbuf_puts(b, "mount -t tmpfs");
	mount_opts(b, PLAN_SCRATCH_FLAGS, PLAN_SCRATCH_DATA);
	sbuf_puts(b, " gpurun \"$S\"   # scratch, private to this mount namespace\n");
	sbuf_puts(
		b,
		"mkdir \"$S/host\"; mount --rbind / \"$S/host\"   # the host's tools, for the steps after pivot_root\n");
	if (op->flags & OPF_LAYERS) {
		sbuf_puts(b, "mkdir \"$S/layers\" \"$S/upper\" \"$S/work\" \"$S/root\"");
		for (size_t i = 0; i < op->layers.n; i++) {
			sbuf_printf(b, "\nmkdir \"$S/layers/%zu\"; mount --bind", i);
			mount_opts(b, OPF_RO, NULL);
			sbuf_puts(b, " ");
			sbuf_shquote(b, op->layers.v[i]);
			sbuf_printf(b, " \"$S/layers/%zu\"", i);
		}
		overlay_line(op, b);
	} else if (op->flags & OPF_DIR) {
		sbuf_puts(b, "mkdir \"$S/lower\" \"$S/upper\" \"$S/work\" \"$S/root\"; mount --rbind ");
		sbuf_shquote(b, op->src);
		sbuf_puts(b, " \"$S/lower\"");
		for (size_t i = 0; i < op->upper_dirs.n; i++) {
			sbuf_printf(b, "\nmkdir -m %.4s \"$S/upper\"/", op->upper_dirs.v[i]);
			sbuf_shquote(b, op->upper_dirs.v[i] + 5);
		}
		if (op->upper_dirs.n)
			sbuf_puts(b, "   # the image's directories the plan creates in, made ours in the upper layer");
		overlay_line(op, b);
	} else {
		/* As root, or root of the range's map, GNU tar keeps the owners
		 * and modes (setuid bits too) of the entries; with one id mapped
		 * it cannot, and neither does gpurun. */
		sbuf_puts(b, "mkdir \"$S/root\"; tar -C \"$S/root\" --exclude='dev/*'");
		sbuf_puts(b, (op->flags & OPF_KEEP_OWNER) ? " -xpf " : " --no-same-owner -xf ");
		sbuf_shquote(b, op->src);
		if (!(op->flags & OPF_KEEP_OWNER))
			sbuf_puts(b, "   # setuid and setgid bits are dropped");
		sbuf_puts(b, "\nmount --bind");
		mount_opts(b, op->flags, NULL);
		sbuf_puts(b, " \"$S/root\" \"$S/root\"");
	}
	sbuf_puts(b, "\ncd \"$S/root\"");
}

/* "inroot PATH; ": the plan's own check (ns/show.c prints the function)
 * that no symlink of the image sends PATH, or its directory when leaf is
 * 0, out of the new root: mount, mkdir, touch and > follow symlinks, where
 * the executor resolves every path inside the root (RESOLVE_IN_ROOT). */
static void guard(struct sbuf *b, const char *dst, int leaf)
{
	char buf[4096];
	dst = view_expand(dst, buf, sizeof buf);
	_cleanup_free_ char *path = xstrdup(dst);
	if (!leaf) {
		char *slash = strrchr(path, '/');
		if (!slash || slash == path)
			return;
		*slash = '\0';
	}
	if (!path[strspn(path, "/")])
		return;
	sbuf_puts(b, "inroot ");
	rel(b, path);
	sbuf_puts(b, "; ");
}

/* "mkdir -p DIR; " for the directory of dst, unless it is the root or
 * the plan's own /dev or /proc. */
static void mkdir_parent(struct sbuf *b, const char *dst)
{
	char buf[4096];
	dst = view_expand(dst, buf, sizeof buf);
	const char *slash = strrchr(dst, '/');
	if (!slash || slash == dst)
		return;
	size_t pl = (size_t)(slash - dst);
	if ((pl == 4 && !strncmp(dst, "/dev", 4)) || (pl == 5 && !strncmp(dst, "/proc", 5)))
		return;
	_cleanup_free_ char *parent = xstrndup(dst, (size_t)(slash - dst));
	sbuf_puts(b, "mkdir -p ");
	rel(b, parent);
	sbuf_puts(b, "; ");
}

/* A fresh file system: "mount -t TYPE -o FLAGS,DATA TYPE DST". */
static void describe_fresh(const struct op *op, struct sbuf *b)
{
	const char *type = op_kinds[op->kind].fstype;
	struct sbuf data = {0};
	op_mount_data(op, &data);
	guard(b, op->dst, 1);
	if (op->kind != OP_PROC && strncmp(op->dst, "/proc/", 6) != 0) {
		sbuf_puts(b, "mkdir -p ");
		rel(b, op->dst);
		sbuf_puts(b, "; ");
	}
	/* mount -o ro would make the file system itself read-only; the
	 * executor sets the flag on the mount only (fsmount attributes). */
	sbuf_printf(b, "mount -t %s", type);
	mount_opts(b, op->flags & ~OPF_RO, data.s);
	sbuf_printf(b, " %s ", type);
	rel(b, op->dst);
	sbuf_free(&data);
	if (op->flags & OPF_RO) {
		sbuf_puts(b, "; mount -o remount,bind");
		mount_opts(b, op->flags & OPF_MOUNT_MASK, NULL);
		sbuf_puts(b, " ");
		rel(b, op->dst);
	}
	if (op->kind != OP_PROC)
		return;
	for (size_t i = 0; i < proc_nreadonly; i++) {
		if (!proc_path_present(proc_readonly_paths[i]))
			continue; /* the executor finds it missing and skips it */
		_cleanup_free_ char *sub = xasprintf("%s/%s", op->dst, proc_readonly_paths[i]);
		sbuf_puts(b, "\nmount --rbind");
		mount_opts(b, PROC_READONLY_FLAGS, NULL);
		sbuf_puts(b, " ");
		rel(b, sub);
		sbuf_puts(b, " ");
		rel(b, sub);
	}
}

/* A line of text equal to delim? */
static int has_line(const char *data, size_t len, const char *delim)
{
	size_t dl = strlen(delim);
	for (size_t i = 0; i < len;) {
		const char *nl = memchr(data + i, '\n', len - i);
		size_t n = nl ? (size_t)(nl - (data + i)) : len - i;
		if (n == dl && !memcmp(data + i, delim, dl))
			return 1;
		i += n + 1;
	}
	return 0;
}

void plan_delimiter(const char *base, const struct plan *p, char *out, size_t cap)
{
	for (unsigned k = 0;; k++) {
		if (k)
			snprintf(out, cap, "%s_%u", base, k);
		else
			snprintf(out, cap, "%s", base);
		int clash = 0;
		for (size_t i = 0; p && i < p->n && !clash; i++)
			if (p->v[i].kind == OP_FILE)
				clash = has_line(p->v[i].data, p->v[i].len, out);
		if (!clash)
			return;
	}
}

/* OPF_REPLACE: an image symlink at dst is removed first, as the executor
 * replaces it by a plain node: "{ [ ! -L DST ] || rm DST; }; ". */
static void unlink_image_link(struct sbuf *b, const char *dst)
{
	sbuf_puts(b, "{ [ ! -L ");
	rel(b, dst);
	sbuf_puts(b, " ] || rm ");
	rel(b, dst);
	sbuf_puts(b, "; }; ");
}

static void describe_file(const struct op *op, struct sbuf *b)
{
	/* The directory checked first: > follows symlinks (an image symlink
	 * at the file itself is removed below). */
	guard(b, op->dst, 0);
	const int optional = op->flags & OPF_OPTIONAL;
	if (optional) {
		/* Only where the image has the directory (ns/exec.c): no mkdir. */
		const char *slash = strrchr(op->dst, '/');
		_cleanup_free_ char *dir = xstrndup(op->dst, slash && slash != op->dst ? (size_t)(slash - op->dst) : 1);
		sbuf_puts(b, "if [ -d ");
		rel(b, dir);
		sbuf_puts(b, " ]; then ");
	} else {
		mkdir_parent(b, op->dst);
	}
	if (op->flags & OPF_REPLACE)
		unlink_image_link(b, op->dst);
	/* Exact bytes: head -c takes back the newline the here-document adds;
	 * the delimiter is one no line of the file is. */
	struct plan one = {.v = (struct op *)op, .n = 1};
	char delim[64];
	plan_delimiter("GPURUN_FILE_END", &one, delim, sizeof delim);
	if (memchr(op->data, '\0', op->len)) {
		sbuf_puts(b, "printf '");
		for (size_t i = 0; i < op->len; i++)
			sbuf_printf(b, "\\%03o", (unsigned char)op->data[i]);
		sbuf_puts(b, "' > ");
		rel(b, op->dst);
		if (optional)
			sbuf_puts(b, "; fi");
		return;
	}
	sbuf_printf(b, "head -c %zu > ", op->len);
	rel(b, op->dst);
	sbuf_printf(b, " <<'%s'", delim);
	if (op->why) { /* on the first line: the delimiter's line must be the delimiter alone */
		sbuf_puts(b, "   # ");
		sbuf_add_visible(b, op->why);
	}
	sbuf_puts(b, "\n");
	sbuf_add(b, op->data, op->len);
	sbuf_printf(b, "\n%s%s", delim, optional ? "\nfi" : "");
}

static void describe_bind(const struct op *op, struct sbuf *b)
{
	if (op->skipped) /* an optional source missing on this host: no step */
		return;
	if (op->flags & OPF_DIR) {
		guard(b, op->dst, 1);
		sbuf_puts(b, "mkdir -p ");
		rel(b, op->dst);
	} else {
		guard(b, op->dst, 0);
		mkdir_parent(b, op->dst);
		if (op->flags & OPF_REPLACE)
			unlink_image_link(b, op->dst);
		guard(b, op->dst, 1);
		/* touch(1) would also set the times of a file that is there,
		 * which procfs refuses; gpurun only creates a missing one. */
		sbuf_puts(b, "[ -e ");
		rel(b, op->dst);
		sbuf_puts(b, " ] || touch ");
		rel(b, op->dst);
	}
	/* mount(8) remounts a bind with exactly the flags it is given: the
	 * source mount's own flags are kept as the executor's
	 * mount_setattr(2) keeps them. */
	unsigned fl = (op->flags & OPF_MOUNT_MASK) | op->src_flags;
	sbuf_puts(b, (op->flags & OPF_REC) ? "; mount --rbind" : "; mount --bind");
	mount_opts(b, fl, NULL);
	sbuf_puts(b, " ");
	sbuf_shquote(b, op->src);
	sbuf_puts(b, " ");
	rel(b, op->dst);
	if (!(op->flags & OPF_REC) || !(op->flags & OPF_MOUNT_MASK))
		return;
	/* util-linux 2.38 sets -o on the top mount only; the executor sets
	 * the flags on every mount below it too (CVE-2022-0492: a writable
	 * cgroup v1 tree under a read-only /sys). */
	for (size_t i = 0; i < op->subs.n; i++) {
		_cleanup_free_ char *sub = xasprintf("%s/%s", op->dst, op->subs.v[i]);
		sbuf_puts(b, "\nmount -o remount,bind");
		mount_opts(b, (op->flags & OPF_MOUNT_MASK) | op->sub_flags[i], NULL);
		sbuf_puts(b, " ");
		rel(b, sub);
	}
}

void op_describe(const struct op *op, struct sbuf *b)
{
	switch (op->kind) {
	case OP_ROOTFS: describe_rootfs(op, b); break;
	case OP_BIND:
		describe_bind(op, b);
		if (op->skipped)
			return;
		break;
	case OP_TMPFS:
	case OP_PROC:
	case OP_SYSFS:
	case OP_DEVPTS: describe_fresh(op, b); break;
	case OP_MKDIR:
		guard(b, op->dst, 1);
		sbuf_printf(b, "mkdir -p -m %04o ", (unsigned)op->mode);
		rel(b, op->dst);
		break;
	case OP_SYMLINK:
		guard(b, op->dst, 0);
		mkdir_parent(b, op->dst);
		sbuf_puts(b, "ln -sfn ");
		sbuf_shquote(b, op->src);
		sbuf_puts(b, " ");
		rel(b, op->dst);
		break;
	case OP_FILE: describe_file(op, b); break;
	case OP_REMOUNT:
		sbuf_puts(b, "mount -o remount,bind");
		mount_opts(b, op->flags, NULL);
		sbuf_puts(b, " ");
		rel(b, op->dst);
		break;
	case OP_HOSTNAME:
		/* Not through /proc/sys/kernel/hostname: only the host's root may
		 * write it, the root of a user namespace may not. */
		sbuf_puts(b, "hostname ");
		sbuf_shquote(b, op->src);
		break;
	case OP_LOOPBACK: sbuf_puts(b, "ip link set lo up"); break;
	case OP_PIVOT:
		sbuf_puts(b, "pivot_root . .\numount -l .   # detach the old root: the host is now unreachable");
		break;
	case OP_LDCONFIG:
		sbuf_puts(b, "ldconfig");
		for (size_t i = 0; i < ldconfig_nargs; i++)
			sbuf_printf(b, " %s", ldconfig_args[i]);
		sbuf_puts(b, " " LDCONFIG_CACHE_ARG);
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
	case OP_KIND_COUNT: break;
	}
	if (op->why && !(op->kind == OP_FILE && !memchr(op->data, '\0', op->len))) {
		/* may name a CDI spec or a driver file: never end the comment */
		sbuf_puts(b, "   # ");
		sbuf_add_visible(b, op->why);
	}
}
