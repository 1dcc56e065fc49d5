/* base/trust.c — the rule of DESIGN.md §8: run as root, gpurun executes,
 * binds from a host tree or reads as policy only a path that no one but
 * root can change.  See base.h.
 *
 * As sudo (sudo_secure_path) and sshd (secure_filename) do, every component
 * from / down is looked at, not just the last one: whoever may rename an
 * entry of any directory on the way can put a tree of their own in its
 * place.  The walk is done by hand, one openat(O_PATH|O_NOFOLLOW) and fstat
 * per component, so that a symlink is seen (its owner could replace it) and
 * its target's components are checked in turn, from / when it is absolute.
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
	return getuid() == 0 || geteuid() == 0;
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
	sbuf_printf(&b, " %s; as root, gpurun uses only what root owns and no one else can write",
		    why);
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

/* The root of the walk (rootfd, or / when it is -1), judged. */
static int walk_root(struct walk *w, int rootfd, int *cur, struct sbuf *at, struct gerr *err)
{
	struct stat st;
	struct sbuf why = {0};
	if (*cur >= 0)
		close(*cur);
	sbuf_reset(at);
	sbuf_puts(at, "/");
	*cur = rootfd >= 0 ? openat(rootfd, ".", O_PATH | O_DIRECTORY | O_CLOEXEC)
			   : open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (*cur < 0 || fstat(*cur, &st) < 0)
		return walk_failed(w, at->s, errno, err);
	judge(&st, 0, &why);
	int r = why.len ? untrusted(w, at->s, why.s, err) : 0;
	sbuf_free(&why);
	return r;
}

static int walk(struct walk *w, int rootfd, const char *path, struct gerr *err)
{
	struct sbuf rest = {0}, at = {0}, why = {0};
	int r = -1, links = 0;
	_cleanup_fd_ int cur = -1;
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
	if (walk_root(w, rootfd, &cur, &at, err) < 0)
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
				int up = openat(cur, "..", O_PATH | O_DIRECTORY | O_CLOEXEC);
				if (up < 0) {
					walk_failed(w, at.s, errno, err);
					goto out;
				}
				close(cur);
				cur = up;
				path_pop(&at);
			}
			continue;
		}
		_cleanup_free_ char *entry = xstrndup(name, n);
		path_push(&at, entry, n);
		struct stat st;
		_cleanup_fd_ int fd = openat(cur, entry, O_PATH | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0 || fstat(fd, &st) < 0) {
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
			ssize_t tl = readlinkat(fd, "", target, sizeof target - 1);
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
			if (target[0] == '/' && walk_root(w, rootfd, &cur, &at, err) < 0)
				goto out;
			continue;
		}
		if (!last && !S_ISDIR(st.st_mode)) {
			walk_failed(w, at.s, ENOTDIR, err);
			goto out;
		}
		close(cur);
		cur = fd;
		fd = -1;
	}
	r = 0;
out:
	sbuf_free(&rest);
	sbuf_free(&at);
	sbuf_free(&why);
	return r;
}

int trust_path(const char *what, const char *path, struct gerr *err)
{
	return trust_path_at(-1, "", what, path, err);
}

int trust_path_at(int rootfd, const char *rootpath, const char *what, const char *path,
		  struct gerr *err)
{
	if (!trust_applies())
		return 0;
	struct walk w = {.what = what, .rootpath = rootfd >= 0 ? rootpath : ""};
	w.named = rootfd >= 0 ? xasprintf("%s/%s", rootpath, path + strspn(path, "/")) : xstrdup(path);
	int r = walk(&w, rootfd, path, err);
	free(w.named);
	sbuf_free(&w.shown);
	return r;
}
