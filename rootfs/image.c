/* rootfs/image.c — images as users hold them, into the cache: flat root
 * file system archives, `docker save` archives (the legacy layout with
 * manifest.json and <id>/layer.tar, and the OCI layout Docker 25 writes with
 * a manifest.json beside it), OCI image layouts as directories, and OCI
 * layouts packed as a tar (any compression libarchive reads).
 *
 * An image is hostile input like any archive.  Every path its JSON names is
 * checked before use (no "..", no absolute path, never a link member), every
 * digest must be "sha256:" and 64 hex digits, every JSON document is
 * refused above IMAGE_JSON_MAX before it is read (and read up to it, from
 * any format), at most IMAGE_MAX_LAYERS layers are applied, all of them
 * together unpack to at most rootfs_max_image_size(), counted as they are
 * written, no import starts on a file system without room for the layers
 * it unpacks, and every blob is hashed while it is unpacked: a layer
 * whose compressed bytes or whose tar stream (the config's diff_id) does not
 * match is thrown away and named.  Layers land in the cache under their
 * diff_id, in overlayfs's format (whiteouts as 0:0 devices, opaque
 * directories as user.overlay.opaque), so a layer shared by two images is
 * unpacked and stored once.
 *
 * The archive is read once: its small members (JSON, and small layers) into
 * memory, the others located by offset (a plain tar) or copied to unnamed
 * temporary files in the cache (a compressed tar cannot be sought in).  A
 * JSON document too large for that memory is read from there (or, in a dry
 * run of a compressed archive, by reading the archive again up to it). */
#include "rootfs_int.h"

#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define IMAGE_MAX_LAYERS 128
#define MEMBER_MEM_MAX (1 << 20)            /* members up to this size are kept in memory */
#define MEMBERS_MEM_TOTAL (32ULL << 20)     /* ... up to this much in all (the rest is
					      * found again by offset, or spooled) */
#define IMAGE_MAX_MEMBERS 100000
#define INDEX_READ_BLOCK (1024 * 1024)

__thread const struct blob_follow *image_blob_follow;

struct member {
	char *name;      /* without a leading "./" */
	char type;       /* 'f' file, 'l' link (symbolic or hard), 'd' directory, 'o' other */
	unsigned long long size, offset;
	char *data;      /* small members: the contents, NUL-terminated */
	int spool_fd;    /* a large member of a compressed archive, or -1 */
};

/* The progress line, on a terminal only. */
struct progress {
	const char *image;
	size_t layer, layers;
	unsigned long long done_bytes, done_entries; /* of the finished layers */
	struct timespec start, last;
	int shown;
};

static double seconds_since(const struct timespec *t)
{
	struct timespec now;
	clock_gettime(CLOCK_MONOTONIC, &now);
	return (double)(now.tv_sec - t->tv_sec) + (double)(now.tv_nsec - t->tv_nsec) / 1e9;
}

static void progress_show(void *ctx, const struct unpack_stats *st)
{
	struct progress *p = ctx;
	if (seconds_since(&p->last) < 0.1)
		return;
	clock_gettime(CLOCK_MONOTONIC, &p->last);
	double mb = (double)(p->done_bytes + st->bytes) / 1e6, secs = seconds_since(&p->start);
	fprintf(stderr, "\r\033[Kgpurun: unpacking %s: layer %zu of %zu, %.1f MB, %llu files, %.1f MB/s", p->image,
		p->layer, p->layers, mb, p->done_entries + st->entries, secs > 0 ? mb / secs : 0.0);
	p->shown = 1;
}

static void progress_layer_done(struct progress *p, const struct unpack_stats *st)
{
	p->done_bytes += st->bytes;
	p->done_entries += st->entries;
}

static void progress_end(struct progress *p)
{
	double mb = (double)p->done_bytes / 1e6, secs = seconds_since(&p->start);
	fprintf(stderr, "\r\033[Kgpurun: unpacked %s into the cache: %zu layer%s, %.1f MB, %llu files in %.1f s\n",
		p->image, p->layers, p->layers == 1 ? "" : "s", mb, p->done_entries, secs);
}

struct isrc {
	const char *name;   /* for messages */
	int fd;             /* the archive, or -1 */
	int dirfd;          /* an OCI layout directory, or -1 */
	int compressed;
	struct member *m;
	size_t n, cap;
	unsigned long long mem;
	struct cache *c;
	unsigned flags;
	struct progress *progress;   /* NULL: no progress line */
	struct image_budget budget;  /* what the image may still unpack to */
};

/* What the manifest says, before anything is unpacked. */
struct parsed {
	char *ref;
	char *config_member;
	struct strv layer_members;
	struct strv layer_blob_hex; /* the blob digest the name promises, or "" */
};

static void parsed_free(struct parsed *p)
{
	free(p->ref);
	free(p->config_member);
	strv_free(&p->layer_members);
	strv_free(&p->layer_blob_hex);
}

static void isrc_free(struct isrc *s)
{
	for (size_t i = 0; i < s->n; i++) {
		free(s->m[i].name);
		free(s->m[i].data);
		if (s->m[i].spool_fd >= 0)
			close(s->m[i].spool_fd);
	}
	free(s->m);
	if (s->dirfd >= 0)
		close(s->dirfd);
}

static const char *skip_dot_slash(const char *p)
{
	while (p[0] == '.' && p[1] == '/')
		p += 2;
	return p;
}

/* A path that an image's JSON names: relative, no "..", not empty. */
static int json_path_ok(const char *p)
{
	if (!p || !*p || *p == '/')
		return 0;
	for (const char *c = p; *c; c++)
		if ((c == p || c[-1] == '/') && c[0] == '.' && c[1] == '.' && (c[2] == '/' || !c[2]))
			return 0;
	return 1;
}

/* ---- reading the archive once ------------------------------------------- */

/* Before an import writes: the cache's file system must have room for at
 * least need bytes, what the layers still to unpack take in the image
 * (packed, a lower bound of what they unpack to, but for archives of empty
 * files).  Refused now, in one line, rather than when the disk is full. */
static int room_for(const struct isrc *s, unsigned long long need, const char *what, struct gerr *err)
{
	struct statvfs vs;
	if (fstatvfs(s->c->fd, &vs) < 0)
		return gerr_set(err, errno, "cache: statvfs %s", s->c->root);
	unsigned long long avail = (unsigned long long)vs.f_bavail * vs.f_frsize;
	if (need <= avail)
		return 0;
	char n[64], a[64];
	size_words(n, sizeof n, need);
	size_words(a, sizeof a, avail);
	return gerr_set(err, 0, "image %s: needs at least %s (%s), but the file system of %s has %s free", s->name,
			n, what, s->c->root, a);
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
					archive_error_string(a) ? archive_error_string(a) : "cannot be read");
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
					archive_error_string(a) ? archive_error_string(a) : "cannot be read");
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

static int index_archive(struct isrc *s, struct gerr *err)
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
				      src.eof ? "truncated archive"
					      : archive_error_string(a) ? archive_error_string(a) : "damaged archive");
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
		m->type = archive_entry_hardlink(e) || t == AE_IFLNK ? 'l' : t == AE_IFREG ? 'f' : t == AE_IFDIR ? 'd' : 'o';
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

static struct member *find_member(struct isrc *s, const char *name)
{
	name = skip_dot_slash(name);
	for (size_t i = s->n; i-- > 0;) /* the last one wins, as with tar -x */
		if (!strcmp(s->m[i].name, name))
			return &s->m[i];
	return NULL;
}

/* A file of an OCI layout directory: never through a symlink, never out. */
static int dir_open(struct isrc *s, const char *name, struct stat *st, struct gerr *err)
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
		int fd = dir_open(s, name, &st, err);
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
	struct member *m = find_member(s, name);
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

static json_t *member_json(struct isrc *s, const char *name, const char *want_hex, char *hex_out,
			   struct gerr *err)
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

static int bad_digest(const struct isrc *s, const char *digest, struct gerr *err)
{
	char q[QUOTED_NAME_MAX];
	quote_name(q, sizeof q, digest ? digest : "(none)");
	return gerr_set(err, 0, "image %s: invalid digest '%s' (want sha256: and 64 hex digits)", s->name, q);
}

/* The member a digest names in an OCI layout, after checking the digest. */
static char *blob_member(struct isrc *s, const char *digest, struct gerr *err)
{
	const char *hex = digest_parse(digest);
	if (!hex) {
		bad_digest(s, digest, err);
		return NULL;
	}
	return xasprintf("blobs/sha256/%s", hex);
}

/* ---- the manifest ------------------------------------------------------- */

/* Does an image's name match what the user picked?  Registries' default
 * prefixes may be left out, as with docker ("gpurun/test:latest" for
 * "docker.io/gpurun/test:latest", "busybox:1" for
 * "docker.io/library/busybox:1"). */
static int name_matches(const char *name, const char *sel)
{
	static const char *const prefixes[] = {"", "docker.io/", "docker.io/library/", "library/"};
	for (size_t i = 0; i < COUNT_OF(prefixes); i++) {
		size_t pl = strlen(prefixes[i]);
		if (!strncmp(name, prefixes[i], pl) && !strcmp(name + pl, sel))
			return 1;
		if (!strncmp(sel, prefixes[i], pl) && !strcmp(sel + pl, name))
			return 1;
	}
	return 0;
}

/* No image picked: say which there are. */
static int pick_error(const struct isrc *s, const char *sel, size_t count, const struct sbuf *names,
		      struct gerr *err)
{
	const char *list = names->s ? names->s : "none with a name";
	if (sel)
		return gerr_set(err, 0, "image %s: no image named %s (there are: %s)", s->name, sel, list);
	return gerr_set(err, 0, "image %s: holds %zu images; pick one with %s@NAME:TAG (%s)", s->name, count,
			s->name, list);
}

static void list_names(struct sbuf *b, const char *name)
{
	sbuf_puts(b, b->len ? ", " : "");
	sbuf_puts(b, name);
}

/* docker save: manifest.json lists the images, each with RepoTags, Config
 * and Layers (member paths). */
static int parse_docker(struct isrc *s, const char *sel, struct parsed *p, struct gerr *err)
{
	json_t *root = member_json(s, "manifest.json", NULL, NULL, err);
	if (!root)
		return -1;
	int rc = -1;
	json_t *pick = NULL, *e;
	size_t i, j;
	struct sbuf names = {0};
	const char *ref = NULL;
	if (!json_is_array(root) || !json_array_size(root)) {
		gerr_set(err, 0, "image %s: manifest.json lists no image", s->name);
		goto out;
	}
	json_array_foreach(root, i, e)
	{
		json_t *tags = json_object_get(e, "RepoTags"), *t;
		json_array_foreach(tags, j, t)
		{
			const char *tag = json_string_value(t);
			if (!tag)
				continue;
			list_names(&names, tag);
			if (sel && !pick && name_matches(tag, sel)) {
				pick = e;
				ref = tag;
			}
		}
	}
	if (!sel && json_array_size(root) == 1) {
		pick = json_array_get(root, 0);
		ref = json_string_value(json_array_get(json_object_get(pick, "RepoTags"), 0));
	}
	if (!pick) {
		pick_error(s, sel, json_array_size(root), &names, err);
		goto out;
	}
	const char *config = json_string_value(json_object_get(pick, "Config"));
	json_t *layers = json_object_get(pick, "Layers"), *l;
	if (!json_path_ok(config)) {
		gerr_set(err, 0, "image %s: manifest.json: config path '%s' leaves the archive", s->name,
			 config ? config : "(none)");
		goto out;
	}
	if (!json_is_array(layers)) {
		gerr_set(err, 0, "image %s: manifest.json: no Layers", s->name);
		goto out;
	}
	p->config_member = xstrdup(config);
	p->ref = ref ? xstrdup(ref) : NULL;
	json_array_foreach(layers, i, l)
	{
		const char *path = json_string_value(l);
		if (!json_path_ok(path)) {
			char q[QUOTED_NAME_MAX];
			quote_name(q, sizeof q, path ? path : "(none)");
			gerr_set(err, 0, "image %s: manifest.json: layer path '%s' leaves the archive", s->name, q);
			goto out;
		}
		strv_add(&p->layer_members, xstrdup(path));
		/* Docker 25 names layers by digest: the name is a promise to check. */
		const char *hex = !strncmp(path, "blobs/sha256/", 13) && digest_hex_ok(path + 13) ? path + 13 : "";
		strv_add(&p->layer_blob_hex, xstrdup(hex));
	}
	rc = 0;
out:
	sbuf_free(&names);
	json_decref(root);
	return rc;
}

static const char *ref_name(json_t *desc)
{
	json_t *ann = json_object_get(desc, "annotations");
	const char *n = json_string_value(json_object_get(ann, "org.opencontainers.image.ref.name"));
	return n ? n : json_string_value(json_object_get(ann, "io.containerd.image.name"));
}

static int is_index_type(const char *mt)
{
	return mt && (!strcmp(mt, "application/vnd.oci.image.index.v1+json") ||
		      !strcmp(mt, "application/vnd.docker.distribution.manifest.list.v2+json"));
}

/* For a multi-platform index: this machine's platform, else the first. */
static json_t *pick_platform(json_t *manifests)
{
	size_t i;
	json_t *d;
	json_array_foreach(manifests, i, d)
	{
		json_t *pf = json_object_get(d, "platform");
		const char *os = json_string_value(json_object_get(pf, "os"));
		const char *arch = json_string_value(json_object_get(pf, "architecture"));
		if (os && arch && !strcmp(os, "linux") && !strcmp(arch, "amd64"))
			return d;
	}
	return json_array_get(manifests, 0);
}

/* OCI layout: index.json's manifests, picked by their ref.name. */
static int parse_oci(struct isrc *s, const char *sel, struct parsed *p, struct gerr *err)
{
	json_t *index = member_json(s, "index.json", NULL, NULL, err), *nested = NULL, *manifest = NULL;
	if (!index)
		return -1;
	char *mm = NULL; /* freed at out: no cleanup attribute a goto could jump over */
	int rc = -1;
	struct sbuf names = {0};
	json_t *ms = json_object_get(index, "manifests"), *d, *pick = NULL;
	size_t i;
	if (!json_is_array(ms) || !json_array_size(ms)) {
		gerr_set(err, 0, "image %s: index.json lists no manifest", s->name);
		goto out;
	}
	json_array_foreach(ms, i, d)
	{
		const char *n = ref_name(d);
		if (n)
			list_names(&names, n);
		/* "NAME:TAG" or the bare tag an OCI ref.name often is. */
		const char *colon = sel ? strrchr(sel, ':') : NULL;
		if (sel && n && !pick && (name_matches(n, sel) || (colon && !strcmp(n, colon + 1))))
			pick = d;
	}
	if (!sel && json_array_size(ms) == 1)
		pick = json_array_get(ms, 0);
	if (!pick) {
		pick_error(s, sel, json_array_size(ms), &names, err);
		goto out;
	}
	p->ref = ref_name(pick) ? xstrdup(ref_name(pick)) : NULL;
	if (is_index_type(json_string_value(json_object_get(pick, "mediaType")))) {
		_cleanup_free_ char *m = blob_member(s, json_string_value(json_object_get(pick, "digest")), err);
		if (!m || !(nested = member_json(s, m, m + 13, NULL, err)))
			goto out;
		pick = pick_platform(json_object_get(nested, "manifests"));
		if (!pick) {
			gerr_set(err, 0, "image %s: %s lists no manifest", s->name, m);
			goto out;
		}
	}
	mm = blob_member(s, json_string_value(json_object_get(pick, "digest")), err);
	if (!mm || !(manifest = member_json(s, mm, mm + 13, NULL, err)))
		goto out;
	p->config_member = blob_member(s, json_string_value(json_object_get(json_object_get(manifest, "config"), "digest")), err);
	if (!p->config_member)
		goto out;
	json_t *layers = json_object_get(manifest, "layers"), *l;
	if (!json_is_array(layers)) {
		gerr_set(err, 0, "image %s: %s has no layers", s->name, mm);
		goto out;
	}
	json_array_foreach(layers, i, l)
	{
		char *lm = blob_member(s, json_string_value(json_object_get(l, "digest")), err);
		if (!lm)
			goto out;
		strv_add(&p->layer_members, lm);
		strv_add(&p->layer_blob_hex, xstrdup(lm + 13));
	}
	rc = 0;
out:
	free(mm);
	sbuf_free(&names);
	json_decref(manifest);
	json_decref(nested);
	json_decref(index);
	return rc;
}

static char *config_str(json_t *o, const char *key)
{
	const char *v = json_string_value(json_object_get(o, key));
	return v && *v ? xstrdup(v) : NULL;
}

/* The config: what to run, and the layers' diff_ids.  *hex gets the
 * config's own digest, which names the image in the cache. */
static int parse_config(struct isrc *s, const struct parsed *p, struct image *img, struct strv *diff_ids,
			char hex[DIGEST_HEX_LEN + 1], struct gerr *err)
{
	const char *promised = NULL;
	const char *base = strrchr(p->config_member, '/');
	base = base ? base + 1 : p->config_member;
	char name_hex[DIGEST_HEX_LEN + 1];
	/* "blobs/sha256/HEX" or docker's "HEX.json": the name is the digest. */
	if (strlen(base) >= DIGEST_HEX_LEN) {
		memcpy(name_hex, base, DIGEST_HEX_LEN);
		name_hex[DIGEST_HEX_LEN] = '\0';
		if (digest_hex_ok(name_hex) && (!base[DIGEST_HEX_LEN] || !strcmp(base + DIGEST_HEX_LEN, ".json")))
			promised = name_hex;
	}
	json_t *cfg = member_json(s, p->config_member, promised, hex, err);
	if (!cfg)
		return -1;
	int rc = -1;
	json_t *c = json_object_get(cfg, "config"), *ids = json_object_get(json_object_get(cfg, "rootfs"), "diff_ids"), *d;
	size_t i;
	if (!json_is_array(ids)) {
		gerr_set(err, 0, "image %s: config %s has no rootfs.diff_ids", s->name, p->config_member);
		goto out;
	}
	json_array_foreach(ids, i, d)
	{
		const char *id = json_string_value(d);
		if (!digest_parse(id)) {
			bad_digest(s, id, err);
			goto out;
		}
		strv_add(diff_ids, xstrdup(id));
	}
	if (diff_ids->n != p->layer_members.n) {
		gerr_set(err, 0, "image %s: %zu layers but %zu diff_ids in the config", s->name, p->layer_members.n,
			 diff_ids->n);
		goto out;
	}
	if (json_is_object(c)) {
		img->config.env = json_to_strv(json_object_get(c, "Env"));
		img->config.entrypoint = json_to_strv(json_object_get(c, "Entrypoint"));
		img->config.cmd = json_to_strv(json_object_get(c, "Cmd"));
		img->config.workdir = config_str(c, "WorkingDir");
		img->config.user = config_str(c, "User");
	}
	rc = 0;
out:
	json_decref(cfg);
	return rc;
}

/* ---- unpacking layers into the cache ------------------------------------- */

static int layer_input(struct isrc *s, const char *name, struct fd_source *in, int *owned_fd, struct gerr *err)
{
	*owned_fd = -1;
	memset(in, 0, sizeof *in);
	if (s->dirfd >= 0) {
		struct stat st;
		int fd = dir_open(s, name, &st, err);
		if (fd < 0)
			return -1;
		*owned_fd = in->fd = fd;
		if (image_blob_follow && image_blob_follow->attach(image_blob_follow->ctx, name, in) < 0)
			return gerr_set(err, EIO, "image %s: %s", s->name, name);
		return 0;
	}
	struct member *m = find_member(s, name);
	if (!m)
		return gerr_set(err, 0, "image %s: no member '%s'", s->name, name);
	if (m->type == 'l')
		return gerr_set(err, 0, "image %s: member '%s' is a link", s->name, name);
	if (m->type != 'f')
		return gerr_set(err, 0, "image %s: member '%s' is not a file", s->name, name);
	in->ranged = 1;
	in->start = 0;
	in->len = m->size;
	if (m->data) {
		/* Small: from memory, through a pipe would be overkill; a memfd. */
		int fd = memfd_create("gpurun-layer", MFD_CLOEXEC);
		if (fd < 0 || write_all(fd, m->data, m->size) < 0) {
			int e = errno;
			if (fd >= 0)
				close(fd);
			return gerr_set(err, e, "image %s: memfd for member '%s'", s->name, name);
		}
		*owned_fd = in->fd = fd;
	} else if (m->spool_fd >= 0) {
		in->fd = m->spool_fd;
	} else if (!s->compressed) {
		in->fd = s->fd;
		in->start = m->offset;
	} else {
		return gerr_set(err, 0, "image %s: member '%s' was not kept", s->name, name);
	}
	return 0;
}

static unsigned unpack_flags(const struct cache *c)
{
	/* Owners only as root (the cache is 0700); setuid bits never. */
	return UNPACK_LAYER | UNPACK_CLEAR_SUID | (c->keep_owner ? UNPACK_KEEP_OWNER : 0);
}

/* Unpack into a fresh directory of ROOT/tmp, within the image's budget;
 * *tmprel gets it. */
static int unpack_to_tmp(struct isrc *s, const struct fd_source *in, struct digest_ctx *tar_hash, const char *what,
			 unsigned flags, char **tmprel, struct unpack_stats *st, struct gerr *err)
{
	int dirfd;
	*tmprel = cache_tmpdir(s->c, "layer", &dirfd, err);
	if (!*tmprel)
		return -1;
	struct unpack_limits lim = unpack_default_limits;
	lim.image = &s->budget;
	int r = unpack_source(in, tar_hash, what, dirfd, flags, &lim, st, err);
	close(dirfd);
	if (r < 0) {
		cache_remove_tree(s->c->fd, *tmprel);
		free(*tmprel);
		*tmprel = NULL;
	}
	return r;
}

/* Layer i of the image whose layers are diff_ids (all, lowest first). */
static int import_layer(struct isrc *s, const struct parsed *p, const struct strv *diff_ids, size_t i,
			struct gerr *err)
{
	const char *diff_id = diff_ids->v[i];
	const char *hex = digest_parse(diff_id), *blob_hex = p->layer_blob_hex.v[i];
	if (cache_has_layer(s->c, hex))
		return 0;
	int lock = cache_lock(s->c, hex, err);
	if (lock < 0)
		return -1;
	int rc = 0;
	if (cache_has_layer(s->c, hex)) /* another launch made it meanwhile */
		goto out;
	struct fd_source in;
	int owned = -1;
	if ((rc = layer_input(s, p->layer_members.v[i], &in, &owned, err)) < 0)
		goto out;
	/* An uncompressed blob is its own tar stream: one hash serves both. */
	int same = compression_at(&in) == NULL;
	struct digest_ctx *blob = *blob_hex && !same ? digest_new() : NULL, *tar = digest_new();
	in.hash = blob;
	char *tmprel = NULL, what[600];
	snprintf(what, sizeof what, "%s: layer %zu of %zu (%s)", s->name, i + 1, p->layer_members.n,
		 p->layer_members.v[i]);
	struct unpack_stats st;
	/* The layers below, topmost first, for whiteouts to be checked against. */
	int *fds = xcalloc(i + 1, sizeof *fds);
	size_t nfds = 0;
	for (size_t k = i; k-- > 0;) {
		_cleanup_free_ char *dir = cache_layer_path(s->c, digest_parse(diff_ids->v[k]));
		int fd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (fd >= 0)
			fds[nfds++] = fd;
	}
	struct lower_layers lowers = {fds, nfds};
	unpack_lowers = &lowers;
	struct unpack_progress hook = {progress_show, s->progress};
	if (s->progress) {
		s->progress->layer = i + 1;
		unpack_progress_hook = &hook;
	}
	rc = unpack_to_tmp(s, &in, tar, what, unpack_flags(s->c), &tmprel, &st, err);
	unpack_lowers = NULL;
	unpack_progress_hook = NULL;
	if (s->progress && rc == 0)
		progress_layer_done(s->progress, &st);
	for (size_t k = 0; k < nfds; k++)
		close(fds[k]);
	free(fds);
	if (owned >= 0)
		close(owned);
	char got_blob[DIGEST_HEX_LEN + 1] = "", got_tar[DIGEST_HEX_LEN + 1];
	digest_final(tar, got_tar);
	if (blob)
		digest_final(blob, got_blob);
	else if (same)
		memcpy(got_blob, got_tar, sizeof got_blob);
	if (rc < 0)
		goto out;
	if (*blob_hex && strcmp(got_blob, blob_hex))
		rc = gerr_set(err, 0, "image %s: blob sha256:%s (layer %zu): content does not match its digest",
			      s->name, blob_hex, i + 1);
	else if (strcmp(got_tar, hex))
		rc = gerr_set(err, 0, "image %s: layer %zu (%s): content does not match its diff_id %s", s->name,
			      i + 1, p->layer_members.v[i], diff_id);
	if (rc == 0)
		rc = cache_commit_layer(s->c, tmprel, hex, st.bytes, err);
	if (rc < 0)
		cache_remove_tree(s->c->fd, tmprel); /* nothing of a bad blob is kept */
	free(tmprel);
out:
	cache_unlock(lock);
	return rc;
}

/* ---- the two kinds of image file ------------------------------------------ */

/* What the layers the cache lacks take in the image, as far as it tells
 * (a layout's blob still being fetched counts what has arrived). */
static unsigned long long packed_size(struct isrc *s, const struct parsed *p, const struct strv *diff_ids)
{
	unsigned long long total = 0;
	for (size_t i = 0; i < diff_ids->n; i++) {
		if (cache_has_layer(s->c, digest_parse(diff_ids->v[i])))
			continue;
		if (s->dirfd >= 0) {
			struct stat st;
			struct gerr ignore = {0};
			int fd = dir_open(s, p->layer_members.v[i], &st, &ignore);
			if (fd >= 0) {
				total += (unsigned long long)st.st_size;
				close(fd);
			}
			continue;
		}
		const struct member *m = find_member(s, p->layer_members.v[i]);
		if (m && m->type == 'f')
			total += m->size;
	}
	return total;
}

static int prepare_layered(struct isrc *s, const char *sel, struct image *img, char hex[DIGEST_HEX_LEN + 1],
			   struct gerr *err)
{
	struct parsed p = {0};
	struct strv diff_ids = {0};
	int rc = -1;
	int docker = s->dirfd < 0 && find_member(s, "manifest.json");
	if ((docker ? parse_docker(s, sel, &p, err) : parse_oci(s, sel, &p, err)) < 0)
		goto out;
	if (p.layer_members.n > IMAGE_MAX_LAYERS) {
		gerr_set(err, 0, "image %s: %zu layers (at most %d)", s->name, p.layer_members.n, IMAGE_MAX_LAYERS);
		goto out;
	}
	if (!p.layer_members.n) {
		gerr_set(err, 0, "image %s: no layers", s->name);
		goto out;
	}
	if (parse_config(s, &p, img, &diff_ids, hex, err) < 0)
		goto out;
	img->ref = p.ref ? xstrdup(p.ref) : NULL;
	if (s->progress)
		s->progress->layers = diff_ids.n;
	if (!(s->flags & IMAGE_DRY_RUN) && room_for(s, packed_size(s, &p, &diff_ids), "what its layers take packed", err) < 0)
		goto out;
	for (size_t i = 0; i < diff_ids.n; i++) {
		const char *h = digest_parse(diff_ids.v[i]);
		if (!(s->flags & IMAGE_DRY_RUN) && import_layer(s, &p, &diff_ids, i, err) < 0)
			goto out;
		if (!cache_has_layer(s->c, h))
			img->missing = 1;
		strv_add(&img->layers, cache_layer_path(s->c, h));
		strv_add(&img->layer_ids, xstrdup(diff_ids.v[i]));
		img->bytes += cache_layer_bytes(s->c, h);
		/* The layers found in the cache count too: the cap is on the
		 * image, wherever its layers came from. */
		s->budget.used = img->bytes;
		if (!(s->flags & IMAGE_DRY_RUN) && img->bytes > s->budget.max) {
			image_cap_error(err, s->budget.max);
			gerr_prefix(err, "image %s", s->name);
			goto out;
		}
	}
	rc = 0;
out:
	strv_free(&diff_ids);
	parsed_free(&p);
	return rc;
}

static int prepare_flat(struct isrc *s, struct image *img, char hex[DIGEST_HEX_LEN + 1], struct gerr *err)
{
	if (s->flags & IMAGE_DRY_RUN) {
		/* The cache names it by its digest: read it all to say where. */
		struct fd_source in = {.fd = s->fd, .block = INDEX_READ_BLOCK, .hash = digest_new()};
		in.buf = xmalloc(in.block);
		int r = lseek(s->fd, 0, SEEK_SET) < 0 ? -1 : source_drain(&in);
		free(in.buf);
		digest_final(in.hash, hex);
		if (r < 0)
			return gerr_set(err, errno, "image %s: read", s->name);
		img->missing = !cache_has_layer(s->c, hex);
		strv_add(&img->layers, cache_layer_path(s->c, hex));
		strv_add(&img->layer_ids, xasprintf("sha256:%s", hex));
		return 0;
	}
	struct stat fst;
	if (fstat(s->fd, &fst) < 0)
		return gerr_set(err, errno, "image %s: stat", s->name);
	if (room_for(s, (unsigned long long)fst.st_size, "the archive's size", err) < 0)
		return -1;
	struct fd_source in = {.fd = s->fd};
	struct digest_ctx *d = digest_new();
	in.hash = d;
	char *tmprel = NULL;
	struct unpack_stats st;
	if (lseek(s->fd, 0, SEEK_SET) < 0) {
		digest_free(d);
		return gerr_set(err, errno, "image %s: rewind", s->name);
	}
	struct unpack_progress hook = {progress_show, s->progress};
	if (s->progress) {
		s->progress->layer = s->progress->layers = 1;
		unpack_progress_hook = &hook;
	}
	int rc = unpack_to_tmp(s, &in, NULL, s->name, UNPACK_CLEAR_SUID | (s->c->keep_owner ? UNPACK_KEEP_OWNER : 0),
			       &tmprel, &st, err);
	unpack_progress_hook = NULL;
	if (s->progress && rc == 0)
		progress_layer_done(s->progress, &st);
	digest_final(d, hex);
	if (rc < 0)
		return -1;
	if (st.devices_skipped)
		warnx_("image %s: %zu device, fifo or socket entries not created", s->name, st.devices_skipped);
	int lock = cache_lock(s->c, hex, err);
	if (lock < 0)
		rc = -1;
	else if (cache_has_layer(s->c, hex))
		cache_remove_tree(s->c->fd, tmprel); /* the same content under another name */
	else
		rc = cache_commit_layer(s->c, tmprel, hex, st.bytes, err);
	if (rc < 0)
		cache_remove_tree(s->c->fd, tmprel);
	cache_unlock(lock);
	free(tmprel);
	if (rc < 0)
		return -1;
	strv_add(&img->layers, cache_layer_path(s->c, hex));
	strv_add(&img->layer_ids, xasprintf("sha256:%s", hex));
	img->bytes = st.bytes;
	return 0;
}

int image_is_layout_dir(const char *path)
{
	_cleanup_fd_ int fd = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
	struct stat st;
	return fd >= 0 && fstatat(fd, "oci-layout", &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode) &&
	       fstatat(fd, "index.json", &st, AT_SYMLINK_NOFOLLOW) == 0;
}

int image_prepare(const char *path, const char *name, const char *selector, struct cache *c, unsigned flags,
		  struct image *img, struct gerr *err)
{
	const char *shown = name ? name : path;
	struct isrc s = {.name = shown, .fd = -1, .dirfd = -1, .c = c, .flags = flags,
			 .budget = {.max = rootfs_max_image_size()}};
	struct stat st;
	int rc = -1, probe = PROBE_IMAGE, lock = -1;
	char hex[DIGEST_HEX_LEN + 1] = "", *key = NULL, *visible = NULL;
	memset(img, 0, sizeof *img);
	img->source = xstrdup(shown);
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0 || fstat(fd, &st) < 0) {
		rc = gerr_set(err, errno, "image %s", shown);
		goto out;
	}
	if (S_ISDIR(st.st_mode)) {
		s.dirfd = fd;
		fd = -1;
		/* index.json's identity stands for the layout's. */
		if (fstatat(s.dirfd, "index.json", &st, AT_SYMLINK_NOFOLLOW) < 0) {
			rc = gerr_set(err, errno, "image %s: index.json", shown);
			goto out;
		}
	} else if (S_ISREG(st.st_mode)) {
		s.fd = fd;
	} else {
		close(fd);
		rc = gerr_set(err, 0, "image %s: not a regular file or directory", shown);
		goto out;
	}
	/* The fast path first: a hit reads neither the archive nor its JSON. */
	key = cache_source_key(&st, selector);
	int fast = !(flags & IMAGE_NO_SOURCE);
	if (fast && cache_lookup_source(c, key, hex) && cache_get_image(c, hex, img, err) == 0) {
		img->hit = 1;
		rc = 0;
		goto out;
	}
	gerr_clear(err);
	if (s.fd >= 0) {
		if ((probe = rootfs_probe(s.fd, shown, err)) < 0)
			goto out;
		if (probe == PROBE_FLAT && selector) {
			rc = gerr_set(err, 0, "image %s: a root file system archive holds one image; drop @%s", shown,
				      selector);
			goto out;
		}
	}
	if (fast && !(flags & IMAGE_DRY_RUN)) {
		/* One import per image at a time: the others then find it. */
		lock = cache_lock(c, key, err);
		if (lock < 0)
			goto out;
		if (cache_lookup_source(c, key, hex) && cache_get_image(c, hex, img, err) == 0) {
			img->hit = 1;
			rc = 0;
			goto out;
		}
		gerr_clear(err);
	}
	visible = xvisible(shown); /* the progress line reaches a terminal */
	struct progress progress = {.image = visible};
	if (!(flags & (IMAGE_QUIET | IMAGE_DRY_RUN)) && isatty(2)) {
		clock_gettime(CLOCK_MONOTONIC, &progress.start);
		s.progress = &progress;
	}
	if (probe == PROBE_FLAT) {
		rc = prepare_flat(&s, img, hex, err);
	} else {
		if (s.fd >= 0 && index_archive(&s, err) < 0)
			goto out;
		rc = prepare_layered(&s, selector, img, hex, err);
	}
	if (rc == 0 && !(flags & IMAGE_DRY_RUN) &&
	    (cache_put_image(c, hex, img, err) < 0 || (fast && cache_put_source(c, key, hex, err) < 0)))
		rc = -1;
	if (s.progress && rc == 0)
		progress_end(s.progress);
	else if (s.progress && progress.shown)
		fputs("\r\033[K", stderr); /* the error line follows on a clean line */
out:
	free(key);
	free(visible);
	cache_unlock(lock);
	if (s.fd >= 0)
		close(s.fd);
	isrc_free(&s);
	if (rc < 0) {
		char *src = img->source;
		img->source = NULL;
		image_free(img);
		img->source = src;
	}
	return rc;
}
