/* rootfs/open.c — what IMAGE on the command line names, opened once and
 * before any namespace work, so that a bad image fails fast in one line: a
 * registry reference (rootfs/registry/registry.c: docker://REF, or REF as
 * docker reads it when no file has that name); a root file system directory
 * (overlaid, never modified) unless it is an OCI or dir: layout; with
 * --no-cache a root file system archive, opened and sniffed here and
 * unpacked into the run's tmpfs, or a layered image read here and unpacked
 * in the run; anything else through the cache (rootfs/image/image.c). */
#include "rootfs.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../base/plan/plan.h"
#include "registry/registry.h"

static int from_registry(const char *arg, const struct image_open_opts *o, unsigned flags, struct cache *cache,
			 struct image *img, struct opened_image *out, struct gerr *err)
{
	struct pull_opts po = {.platform = o->platform,
			       .insecure = o->insecure,
			       .tls_verify = o->tls_verify,
			       .verbose = o->verbose,
			       .always = o->pull_always,
			       .never = o->pull_never};
	if (o->no_cache)
		return gerr_set(err, 0, "image %s: --no-cache cannot be used with a registry image", arg);
	if (cache_open(cache, !o->dry_run, err) < 0 && !(o->dry_run && err->errnum == ENOENT))
		return -1;
	gerr_clear(err);
	if (registry_prepare(arg, &po, cache, flags, img, err) < 0)
		return -1;
	out->image = img->source;
	out->layered = img;
	return 0;
}

/* docker's reading of IMAGE, when no file answers to it: a reference
 * ("ubuntu:22.04" is docker.io/library/ubuntu:22.04).  A failure names
 * both readings, the file first; 1 when arg is no reference either. */
static int from_bare_ref(const char *arg, const struct image_open_opts *o, unsigned flags, struct cache *cache,
			 struct image *img, struct opened_image *out, struct gerr *err)
{
	struct image_ref r;
	struct gerr perr = {0};
	if (ref_parse(arg, &r, &perr) < 0)
		return 1;
	ref_free(&r);
	_cleanup_free_ char *ref = xasprintf(REGISTRY_PREFIX "%s", arg);
	struct gerr rerr = {0};
	if (from_registry(ref, o, flags, cache, img, out, &rerr) == 0)
		return 0;
	const char *rest = str_after(rerr.msg, "image ") ? str_after(rerr.msg, "image ") : rerr.msg;
	gerr_set(err, 0, "image %s: no such file or directory, and as a registry image %s", arg, rest);
	err->errnum = ENOENT;
	if (rerr.hint[0])
		memcpy(err->hint, rerr.hint, sizeof err->hint);
	else
		gerr_hint(err, "IMAGE is a file when one has that name, else a registry reference as docker reads it");
	return -1;
}

int image_open(const char *arg, const struct image_open_opts *o, struct cache *cache, struct image *img,
	       struct opened_image *out, struct gerr *err)
{
	struct stat st;
	unsigned flags = (o->dry_run ? IMAGE_DRY_RUN : 0) | (o->quiet ? IMAGE_QUIET : 0);
	memset(out, 0, sizeof *out);
	out->fd = -1;
	if (!strncmp(arg, REGISTRY_PREFIX, strlen(REGISTRY_PREFIX)))
		return from_registry(arg, o, flags, cache, img, out, err);
	_cleanup_free_ char *path = xstrdup(arg);
	char *sel = NULL;
	/* IMAGE@NAME:TAG, unless a file is really called that. */
	int missing = stat(path, &st) < 0 && errno == ENOENT;
	if (missing && (sel = strrchr(path, '@')) && sel != path) {
		*sel++ = '\0';
		if (!*sel)
			return gerr_set(err, 0, "image %s: empty NAME:TAG after '@'", arg);
	} else {
		sel = NULL;
	}
	/* An existing file of that name wins over the reference. */
	if (missing && o->bare_ref && stat(path, &st) < 0 && errno == ENOENT) {
		int r = from_bare_ref(arg, o, flags, cache, img, out, err);
		if (r <= 0)
			return r;
	}
	if (o->platform)
		return gerr_set(err, 0, "--platform is for registry images (docker://...)");
	if (stat(path, &st) < 0)
		return gerr_set(err, errno, "image %s", path);
	/* A directory is resolved once: whether it is a layout, its absolute
	 * name and the tree P1 overlays all come from this one fd (P1 checks
	 * the tree it opens against it), so a path swapped meanwhile for a
	 * link to another tree cannot mix two of them. */
	int dfd = S_ISDIR(st.st_mode) ? open(path, O_PATH | O_DIRECTORY | O_CLOEXEC) : -1;
	if (S_ISDIR(st.st_mode) && dfd < 0)
		return gerr_set(err, errno, "image %s", path);
	char fdpath[64];
	snprintf(fdpath, sizeof fdpath, "/proc/self/fd/%d", dfd);
	if (dfd >= 0 && !image_is_layout_dir(fdpath)) {
		if (sel) {
			close(dfd);
			return gerr_set(err, 0, "image %s: a root file system directory holds one image; drop @%s",
					path, sel);
		}
		char *abs = realpath(fdpath, NULL);
		if (!abs || faccessat(dfd, "", R_OK | X_OK, AT_EMPTY_PATH) < 0) {
			int e = errno;
			free(abs);
			close(dfd);
			return gerr_set(err, e, "image %s", path);
		}
		out->fd = dfd;
		out->image = abs;
		out->is_dir = 1;
		return 0;
	}
	if (dfd >= 0)
		close(dfd);
	if (o->no_cache) {
		out->image = xstrdup(path);
		out->fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
		if (out->fd < 0)
			return gerr_set(err, errno, "image %s", path);
		int kind = S_ISDIR(st.st_mode) ? PROBE_IMAGE : rootfs_probe(out->fd, path, err);
		if (kind < 0)
			return -1;
		if (kind == PROBE_FLAT) {
			if (sel)
				return gerr_set(err, 0,
						"image %s: a root file system archive holds one image; drop @%s", path,
						sel);
			return 0;
		}
		/* A layered image: read its manifest and config now, unpack its
		 * layers in the run, into a cache on the run's tmpfs. */
		cache->root = xstrdup(PLAN_RUN_CACHE); /* named, never opened: the host's /tmp is not it */
		if (image_prepare(path, NULL, sel, cache, flags | IMAGE_DRY_RUN, img, err) < 0)
			return -1;
		out->layered = img;
		out->import_run = 1;
		out->import_sel = sel ? xstrdup(sel) : NULL;
		return 0;
	}
	/* A dry run writes nothing, not even an empty cache. */
	if (cache_open(cache, !o->dry_run, err) < 0 && !(o->dry_run && err->errnum == ENOENT))
		return -1;
	gerr_clear(err);
	if (image_prepare(path, NULL, sel, cache, flags, img, err) < 0)
		return -1;
	out->image = img->source;
	out->layered = img;
	return 0;
}
