/* ns/plan.c — building the plan and printing each op as the shell command a
 * person would type to do the same step by hand (the seed walkthrough's
 * vocabulary: mount, mkdir, ln, pivot_root, ldconfig).  Execution lives in
 * ns/exec.c; this file has no side effects. */
#include "plan.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

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
	}
	free(p->v);
	memset(p, 0, sizeof *p);
}

/* Paths inside the root are printed relative to it, as after `cd $ROOT`.
 * "$LIBDIR/x" stays a shell variable (ns_print_plan defines it). */
static void rel(struct sbuf *b, const char *dst)
{
	if (!strncmp(dst, "$LIBDIR", 7)) {
		sbuf_puts(b, "\".$LIBDIR\"");
		if (dst[7])
			sbuf_shquote(b, dst + 7);
		return;
	}
	while (*dst == '/')
		dst++;
	sbuf_shquote(b, *dst ? dst : ".");
}

static void mount_opts(struct sbuf *b, unsigned flags, const char *extra)
{
	int first = 1;
	struct {
		unsigned f;
		const char *s;
	} names[] = {{OPF_RO, "ro"}, {OPF_NOSUID, "nosuid"}, {OPF_NODEV, "nodev"}, {OPF_NOEXEC, "noexec"}};
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
		if (!(flags & names[i].f))
			continue;
		sbuf_puts(b, first ? " -o " : ",");
		sbuf_puts(b, names[i].s);
		first = 0;
	}
	if (extra && *extra) {
		sbuf_puts(b, first ? " -o " : ",");
		sbuf_puts(b, extra);
		first = 0;
	}
}

void op_describe(const struct op *op, struct sbuf *b)
{
	switch (op->kind) {
	case OP_ROOTFS:
		sbuf_puts(b, "mount -t tmpfs -o nosuid,nodev gpurun /tmp   # scratch, private to this mount namespace\n");
		if (op->flags & OPF_DIR) {
			sbuf_puts(b, "mkdir /tmp/lower /tmp/upper /tmp/work /tmp/root && mount --rbind ");
			sbuf_shquote(b, op->src);
			sbuf_puts(b, " /tmp/lower\nmount -t overlay -o "
				     "lowerdir=/tmp/lower,upperdir=/tmp/upper,workdir=/tmp/work");
			if (op->flags & OPF_NODEV)
				sbuf_puts(b, ",nodev");
			if (op->flags & OPF_NOSUID)
				sbuf_puts(b, ",nosuid");
			sbuf_puts(b, " overlay /tmp/root");
		} else {
			/* GNU tar keeps owners as root and cannot otherwise: so does gpurun. */
			sbuf_puts(b, "mkdir /tmp/root && tar -C /tmp/root --exclude='dev/*' -xpf ");
			sbuf_shquote(b, op->src);
			sbuf_puts(b, "\nmount --bind");
			mount_opts(b, op->flags & (OPF_NODEV | OPF_NOSUID), NULL);
			sbuf_puts(b, " /tmp/root /tmp/root");
		}
		sbuf_puts(b, "\ncd /tmp/root");
		break;
	case OP_BIND:
		if (!(op->flags & OPF_NOCREATE)) {
			sbuf_puts(b, (op->flags & (OPF_DIR | OPF_REC)) ? "mkdir -p " : "touch ");
			rel(b, op->dst);
			sbuf_puts(b, " && ");
		}
		sbuf_puts(b, (op->flags & OPF_REC) ? "mount --rbind" : "mount --bind");
		mount_opts(b, op->flags, NULL);
		sbuf_puts(b, " ");
		sbuf_shquote(b, op->src);
		sbuf_puts(b, " ");
		rel(b, op->dst);
		break;
	case OP_TMPFS:
		sbuf_puts(b, "mount -t tmpfs");
		mount_opts(b, op->flags, op->src);
		sbuf_puts(b, " tmpfs ");
		rel(b, op->dst);
		break;
	case OP_PROC:
		sbuf_puts(b, "mount -t proc");
		mount_opts(b, op->flags, NULL);
		sbuf_puts(b, " proc ");
		rel(b, op->dst);
		break;
	case OP_SYSFS:
		sbuf_puts(b, "mount -t sysfs");
		mount_opts(b, op->flags, NULL);
		sbuf_puts(b, " sysfs ");
		rel(b, op->dst);
		break;
	case OP_DEVPTS:
		sbuf_puts(b, "mkdir -p ");
		rel(b, op->dst);
		sbuf_puts(b, " && mount -t devpts");
		mount_opts(b, op->flags, "newinstance,ptmxmode=0666,mode=0620");
		sbuf_puts(b, " devpts ");
		rel(b, op->dst);
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
	case OP_FILE: {
		/* Short files are shown in full (they are the point of the
		 * lesson, e.g. the rewritten params), long ones by size. */
		if (op->len < 512) {
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
				else if ((unsigned char)c < 0x20)
					sbuf_printf(b, "\\%03o", (unsigned char)c);
				else
					sbuf_add(b, &c, 1);
			}
			sbuf_puts(b, "' > ");
			rel(b, op->dst);
		} else {
			sbuf_puts(b, "cat > ");
			rel(b, op->dst);
			sbuf_printf(b, "   # %zu bytes", op->len);
		}
		break;
	}
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
		sbuf_puts(b, "ldconfig -f /etc/ld.so.conf -C /etc/ld.so.cache");
		for (const char *s = op->src; s && *s;) {
			const char *e = strchr(s, ':');
			size_t n = e ? (size_t)(e - s) : strlen(s);
			sbuf_puts(b, " ");
			sbuf_add(b, s, n);
			s = e ? e + 1 : s + n;
		}
		break;
	}
	if (op->why) {
		sbuf_puts(b, "   # ");
		sbuf_puts(b, op->why);
	}
}
