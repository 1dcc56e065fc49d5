/* rootfs/image/image.c — image_prepare(): images as users hold them, into the
 * cache, layer by layer, with a progress line: flat root file system
 * archives, `docker save` archives (the legacy layout with manifest.json and
 * <id>/layer.tar, and the OCI layout Docker 25 writes with a manifest.json
 * beside it), OCI image layouts as directories, OCI layouts packed as a
 * tar (any compression libarchive reads), and the dir: layout that skopeo,
 * buildah and podman write (a directory holding the image manifest as
 * manifest.json, a version file, and blobs named by their digest).  Reading
 * them is rootfs/image/imgarchive.c's, their JSON rootfs/image/imgmanifest.c's.
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
 * unpacked and stored once. */
#include "image_int.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define IMAGE_MAX_LAYERS 128

/* The progress line, on a terminal only. */
struct progress {
	const char *image;
	size_t layer, layers;
	unsigned long long done_bytes, done_entries; /* of the finished layers */
	struct timespec start, last;
	int shown;
};

static void progress_show(void *ctx, const struct unpack_stats *st)
{
	struct progress *p = ctx;
	if (seconds_since(&p->last) < 0.1)
		return;
	clock_gettime(CLOCK_MONOTONIC, &p->last);
	unsigned long long bytes = p->done_bytes + st->bytes;
	progress_print(0, "gpurun: unpacking %s: layer %zu of %zu, %.1f MB, %llu files, %.1f MB/s", p->image, p->layer,
		       p->layers, (double)bytes / 1e6, p->done_entries + st->entries,
		       progress_mb_per_s(bytes, seconds_since(&p->start)));
	p->shown = 1;
}

static void progress_layer_done(struct progress *p, const struct unpack_stats *st)
{
	p->done_bytes += st->bytes;
	p->done_entries += st->entries;
}

static void progress_end(struct progress *p)
{
	progress_print(1, "gpurun: unpacked %s into the cache: %zu layer%s, %.1f MB, %llu files in %.1f s", p->image,
		       p->layers, p->layers == 1 ? "" : "s", (double)p->done_bytes / 1e6, p->done_entries,
		       seconds_since(&p->start));
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

/* ---- unpacking layers into the cache ------------------------------------- */

static int layer_input(struct isrc *s, const char *name, struct fd_source *in, int *owned_fd, struct gerr *err)
{
	*owned_fd = -1;
	memset(in, 0, sizeof *in);
	if (s->dirfd >= 0) {
		struct stat st;
		int fd = isrc_dir_open(s, name, &st, err);
		if (fd < 0)
			return -1;
		*owned_fd = in->fd = fd;
		if (s->follow && s->follow->attach(s->follow->ctx, name, in) < 0)
			return gerr_set(err, EIO, "image %s: %s", s->name, name);
		return 0;
	}
	struct member *m = isrc_find_member(s, name);
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
			 unsigned flags, const struct unpack_hooks *hooks, char **tmprel, struct unpack_stats *st,
			 struct gerr *err)
{
	int dirfd;
	*tmprel = cache_tmpdir(s->c, "layer", &dirfd, err);
	if (!*tmprel)
		return -1;
	struct unpack_limits lim = unpack_default_limits;
	lim.image = &s->budget;
	struct unpack_hooks h = *hooks;
	h.map = s->c->map.uid_count ? &s->c->map : NULL;
	int r = unpack_source(in, tar_hash, what, dirfd, flags, &lim, &h, st, err);
	close(dirfd);
	if (r < 0) {
		cache_remove_tree(s->c, s->c->fd, *tmprel);
		free(*tmprel);
		*tmprel = NULL;
	}
	return r;
}

/* Layer i of the image whose layers are diff_ids (all, lowest first). */
static int import_layer(struct isrc *s, const struct parsed *p, const struct strv *diff_ids, size_t i, struct gerr *err)
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
	struct unpack_hooks hooks = {.lowers = &lowers};
	if (s->progress) {
		s->progress->layer = i + 1;
		hooks.progress = progress_show;
		hooks.progress_ctx = s->progress;
	}
	rc = unpack_to_tmp(s, &in, tar, what, unpack_flags(s->c), &hooks, &tmprel, &st, err);
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
		rc = gerr_set(err, 0, "image %s: layer %zu (%s): content does not match its diff_id %s", s->name, i + 1,
			      p->layer_members.v[i], diff_id);
	if (rc == 0)
		rc = cache_commit_layer(s->c, tmprel, hex, st.bytes, err);
	if (rc < 0)
		cache_remove_tree(s->c, s->c->fd, tmprel); /* nothing of a bad blob is kept */
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
			int fd = isrc_dir_open(s, p->layer_members.v[i], &st, &ignore);
			if (fd >= 0) {
				total += (unsigned long long)st.st_size;
				close(fd);
			}
			continue;
		}
		const struct member *m = isrc_find_member(s, p->layer_members.v[i]);
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
	int docker = s->dirfd < 0 && isrc_find_member(s, "manifest.json");
	if ((s->dir_layout ? manifest_parse_dir(s, sel, &p, err)
	     : docker      ? manifest_parse_docker(s, sel, &p, err)
			   : manifest_parse_oci(s, sel, &p, err)) < 0)
		goto out;
	if (p.layer_members.n > IMAGE_MAX_LAYERS) {
		gerr_set(err, 0, "image %s: %zu layers (at most %d)", s->name, p.layer_members.n, IMAGE_MAX_LAYERS);
		goto out;
	}
	if (!p.layer_members.n) {
		gerr_set(err, 0, "image %s: no layers", s->name);
		goto out;
	}
	if (manifest_parse_config(s, &p, img, &diff_ids, hex, err) < 0)
		goto out;
	img->ref = p.ref ? xstrdup(p.ref) : NULL;
	if (s->progress)
		s->progress->layers = diff_ids.n;
	if (!(s->flags & IMAGE_DRY_RUN) &&
	    room_for(s, packed_size(s, &p, &diff_ids), "what its layers take packed", err) < 0)
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
	manifest_parsed_free(&p);
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
	struct unpack_hooks hooks = {0};
	if (s->progress) {
		s->progress->layer = s->progress->layers = 1;
		hooks.progress = progress_show;
		hooks.progress_ctx = s->progress;
	}
	int rc = unpack_to_tmp(s, &in, NULL, s->name, UNPACK_CLEAR_SUID | (s->c->keep_owner ? UNPACK_KEEP_OWNER : 0),
			       &hooks, &tmprel, &st, err);
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
		cache_remove_tree(s->c, s->c->fd, tmprel); /* the same content under another name */
	else
		rc = cache_commit_layer(s->c, tmprel, hex, st.bytes, err);
	if (rc < 0)
		cache_remove_tree(s->c, s->c->fd, tmprel);
	cache_unlock(lock);
	free(tmprel);
	if (rc < 0)
		return -1;
	strv_add(&img->layers, cache_layer_path(s->c, hex));
	strv_add(&img->layer_ids, xasprintf("sha256:%s", hex));
	img->bytes = st.bytes;
	return 0;
}

enum layout_kind { LAYOUT_NONE, LAYOUT_OCI, LAYOUT_DIR };

/* A version file that says it is one marks a dir: layout even without its
 * manifest.json: a broken layout is then refused by name rather than run
 * as a root file system. */
static int says_dir_layout(int dirfd)
{
	struct gerr ignore = {0};
	_cleanup_free_ char *text = read_small_file_at(dirfd, "version", DIR_VERSION_MAX, NULL, &ignore);
	return text && str_after(text, DIR_VERSION_PREFIX);
}

/* Told by content, never by name: an OCI layout by its oci-layout and
 * index.json, a dir: layout by its version file and manifest.json.  A root
 * file system has neither pair at its top. */
static enum layout_kind layout_kind(int dirfd)
{
	struct stat st;
	if (fstatat(dirfd, "oci-layout", &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode) &&
	    fstatat(dirfd, "index.json", &st, AT_SYMLINK_NOFOLLOW) == 0)
		return LAYOUT_OCI;
	if (fstatat(dirfd, "version", &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode) &&
	    (fstatat(dirfd, "manifest.json", &st, AT_SYMLINK_NOFOLLOW) == 0 || says_dir_layout(dirfd)))
		return LAYOUT_DIR;
	return LAYOUT_NONE;
}

int image_is_layout_dir(const char *path)
{
	_cleanup_fd_ int fd = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
	return fd >= 0 && layout_kind(fd) != LAYOUT_NONE;
}

int image_prepare(const char *path, const char *name, const char *selector, struct cache *c, unsigned flags,
		  struct image *img, struct gerr *err)
{
	return image_prepare_follow(path, name, selector, c, flags, NULL, img, err);
}

int image_prepare_follow(const char *path, const char *name, const char *selector, struct cache *c, unsigned flags,
			 const struct blob_follow *follow, struct image *img, struct gerr *err)
{
	const char *shown = name ? name : path;
	struct isrc s = {.name = shown,
			 .fd = -1,
			 .dirfd = -1,
			 .c = c,
			 .flags = flags,
			 .follow = follow,
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
		s.dir_layout = layout_kind(s.dirfd) == LAYOUT_DIR;
		/* Before the cache is asked: the version decides how the rest
		 * is read, and one gpurun does not read is refused whether or
		 * not the layout was cached. */
		if (s.dir_layout && manifest_dir_version(&s, err) < 0)
			goto out;
		/* The document the others hang from stands for the layout:
		 * index.json, or a dir: layout's manifest.json. */
		const char *top = s.dir_layout ? "manifest.json" : "index.json";
		if (fstatat(s.dirfd, top, &st, AT_SYMLINK_NOFOLLOW) < 0) {
			rc = gerr_set(err, errno, "image %s: %s", shown, top);
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
		if (s.fd >= 0 && isrc_index_archive(&s, err) < 0)
			goto out;
		rc = prepare_layered(&s, selector, img, hex, err);
	}
	if (rc == 0 && !(flags & IMAGE_DRY_RUN) &&
	    (cache_put_image(c, hex, img, err) < 0 || (fast && cache_put_source(c, key, hex, err) < 0)))
		rc = -1;
	if (s.progress && rc == 0)
		progress_end(s.progress);
out:
	progress_clear(); /* a failure left it: the error line follows on a clean line */
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
