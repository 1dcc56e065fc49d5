/* rootfs/registry/registry.c — images straight from a registry: `gpurun
 * docker://REF` and `gpurun pull REF`, over the OCI distribution API (the
 * Docker registry v2 API), into the same cache as image files.
 *
 * A pull resolves the reference to one manifest (an OCI index or a Docker
 * manifest list is resolved to the platform asked for), fetches the config,
 * and fetches only the layers whose diff_id the cache does not hold yet,
 * several at a time, each sha256-verified while it arrives.  What it fetches
 * is laid out as an OCI image layout in a scratch directory of the cache's
 * tmp/, which image_prepare_follow() verifies and unpacks exactly as it
 * does for a layout on disk, layer after layer while the blobs are still
 * arriving (it follows each blob's file as it grows); the scratch directory
 * is removed in any case, so a failed pull leaves nothing that a later one
 * would trust.  A reference once pulled is found again in the cache
 * without the network (podman's pull policy "missing", run's default; run's
 * --pull always and never are the other two); `gpurun pull` always asks
 * the registry.
 *
 * Here: the pull itself, from registry_prepare() (the cache first, then the
 * session) to the config, the scratch layout and the layers the cache lacks.
 * Beside it, each using only those named before it: reghttp.c (libcurl, one
 * request under its bounds), regauth.c (tokens and credentials), regget.c (a
 * GET of the API, with retries), regresolve.c (the manifest for a platform,
 * picked by platform.c as for a local layout),
 * regpool.c (the layers, several at a time); what they share is in
 * registry_int.h. */
#include "registry_int.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- the scratch layout --------------------------------------------------------- */

static int write_at(int dirfd, const char *name, const char *data, size_t n, const struct reg *r, struct gerr *err)
{
	int fd = openat(dirfd, name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return gerr_set(err, errno, "image %s: create %s", r->name, name);
	int w = write_all(fd, data, n), e = errno;
	if (close(fd) < 0 && w == 0) {
		w = -1;
		e = errno;
	}
	return w < 0 ? gerr_set(err, e, "image %s: write %s", r->name, name) : 0;
}

/* A cache key for the reference and platform (sources/ref-HEX). */
static char *ref_key(const char *refstr, const struct platform *pf)
{
	char pfs[100], hex[DIGEST_HEX_LEN + 1];
	platform_str(pf, pfs, sizeof pfs);
	struct digest_ctx *d = digest_new();
	digest_update(d, refstr, strlen(refstr));
	digest_update(d, "|", 1);
	digest_update(d, pfs, strlen(pfs));
	digest_final(d, hex);
	return xasprintf("ref-%.40s", hex);
}

static int pull(struct reg *r, const struct platform *pf, struct cache *c, unsigned flags, const char *key,
		struct image *img, struct gerr *err)
{
	int rc = -1, dirfd = -1, blobdir = -1, dry = flags & IMAGE_DRY_RUN;
	/* No cleanup attributes here: a goto must not jump over one. */
	char *rel = NULL, *scratch = NULL, *cpath = NULL, *index = NULL;
	struct doc man = {0}, cfg = {0};
	struct job *jobs = NULL;
	size_t njobs = 0;
	CURL *h = reg_curl.easy_init();
	if (!h)
		return gerr_set(err, 0, "image %s: libcurl cannot make a transfer handle", r->name);
	if (reg_resolve(r, h, pf, &man, err) < 0)
		goto out;
	json_t *layers = json_object_get(man.j, "layers"), *l;
	const char *cdig = json_string_value(json_object_get(json_object_get(man.j, "config"), "digest"));
	if (!digest_parse(cdig)) {
		gerr_set(err, 0, "image %s: the manifest names its config by an invalid digest", r->name);
		goto out;
	}
	cpath = xasprintf("/v2/%s/blobs/%s", r->ref.repo, cdig);
	if (reg_fetch_doc(r, h, cpath, NULL, "config", digest_parse(cdig), &cfg, err) < 0)
		goto out;
	json_t *ids = json_object_get(json_object_get(cfg.j, "rootfs"), "diff_ids");
	if (!json_is_array(layers) || !json_is_array(ids) || json_array_size(ids) != json_array_size(layers)) {
		gerr_set(err, 0, "image %s: the manifest's layers and the config's diff_ids do not match", r->name);
		goto out;
	}
	/* The scratch layout: in the cache's tmp/, or for a dry run (which
	 * writes nothing to the cache) in $TMPDIR, removed before returning. */
	if (dry) {
		const char *t = getenv("TMPDIR");
		scratch = xasprintf("%s/gpurun-pull.XXXXXX", t && *t == '/' ? t : "/tmp");
		if (!mkdtemp(scratch)) {
			gerr_set(err, errno, "image %s: mkdtemp %s", r->name, scratch);
			free(scratch);
			scratch = NULL;
			goto out;
		}
		dirfd = open(scratch, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (dirfd < 0) {
			gerr_set(err, errno, "image %s: open %s", r->name, scratch);
			goto out;
		}
	} else {
		if (!(rel = cache_tmpdir(c, "pull", &dirfd, err)))
			goto out;
		scratch = xasprintf("%s/%s", c->root, rel);
	}
	if (mkdirat(dirfd, "blobs", 0700) < 0 || mkdirat(dirfd, OCI_BLOB_DIR, 0700) < 0 ||
	    (blobdir = openat(dirfd, OCI_BLOB_DIR, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0) {
		gerr_set(err, errno, "image %s: mkdir %s/" OCI_BLOB_DIR, r->name, scratch);
		goto out;
	}
	static const char layout[] = "{\"imageLayoutVersion\":\"1.0.0\"}\n";
	index = xasprintf("{\"schemaVersion\":2,\"manifests\":[{\"mediaType\":\"%s\","
			  "\"digest\":\"sha256:%s\",\"size\":%zu}]}\n",
			  man.mt, man.hex, man.body.len);
	if (write_at(dirfd, "oci-layout", layout, sizeof layout - 1, r, err) < 0 ||
	    write_at(dirfd, "index.json", index, strlen(index), r, err) < 0 ||
	    write_at(blobdir, man.hex, man.body.s ? man.body.s : "", man.body.len, r, err) < 0 ||
	    (strcmp(cfg.hex, man.hex) &&
	     write_at(blobdir, cfg.hex, cfg.body.s ? cfg.body.s : "", cfg.body.len, r, err) < 0))
		goto out;
	/* Only what the cache lacks (by diff_id) is fetched. */
	size_t i, total = json_array_size(layers);
	jobs = xcalloc(total ? total : 1, sizeof *jobs);
	json_array_foreach(layers, i, l)
	{
		const char *dig = json_string_value(json_object_get(l, "digest"));
		const char *diff = digest_parse(json_string_value(json_array_get(ids, i)));
		json_t *sz = json_object_get(l, "size");
		/* The size bounds the blob's bytes and the time they may take. */
		if (!digest_parse(dig) || !diff || !json_is_integer(sz) || json_integer_value(sz) < 0) {
			gerr_set(err, 0, "image %s: layer %zu: invalid digest or size in the manifest", r->name, i + 1);
			goto out;
		}
		if (cache_has_layer(c, diff)) {
			if (r->verbose)
				fprintf(stderr, "gpurun: %s: layer %zu of %zu (%s) is in the cache already\n", r->name,
					i + 1, total, dig);
			continue;
		}
		if (dry)
			continue;
		int dup = 0;
		for (size_t k = 0; k < njobs; k++)
			dup |= !strcmp(jobs[k].hex, digest_parse(dig));
		if (dup)
			continue;
		snprintf(jobs[njobs].hex, sizeof jobs[njobs].hex, "%s", digest_parse(dig));
		jobs[njobs++].size = (unsigned long long)json_integer_value(sz);
	}
	/* The files exist before any thread starts: the unpacker opens them. */
	for (i = 0; i < njobs; i++) {
		int fd = openat(blobdir, jobs[i].hex, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
		if (fd < 0) {
			gerr_set(err, errno, "image %s: create %s/" OCI_BLOBS "%s", r->name, scratch, jobs[i].hex);
			goto out;
		}
		close(fd);
	}
	struct pool pool = {.r = r,
			    .blobdir = blobdir,
			    .jobs = jobs,
			    .n = njobs,
			    .show = njobs && !(flags & IMAGE_QUIET) && isatty(2)};
	if (njobs && pool_start(&pool, err) < 0)
		goto out;
	struct blob_follow follow = {blob_attach, &pool};
	rc = image_prepare_follow(scratch, r->name, NULL, c, flags | IMAGE_NO_SOURCE | (pool.show ? IMAGE_QUIET : 0),
				  njobs ? &follow : NULL, img, err);
	if (njobs) {
		pool_finish(&pool, rc < 0);
		/* A fetch that failed is the cause of whatever the unpack said. */
		if (pool.failed && pool.err.msg[0]) {
			*err = pool.err;
			rc = -1;
		}
	}
	if (rc == 0 && !dry)
		rc = cache_put_source(c, key, cfg.hex, err);
out:
	if (h)
		reg_curl.easy_cleanup(h);
	if (blobdir >= 0)
		close(blobdir);
	if (dirfd >= 0)
		close(dirfd);
	/* Nothing of a pull stays behind but what was committed to the cache. */
	if (rel)
		cache_remove_tree(c, c->fd, rel);
	else if (scratch)
		cache_remove_tree(NULL, AT_FDCWD, scratch);
	free(rel);
	free(scratch);
	free(cpath);
	free(index);
	free(jobs);
	reg_doc_free(&man);
	reg_doc_free(&cfg);
	return rc;
}

/* A time bound from the environment, for slow links (and the tests). */
static int env_seconds(const char *name, int def)
{
	const char *v = getenv(name);
	if (!v || !*v)
		return def;
	int n = atoi(v);
	return n < 1 ? 1 : n > 3600 ? 3600 : n;
}

int registry_prepare(const char *refstr, const struct pull_opts *o, struct cache *c, unsigned flags, struct image *img,
		     struct gerr *err)
{
	struct reg r = {.scheme = "https", .retries = PULL_RETRIES, .verbose = o->verbose};
	struct platform pf;
	int rc = -1, lock = -1;
	memset(img, 0, sizeof *img);
	if (ref_parse(refstr, &r.ref, err) < 0)
		return -1;
	_cleanup_free_ char *canon = ref_string(&r.ref);
	_cleanup_free_ char *name = xasprintf(REGISTRY_PREFIX "%s", canon);
	r.name = name;
	if (o->platform) {
		if (platform_parse(o->platform, &pf) < 0) {
			ref_free(&r.ref);
			return gerr_set(err, 0, "--platform '%s': expected OS/ARCH[/VARIANT], e.g. linux/arm64",
					o->platform);
		}
	} else {
		host_platform(&pf);
	}
	_cleanup_free_ char *key = ref_key(canon, &pf);
	img->source = xstrdup(name);
	char hex[DIGEST_HEX_LEN + 1];
	/* Pulled before: the cache has it, no network. */
	if (!o->always && c->fd >= 0 && cache_lookup_source(c, key, hex) && cache_get_image(c, hex, img, err) == 0) {
		img->hit = 1;
		ref_free(&r.ref);
		return 0;
	}
	gerr_clear(err);
	if (o->never) {
		ref_free(&r.ref);
		return gerr_set(err, 0, "image %s: not in the cache, and --pull never does not ask the registry", name);
	}
	r.stall_s = env_seconds("GPURUN_PULL_STALL_TIMEOUT", PULL_STALL_S);
	r.answer_s = env_seconds("GPURUN_PULL_ANSWER_TIMEOUT", PULL_ANSWER_S);
	const char *retries = getenv("GPURUN_PULL_RETRIES");
	if (retries && *retries) {
		int n = atoi(retries);
		r.retries = n < 0 ? 0 : n > 20 ? 20 : n;
	}
	r.host = xstrdup(!strcmp(r.ref.registry, "docker.io") ? "registry-1.docker.io" : r.ref.registry);
	r.insecure = o->insecure || reg_insecure_listed(r.ref.registry);
	/* docker's and podman's rule: a registry on this machine may speak
	 * plain HTTP (a certificate it offers is still verified). */
	r.plain_ok = r.insecure || (!o->tls_verify && reg_loopback(r.ref.registry));
	r.cafile = getenv("CURL_CA_BUNDLE");
	if (!r.cafile || !*r.cafile)
		r.cafile = getenv("SSL_CERT_FILE");
	if (r.cafile && !*r.cafile)
		r.cafile = NULL;
	r.capath = getenv("SSL_CERT_DIR");
	if (r.capath && !*r.capath)
		r.capath = NULL;
	pthread_mutex_init(&r.lock, NULL);
	if (r.verbose)
		fprintf(stderr, "gpurun: %s: the registry API at https://%s/v2/%s%s\n", r.name, r.host, r.ref.repo,
			r.insecure   ? " (insecure: TLS not verified, plain HTTP allowed)"
			: r.plain_ok ? " (a loopback address: plain HTTP allowed when TLS is not offered)"
				     : "");
	if (reg_curl_load(err) < 0 || reg_find_credentials(&r, err) < 0)
		goto out;
	if (!(flags & IMAGE_DRY_RUN)) {
		/* One pull of a reference at a time: the others then find it. */
		if ((lock = cache_lock(c, key, err)) < 0)
			goto out;
		if (!o->always && cache_lookup_source(c, key, hex) && cache_get_image(c, hex, img, err) == 0) {
			img->hit = 1;
			rc = 0;
			goto out;
		}
		gerr_clear(err);
	}
	struct image got = {0};
	rc = pull(&r, &pf, c, flags, key, &got, err);
	if (rc == 0) {
		free(got.source);
		got.source = img->source;
		*img = got;
	} else {
		image_free(&got);
	}
out:
	cache_unlock(lock);
	pthread_mutex_destroy(&r.lock);
	if (r.basic)
		explicit_bzero(r.basic, strlen(r.basic));
	if (r.auth)
		explicit_bzero(r.auth, strlen(r.auth));
	free(r.basic);
	free(r.auth);
	free(r.host);
	ref_free(&r.ref);
	return rc;
}
