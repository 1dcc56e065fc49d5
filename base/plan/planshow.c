/* base/plan/planshow.c — the words every printed step is made of: paths
 * inside the root relative to it, $LIBDIR and "$D" where the view has
 * them, mount options, the one-word options of the plan's shell functions
 * (ns/plan.sh), a step's comment, here-document delimiters.  Each kind of
 * op prints its own step beside the code that runs it (ns/ophome.h); what
 * those lines say depends on the op and the view (struct plan_view),
 * nothing else, and reads the tables of base/plan/plan.c as the executor
 * does. */
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
const char *plan_view_expand(const struct plan_view *v, const char *path, char *buf, size_t cap)
{
	if (v->libdir32)
		path = plan_expand_libdir32(path, v->libdir32, buf, cap);
	if (v->libdir && path != buf)
		path = plan_expand_libdir(path, v->libdir, buf, cap);
	return path;
}

/* A path that may start with $LIBDIR or $LIBDIR32, which stay shell
 * variables (the dry-run view defines them); the rest is quoted. */
void plan_libdir_word(const struct plan_view *v, struct sbuf *b, const char *path)
{
	char buf[4096];
	path = plan_view_expand(v, path, buf, sizeof buf);
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
void plan_rel(const struct plan_view *v, struct sbuf *b, const char *dst)
{
	char buf[4096];
	dst = plan_view_expand(v, dst, buf, sizeof buf);
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
void plan_mount_opts(struct sbuf *b, unsigned flags, const char *data)
{
	struct sbuf o = {0};
	op_flags_add(&o, flags);
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
void plan_opts_word(struct sbuf *b, unsigned flags, const char *data)
{
	struct sbuf o = {0};
	op_flags_add(&o, flags);
	op_data_add(&o, data);
	sbuf_shquote(b, o.len ? o.s : "");
	sbuf_free(&o);
}

/* A bind source: under the driver root, "$D" and the rest. */
void plan_src_word(const struct plan_view *v, struct sbuf *b, const char *src)
{
	const char *d = v->driver_root;
	size_t n = d ? strlen(d) : 0;
	if (n > 1 && !strncmp(src, d, n) && (src[n] == '/' || !src[n])) {
		sbuf_puts(b, "\"$" PLAN_DRIVER_VAR "\"");
		if (src[n])
			sbuf_shquote(b, src + n);
		return;
	}
	sbuf_shquote(b, src);
}

void plan_comment(struct sbuf *b, const struct op *op)
{
	if (op->why) {
		/* may name a CDI spec or a driver file: never end the comment */
		sbuf_puts(b, "   # ");
		sbuf_add_visible(b, op->why);
	}
}
