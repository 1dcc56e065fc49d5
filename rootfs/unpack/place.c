/* rootfs/unpack/place.c — making the unpacked entries in the target directory (the
 * new root, or a cache layer), in place of libarchive's write-disk code;
 * libarchive still reads and parses every archive (rootfs/unpack/unpack.c).
 *
 * Why our own: write-disk with SECURE_SYMLINKS walks each entry's whole path
 * again from the cwd, one lstat per component, and sets the umask twice per
 * entry.  That was two thirds of an unpack's system calls (16 for each of
 * busybox's applet links, of which 3 do the work) and most of a first
 * launch's time: re-checking directories it had just made.  Here a directory
 * is resolved once from the target with openat2(RESOLVE_BENEATH |
 * RESOLVE_NO_SYMLINKS), and its descriptor is kept for the entries that
 * follow; each entry is then made relative to that descriptor with
 * O_EXCL / O_NOFOLLOW / AT_SYMLINK_NOFOLLOW.  So no symlink, planted by the
 * archive or not, is ever followed while writing, and nothing lands outside
 * the target.  When an entry removes something (tar lets a later entry
 * replace an earlier one), every kept descriptor at or below it is dropped.
 *
 * It needs neither the cwd nor the umask, both process-wide, so layers may
 * be unpacked by several threads at once. */
#include "unpack.h"

#include <archive_entry.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Regular files at least this big are sized before their data is written:
 * see place_entry(). */
#define PLACE_SIZE_FIRST (64 * 1024)

/* The umask without setting it (umask(2) is process-wide): Linux >= 4.7
 * shows it in /proc/self/status.  Unknown: 0777, so every mode is set
 * explicitly. */
static mode_t current_umask(void)
{
	struct gerr err = {0};
	size_t len;
	_cleanup_free_ char *s = read_small_file_at(AT_FDCWD, "/proc/self/status", 1 << 16, &len, &err);
	static const char key[] = "\nUmask:";
	const char *u = s ? strstr(s, key) : NULL;
	unsigned m;
	if (!u || sscanf(u + strlen(key), "%o", &m) != 1)
		return 0777;
	return (mode_t)(m & 0777);
}

void place_init(struct placer *p, int root, unsigned flags)
{
	memset(p, 0, sizeof *p);
	p->root = root;
	p->flags = flags;
	p->umask = current_umask();
	p->euid = geteuid();
	p->egid = getegid();
	/* Directories made here take S_ISGID only at place_close() (mkdir
	 * ignores it in the mode) or from a set-group-ID target. */
	struct stat st;
	p->root_setgid = fstat(root, &st) < 0 || (st.st_mode & S_ISGID);
	p->fd = -1;
	for (size_t i = 0; i < COUNT_OF(p->dirs); i++)
		p->dirs[i].fd = -1;
}

static void drop_dir(struct kept_dir *k)
{
	if (k->fd >= 0)
		close(k->fd);
	free(k->path);
	k->path = NULL;
	k->fd = -1;
}

void place_free(struct placer *p)
{
	for (size_t i = 0; i < COUNT_OF(p->dirs); i++)
		drop_dir(&p->dirs[i]);
	if (p->fd >= 0)
		close(p->fd);
	p->fd = -1;
	for (size_t i = 0; i < p->nfix; i++)
		free(p->fix[i].path);
	free(p->fix);
	p->fix = NULL;
	p->nfix = p->capfix = 0;
}

/* path without "." components, repeated or trailing slashes: "a/b/c", or
 * "" for the target itself.  (".." was refused before.) */
static char *normalize(const char *path)
{
	char *out = xmalloc(strlen(path) + 1), *o = out;
	for (const char *c = path; *c;) {
		size_t n = strcspn(c, "/");
		if (n && !(n == 1 && *c == '.')) {
			if (o != out)
				*o++ = '/';
			memcpy(o, c, n);
			o += n;
		}
		c += n + strspn(c + n, "/");
	}
	*o = '\0';
	return out;
}

/* Splits a normalized path in place into its directory and its last name. */
static const char *split(char *path, const char **name)
{
	char *slash = strrchr(path, '/');
	if (!slash) {
		*name = path;
		return "";
	}
	*slash = '\0';
	*name = slash + 1;
	return path;
}

/* Missing directories of dir, made one at a time (0755 less the umask, as
 * tar makes the directories an archive leaves out) and opened without
 * following anything.  An O_PATH descriptor, or -1 with errno. */
static int make_dirs(struct placer *p, const char *dir)
{
	_cleanup_free_ char *copy = xstrdup(dir);
	int cur = -1;
	for (char *save = NULL, *c = strtok_r(copy, "/", &save); c; c = strtok_r(NULL, "/", &save)) {
		int at = cur < 0 ? p->root : cur;
		if (mkdirat(at, c, 0755) < 0 && errno != EEXIST)
			goto fail;
		int next = openat(at, c, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (next < 0) {
			struct stat st;
			if (errno == ENOTDIR && fstatat(at, c, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode))
				errno = ELOOP;
			goto fail;
		}
		if (cur >= 0)
			close(cur);
		cur = next;
	}
	return cur;
fail:;
	int e = errno;
	if (cur >= 0)
		close(cur);
	errno = e;
	return -1;
}

int place_dir(struct placer *p, const char *dir, int create)
{
	if (!*dir)
		return p->root;
	struct kept_dir *slot = NULL;
	for (size_t i = 0; i < COUNT_OF(p->dirs); i++) {
		struct kept_dir *k = &p->dirs[i];
		if (k->path && !strcmp(k->path, dir)) {
			k->used = ++p->clock;
			return k->fd;
		}
		if (!slot || (slot->path && (!k->path || k->used < slot->used)))
			slot = k;
	}
	int fd = open_beneath_nofollow(p->root, dir, O_PATH | O_DIRECTORY);
	if (fd < 0 && errno == ENOENT && create)
		fd = make_dirs(p, dir);
	if (fd < 0)
		return -1;
	drop_dir(slot);
	slot->path = xstrdup(dir);
	slot->fd = fd;
	slot->used = ++p->clock;
	return fd;
}

/* Something at path was removed: no kept directory may stand for it. */
static void forget(struct placer *p, const char *path)
{
	size_t n = strlen(path);
	for (size_t i = 0; i < COUNT_OF(p->dirs); i++) {
		const char *k = p->dirs[i].path;
		if (k && (!n || (!strncmp(k, path, n) && (k[n] == '/' || !k[n]))))
			drop_dir(&p->dirs[i]);
	}
}

/* An earlier entry is where this one goes: a directory stays for a
 * directory (1); anything else is removed (0), a directory only when empty,
 * as tar does.  -1 with errno. */
static int make_room(struct placer *p, int dfd, const char *name, const char *path, int want_dir)
{
	struct stat st;
	if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return errno == ENOENT ? 0 : -1;
	if (S_ISDIR(st.st_mode) && want_dir)
		return 1;
	if (unlinkat(dfd, name, S_ISDIR(st.st_mode) ? AT_REMOVEDIR : 0) < 0)
		return -1;
	forget(p, path);
	return 0;
}

static int fail(struct placer *p, struct gerr *err, const char *what)
{
	return gerr_set(err, errno, "entry '%s': %s", p->qname, what);
}

/* A directory error in the message tar users know. */
static int dir_fail(struct placer *p, struct gerr *err, const char *target)
{
	char qt[QUOTED_NAME_MAX];
	const char *why = errno == ELOOP     ? "path passes through a symlink"
			  : errno == ENOTDIR ? "path passes through something that is not a directory"
					     : NULL;
	if (target)
		quote_name(qt, sizeof qt, target);
	if (why && target)
		return gerr_set(err, 0, "entry '%s': hard link target '%s': %s", p->qname, qt, why);
	if (why)
		return gerr_set(err, 0, "entry '%s': %s", p->qname, why);
	if (target)
		return gerr_set(err, errno, "entry '%s': hard link target '%s'", p->qname, qt);
	return fail(p, err, "make its directory");
}

static void fixup_add(struct placer *p, const char *path, const struct place_meta *m)
{
	if (p->nfix == p->capfix) {
		p->capfix = p->capfix ? 2 * p->capfix : 64;
		p->fix = xrealloc(p->fix, p->capfix * sizeof *p->fix);
	}
	p->fix[p->nfix++] = (struct dir_fixup){.path = xstrdup(path), .meta = *m};
}

/* Owner, mode and times as the entry has them.  The mode is set only when
 * creation could not give it: bits the umask took away, set-id bits (which
 * open and mkdir drop, and chown clears). */
static void meta_of(const struct placer *p, struct archive_entry *e, struct place_meta *m)
{
	memset(m, 0, sizeof *m);
	m->mode = archive_entry_perm(e) & 07777;
	if (p->flags & UNPACK_KEEP_OWNER) {
		m->uid = (uid_t)archive_entry_uid(e);
		m->gid = (gid_t)archive_entry_gid(e);
		/* What we create is ours already (most of an image is
		 * root's): no chown then, unless a set-group-ID target makes
		 * new files take its group. */
		m->chown = m->uid != p->euid || m->gid != p->egid || p->root_setgid;
	} else {
		/* Not owned as the archive says: set-id bits only where the
		 * owner is the same anyway (libarchive's rule). */
		if ((uid_t)archive_entry_uid(e) != p->euid)
			m->mode &= ~(mode_t)S_ISUID;
		if ((gid_t)archive_entry_gid(e) != p->egid)
			m->mode &= ~(mode_t)S_ISGID;
	}
	m->chmod = (m->mode & (p->umask | S_ISUID | S_ISGID | S_ISVTX)) != 0;
	m->times[0] = (struct timespec){.tv_nsec = UTIME_OMIT};
	m->times[1] = (struct timespec){.tv_nsec = UTIME_OMIT};
	if (archive_entry_atime_is_set(e))
		m->times[0] = (struct timespec){archive_entry_atime(e), archive_entry_atime_nsec(e)};
	if (archive_entry_mtime_is_set(e))
		m->times[1] = (struct timespec){archive_entry_mtime(e), archive_entry_mtime_nsec(e)};
	m->set_times = archive_entry_atime_is_set(e) || archive_entry_mtime_is_set(e);
}

/* create(dfd, name) until it stops failing with EEXIST (once: what was in
 * the way is gone then). */
#define CREATE_OR_REPLACE(p, dfd, name, path, want_dir, call)             \
	({                                                                \
		int r_ = (call);                                          \
		if (r_ < 0 && errno == EEXIST) {                          \
			int m_ = make_room(p, dfd, name, path, want_dir); \
			r_ = m_ < 0 ? -1 : m_ == 1 ? 1 : (call);          \
		}                                                         \
		r_;                                                       \
	})

static int place_link(struct placer *p, struct archive_entry *e, const char *path, int dfd, const char *name,
		      const char *link, struct gerr *err)
{
	_cleanup_free_ char *target = normalize(link);
	const char *tname, *tdir = split(target, &tname);
	int tfd = place_dir(p, tdir, 0);
	if (tfd < 0)
		return dir_fail(p, err, link);
	if (CREATE_OR_REPLACE(p, dfd, name, path, 0, linkat(tfd, tname, dfd, name, 0)) < 0) {
		char qt[QUOTED_NAME_MAX];
		quote_name(qt, sizeof qt, link);
		return gerr_set(err, errno, "entry '%s': hard link to '%s'", p->qname, qt);
	}
	/* A pax hard link may carry data, which goes to the (one) file. */
	if (archive_entry_size_is_set(e) && archive_entry_size(e) > 0) {
		p->fd = openat(dfd, name, O_WRONLY | O_TRUNC | O_NOFOLLOW | O_CLOEXEC);
		if (p->fd < 0)
			return fail(p, err, "open");
		p->size = archive_entry_size(e);
		meta_of(p, e, &p->meta);
	}
	return 0;
}

int place_entry(struct placer *p, struct archive_entry *e, const char *entry, const char *link, mode_t type,
		struct gerr *err)
{
	quote_name(p->qname, sizeof p->qname, entry);
	p->size = p->end = 0;
	_cleanup_free_ char *path = normalize(entry);
	_cleanup_free_ char *full = xstrdup(path);
	const char *name, *dir = split(path, &name);
	int dfd = place_dir(p, dir, 1);
	if (dfd < 0)
		return dir_fail(p, err, NULL);
	struct place_meta m;
	meta_of(p, e, &m);

	if (!*name) { /* "./": the target itself */
		if (type != AE_IFDIR || link)
			return gerr_set(err, 0, "entry '%s': the root must be a directory", p->qname);
		m.chmod = 1;
		m.chown = (p->flags & UNPACK_KEEP_OWNER) != 0;
		if (m.chown && fchownat(p->root, "", m.uid, m.gid, AT_EMPTY_PATH) < 0)
			return fail(p, err, "chown");
		m.chown = 0;
		fixup_add(p, "", &m);
		return 0;
	}
	if (link)
		return place_link(p, e, full, dfd, name, link, err);

	int r;
	switch (type) {
	case AE_IFDIR:
		r = CREATE_OR_REPLACE(p, dfd, name, full, 1, mkdirat(dfd, name, m.mode & 0777));
		if (r < 0)
			return fail(p, err, "mkdir");
		if (r == 1) { /* there before, with its own mode and owner */
			m.chmod = 1;
			m.chown = (p->flags & UNPACK_KEEP_OWNER) != 0;
		}
		if (m.chown && fchownat(dfd, name, m.uid, m.gid, AT_SYMLINK_NOFOLLOW) < 0)
			return fail(p, err, "chown");
		/* Mode and times last, deepest first (place_close): its
		 * children change its mtime, and a 0555 one would refuse them. */
		m.chown = 0;
		fixup_add(p, full, &m);
		return 0;
	case AE_IFLNK: {
		const char *to = archive_entry_symlink(e);
		if (!to)
			return gerr_set(err, 0, "entry '%s': symlink without a target", p->qname);
		if (CREATE_OR_REPLACE(p, dfd, name, full, 0, symlinkat(to, dfd, name)) < 0)
			return fail(p, err, "symlink");
		if (m.chown && fchownat(dfd, name, m.uid, m.gid, AT_SYMLINK_NOFOLLOW) < 0)
			return fail(p, err, "chown");
		if (m.set_times && utimensat(dfd, name, m.times, AT_SYMLINK_NOFOLLOW) < 0)
			return fail(p, err, "set times");
		return 0;
	}
	default: /* AE_IFREG: rootfs/unpack/unpack.c lets nothing else through */
		p->fd = CREATE_OR_REPLACE(
			p, dfd, name, full, 0,
			openat(dfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, m.mode & 0777));
		if (p->fd < 0)
			return fail(p, err, "create");
		p->size = archive_entry_size(e);
		p->meta = m;
		/* A tmpfs mounted with huge=within_size (the launch's scratch)
		 * backs a file with large pages (2 MiB; on newer kernels, as
		 * the 6.18 this is developed on, any power of two from 8 KiB)
		 * only where its size already covers them.  Sized first, a
		 * file is written and later freed in a few large pages instead
		 * of one 4 KiB page at a time: busybox's 1.9 MB binary in
		 * 1 MiB, 512, 256 and 128 KiB pieces instead of 484 pages
		 * (Debian minbase has 64 MB in 6 files of 2 MiB and more).
		 * Elsewhere it is an early truncate. */
		if (p->size >= PLACE_SIZE_FIRST && ftruncate(p->fd, (off_t)p->size) < 0)
			return fail(p, err, "ftruncate");
		return 0;
	}
}

int place_data(struct placer *p, const void *buf, size_t size, int64_t off, struct gerr *err)
{
	if (p->fd < 0)
		return 0; /* a hard link without data of its own */
	const char *b = buf;
	while (size) {
		ssize_t w = pwrite(p->fd, b, size, (off_t)off);
		if (w < 0 && errno == EINTR)
			continue;
		if (w == 0)
			errno = ENOSPC;
		if (w <= 0)
			return fail(p, err, "write");
		b += w;
		size -= (size_t)w;
		off += w;
	}
	if (off > p->end)
		p->end = off;
	return 0;
}

static int apply_meta(int fd, const struct place_meta *m)
{
	if (m->chown && fchown(fd, m->uid, m->gid) < 0)
		return -1;
	if (m->chmod && fchmod(fd, m->mode) < 0)
		return -1;
	if (m->set_times && futimens(fd, m->times) < 0)
		return -1;
	return 0;
}

int place_finish(struct placer *p, struct gerr *err)
{
	if (p->fd < 0)
		return 0;
	int r = 0;
	/* A sparse file's hole at the end has no data block. */
	if (p->size > p->end && ftruncate(p->fd, (off_t)p->size) < 0)
		r = fail(p, err, "set its size");
	else if (apply_meta(p->fd, &p->meta) < 0)
		r = fail(p, err, "set owner, mode and times");
	close(p->fd);
	p->fd = -1;
	return r;
}

static size_t depth(const char *path)
{
	size_t d = *path != '\0';
	for (; *path; path++)
		d += *path == '/';
	return d;
}

static int deeper_first(const void *a, const void *b)
{
	size_t da = depth(((const struct dir_fixup *)a)->path), db = depth(((const struct dir_fixup *)b)->path);
	return da < db ? 1 : da > db ? -1 : 0;
}

int place_close(struct placer *p, struct gerr *err)
{
	if (p->nfix > 1)
		qsort(p->fix, p->nfix, sizeof *p->fix, deeper_first);
	for (size_t i = 0; i < p->nfix; i++) {
		const struct dir_fixup *f = &p->fix[i];
		int fd = open_beneath_nofollow(p->root, f->path, O_RDONLY | O_DIRECTORY);
		if (fd < 0 && (errno == ENOENT || errno == ENOTDIR || errno == ELOOP))
			continue; /* a later entry replaced it */
		if (fd < 0 || apply_meta(fd, &f->meta) < 0) {
			char q[QUOTED_NAME_MAX];
			quote_name(q, sizeof q, *f->path ? f->path : ".");
			int e = errno;
			if (fd >= 0)
				close(fd);
			return gerr_set(err, e, "set the mode and times of directory '%s'", q);
		}
		close(fd);
	}
	return 0;
}
