/* base/plan/planshow.c — printing each op of the plan as the short shell
 * command a person would type to do the same step by hand, with the plan's
 * shell functions (ns/plan.sh: bind_file, make_dir, link, write_file...,
 * which keep gpurun's guards against the image's symlinks), and the file
 * bodies those steps write.  What it prints depends on the op and the view
 * it is given (struct plan_view), nothing else.  It reads the tables of
 * base/plan/plan.c, as the executor does. */
#include "plan.h"

#include <ctype.h>
#include <dirent.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

/* path with $LIBDIR32 and $LIBDIR replaced by the view's directories where
 * it knows them (into buf), else path itself. */
static const char *view_expand(const struct plan_view *v, const char *path, char *buf, size_t cap)
{
	if (v->libdir32)
		path = plan_expand_libdir32(path, v->libdir32, buf, cap);
	if (v->libdir && path != buf)
		path = plan_expand_libdir(path, v->libdir, buf, cap);
	return path;
}

/* A path that may start with $LIBDIR or $LIBDIR32, which stay shell
 * variables (the dry-run view defines them); the rest is quoted. */
static void libdir_word(const struct plan_view *v, struct sbuf *b, const char *path)
{
	char buf[4096];
	path = view_expand(v, path, buf, sizeof buf);
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
 * "$LIBDIR/x" is resolved when the view knows it. */
static void rel(const struct plan_view *v, struct sbuf *b, const char *dst)
{
	char buf[4096];
	dst = view_expand(v, dst, buf, sizeof buf);
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
	sbuf_puts(b, " gpurun \"$S\"   # private to this mount namespace\n");
	sbuf_puts(b, "mkdir \"$S/host\"; mount --rbind / \"$S/host\"   # the host's tools, for after pivot_root\n");
	if (op->flags & OPF_LAYERS) {
		/* The cache's directory of layers, named once when they share it. */
		size_t dl = 0;
		const char *slash = op->layers.n ? strrchr(op->layers.v[0], '/') : NULL;
		if (slash && slash != op->layers.v[0])
			dl = (size_t)(slash - op->layers.v[0]);
		for (size_t i = 0; dl && i < op->layers.n; i++)
			if (strncmp(op->layers.v[i], op->layers.v[0], dl + 1) || strchr(op->layers.v[i] + dl + 1, '/'))
				dl = 0;
		if (dl) {
			_cleanup_free_ char *dir = xstrndup(op->layers.v[0], dl);
			sbuf_puts(b, "L=");
			sbuf_shquote(b, dir);
			sbuf_puts(b, "   # gpurun's cache of unpacked layers\n");
		}
		if (op->kept) {
			sbuf_puts(b, "mkdir \"$S/layers\" \"$S/kept\" \"$S/root\"; mount --bind");
			mount_opts(b, OPF_NOSUID | OPF_NODEV, NULL);
			sbuf_puts(b, " ");
			sbuf_shquote(b, op->kept);
			sbuf_puts(b, " \"$S/kept\"   # the kept container: its upper/ and work/ take the writes");
		} else {
			sbuf_puts(b, "mkdir \"$S/layers\" \"$S/upper\" \"$S/work\" \"$S/root\"");
		}
		for (size_t i = 0; i < op->layers.n; i++) {
			sbuf_printf(b, "\nmkdir \"$S/layers/%zu\"; mount --bind", i);
			mount_opts(b, OPF_RO, NULL);
			sbuf_puts(b, " ");
			if (dl) {
				sbuf_puts(b, "\"$L\"/");
				sbuf_shquote(b, op->layers.v[i] + dl + 1);
			} else {
				sbuf_shquote(b, op->layers.v[i]);
			}
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

/* "OPTS": the per-mount flags and the file system data as one word for
 * the plan's functions ('' when there are none). */
static void opts_word(struct sbuf *b, unsigned flags, const char *data)
{
	struct sbuf o = {0};
	for (size_t i = 0; i < COUNT_OF(op_flags); i++)
		if (flags & op_flags[i].flag)
			op_data_add(&o, op_flags[i].name);
	op_data_add(&o, data);
	sbuf_shquote(b, o.len ? o.s : "");
	sbuf_free(&o);
}

/* A bind source: under the driver root, "$D" and the rest. */
static void src_word(const struct plan_view *v, struct sbuf *b, const char *src)
{
	const char *d = v->driver_root;
	size_t n = d ? strlen(d) : 0;
	if (n > 1 && !strncmp(src, d, n) && src[n] == '/') {
		sbuf_puts(b, "\"$" PLAN_DRIVER_VAR "\"");
		sbuf_shquote(b, src + n);
		return;
	}
	sbuf_shquote(b, src);
}

/* A fresh file system: "make_dir DST; mount -t TYPE -o FLAGS,DATA TYPE DST";
 * within /proc, "inroot DST;" (nothing can be made there). */
static void describe_fresh(const struct plan_view *v, const struct op *op, struct sbuf *b)
{
	const char *type = op_kinds[op->kind].fstype;
	struct sbuf data = {0};
	op_mount_data(op, &data);
	int in_proc = op->kind == OP_PROC || !strncmp(op->dst, "/proc/", 6);
	sbuf_puts(b, in_proc ? "inroot " : "make_dir ");
	rel(v, b, op->dst);
	/* mount -o ro would make the file system itself read-only; the
	 * executor sets the flag on the mount only (fsmount attributes). */
	sbuf_printf(b, "; mount -t %s", type);
	mount_opts(b, op->flags & ~OPF_RO, data.s);
	sbuf_printf(b, " %s ", type);
	rel(v, b, op->dst);
	sbuf_free(&data);
	if (op->flags & OPF_RO) {
		sbuf_puts(b, "; remount ");
		opts_word(b, op->flags & OPF_MOUNT_MASK, NULL);
		sbuf_puts(b, " ");
		rel(v, b, op->dst);
	}
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
			opts_word(b, PROC_READONLY_FLAGS, NULL);
		}
		sbuf_puts(b, " ");
		rel(v, b, sub);
	}
}

/* The name of the shell function that prints an OP_FILE's body: "body_"
 * and the file's name, made a shell name, unique in the view's plan. */
static void plan_body_name(const struct plan_view *v, const struct op *op, char *out, size_t cap)
{
	const char *base = strrchr(op->dst, '/');
	base = base ? base + 1 : op->dst;
	char word[64];
	size_t n = 0;
	for (; *base && n < sizeof word - 1; base++)
		word[n++] = (isalnum((unsigned char)*base) && isascii((unsigned char)*base)) ? *base : '_';
	word[n] = '\0';
	/* Another file of the same name before this one: numbered. */
	unsigned same = 0, mine = 0;
	for (size_t i = 0; v->plan && i < v->plan->n; i++) {
		const struct op *o = &v->plan->v[i];
		if (o->kind != OP_FILE)
			continue;
		const char *ob = strrchr(o->dst, '/');
		char w2[64];
		size_t k = 0;
		for (ob = ob ? ob + 1 : o->dst; *ob && k < sizeof w2 - 1; ob++)
			w2[k++] = (isalnum((unsigned char)*ob) && isascii((unsigned char)*ob)) ? *ob : '_';
		w2[k] = '\0';
		if (strcmp(w2, word) != 0)
			continue;
		if (o == op)
			mine = same;
		same++;
	}
	if (mine)
		snprintf(out, cap, "body_%s_%u", word, mine + 1);
	else
		snprintf(out, cap, "body_%s", word);
}

int plan_file_from_driver(const struct plan_view *v, const struct op *op)
{
	if (op->kind != OP_FILE || !op->src || (op->flags & OPF_OPTIONAL))
		return 0;
	/* "$D"/PATH, or /PATH where the plan names no driver root ("${D-}") */
	size_t n = v->driver_root ? strlen(v->driver_root) : 0;
	const char *rest = op->src;
	if (n > 1) {
		if (strncmp(op->src, v->driver_root, n))
			return 0;
		rest += n;
	}
	return !strcmp(rest, op->dst);
}

static void describe_file(const struct plan_view *v, const struct op *op, struct sbuf *b)
{
	if (plan_file_from_driver(v, op)) {
		sbuf_puts(b, (op->flags & OPF_PARAMS) ? "driver_params " : "driver_text ");
		rel(v, b, op->dst);
		return;
	}
	char name[128];
	plan_body_name(v, op, name, sizeof name);
	sbuf_puts(b, (op->flags & OPF_OPTIONAL) ? "write_if_dir " : "write_file ");
	rel(v, b, op->dst);
	sbuf_printf(b, " %zu %s", op->len, name);
}

void plan_describe_body(const struct plan_view *v, const struct op *op, struct sbuf *b)
{
	char name[128];
	plan_body_name(v, op, name, sizeof name);
	sbuf_printf(b, "%s() { ", name);
	/* Bytes a here-document cannot hold: printf's escapes. */
	if (memchr(op->data, '\0', op->len)) {
		sbuf_puts(b, "printf '");
		for (size_t i = 0; i < op->len; i++)
			sbuf_printf(b, "\\%03o", (unsigned char)op->data[i]);
		sbuf_puts(b, "'; }");
		return;
	}
	/* The delimiter is one no line of the file is; head -c takes back
	 * the newline the here-document adds. */
	struct plan one = {.v = (struct op *)op, .n = 1};
	char delim[64];
	plan_delimiter("GPURUN_FILE_END", &one, delim, sizeof delim);
	sbuf_printf(b, "cat <<'%s'\n", delim);
	sbuf_add(b, op->data, op->len);
	sbuf_printf(b, "\n%s\n}", delim);
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
		rel(v, &one, sub);
		if (f != last || b->len - line + one.len > 150) {
			if (newline || i)
				sbuf_puts(b, "\n");
			line = b->len;
			sbuf_puts(b, "remount ");
			opts_word(b, f, NULL);
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
	opts_word(b, fl, NULL);
	sbuf_puts(b, " ");
	src_word(v, b, op->src);
	sbuf_puts(b, " ");
	rel(v, b, op->dst);
	if (!(op->flags & OPF_REC) || !(op->flags & OPF_MOUNT_MASK))
		return;
	if (op->why) {
		sbuf_puts(b, "   # ");
		sbuf_add_visible(b, op->why);
	}
	if (!(op->flags & OPF_TOP))
		describe_below(v, op, 1, b);
}

void op_describe(const struct plan_view *v, const struct op *op, struct sbuf *b)
{
	switch (op->kind) {
	case OP_ROOTFS: describe_rootfs(op, b); break;
	case OP_BIND:
		describe_bind(v, op, b);
		if (op->skipped || ((op->flags & OPF_REC) && (op->flags & OPF_MOUNT_MASK)))
			return; /* nothing, or its comment is on its first line */
		break;
	case OP_PROC_RO: describe_proc_ro(v, op, b); break;
	case OP_PROC:
	case OP_TMPFS:
	case OP_SYSFS:
	case OP_DEVPTS: describe_fresh(v, op, b); break;
	case OP_MKDIR:
		sbuf_printf(b, "make_dir -m %04o ", (unsigned)op->mode);
		rel(v, b, op->dst);
		break;
	case OP_SYMLINK:
		sbuf_puts(b, "link ");
		sbuf_shquote(b, op->src);
		sbuf_puts(b, " ");
		rel(v, b, op->dst);
		break;
	case OP_FILE: describe_file(v, op, b); break;
	case OP_REMOUNT:
		if (op->flags & OPF_BELOW) {
			describe_below(v, op, 0, b);
			break;
		}
		sbuf_puts(b, "remount ");
		opts_word(b, op->flags, NULL);
		sbuf_puts(b, " ");
		rel(v, b, op->dst);
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
		for (const char *s = op->src; s && *s;) {
			size_t n = strcspn(s, ":");
			_cleanup_free_ char *dir = xstrndup(s, n);
			sbuf_puts(b, b->len ? " " : "");
			libdir_word(v, b, dir);
			s += n + (s[n] == ':');
		}
		return; /* its comment is the step's (ns/show.c) */
	case OP_KIND_COUNT: break;
	}
	if (op->why) {
		/* may name a CDI spec or a driver file: never end the comment */
		sbuf_puts(b, "   # ");
		sbuf_add_visible(b, op->why);
	}
}

/* The forms of a step that several ops of a run share, one line. */
enum group_kind {
	G_NONE,
	G_HOST,   /* host_files OPTS PATH...: the host's /PATH on PATH */
	G_DRIVER, /* driver_files OPTS PATH...: "$D"/PATH on PATH, over an image symlink */
	G_EACH,   /* bind_each OPTS SRC DST...: one source on each */
	G_LINK,   /* link TARGET DST...: pairs */
	G_LIBS,   /* driver_libs OPTS DIR TO NAME...: "$D"DIR/NAME on TO/NAME ($LIBDIR...) */
	G_LINKIN, /* link_in DIR TARGET NAME...: links in one library directory */
	G_TEXT,   /* driver_text PATH...: the driver's file copied */
};

/* The directory part of path (up to its last '/'), its length; 0 when
 * there is none or the rest is empty. */
static size_t dir_len(const char *path)
{
	const char *slash = strrchr(path, '/');
	return slash && slash[1] ? (size_t)(slash - path) : 0;
}

/* A dst in $LIBDIR or $LIBDIR32 itself: the length of its directory. */
static size_t libdir_dst(const char *dst)
{
	size_t d = dir_len(dst);
	if ((d == strlen(LIBDIR_VAR) && !strncmp(dst, LIBDIR_VAR, d)) ||
	    (d == strlen(LIBDIR32_VAR) && !strncmp(dst, LIBDIR32_VAR, d)))
		return d;
	return 0;
}

/* A library bind "$D"DIR/NAME -> $LIBDIR/NAME: the length of the driver
 * root part of its src (0 where the plan names no driver root), else -1. */
static long lib_src(const struct plan_view *v, const struct op *op)
{
	size_t n = v->driver_root ? strlen(v->driver_root) : 0;
	size_t d = libdir_dst(op->dst), s = dir_len(op->src);
	if (!d || !s || op->src[0] != '/' || strcmp(op->src + s, op->dst + d))
		return -1;
	if (n <= 1)
		return 0;
	if (strncmp(op->src, v->driver_root, n) || op->src[n] != '/' || s <= n)
		return -1;
	return (long)n;
}

static enum group_kind group_kind(const struct plan_view *v, const struct op *op)
{
	if (op->kind == OP_SYMLINK)
		return libdir_dst(op->dst) && !strchr(op->src, '/') ? G_LINKIN : G_LINK;
	if (op->kind == OP_FILE)
		return plan_file_from_driver(v, op) && !(op->flags & OPF_PARAMS) ? G_TEXT : G_NONE;
	if (op->kind != OP_BIND || op->skipped || (op->flags & (OPF_DIR | OPF_REC)))
		return G_NONE;
	if ((op->flags & OPF_REPLACE) && lib_src(v, op) >= 0)
		return G_LIBS;
	char buf[4096];
	const char *dst = view_expand(v, op->dst, buf, sizeof buf);
	size_t n = v->driver_root ? strlen(v->driver_root) : 0;
	if (!(op->flags & OPF_REPLACE))
		return strcmp(op->src, dst) ? G_EACH : G_HOST;
	if (n > 1 && !strncmp(op->src, v->driver_root, n) && !strcmp(op->src + n, dst))
		return G_DRIVER;
	return G_NONE;
}

static unsigned bind_flags(const struct op *op)
{
	return (op->flags & OPF_MOUNT_MASK) | op->src_flags;
}

/* The words op adds to its group's line. */
static void group_words(const struct plan_view *v, const struct op *op, enum group_kind k, struct sbuf *b)
{
	sbuf_puts(b, " ");
	if (k == G_LINK || k == G_LINKIN) {
		sbuf_shquote(b, op->src);
		sbuf_puts(b, " ");
	}
	if (k == G_LINKIN || k == G_LIBS)
		sbuf_shquote(b, op->dst + dir_len(op->dst) + 1);
	else
		rel(v, b, op->dst);
}

/* Whether op j goes on the line of the group led by op i, whose line is
 * len characters so far. */
static int group_joins(const struct plan_view *v, size_t i, size_t j, size_t len)
{
	const struct op *a = &v->plan->v[i], *o = &v->plan->v[j];
	enum group_kind k = group_kind(v, a);
	if (k == G_NONE || group_kind(v, o) != k || o->why || a->section != o->section)
		return 0;
	if (k != G_LINK && k != G_LINKIN && k != G_TEXT && bind_flags(a) != bind_flags(o))
		return 0;
	if (k == G_EACH && strcmp(a->src, o->src))
		return 0;
	/* One directory for the whole line. */
	if ((k == G_LINKIN || k == G_LIBS) &&
	    (dir_len(a->dst) != dir_len(o->dst) || strncmp(a->dst, o->dst, dir_len(a->dst))))
		return 0;
	if (k == G_LIBS && (dir_len(a->src) != dir_len(o->src) || strncmp(a->src, o->src, dir_len(a->src))))
		return 0;
	struct sbuf w = {0};
	group_words(v, o, k, &w);
	int fits = len + w.len + (a->why ? 5 + strlen(a->why) : 0) <= 150;
	sbuf_free(&w);
	return fits;
}

/* The line of a group led by op i, up to its own words. */
static void group_head(const struct plan_view *v, size_t i, struct sbuf *b)
{
	const struct op *a = &v->plan->v[i];
	enum group_kind k = group_kind(v, a);
	static const char *const names[] = {
		[G_NONE] = "",     [G_HOST] = "host_files ",  [G_DRIVER] = "driver_files ", [G_EACH] = "bind_each ",
		[G_LINK] = "link", [G_LIBS] = "driver_libs ", [G_LINKIN] = "link_in ",      [G_TEXT] = "driver_text"};
	sbuf_puts(b, names[k]);
	if (k != G_LINK && k != G_LINKIN && k != G_TEXT)
		opts_word(b, bind_flags(a), NULL);
	if (k == G_EACH) {
		sbuf_puts(b, " ");
		sbuf_shquote(b, a->src);
	}
	if (k == G_LIBS) {
		long n = lib_src(v, a);
		_cleanup_free_ char *dir = xstrndup(a->src + n, dir_len(a->src) - (size_t)n);
		sbuf_puts(b, " ");
		sbuf_shquote(b, dir);
	}
	if (k == G_LIBS || k == G_LINKIN) {
		_cleanup_free_ char *dir = xstrndup(a->dst, dir_len(a->dst));
		sbuf_puts(b, k == G_LIBS ? " " : "");
		rel(v, b, dir);
	}
	group_words(v, a, k, b);
}

size_t op_describe_step(const struct plan_view *v, size_t i, struct sbuf *b)
{
	/* The groups fall greedily from the plan's first op: the same for
	 * --dry-run and for --verbose, which asks op by op. */
	size_t lead = 0, j;
	struct sbuf line = {0};
	for (j = 0; j < v->plan->n; j++) {
		if (j > lead && j - 1 < v->plan->n && group_joins(v, lead, j, line.len)) {
			group_words(v, &v->plan->v[j], group_kind(v, &v->plan->v[lead]), &line);
			continue;
		}
		if (j > i)
			break;
		lead = j;
		sbuf_reset(&line);
		if (group_kind(v, &v->plan->v[j]) != G_NONE)
			group_head(v, j, &line);
	}
	size_t n = j - lead;
	const struct op *a = &v->plan->v[i];
	enum group_kind k = group_kind(v, a);
	if (lead != i) {
		n = 0; /* on the line of an op before it */
	} else if (k == G_NONE || (k == G_EACH && n == 1)) {
		op_describe(v, a, b);
	} else {
		sbuf_add(b, line.s, line.len);
		if (a->why) {
			sbuf_puts(b, "   # ");
			sbuf_add_visible(b, a->why);
		}
	}
	sbuf_free(&line);
	return n;
}
