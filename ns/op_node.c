/* ns/op_node.c — the directories, symlinks and files a plan makes in the
 * root: how P1 makes each (resolved inside the root, ns/path.c), the step
 * the plan prints for it, and the bodies of the files gpurun writes. */
#include "ophome.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int run_mkdir(struct exec_state *st, struct op *op, const char *dst, struct gerr *err)
{
	_cleanup_fd_ int target = root_mkdir_p(st->rootfd, dst, op->mode ? op->mode : 0755, err);
	return target < 0 ? -1 : 0;
}

static void describe_mkdir(const struct plan_view *v, const struct op *op, struct sbuf *b)
{
	sbuf_printf(b, "make_dir -m %04o ", (unsigned)op->mode);
	plan_rel(v, b, op->dst);
}

const struct op_home op_home_mkdir = {run_mkdir, describe_mkdir, 0};

static int do_symlink(struct exec_state *st, struct op *op, const char *dst, struct gerr *err)
{
	const char *base;
	int owned;
	int pfd = root_parent_cached(st->rootfd, dst, &base, &st->dirs, &owned, err);
	if (pfd < 0)
		return -1;
	int r = 0;
	if (symlinkat(op->src, pfd, base) == 0)
		goto out;
	if (errno != EEXIST) {
		r = gerr_set(err, errno, "symlink %s", dst);
		goto out;
	}
	struct stat s;
	if (fstatat(pfd, base, &s, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(s.st_mode)) {
		if (unlinkat(pfd, base, 0) < 0 || symlinkat(op->src, pfd, base) < 0)
			r = gerr_set(err, errno, "replace symlink %s", dst);
		goto out;
	}
	warnx_("%s exists in the image and is not a symlink; left as it is", dst);
out:
	if (owned)
		close(pfd);
	return r;
}

/* As a run of links in one directory prints it (ns/opshow.c): link_in DIR TARGET NAME. */
static void describe_symlink(const struct plan_view *v, const struct op *op, struct sbuf *b)
{
	const char *slash = strrchr(op->dst, '/');
	_cleanup_free_ char *dir = xstrndup(op->dst, slash ? (size_t)(slash - op->dst) : 0);
	sbuf_puts(b, "link_in ");
	plan_rel(v, b, dir);
	sbuf_puts(b, " ");
	sbuf_shquote(b, op->src);
	sbuf_puts(b, " ");
	sbuf_shquote(b, slash ? slash + 1 : op->dst);
}

const struct op_home op_home_symlink = {do_symlink, describe_symlink, 0};

static int do_file(struct exec_state *st, struct op *op, const char *dst, struct gerr *err)
{
	const char *base;
	struct stat s;
	if (op->flags & OPF_OPTIONAL) {
		/* Only where the image has the directory: look, create nothing. */
		_cleanup_free_ char *dir = xstrdup(dst);
		*strrchr(dir, '/') = '\0';
		struct gerr ignored = {0};
		_cleanup_fd_ int dfd = root_open(st->rootfd, *dir ? dir : "/", O_PATH | O_DIRECTORY, &ignored);
		if (dfd < 0)
			return 0;
	}
	_cleanup_fd_ int pfd = root_parent(st->rootfd, dst, &base, err);
	if (pfd < 0)
		return -1;
	if ((op->flags & OPF_REPLACE) && fstatat(pfd, base, &s, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(s.st_mode) &&
	    unlinkat(pfd, base, 0) < 0)
		return gerr_set(err, errno, "replace symlink %s", dst);
	/* O_NONBLOCK: a FIFO planted at dst must not hang the launch. */
	_cleanup_fd_ int fd = openat(pfd, base, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK,
				     op->mode ? op->mode : 0644);
	if (fd < 0)
		return gerr_set(err, errno, "write %s", dst);
	if (fstat(fd, &s) < 0 || !S_ISREG(s.st_mode))
		return gerr_set(err, 0, "write %s: not a regular file in the image", dst);
	if (write_all(fd, op->data, op->len) < 0)
		return gerr_set(err, errno, "write %s", dst);
	return 0;
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
		plan_rel(v, b, op->dst);
		return;
	}
	char name[128];
	plan_body_name(v, op, name, sizeof name);
	sbuf_puts(b, (op->flags & OPF_OPTIONAL) ? "write_if_dir " : "write_file ");
	plan_rel(v, b, op->dst);
	sbuf_printf(b, " %zu %s", op->len, name);
}

const struct op_home op_home_file = {do_file, describe_file, 0};

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
