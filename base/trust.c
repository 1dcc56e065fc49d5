/* base/trust.c — the rule docs/design.md gives under "Modes": run as root, gpurun executes,
 * binds from a host tree or reads as policy only a path that no one but
 * root can change.  See base.h.
 *
 * As sudo (sudo_secure_path) and sshd (secure_filename) do, every component
 * from / down is looked at, not just the last one: whoever may rename an
 * entry of any directory on the way can put a tree of their own in its
 * place.  The walk is done by hand, one fstatat(AT_SYMLINK_NOFOLLOW) per
 * component in the O_PATH fd of the directory judged before it, so that a
 * symlink is seen (its owner could replace it) and its target's components
 * are judged in turn, from the root again when it is absolute.
 * A sticky directory such as /tmp may be writable by all: there only an
 * entry's owner can rename or remove it, and the entry below must be root's.
 * Write bits count for directories and regular files only: a device node's
 * mode is about the device, a symlink's means nothing. */
#include "base.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <pwd.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* As many symlinks as the kernel follows in one lookup (MAXSYMLINKS). */
#define TRUST_MAX_LINKS 40

int trust_applies(void)
{
	/* Root of a smaller user namespace (a rootless container, the
	 * user-as-root test mode) is an ordinary user on the host: the
	 * host's root-owned files show up there as the overflow uid. */
	static int applies = -1;
	if (applies < 0)
		applies = (getuid() == 0 || geteuid() == 0) && ids_all_mapped();
	return applies;
}

/* "uid 1000 (alice)", the name only when one is known. */
static void say_id(struct sbuf *b, const char *kind, unsigned id, const char *name)
{
	sbuf_printf(b, "%s %u", kind, id);
	if (name) {
		sbuf_puts(b, " (");
		sbuf_shquote(b, name);
		sbuf_puts(b, ")");
	}
}

/* Why a component with this stat is not root's alone, appended to why
 * (nothing when it is); last: nothing follows it on the path. */
static void judge(const struct stat *st, int last, struct sbuf *why)
{
	if (st->st_uid != 0) {
		const struct passwd *pw = getpwuid(st->st_uid);
		sbuf_puts(why, "is owned by ");
		say_id(why, "uid", (unsigned)st->st_uid, pw ? pw->pw_name : NULL);
		return;
	}
	if (!S_ISDIR(st->st_mode) && !S_ISREG(st->st_mode))
		return;
	mode_t w = st->st_mode & (S_IWGRP | S_IWOTH);
	if (!w || (S_ISDIR(st->st_mode) && (st->st_mode & S_ISVTX) && !last))
		return;
	if (w & S_IWGRP) {
		const struct group *gr = getgrgid(st->st_gid);
		sbuf_puts(why, "is writable by ");
		say_id(why, "group", (unsigned)st->st_gid, gr ? gr->gr_name : NULL);
		if (w & S_IWOTH)
			sbuf_puts(why, " and by others");
	} else {
		sbuf_puts(why, "is writable by others");
	}
}

/* at: the physical path of dirfd; name appended to it, as the kernel
 * would name the entry. */
static void path_push(struct sbuf *at, const char *name, size_t n)
{
	if (at->len > 1)
		sbuf_add(at, "/", 1);
	sbuf_add(at, name, n);
}

static void path_pop(struct sbuf *at)
{
	char *slash = strrchr(at->s, '/');
	at->len = slash == at->s ? 1 : (size_t)(slash - at->s);
	at->s[at->len] = '\0';
}

/* One walk: what the caller calls the path, and the root it is in. */
struct walk {
	const char *what;
	char *named;          /* the path as messages show it */
	const char *rootpath; /* host path of the root, "" for / */
	struct sbuf shown;
};

/* A component as messages show it: its host path. */
static const char *shown(struct walk *w, const char *at)
{
	sbuf_reset(&w->shown);
	sbuf_puts(&w->shown, w->rootpath);
	if (!*w->rootpath || strcmp(at, "/"))
		sbuf_puts(&w->shown, at);
	return w->shown.s;
}

static int untrusted(struct walk *w, const char *at, const char *why, struct gerr *err)
{
	struct sbuf b = {0};
	sbuf_printf(&b, "%s ", w->what);
	sbuf_shquote(&b, w->named);
	sbuf_puts(&b, ": not trusted: ");
	sbuf_shquote(&b, shown(w, at));
	sbuf_printf(&b, " %s; as root, gpurun uses only what root owns and no one else can write", why);
	gerr_set(err, 0, "%s", b.s);
	sbuf_free(&b);
	return -1;
}

static int walk_failed(struct walk *w, const char *at, int errnum, struct gerr *err)
{
	struct sbuf b = {0};
	sbuf_printf(&b, "%s ", w->what);
	sbuf_shquote(&b, w->named);
	sbuf_puts(&b, ": cannot check who owns ");
	sbuf_shquote(&b, shown(w, at));
	gerr_set(err, errnum, "%s", b.s);
	sbuf_free(&b);
	return -1;
}

void trust_memo_free(struct trust_memo *m)
{
	for (size_t i = 0; m && i < m->n; i++) {
		free(m->dirs[i]);
		close(m->fds[i]);
	}
	if (m) {
		free(m->dirs);
		free(m->fds);
		memset(m, 0, sizeof *m);
	}
}

/* The fd of a directory judged before at this physical path, or -1. */
static int memo_find(const struct trust_memo *m, const char *at)
{
	for (size_t i = 0; m && i < m->n; i++)
		if (!strcmp(m->dirs[i], at))
			return m->fds[i];
	return -1;
}

/* Keep fd (now the memo's) for the directory at. */
static void memo_add(struct trust_memo *m, const char *at, int fd)
{
	m->dirs = xrealloc(m->dirs, (m->n + 1) * sizeof *m->dirs);
	m->fds = xrealloc(m->fds, (m->n + 1) * sizeof *m->fds);
	m->dirs[m->n] = xstrdup(at);
	m->fds[m->n++] = fd;
}

/* The directory the walk is in: an fd of its own, or one of the memo's. */
struct cursor {
	int fd;
	int borrowed;
};

static void cursor_set(struct cursor *c, int fd, int borrowed)
{
	if (c->fd >= 0 && !c->borrowed)
		close(c->fd);
	c->fd = fd;
	c->borrowed = borrowed;
}

/* The root of the walk (rootfd, or / when it is -1), judged. */
static int walk_root(struct walk *w, int rootfd, struct trust_memo *memo, struct cursor *cur, struct sbuf *at,
		     struct gerr *err)
{
	struct stat st;
	struct sbuf why = {0};
	sbuf_reset(at);
	sbuf_puts(at, "/");
	int known = memo_find(memo, "/");
	if (known >= 0) {
		cursor_set(cur, known, 1);
		return 0;
	}
	cursor_set(cur,
		   rootfd >= 0 ? openat(rootfd, ".", O_PATH | O_DIRECTORY | O_CLOEXEC)
			       : open("/", O_PATH | O_DIRECTORY | O_CLOEXEC),
		   0);
	if (cur->fd < 0 || fstat(cur->fd, &st) < 0)
		return walk_failed(w, at->s, errno, err);
	judge(&st, 0, &why);
	int r = why.len ? untrusted(w, at->s, why.s, err) : 0;
	sbuf_free(&why);
	if (r == 0 && memo) {
		memo_add(memo, "/", cur->fd);
		cur->borrowed = 1;
	}
	return r;
}

static int walk(struct walk *w, int rootfd, struct trust_memo *memo, const char *path, struct gerr *err)
{
	struct sbuf rest = {0}, at = {0}, why = {0};
	int r = -1, links = 0;
	struct cursor cur = {-1, 0};
	/* A relative path is below the working directory, which counts too. */
	if (path[0] != '/' && rootfd < 0) {
		_cleanup_free_ char *cwd = getcwd(NULL, 0);
		if (!cwd) {
			walk_failed(w, ".", errno, err);
			goto out;
		}
		sbuf_printf(&rest, "%s/", cwd);
	}
	sbuf_puts(&rest, path);
	size_t pos = 0; /* how much of rest is walked */
	if (walk_root(w, rootfd, memo, &cur, &at, err) < 0)
		goto out;
	for (;;) {
		pos += strspn(rest.s + pos, "/");
		if (!rest.s[pos])
			break;
		const char *name = rest.s + pos;
		size_t n = strcspn(name, "/");
		pos += n;
		int last = !rest.s[pos + strspn(rest.s + pos, "/")];
		if (n == 1 && name[0] == '.')
			continue;
		if (n == 2 && name[0] == '.' && name[1] == '.') {
			/* Up to a directory already judged on the way down; ".."
			 * of the root is the root, as in a chroot. */
			if (at.len > 1) {
				int up = openat(cur.fd, "..", O_PATH | O_DIRECTORY | O_CLOEXEC);
				if (up < 0) {
					walk_failed(w, at.s, errno, err);
					goto out;
				}
				cursor_set(&cur, up, 0);
				path_pop(&at);
			}
			continue;
		}
		_cleanup_free_ char *entry = xstrndup(name, n);
		path_push(&at, entry, n);
		/* A directory judged before, on the way to something else: no
		 * one but root can have changed it since. */
		int known = last ? -1 : memo_find(memo, at.s);
		if (known >= 0) {
			cursor_set(&cur, known, 1);
			continue;
		}
		/* By name in cur, which is judged: only root can change its
		 * entries, or, sticky, only their owners, root for this one. */
		struct stat st;
		if (fstatat(cur.fd, entry, &st, AT_SYMLINK_NOFOLLOW) < 0) {
			walk_failed(w, at.s, errno, err);
			goto out;
		}
		judge(&st, last, &why);
		if (why.len) {
			untrusted(w, at.s, why.s, err);
			goto out;
		}
		if (S_ISLNK(st.st_mode)) {
			char target[PATH_MAX];
			ssize_t tl = readlinkat(cur.fd, entry, target, sizeof target - 1);
			if (tl <= 0 || ++links > TRUST_MAX_LINKS) {
				walk_failed(w, at.s, tl < 0 ? errno : tl == 0 ? ENOENT : ELOOP, err);
				goto out;
			}
			target[tl] = '\0';
			/* The target, then what followed the link; an absolute
			 * one starts again at the root, as the lookup does. */
			struct sbuf next = {0};
			sbuf_puts(&next, target);
			sbuf_puts(&next, "/");
			sbuf_puts(&next, rest.s + pos);
			sbuf_free(&rest);
			rest = next;
			pos = 0;
			path_pop(&at);
			if (target[0] == '/' && walk_root(w, rootfd, memo, &cur, &at, err) < 0)
				goto out;
			continue;
		}
		if (last)
			continue;
		if (!S_ISDIR(st.st_mode)) {
			walk_failed(w, at.s, ENOTDIR, err);
			goto out;
		}
		int fd = openat(cur.fd, entry, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0) {
			walk_failed(w, at.s, errno, err);
			goto out;
		}
		if (memo)
			memo_add(memo, at.s, fd);
		cursor_set(&cur, fd, memo != NULL);
	}
	r = 0;
out:
	cursor_set(&cur, -1, 0);
	sbuf_free(&rest);
	sbuf_free(&at);
	sbuf_free(&why);
	return r;
}

int trust_path(const char *what, const char *path, struct gerr *err)
{
	return trust_path_at(-1, "", NULL, what, path, err);
}

int trust_path_at(int rootfd, const char *rootpath, struct trust_memo *memo, const char *what, const char *path,
		  struct gerr *err)
{
	if (!trust_applies())
		return 0;
	struct walk w = {.what = what, .rootpath = rootfd >= 0 ? rootpath : ""};
	w.named = rootfd >= 0 ? xasprintf("%s/%s", rootpath, path + strspn(path, "/")) : xstrdup(path);
	int r = walk(&w, rootfd, memo, path, err);
	free(w.named);
	sbuf_free(&w.shown);
	return r;
}
