/* rootfs/registry/regpool.c — the layer blobs of a pull, fetched several at a time:
 * PULL_PARALLEL threads, each blob into its file of the scratch layout,
 * hashed as it arrives; the unpacker's view of a blob still arriving
 * (blob_attach(), for struct blob_follow); and the progress display on a
 * terminal.  struct job and struct pool are in registry_int.h: registry.c
 * starts the pool and reads how it ended. */
#include "registry_int.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* ---- fetching layers, several at a time ----------------------------------------- */

static int fetch_blob(struct pool *p, CURL *h, struct job *j, struct gerr *err)
{
	struct reg *r = p->r;
	int fd = openat(p->blobdir, j->hex, O_WRONLY | O_TRUNC | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return gerr_set(err, errno, "image %s: blob sha256:%s: open", r->name, j->hex);
	struct resp rs = {0};
	struct sink s = {.h = h,
			 .resp = &rs,
			 .fd = fd,
			 .hash = digest_new(),
			 .expect = j->size,
			 .progress = &j->got,
			 .cancel = &p->cancel,
			 .deadline = reg_mono_now() + (double)blob_allowance(r, j->size)};
	char what[DIGEST_HEX_LEN + 16];
	snprintf(what, sizeof what, "blob sha256:%s", j->hex);
	_cleanup_free_ char *path = xasprintf("/v2/%s/blobs/sha256:%s", r->ref.repo, j->hex);
	clock_gettime(CLOCK_MONOTONIC, &j->start);
	int rc = reg_get(r, &s, path, NULL, what, err);
	char got[DIGEST_HEX_LEN + 1];
	digest_final(s.hash, got);
	if (rc == 0 && strcmp(got, j->hex))
		rc = gerr_set(err, 0, "image %s: blob sha256:%s: content does not match its digest", r->name, j->hex);
	else if (rc == 0 && s.got != j->size)
		rc = gerr_set(err, 0, "image %s: blob sha256:%s: %llu bytes, the manifest says %llu", r->name, j->hex,
			      s.got, j->size);
	if (close(fd) < 0 && rc == 0)
		rc = gerr_set(err, errno, "image %s: blob sha256:%s: write", r->name, j->hex);
	if (rc == 0 && r->verbose)
		fprintf(stderr, "gpurun: %s: fetched blob sha256:%s (%llu bytes)\n", r->name, j->hex, s.got);
	return rc;
}

static void *worker(void *arg)
{
	struct pool *p = arg;
	CURL *h = reg_curl.easy_init();
	for (;;) {
		size_t i = __atomic_fetch_add(&p->next, 1, __ATOMIC_RELAXED);
		if (i >= p->n)
			break;
		struct job *j = &p->jobs[i];
		struct gerr err = {0};
		int rc = -1;
		if (__atomic_load_n(&p->failed, __ATOMIC_ACQUIRE) || __atomic_load_n(&p->cancel, __ATOMIC_ACQUIRE))
			gerr_set(&err, 0, "stopped");
		else if (!h)
			gerr_set(&err, 0, "image %s: libcurl cannot make a transfer handle", p->r->name);
		else
			rc = fetch_blob(p, h, j, &err);
		if (rc < 0) {
			pthread_mutex_lock(&p->lock);
			if (!p->failed && !__atomic_load_n(&p->cancel, __ATOMIC_ACQUIRE))
				p->err = err;
			__atomic_store_n(&p->failed, 1, __ATOMIC_RELEASE);
			pthread_mutex_unlock(&p->lock);
		}
		__atomic_store_n(&j->done, rc < 0 ? -1 : 1, __ATOMIC_RELEASE);
	}
	if (h)
		reg_curl.easy_cleanup(h);
	return NULL;
}

static void nap_ms(long ms)
{
	struct timespec t = {0, ms * 1000000L};
	nanosleep(&t, NULL);
}

/* blob_follow: the unpacker's view of a blob being fetched. */
static int blob_more(void *ctx, unsigned long long have)
{
	struct job *j = ctx;
	for (;;) {
		int done = __atomic_load_n(&j->done, __ATOMIC_ACQUIRE);
		if (have < __atomic_load_n(&j->got, __ATOMIC_ACQUIRE))
			return 1;
		if (done)
			return done > 0 ? (have < __atomic_load_n(&j->got, __ATOMIC_ACQUIRE)) : -1;
		if (__atomic_load_n(&j->pool->failed, __ATOMIC_ACQUIRE))
			return -1; /* another layer failed: this pull is over */
		nap_ms(1);
	}
}

int blob_attach(void *ctx, const char *member, struct fd_source *in)
{
	struct pool *p = ctx;
	const char *hex = strrchr(member, '/');
	hex = hex ? hex + 1 : member;
	for (size_t i = 0; i < p->n; i++) {
		struct job *j = &p->jobs[i];
		if (strcmp(j->hex, hex))
			continue;
		in->more = blob_more;
		in->more_ctx = j;
		/* The unpacker peeks at the first bytes for the compression. */
		while (!__atomic_load_n(&j->done, __ATOMIC_ACQUIRE) && __atomic_load_n(&j->got, __ATOMIC_ACQUIRE) < 8 &&
		       !__atomic_load_n(&p->failed, __ATOMIC_ACQUIRE))
			nap_ms(1);
		return __atomic_load_n(&j->done, __ATOMIC_ACQUIRE) < 0 || __atomic_load_n(&p->failed, __ATOMIC_ACQUIRE)
			       ? -1
			       : 0;
	}
	return 0; /* not fetched now: complete already */
}

/* The display: a line per layer (bytes, rate) and one for the whole. */
static void draw(const struct pool *p, int redraw)
{
	unsigned long long all = 0, total = 0;
	if (redraw)
		progress_up(p->n + 1);
	for (size_t i = 0; i < p->n; i++) {
		const struct job *j = &p->jobs[i];
		unsigned long long got = __atomic_load_n(&j->got, __ATOMIC_RELAXED);
		int done = __atomic_load_n(&j->done, __ATOMIC_ACQUIRE);
		double secs = j->start.tv_sec ? seconds_since(&j->start) : 0;
		all += got;
		total += j->size;
		progress_print(1, "  sha256:%.12s  %7.1f / %.1f MB  %6.1f MB/s%s", j->hex, (double)got / 1e6,
			       (double)j->size / 1e6, progress_mb_per_s(got, secs),
			       done > 0   ? "  done"
			       : done < 0 ? "  failed"
					  : "");
	}
	progress_print(1, "gpurun: pulling %s: %.1f of %.1f MB, %.1f MB/s", p->r->name, (double)all / 1e6,
		       (double)total / 1e6, progress_mb_per_s(all, seconds_since(&p->start)));
}

static void *display(void *arg)
{
	struct pool *p = arg;
	draw(p, 0);
	while (!__atomic_load_n(&p->finished, __ATOMIC_ACQUIRE)) {
		nap_ms(200);
		draw(p, 1);
	}
	return NULL;
}

int pool_start(struct pool *p, struct gerr *err)
{
	pthread_mutex_init(&p->lock, NULL);
	clock_gettime(CLOCK_MONOTONIC, &p->start);
	for (size_t i = 0; i < p->n; i++)
		p->jobs[i].pool = p;
	for (size_t i = 0; i < PULL_PARALLEL && i < p->n; i++) {
		int e = pthread_create(&p->th[p->nth], NULL, worker, p);
		if (e != 0) {
			if (!p->nth) {
				pthread_mutex_destroy(&p->lock);
				return gerr_set(err, e, "image %s: start a download thread", p->r->name);
			}
			break; /* fewer at once is still a pull */
		}
		p->nth++;
	}
	if (p->show && pthread_create(&p->display, NULL, display, p) != 0)
		p->show = 0;
	return 0;
}

/* Wait for the threads (cancelling the fetches when the unpack failed). */
void pool_finish(struct pool *p, int cancel)
{
	if (cancel)
		__atomic_store_n(&p->cancel, 1, __ATOMIC_RELEASE);
	for (size_t i = 0; i < p->nth; i++)
		pthread_join(p->th[i], NULL);
	if (p->show) {
		__atomic_store_n(&p->finished, 1, __ATOMIC_RELEASE);
		pthread_join(p->display, NULL);
		draw(p, 1);
	}
	pthread_mutex_destroy(&p->lock);
}
