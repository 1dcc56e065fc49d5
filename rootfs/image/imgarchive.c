/* rootfs/image/imgarchive.c — reading an image as it is held: an archive (a
 * `docker save` tar, or an OCI layout packed as a tar, any compression
 * libarchive reads) listed once into its members, or an OCI layout
 * directory whose files are opened beneath it, and from either the JSON
 * documents whole, at most IMAGE_JSON_MAX bytes.
 *
 * The archive is read once: its small members (JSON, and small layers) into
 * memory, the others located by offset (a plain tar) or copied to unnamed
 * temporary files in the cache (a compressed tar cannot be sought in).  A
 * JSON document too large for that memory is read from there (or, in a dry
 * run of a compressed archive, by reading the archive again up to it). */
#include "image_int.h"

#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <linux/openat2.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#define MEMBER_MEM_MAX (1 << 20) /* members up to this size are kept in memory */
#define MEMBERS_MEM_TOTAL \
	(32ULL << 20) /* ... up to this much in all (the rest is
					      * found again by offset, or spooled) */
#define IMAGE_MAX_MEMBERS 100000

static const char *skip_dot_slash(const char *p)
{
	while (p[0] == '.' && p[1] == '/')
		p += 2;
	return p;
}

/* ---- reading the archive once ------------------------------------------- */

/* Before an import writes: the cache's file system must have room for at
 * least need bytes, what the layers still to unpack take in the image
 * (packed, a lower bound of what they unpack to, but for archives of empty
 * files).  Refused now, in one line, rather than when the disk is full. */
int room_for(const struct isrc *s, unsigned long long need, const char *what, struct gerr *err)
{
	_cleanup_free_ char *who = xasprintf("image %s", s->name);
	return room_check(s->c->fd, need, who, what, s->c->root, err);
}

static int spool_member(struct isrc *s, struct archive *a, struct member *m, struct gerr *err)
{
	/* Unnamed: nothing to clean up if the launch is killed. */
	m->spool_fd = openat(s->c->fd, "tmp", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
	if (m->spool_fd < 0)
		return gerr_set(err, errno, "image %s: temporary file in %s/tmp", s->name, s->c->root);
	for (;;) {
		const void *buf;
		size_t size;
		la_int64_t off;
		int r = archive_read_data_block(a, &buf, &size, &off);
		if (r == ARCHIVE_EOF)
			return 0;
		if (r != ARCHIVE_OK)
			return gerr_set(err, 0, "image %s: member '%s': %s", s->name, m->name,
					reader_error(a) ? reader_error(a) : "cannot be read");
		if (pwrite(m->spool_fd, buf, size, off) != (ssize_t)size)
			return gerr_set(err, errno ? errno : EIO, "image %s: copy member '%s' to %s/tmp", s->name,
					m->name, s->c->root);
	}
}

static int read_member(struct isrc *s, struct archive *a, struct member *m, struct gerr *err)
{
	m->data = xmalloc(m->size + 1);
	la_ssize_t got = 0;
	while ((unsigned long long)got < m->size) {
		la_ssize_t r = archive_read_data(a, m->data + got, m->size - (size_t)got);
		if (r < 0)
			return gerr_set(err, 0, "image %s: member '%s': %s", s->name, m->name,
					reader_error(a) ? reader_error(a) : "cannot be read");
		if (r == 0)
			break;
		got += r;
	}
	if ((unsigned long long)got != m->size)
		return gerr_set(err, 0, "image %s: member '%s': truncated archive", s->name, m->name);
	m->data[m->size] = '\0';
	s->mem += m->size;
	return 0;
}

int isrc_index_archive(struct isrc *s, struct gerr *err)
{
	struct archive *a = reader_new(1, 1);
	if (!a)
		return gerr_set(err, 0, "image %s: %s", s->name, READER_SETUP_FAILED);
	struct fd_source src = {.fd = s->fd, .block = INDEX_READ_BLOCK};
	s->compressed = compression_of(s->fd) != NULL;
	/* A compressed archive's layers are copied out of it first. */
	struct stat st;
	if (s->compressed && !(s->flags & IMAGE_DRY_RUN) && fstat(s->fd, &st) == 0 &&
	    room_for(s, (unsigned long long)st.st_size, "the archive's size: its layers are copied out of it first",
		     err) < 0) {
		archive_read_free(a);
		return -1;
	}
	int rc = 0;
	void *locale = locale_utf8_enter();
	if (lseek(s->fd, 0, SEEK_SET) < 0 || source_open(a, &src) != ARCHIVE_OK) {
		rc = gerr_set(err, src.read_errno, "image %s: cannot read the archive", s->name);
		goto out;
	}
	for (;;) {
		struct archive_entry *e;
		int r = archive_read_next_header(a, &e);
		if (r == ARCHIVE_EOF)
			break;
		if (r != ARCHIVE_OK) {
			rc = gerr_set(err, 0, "image %s: %s", s->name,
				      src.eof           ? "truncated archive"
				      : reader_error(a) ? reader_error(a)
							: "damaged archive");
			goto out;
		}
		const char *path = archive_entry_pathname(e);
		struct gerr perr = {0};
		if (!path || rootfs_check_entry_path(path, &perr) < 0) {
			rc = gerr_set(err, 0, "image %s: member %s", s->name, path ? perr.msg : "without a name");
			goto out;
		}
		if (s->n == IMAGE_MAX_MEMBERS) {
			rc = gerr_set(err, 0, "image %s: more than %d members", s->name, IMAGE_MAX_MEMBERS);
			goto out;
		}
		if (s->n == s->cap) {
			s->cap = s->cap ? 2 * s->cap : 64;
			s->m = xrealloc(s->m, s->cap * sizeof *s->m);
		}
		struct member *m = &s->m[s->n++];
		memset(m, 0, sizeof *m);
		m->spool_fd = -1;
		m->name = xstrdup(skip_dot_slash(path));
		mode_t t = archive_entry_filetype(e);
		m->type = archive_entry_hardlink(e) || t == AE_IFLNK ? 'l'
			  : t == AE_IFREG                            ? 'f'
			  : t == AE_IFDIR                            ? 'd'
								     : 'o';
		if (m->type != 'f')
			continue;
		m->size = (unsigned long long)archive_entry_size(e);
		m->offset = (unsigned long long)archive_filter_bytes(a, 0);
		if (m->size <= MEMBER_MEM_MAX && s->mem + m->size <= MEMBERS_MEM_TOTAL)
			rc = read_member(s, a, m, err);
		else if (s->compressed && !(s->flags & IMAGE_DRY_RUN))
			rc = spool_member(s, a, m, err);
		if (rc < 0)
			goto out;
	}
	if (src.read_errno)
		rc = gerr_set(err, src.read_errno, "image %s: read", s->name);
out:
	locale_restore(locale);
	archive_read_free(a);
	source_free(&src);
	return rc;
}

struct member *isrc_find_member(struct isrc *s, const char *name)
{
	name = skip_dot_slash(name);
	for (size_t i = s->n; i-- > 0;) /* the last one wins, as with tar -x */
		if (!strcmp(s->m[i].name, name))
			return &s->m[i];
	return NULL;
}

/* A file of an OCI layout directory: never through a symlink, never out. */
int isrc_dir_open(struct isrc *s, const char *name, struct stat *st, struct gerr *err)
{
	struct open_how how = {.flags = O_RDONLY | O_CLOEXEC | O_NONBLOCK,
			       .resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS};
	int fd = (int)syscall(SYS_openat2, s->dirfd, skip_dot_slash(name), &how, sizeof how);
	if (fd < 0) {
		if (errno == ELOOP)
			return gerr_set(err, 0, "image %s: '%s' is a symbolic link", s->name, name);
		return gerr_set(err, errno, "image %s: %s", s->name, name);
	}
	if (fstat(fd, st) < 0 || !S_ISREG(st->st_mode)) {
		close(fd);
		return gerr_set(err, 0, "image %s: '%s' is not a regular file", s->name, name);
	}
	return fd;
}

/* A member the first reading did not keep (above MEMBER_MEM_MAX, or past
 * MEMBERS_MEM_TOTAL) that is wanted whole after all: a JSON document of up
 * to IMAGE_JSON_MAX.  From its copy in the cache or its place in a plain
 * tar, else (a compressed archive in a dry run, which copies nothing) by
 * reading the archive again up to it.  The caller has checked its size. */
static int load_member(struct isrc *s, struct member *m, struct gerr *err)
{
	char q[QUOTED_NAME_MAX];
	quote_name(q, sizeof q, m->name);
	int fd = m->spool_fd >= 0 ? m->spool_fd : !s->compressed ? s->fd : -1;
	unsigned long long at = m->spool_fd >= 0 ? 0 : m->offset;
	if (fd >= 0) {
		char *data = xmalloc(m->size + 1);
		size_t got = 0;
		while (got < m->size) {
			ssize_t r = pread(fd, data + got, m->size - got, (off_t)(at + got));
			if (r < 0 && errno == EINTR)
				continue;
			if (r <= 0) {
				free(data);
				return gerr_set(err, r < 0 ? errno : 0, "image %s: member '%s'%s", s->name, q,
						r < 0 ? "" : ": truncated archive");
			}
			got += (size_t)r;
		}
		data[m->size] = '\0';
		m->data = data;
		s->mem += m->size;
		return 0;
	}
	struct archive *a = reader_new(1, 1);
	if (!a)
		return gerr_set(err, 0, "image %s: %s", s->name, READER_SETUP_FAILED);
	struct fd_source src = {.fd = s->fd, .block = INDEX_READ_BLOCK};
	size_t want = (size_t)(m - s->m), i = 0;
	int rc = -1;
	void *locale = locale_utf8_enter();
	if (lseek(s->fd, 0, SEEK_SET) < 0 || source_open(a, &src) != ARCHIVE_OK) {
		gerr_set(err, src.read_errno, "image %s: cannot read the archive", s->name);
		goto out;
	}
	/* The members come in the order the first reading listed them. */
	for (;; i++) {
		struct archive_entry *e;
		const char *path;
		int r = archive_read_next_header(a, &e);
		if (r == ARCHIVE_OK && i < want)
			continue;
		if (r != ARCHIVE_OK || !(path = archive_entry_pathname(e)) || strcmp(skip_dot_slash(path), m->name) ||
		    (unsigned long long)archive_entry_size(e) != m->size) {
			gerr_set(err, src.read_errno, "image %s: member '%s': the archive changed while it was read",
				 s->name, q);
			goto out;
		}
		break;
	}
	rc = read_member(s, a, m, err);
out:
	locale_restore(locale);
	archive_read_free(a);
	source_free(&src);
	return rc;
}

/* A JSON member, whole, at most IMAGE_JSON_MAX bytes (refused before it is
 * read).  Returns the text (owned by s for archives; *owned otherwise). */
static const char *member_text(struct isrc *s, const char *name, size_t *len, char **owned, struct gerr *err)
{
	*owned = NULL;
	if (s->dirfd >= 0) {
		struct stat st;
		int fd = isrc_dir_open(s, name, &st, err);
		if (fd < 0)
			return NULL;
		if (st.st_size > IMAGE_JSON_MAX) {
			close(fd);
			gerr_set(err, 0, "image %s: %s is larger than %d bytes", s->name, name, IMAGE_JSON_MAX);
			return NULL;
		}
		/* One byte more than the cap: read_fd_max() refuses a file
		 * that fills its limit exactly. */
		*owned = read_fd_max(fd, name, IMAGE_JSON_MAX + 1, len, err);
		close(fd);
		if (*owned && *len > IMAGE_JSON_MAX) {
			free(*owned);
			*owned = NULL;
			gerr_set(err, 0, "image %s: %s is larger than %d bytes", s->name, name, IMAGE_JSON_MAX);
			return NULL;
		}
		if (!*owned)
			gerr_prefix(err, "image %s", s->name);
		return *owned;
	}
	struct member *m = isrc_find_member(s, name);
	if (!m) {
		gerr_set(err, 0, "image %s: no member '%s'", s->name, name);
		return NULL;
	}
	if (m->type == 'l') {
		gerr_set(err, 0, "image %s: member '%s' is a link", s->name, name);
		return NULL;
	}
	if (m->type != 'f') {
		gerr_set(err, 0, "image %s: member '%s' is not a file", s->name, name);
		return NULL;
	}
	if (m->size > IMAGE_JSON_MAX) {
		gerr_set(err, 0, "image %s: %s is larger than %d bytes", s->name, name, IMAGE_JSON_MAX);
		return NULL;
	}
	if (!m->data && load_member(s, m, err) < 0)
		return NULL;
	*len = m->size;
	return m->data;
}

json_t *isrc_member_json(struct isrc *s, const char *name, const char *want_hex, char *hex_out, struct gerr *err)
{
	size_t len;
	_cleanup_free_ char *owned = NULL;
	const char *text = member_text(s, name, &len, &owned, err);
	if (!text)
		return NULL;
	if (want_hex || hex_out) {
		char hex[DIGEST_HEX_LEN + 1];
		struct digest_ctx *d = digest_new();
		digest_update(d, text, len);
		digest_final(d, hex);
		if (want_hex && strcmp(hex, want_hex)) {
			gerr_set(err, 0, "image %s: blob sha256:%s: content does not match its digest", s->name,
				 want_hex);
			return NULL;
		}
		if (hex_out)
			memcpy(hex_out, hex, sizeof hex);
	}
	json_error_t je;
	json_t *j = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
	if (!j)
		gerr_set(err, 0, "image %s: %s: invalid JSON (%s, line %d)", s->name, name, je.text, je.line);
	return j;
}
