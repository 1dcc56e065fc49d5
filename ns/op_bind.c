/* ns/op_bind.c — binds of host paths into the root, and remounts of
 * what is mounted there: how P1 attaches and flags each (through fds,
 * ns/mountfd.c), and the step the plan prints for it. */
#include "ophome.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <unistd.h>

static int do_bind(struct exec_state *st, struct op *op, const char *dst, struct gerr *err)
{
	if (op->skipped)
		return 0;
	_cleanup_fd_ int target =
		root_mount_target(st->rootfd, dst, !!(op->flags & OPF_DIR), !!(op->flags & OPF_REPLACE),
				  (op->flags & OPF_DIR) ? NULL : &st->dirs, err);
	if (target < 0 && (op->flags & OPF_OPTIONAL) &&
	    (err->errnum == EACCES || err->errnum == EROFS || err->errnum == EPERM)) {
		warnx_("%s; %s not bound", err->msg, op->src);
		gerr_clear(err);
		return 0;
	}
	if (target < 0)
		return -1;
	if (mountfd_set_attrs(op->fd, op->flags, (op->flags & OPF_REC) && !(op->flags & OPF_TOP), dst, err) < 0)
		return -1;
	if (mountfd_attach(op->fd, target, dst, err) < 0)
		return -1;
	close(op->fd);
	op->fd = -1;
	return 0;
}

/* The deepest directory every path of v[0..n-1] is or lies below, in
 * whole components: its length in v[0], 0 for the root. */
static size_t common_dir(char *const *v, size_t n)
{
	size_t len = strlen(v[0]);
	for (size_t i = 1; i < n; i++)
		while (len && (strncmp(v[i], v[0], len) || (v[i][len] && v[i][len] != '/')))
			while (len && v[0][--len] != '/')
				;
	return len;
}

/* Whether path lies below dir. */
static int below(const char *path, const char *dir)
{
	size_t n = strlen(dir);
	return !strncmp(path, dir, n) && path[n] == '/';
}

/* The remount lines of paths v[0..n-1] (flags f), each in dir where one is
 * given: "remount OPTS [-C DIR] SUB...", a new line past 150 characters. */
static void remount_lines(const struct plan_view *v, char *const *paths, size_t n, const char *dir, unsigned f,
			  int newline, struct sbuf *b)
{
	size_t line = 0;
	for (size_t k = 0; k < n; k++) {
		struct sbuf one = {0};
		if (!dir)
			plan_rel(v, &one, paths[k]);
		else
			sbuf_shquote(&one, below(paths[k], dir) ? paths[k] + strlen(dir) + 1 : ".");
		if (k == 0 || b->len - line + one.len > 150) {
			if (newline || k)
				sbuf_puts(b, "\n");
			line = b->len;
			sbuf_puts(b, "remount ");
			plan_opts_word(b, f, NULL);
			if (dir) {
				sbuf_puts(b, " -C ");
				plan_rel(v, b, dir);
			}
		}
		sbuf_puts(b, " ");
		sbuf_puts(b, one.s);
		sbuf_free(&one);
	}
}

/* util-linux 2.38 sets -o on the top mount only; the executor sets the
 * flags on every mount below it too (CVE-2022-0492: a writable cgroup v1
 * tree under a read-only /sys): remount lines for each set of flags, the
 * first after a newline where asked.  A mount with mounts below it names
 * its directory once (-C), as a host's eleven cgroup v1 mounts would
 * repeat it. */
static void describe_below(const struct plan_view *v, const struct op *op, int newline, struct sbuf *b)
{
	struct strv paths = {0};
	for (size_t i = 0; i < op->subs.n; i++)
		strv_add(&paths, xasprintf("%s/%s", op->dst, op->subs.v[i]));
	for (size_t i = 0, end; i < paths.n; i = end) {
		unsigned f = (op->flags & OPF_MOUNT_MASK) | op->sub_flags[i];
		for (end = i + 1; end < paths.n && ((op->flags & OPF_MOUNT_MASK) | op->sub_flags[end]) == f; end++)
			;
		for (size_t k = i, j; k < end; k = j) {
			/* A family (k and the mounts below it), or a run of mounts that head none. */
			for (j = k + 1; j < end && below(paths.v[j], paths.v[k]); j++)
				;
			int family = j - k > 1;
			while (!family && j < end && !(j + 1 < end && below(paths.v[j + 1], paths.v[j])))
				j++;
			/* Its head, or the directory the mounts share (a systemd host's /sys/kernel/...). */
			size_t d = j - k > 1 ? common_dir(paths.v + k, j - k) : 0;
			_cleanup_free_ char *dir = d ? xstrndup(paths.v[k], d) : NULL;
			remount_lines(v, paths.v + k, j - k, dir, f, newline || k > 0, b);
		}
	}
	strv_free(&paths);
}

static void describe_bind(const struct plan_view *v, const struct op *op, struct sbuf *b)
{
	if (op->skipped) /* an optional source missing on this host: no step */
		return;
	/* mount(8) remounts a bind with exactly the flags it is given: the
	 * source mount's own flags are kept as the executor's
	 * mount_setattr(2) keeps them. */
	unsigned fl = (op->flags & OPF_MOUNT_MASK) | op->src_flags;
	if (op->flags & OPF_DIR) {
		/* bind_dir takes mount(8)'s -o whole: bind or rbind, then the flags. */
		struct sbuf o = {0};
		op_data_add(&o, (op->flags & OPF_REC) ? "rbind" : "bind");
		op_flags_add(&o, fl);
		sbuf_puts(b, "bind_dir ");
		sbuf_shquote(b, o.s);
		sbuf_free(&o);
	} else {
		/* A file has no mounts below it, but gpurun's clone is recursive. */
		sbuf_puts(b, (op->flags & OPF_REC)       ? "rbind_file "
			     : (op->flags & OPF_REPLACE) ? "bind_over "
							 : "bind_file ");
		plan_opts_word(b, fl, NULL);
	}
	sbuf_puts(b, " ");
	plan_src_word(v, b, op->src);
	sbuf_puts(b, " ");
	plan_rel(v, b, op->dst);
	plan_comment(b, op); /* on its first line, before the mounts below it */
	if ((op->flags & OPF_REC) && (op->flags & OPF_MOUNT_MASK) && !(op->flags & OPF_TOP))
		describe_below(v, op, 1, b);
}

const struct op_home op_home_bind = {do_bind, describe_bind, 1};

static int run_remount(struct exec_state *st, struct op *op, const char *dst, struct gerr *err)
{
	_cleanup_fd_ int target = root_open(st->rootfd, dst, O_PATH, err);
	if (target < 0)
		return -1;
	return mountfd_set_attrs(target, op->flags, !!(op->flags & OPF_BELOW), dst, err);
}

static void describe_remount(const struct plan_view *v, const struct op *op, struct sbuf *b)
{
	if (op->flags & OPF_BELOW) {
		describe_below(v, op, 0, b);
		return;
	}
	sbuf_puts(b, "remount ");
	plan_opts_word(b, op->flags, NULL);
	sbuf_puts(b, " ");
	plan_rel(v, b, op->dst);
}

const struct op_home op_home_remount = {run_remount, describe_remount, 0};
