/* rootfs/unpack/unpack.c — unpacking an image archive into the container root.
 *
 * The archive is hostile input and the unpack runs with the launcher's
 * privileges, so each entry passes three gates before it is made: our
 * lexical path check (so that the error names the entry), the entry-type
 * policy (no device nodes, FIFOs or sockets, nothing below dev/: the
 * container gets its own /dev), and rootfs/unpack/place.c, which makes it without
 * following any symlink on the way.  libarchive reads and parses; every
 * libarchive status other than OK ends the unpack: a damaged header that the
 * reader would skip, or a truncated stream, must not become a silently
 * shorter root file system.  The partial tree is left for the caller, which
 * throws its scratch file system away.  An unprivileged caller whose
 * launches get the full map of its subordinate ids unpacks into the cache
 * through a child that is root of that map (unpack_in_map), so that the
 * image's files keep their owners. */
#include "stream_int.h"

#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#define GIB (1024ULL * 1024 * 1024)
#define TAR_BLOCK 512
#define TAR_READ_BLOCK (1024 * 1024)

const struct unpack_limits unpack_default_limits = {
	.max_entries = 2000000,
	.max_path = 4096,
	.max_bytes = 64 * GIB,
};

/* What is made: modes exactly (a 1777 /tmp stays 1777) and mtimes.  Never
 * xattrs, ACLs or file flags: file capabilities, trusted.* xattrs and
 * immutable files.  Owners only with UNPACK_KEEP_OWNER: the launcher asks
 * for it as root, where the target is a tmpfs private to a mount namespace
 * no host process shares, so /home/alice can belong to alice as in the
 * image. */
struct unpacker {
	unsigned flags;
	const struct unpack_limits *lim;
	struct unpack_stats *st;
	struct gerr *err;
	struct archive *in;
	struct placer out;
	struct fd_source src;             /* the image, or the blocks from the decompressor thread */
	size_t seen;                      /* entries read, written or not */
	la_int64_t entry_end;             /* tar stream offset after the last entry */
	int read_failed;                  /* err comes from reading: the decompressor may know better */
	const struct unpack_hooks *hooks; /* never NULL */
};

/* NULL when path is acceptable as an entry name or hard-link target, else
 * what is wrong with it.  A leading "./" (and the entry "./" itself) is what
 * `tar -C dir .` writes, so "." components are fine; ".." never is. */
static const char *path_problem(const char *path, size_t max_path)
{
	if (!*path)
		return "empty path";
	if (strlen(path) > max_path)
		return "path too long";
	if (*path == '/')
		return "absolute path";
	for (const char *p = path; *p; p++) {
		if ((p == path || p[-1] == '/') && p[0] == '.' && p[1] == '.' && (p[2] == '/' || !p[2]))
			return "path contains '..'";
	}
	return NULL;
}

static int path_error(struct gerr *err, const char *entry, const char *target, const char *problem, size_t max_path)
{
	char qe[QUOTED_NAME_MAX], qt[QUOTED_NAME_MAX], why[64];
	quote_name(qe, sizeof qe, entry);
	if (!strcmp(problem, "path too long")) {
		snprintf(why, sizeof why, "path longer than %zu bytes", max_path);
		problem = why;
	}
	if (!target)
		return gerr_set(err, 0, "entry '%s': %s", qe, problem);
	quote_name(qt, sizeof qt, target);
	return gerr_set(err, 0, "entry '%s': hard link target '%s': %s", qe, qt, problem);
}

int rootfs_check_entry_path(const char *path, struct gerr *err)
{
	const char *problem = path_problem(path, unpack_default_limits.max_path);
	if (problem)
		return path_error(err, path, NULL, problem, unpack_default_limits.max_path);
	return 0;
}

/* Skip "." components and slashes; returns the start of the next real
 * component or of the terminating NUL. */
static const char *next_component(const char *p)
{
	for (;;) {
		while (*p == '/')
			p++;
		if (p[0] == '.' && (p[1] == '/' || !p[1]))
			p++;
		else
			return p;
	}
}

/* 1 when path names something below dev/, 2 when it names dev itself.
 * gpurun mounts its own /dev, and debootstrap or `docker export` trees carry
 * device nodes and placeholders there (Charliecloud and enroot skip dev/ too). */
static int dev_relation(const char *path)
{
	const char *p = next_component(path);
	if (strncmp(p, "dev", 3) || (p[3] && p[3] != '/'))
		return 0;
	return *next_component(p + 3) ? 1 : 2;
}

/* A reading failure: the tar stream itself (truncated, damaged) or, when the
 * pipe was cut short, the decompressor, which the caller asks afterwards. */
static int read_error(struct unpacker *u, int status, struct archive_entry *e)
{
	const char *msg = reader_error(u->in);
	u->read_failed = 1;
	if (status == ARCHIVE_RETRY)
		return gerr_set(u->err, 0, "damaged tar header");
	if (u->seen == 0 && archive_errno(u->in) == LA_ERRNO_FILE_FORMAT)
		return gerr_set(u->err, 0, u->src.total ? "not a tar archive" : "archive has no entries");
	if (u->src.eof && status == ARCHIVE_FATAL)
		return gerr_set(u->err, 0, "truncated archive");
	if (e && archive_entry_pathname(e)) {
		char qe[QUOTED_NAME_MAX];
		quote_name(qe, sizeof qe, archive_entry_pathname(e));
		return gerr_set(u->err, 0, "entry '%s': %s", qe, msg ? msg : "cannot be read");
	}
	return gerr_set(u->err, 0, "%s", msg ? msg : "cannot read the archive");
}

/* what: "of file data" (written) or "after decompression" (the stream). */
static int size_error(struct gerr *err, unsigned long long max, const char *what)
{
	if (max % GIB == 0)
		return gerr_set(err, 0, "more than %llu GiB %s", max / GIB, what);
	return gerr_set(err, 0, "more than %llu bytes %s", max, what);
}

static int copy_data(struct unpacker *u, struct archive_entry *e)
{
	for (;;) {
		const void *buf;
		size_t size;
		la_int64_t off;
		int r = archive_read_data_block(u->in, &buf, &size, &off);
		if (r == ARCHIVE_EOF)
			return 0;
		if (r != ARCHIVE_OK)
			return read_error(u, r, e);
		/* Counts what is written: the holes of a sparse file cost nothing. */
		if (size > u->lim->max_bytes - u->st->bytes)
			return size_error(u->err, u->lim->max_bytes, "of file data");
		/* Before the write, so that the cap is never passed on disk. */
		const struct image_budget *b = u->lim->image;
		if (b && size > b->max - b->used - u->st->bytes)
			return image_cap_error(u->err, b->max);
		if (place_data(&u->out, buf, size, off, u->err) < 0)
			return -1;
		u->st->bytes += size;
	}
}

/* In the merged view of the lower layers, is some directory of path (a
 * layer-relative directory) a symlink or not a directory?  The topmost
 * lower layer that has an entry decides, as overlayfs would. */
static int through_lower_symlink(const struct unpacker *u, const char *path)
{
	const struct lower_layers *lw = u->hooks->lowers;
	_cleanup_free_ char *copy = xstrdup(path);
	size_t len = strlen(copy);
	for (size_t end = 0; lw && end <= len; end++) {
		if (copy[end] != '/' && copy[end] != '\0')
			continue;
		char saved = copy[end];
		copy[end] = '\0';
		const char *prefix = copy + strspn(copy, "/");
		for (size_t i = 0; *prefix && strcmp(prefix, ".") && i < lw->n; i++) {
			struct open_how how = {.flags = O_PATH | O_CLOEXEC,
					       .resolve =
						       RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS};
			int fd = (int)syscall(SYS_openat2, lw->fds[i], prefix, &how, sizeof how);
			if (fd < 0 && errno == ENOENT)
				continue;
			if (fd < 0) {
				copy[end] = saved;
				return 1; /* ELOOP, ENOTDIR: a symlink or a file on the way */
			}
			struct stat st;
			int dir = fstat(fd, &st) == 0 && S_ISDIR(st.st_mode);
			close(fd);
			if (!dir) {
				copy[end] = saved;
				return 1;
			}
			break;
		}
		copy[end] = saved;
	}
	return 0;
}

/* A layer's whiteout entry, checked here and made by rootfs/unpack/whiteout.c. */
static int whiteout(struct unpacker *u, const char *path, const char *base)
{
	char qe[QUOTED_NAME_MAX];
	quote_name(qe, sizeof qe, path);
	const char *name = base + strlen(WHITEOUT_PREFIX);
	if (!strcmp(base, WHITEOUT_OPAQUE))
		name = NULL;
	else if (!*name || !strcmp(name, ".") || !strcmp(name, ".."))
		return gerr_set(u->err, 0, "entry '%s': whiteout of '%s'", qe, name);
	_cleanup_free_ char *parent = xstrndup(path, (size_t)(base - path));
	if (through_lower_symlink(u, parent))
		return gerr_set(u->err, 0, "entry '%s': whiteout passes through a symlink", qe);
	/* Inside the layer: one that routes a whiteout through a symlink is
	 * refused rather than resolved. */
	int dfd = place_dir(&u->out, parent, 1);
	if (dfd < 0)
		return gerr_set(u->err, errno == ELOOP || errno == ENOTDIR ? 0 : errno, "entry '%s': %s", qe,
				errno == ELOOP || errno == ENOTDIR ? "whiteout passes through a symlink"
								   : "cannot be made");
	if (!name && whiteout_opaque(dfd) < 0)
		return gerr_set(u->err, errno, "entry '%s': mark the directory opaque", qe);
	if (name && whiteout_make(dfd, name) < 0)
		return gerr_set(u->err, errno, "entry '%s': make the whiteout", qe);
	u->st->whiteouts++;
	return 0;
}

static int unpack_entry(struct unpacker *u, struct archive_entry *e)
{
	const char *path = archive_entry_pathname(e), *link = archive_entry_hardlink(e), *problem;
	if (!path)
		return gerr_set(u->err, 0, "entry %zu has no usable name", u->seen);
	if ((problem = path_problem(path, u->lim->max_path)))
		return path_error(u->err, path, NULL, problem, u->lim->max_path);
	if (link && (problem = path_problem(link, u->lim->max_path)))
		return path_error(u->err, path, link, problem, u->lim->max_path);
	if (u->flags & UNPACK_LAYER) {
		const char *slash = strrchr(path, '/'), *base = slash ? slash + 1 : path;
		if (!strncmp(base, WHITEOUT_PREFIX, strlen(WHITEOUT_PREFIX)))
			return whiteout(u, path, base);
	}

	/* A hard link has no type of its own (0); it is made with link(2). */
	mode_t type = link ? AE_IFREG : archive_entry_filetype(e);
	int dev = dev_relation(path);
	/* A hard link into dev/ would point at an entry that was not created. */
	if (dev == 1 || (dev == 2 && type != AE_IFDIR) || (link && dev_relation(link))) {
		u->st->dev_skipped++;
		return 0;
	}
	switch (type) {
	case AE_IFCHR:
	case AE_IFBLK:
	case AE_IFIFO:
	case AE_IFSOCK:
		/* Never mknod: a node an image chose could reach host devices
		 * (or defeat GPU selection), and a FIFO hangs whoever reads it. */
		u->st->devices_skipped++;
		return 0;
	case AE_IFREG:
	case AE_IFDIR:
	case AE_IFLNK: break;
	default: {
		char qe[QUOTED_NAME_MAX];
		quote_name(qe, sizeof qe, path);
		return gerr_set(u->err, 0, "entry '%s': unsupported file type %#o", qe, (unsigned)type);
	}
	}

	mode_t perm = archive_entry_perm(e);
	if (u->flags & UNPACK_CLEAR_SUID)
		perm &= ~(mode_t)(S_ISUID | S_ISGID);
	/* A 0555 directory would refuse its own children. */
	if (type == AE_IFDIR)
		perm |= S_IRWXU;
	archive_entry_set_perm(e, perm);

	if (place_entry(&u->out, e, path, link, type, u->err) < 0)
		return -1;
	if (type == AE_IFREG && copy_data(u, e) < 0)
		return -1;
	if (place_finish(&u->out, u->err) < 0)
		return -1;
	u->st->entries++;
	return 0;
}

static int unpack_all(struct unpacker *u)
{
	for (;;) {
		struct archive_entry *e;
		int r = archive_read_next_header(u->in, &e);
		if (r == ARCHIVE_EOF)
			break;
		if (r != ARCHIVE_OK)
			return read_error(u, r, r == ARCHIVE_WARN ? e : NULL);
		if (++u->seen > u->lim->max_entries)
			return gerr_set(u->err, 0, "more than %zu entries", u->lim->max_entries);
		if (unpack_entry(u, e) < 0)
			return -1;
		if (u->hooks->progress)
			u->hooks->progress(u->hooks->progress_ctx, u->st);
		/* Consume the rest of the entry (a skipped entry's data, the
		 * padding) so that the offset below is where the next header
		 * starts. */
		r = archive_read_data_skip(u->in);
		if (r != ARCHIVE_OK)
			return read_error(u, r, e);
		u->entry_end = archive_filter_bytes(u->in, 0);
	}
	if (u->seen == 0) {
		u->read_failed = 1;
		return gerr_set(u->err, 0, "archive has no entries");
	}
	/* The tar reader also ends quietly when the stream stops right at a
	 * header boundary, because some writers omit the end-of-archive zero
	 * blocks.  A real end consumed at least one zero block. */
	if (archive_filter_bytes(u->in, 0) - u->entry_end < TAR_BLOCK) {
		u->read_failed = 1;
		return gerr_set(u->err, 0, "truncated archive");
	}
	return place_close(&u->out, u->err);
}

/* After the thread has stopped: when the tar side saw its input end early
 * (or saw no failure at all), the decompressor's reason is the real one. */
static int stream_verdict(const struct stream *s, int rc, const struct unpacker *u)
{
	if (s->check.bad)
		return gerr_set(u->err, 0, "decompression failed: %s", s->check.msg);
	if (!s->failed || (rc < 0 && !u->read_failed))
		return rc;
	if (s->too_big)
		return size_error(u->err, u->lim->max_bytes, "after decompression");
	if (s->src.shrank)
		return gerr_set(u->err, 0, "the file was cut short while it was read");
	if (s->src.read_errno)
		return gerr_set(u->err, s->src.read_errno, "read");
	if (s->truncated)
		return gerr_set(u->err, 0, "truncated archive");
	return gerr_set(u->err, 0, "decompression failed: %s", s->msg);
}

/* The reading side of an unpack, which may run ahead of the writing side. */
struct unpack_job {
	struct stream s;
	struct fd_source tar_src;
	int threaded;
	struct unpack_limits lim;
	struct image_budget whole; /* the archive is a whole image (rootfs_unpack_start) */
	int in_fd;                 /* ... read from this file */
};

static int job_start(struct unpack_job *j, const struct fd_source *in, struct digest_ctx *tar_hash, const char *name,
		     const struct unpack_limits *lim, struct gerr *err)
{
	memset(j, 0, sizeof *j);
	j->tar_src = *in;
	j->lim = *lim;
	j->in_fd = -1;
	/* A plain tar goes straight to the tar reader (a thread would only
	 * copy it through the pipe), unless it must be hashed: then the thread
	 * hashes while this one writes files. */
	j->threaded = compression_at(in) != NULL || tar_hash || in->hash;
	if (j->threaded && stream_start(&j->s, in, tar_hash, lim->max_bytes, &j->tar_src, err) < 0)
		return gerr_prefix(err, "unpack %s", name);
	j->tar_src.block = TAR_READ_BLOCK;
	j->tar_src.buf = NULL;
	return 0;
}

/* The writing side: the entries made in dirfd; *read_failed says whether
 * err comes from reading.  The error is not prefixed yet. */
static int job_run(struct unpack_job *j, int dirfd, unsigned flags, const struct unpack_hooks *hooks,
		   struct unpack_stats *st, struct gerr *err, int *read_failed)
{
	static const struct unpack_hooks no_hooks;
	memset(st, 0, sizeof *st);
	void *saved_locale = locale_utf8_enter();
	struct unpacker u = {
		.flags = flags,
		.lim = &j->lim,
		.st = st,
		.err = err,
		.in = reader_new(1, 0),
		.src = j->tar_src,
		.hooks = hooks ? hooks : &no_hooks,
	};
	*read_failed = 0;
	if (!u.in) {
		locale_restore(saved_locale);
		if (j->threaded) {
			handoff_close_reader(&j->s.q);
			stream_join(&j->s);
		}
		return gerr_set(err, 0, "%s", READER_SETUP_FAILED);
	}
	place_init(&u.out, dirfd, flags);

	/* A plain tar is read in place from the page cache: a read() would
	 * copy all of it once more. */
	sigset_t mask;
	if (!j->threaded && source_map(&u.src))
		source_watch(&u.src, &mask);
	int rc;
	if (source_open(u.in, &u.src) != ARCHIVE_OK)
		rc = read_error(&u, ARCHIVE_FATAL, NULL);
	else
		rc = unpack_all(&u);
	/* Let the decompressor finish (trailing padding, or the rest of a
	 * stream the tar reader gave up on) so that its verdict, below, does
	 * not depend on which thread was faster.  Bounded by its byte cap. */
	if (j->threaded && (rc == 0 || u.read_failed))
		(void)source_drain(&u.src); /* checked, too: struct frame_check */
	/* A digest covers the whole input, also what follows the tar's end. */
	if (!j->threaded && rc == 0 && (u.src.hash || u.src.hash2) && source_drain(&u.src) < 0)
		rc = gerr_set(err, u.src.read_errno, "read");
	/* Whatever the tar side made of it (zeros may read as a quiet end). */
	if (source_unwatch(&u.src, &mask))
		rc = gerr_set(err, 0, "the file was cut short while it was read");

	archive_read_free(u.in);
	place_free(&u.out);
	source_free(&u.src);
	if (j->threaded) {
		handoff_close_reader(&j->s.q);
		stream_join(&j->s);
		rc = stream_verdict(&j->s, rc, &u);
	}
	locale_restore(saved_locale);
	*read_failed = u.read_failed;
	return rc;
}

static int job_finish(struct unpack_job *j, const char *name, int dirfd, unsigned flags,
		      const struct unpack_hooks *hooks, struct unpack_stats *st, struct gerr *err)
{
	int read_failed;
	if (job_run(j, dirfd, flags, hooks, st, err, &read_failed) < 0)
		return gerr_prefix(err, "unpack %s", name);
	return 0;
}

/* ---- under the cache's id map -------------------------------------------- */

/* The tar stream goes from this process, which reads, verifies and
 * decompresses it as it always does (a registry blob may still be arriving
 * here), over a socket to a child that is root of the launch's full id map
 * and makes the entries: its chown calls give the files the image's owners
 * as ids of the caller's range.  Every gate of an unpack holds there, the
 * same code making the same checks; only the owners differ. */
struct map_unpack {
	struct unpack_job j;
	int sv[2];
	int dirfd;
	unsigned flags;
	const struct unpack_hooks *hooks;
	int pump_errno; /* reading the stream here failed */
};

struct map_answer {
	struct unpack_stats st;
	int read_failed;
};

static int map_child(void *arg, void *result, struct gerr *err)
{
	struct map_unpack *m = arg;
	struct map_answer *a = result;
	close(m->sv[0]);
	struct unpack_job j = {.lim = m->j.lim, .in_fd = -1};
	j.tar_src = (struct fd_source){.fd = m->sv[1], .block = TAR_READ_BLOCK};
	if (job_run(&j, m->dirfd, m->flags, m->hooks, &a->st, err, &a->read_failed) < 0)
		return -1;
	/* The tree's top is the caller's, whatever the image said of "./":
	 * the caller renames it into layers/ (the overlay takes the root's
	 * owner from its upper layer anyway).  The caller is root of the map,
	 * or its own ids with --userns keep-id. */
	if (fchown(m->dirfd, m->hooks->map->in_uid, m->hooks->map->in_gid) < 0)
		return gerr_set(err, errno, "chown the unpacked tree's top");
	return 0;
}

/* send(2) without SIGPIPE: the child may have stopped reading. */
static int send_all(int fd, const void *buf, size_t n)
{
	for (size_t done = 0; done < n;) {
		ssize_t r = send(fd, (const char *)buf + done, n - done, MSG_NOSIGNAL);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -1;
		done += (size_t)r;
	}
	return 0;
}

static int map_pump(void *arg, struct gerr *err)
{
	struct map_unpack *m = arg;
	(void)err;
	close(m->sv[1]);
	m->sv[1] = -1;
	struct fd_source *src = &m->j.tar_src;
	if (!src->from && !src->buf)
		src->buf = xmalloc(src->block);
	for (;;) {
		ssize_t n = source_next(src);
		if (n < 0)
			m->pump_errno = src->read_errno;
		if (n <= 0)
			break;
		/* The child stops reading where the tar ends, or at its first
		 * refusal: what is left is read below, for the digests. */
		if (send_all(m->sv[0], src->data, (size_t)n) < 0)
			break;
	}
	close(m->sv[0]);
	m->sv[0] = -1;
	return 0;
}

static int unpack_in_map(const struct subids *map, const struct fd_source *in, struct digest_ctx *tar_hash,
			 const char *name, int dirfd, unsigned flags, const struct unpack_limits *lim,
			 const struct unpack_hooks *hooks, struct unpack_stats *st, struct gerr *err)
{
	struct map_unpack m = {.dirfd = dirfd, .flags = flags, .hooks = hooks, .sv = {-1, -1}};
	struct map_answer a = {0};
	memset(st, 0, sizeof *st);
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, m.sv) < 0)
		return gerr_set(err, errno, "unpack %s: socketpair", name);
	if (job_start(&m.j, in, tar_hash, name, lim, err) < 0) {
		close(m.sv[0]);
		close(m.sv[1]);
		return -1;
	}
	struct idmap_work w = {
		.fn = map_child, .arg = &m, .result = &a, .result_len = sizeof a, .during = map_pump, .during_arg = &m};
	int rc = idmap_run(map, &w, err);
	for (int i = 0; i < 2; i++)
		if (m.sv[i] >= 0)
			close(m.sv[i]);
	struct fd_source *src = &m.j.tar_src;
	if (m.j.threaded) {
		/* As job_run: the decompressor's verdict does not depend on
		 * where the tar side stopped. */
		if (rc == 0 || a.read_failed)
			(void)source_drain(src);
		handoff_close_reader(&m.j.s.q);
		stream_join(&m.j.s);
		struct unpacker u = {.lim = &m.j.lim, .err = err, .read_failed = a.read_failed || m.pump_errno};
		rc = stream_verdict(&m.j.s, rc, &u);
	} else if (m.pump_errno && (rc == 0 || a.read_failed)) {
		rc = gerr_set(err, m.pump_errno, "read");
	} else if (rc == 0 && (src->hash || src->hash2) && source_drain(src) < 0) {
		rc = gerr_set(err, src->read_errno, "read");
	}
	source_free(src);
	*st = a.st;
	if (rc < 0)
		return gerr_prefix(err, "unpack %s", name);
	return 0;
}

int unpack_source(const struct fd_source *in, struct digest_ctx *tar_hash, const char *name, int dirfd, unsigned flags,
		  const struct unpack_limits *lim, const struct unpack_hooks *hooks, struct unpack_stats *st,
		  struct gerr *err)
{
	/* Owners kept by an unprivileged caller: only the root of its full
	 * id map can give them (the cache's area of that map). */
	const struct subids *map = (flags & UNPACK_KEEP_OWNER) && geteuid() != 0 && hooks ? hooks->map : NULL;
	if (map)
		return unpack_in_map(map, in, tar_hash, name, dirfd, flags, lim, hooks, st, err);
	struct unpack_job j;
	if (job_start(&j, in, tar_hash, name, lim, err) < 0)
		return -1;
	return job_finish(&j, name, dirfd, flags, hooks, st, err);
}

int rootfs_unpack_limited(int in_fd, const char *name, int dirfd, unsigned flags, const struct unpack_limits *lim,
			  struct unpack_stats *st, struct gerr *err)
{
	struct fd_source in = {.fd = in_fd};
	return unpack_source(&in, NULL, name, dirfd, flags, lim, NULL, st, err);
}

/* A whole image: the cap on an image's size applies to this one archive. */
static void whole_image(struct unpack_job *j, int in_fd)
{
	j->whole = (struct image_budget){.max = rootfs_max_image_size()};
	j->lim.image = &j->whole;
	j->in_fd = in_fd;
}

struct unpack_job *rootfs_unpack_start(int in_fd, const char *name, struct gerr *err)
{
	struct unpack_job *j = xmalloc(sizeof *j);
	struct fd_source in = {.fd = in_fd};
	if (job_start(j, &in, NULL, name, &unpack_default_limits, err) < 0) {
		free(j);
		return NULL;
	}
	whole_image(j, in_fd);
	return j;
}

int rootfs_unpack_finish(struct unpack_job *j, const char *name, int dirfd, unsigned flags, struct unpack_stats *st,
			 struct gerr *err)
{
	if (archive_room_check(j->in_fd, name, dirfd, err) < 0) {
		memset(st, 0, sizeof *st);
		rootfs_unpack_abandon(j);
		return -1;
	}
	int r = job_finish(j, name, dirfd, flags, NULL, st, err);
	free(j);
	return r;
}

void rootfs_unpack_abandon(struct unpack_job *j)
{
	if (!j)
		return;
	if (j->threaded) {
		handoff_close_reader(&j->s.q);
		stream_join(&j->s);
	}
	free(j);
}

int rootfs_unpack(int in_fd, const char *name, int dirfd, unsigned flags, struct unpack_stats *st, struct gerr *err)
{
	struct unpack_job j;
	struct fd_source in = {.fd = in_fd};
	if (archive_room_check(in_fd, name, dirfd, err) < 0 ||
	    job_start(&j, &in, NULL, name, &unpack_default_limits, err) < 0)
		return -1;
	whole_image(&j, in_fd);
	return job_finish(&j, name, dirfd, flags, NULL, st, err);
}
