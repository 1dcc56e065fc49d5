/* rootfs/registry/registry_int.h — what the files of a registry pull (registry.c and
 * the reg*.c beside it) share, and no other file: the pull's numbers and
 * bounds (PULL_*), and, by the file that defines them:
 *   reghttp.c     libcurl's functions (reg_curl, reg_curl_load), the session
 *                 (struct reg), one request (struct resp, struct sink,
 *                 reg_perform) and its bounds (reg_mono_now, blob_allowance,
 *                 reg_limit_error), the retries (reg_transient, reg_backoff), and
 *                 reg_insecure_listed
 *   regauth.c     reg_authenticate, reg_find_credentials, reg_creds_hint
 *   regget.c      reg_get, and struct doc: reg_fetch_doc, reg_doc_free
 *   regresolve.c  reg_resolve
 *   regpool.c     struct job, struct pool: pool_start, pool_finish,
 *                 blob_attach
 * Each of those files uses only the ones listed before it, so that calls
 * go one way.  Apart from registry.h because it brings in libcurl's
 * header, which no other file of rootfs/, fuzz target or unit test needs. */
#ifndef GPURUN_REGISTRY_INT_H
#define GPURUN_REGISTRY_INT_H

#define CURL_DISABLE_TYPECHECK
#include "registry.h"

#include <curl/curl.h>
#include <pthread.h>
#include <time.h>

#define PULL_PARALLEL 3      /* layers fetched at once, as docker does */
#define PULL_RETRIES 4       /* tries after the first, for reg_transient failures */
#define TOKEN_MAX (64 << 10) /* a token service's answer */
#define ERRBODY_KEEP 4096    /* the part of an error answer kept for its message */

/* What one registry can make a pull wait for (README, "Registries"): a
 * server that trickles, stalls or never ends its answer must not hold a pull
 * (or the cache lock other launches wait on) for ever. */
#define PULL_STALL_S 30             /* no byte at all for this long (GPURUN_PULL_STALL_TIMEOUT) */
#define PULL_ERRBODY_MAX (64 << 10) /* an error answer's body is read for its message only */
#define PULL_HEADERS_MAX (64 << 10) /* the headers of one request, redirects and 1xx answers included */
#define PULL_ANSWER_S 120 /* a manifest, config, token, error answer (GPURUN_PULL_ANSWER_TIMEOUT); a blob's base */
#define PULL_BLOB_RATE (32 << 10)

/* ---- reghttp.c ------------------------------------------------------------ */

/* libcurl's functions, loaded by reg_curl_load() on the first pull. */
struct curl_api {
	CURLcode (*global_init)(long);
	CURL *(*easy_init)(void);
	CURLcode (*easy_setopt)(CURL *, CURLoption, ...);
	CURLcode (*easy_perform)(CURL *);
	CURLcode (*easy_getinfo)(CURL *, CURLINFO, ...);
	void (*easy_cleanup)(CURL *);
	void (*easy_reset)(CURL *);
	const char *(*easy_strerror)(CURLcode);
	struct curl_slist *(*slist_append)(struct curl_slist *, const char *);
	void (*slist_free_all)(struct curl_slist *);
	char *(*easy_escape)(CURL *, const char *, int);
	void (*free)(void *);
	int loaded;
};
extern struct curl_api reg_curl;
int reg_curl_load(struct gerr *err);

/* A registry session: one pull's, set up by registry_prepare(). */
struct reg {
	struct image_ref ref;
	const char *name;   /* "docker://REF", for messages */
	char *host;         /* where the API is served */
	const char *scheme; /* "https", or "http" for an insecure registry that speaks no TLS */
	int insecure, scheme_known, verbose, retries;
	int plain_ok; /* plain HTTP when TLS is not offered: insecure, or on a loopback address */
	int stall_s;  /* PULL_STALL_S, or GPURUN_PULL_STALL_TIMEOUT */
	int answer_s; /* PULL_ANSWER_S, or GPURUN_PULL_ANSWER_TIMEOUT */
	const char *cafile, *capath;
	char *basic;       /* base64 "user:password" from an auth file, or NULL */
	char *auth;        /* the Authorization header in use, or NULL */
	unsigned auth_gen; /* bumped when auth changes */
	pthread_mutex_t lock;
};

struct resp {
	long status;
	char www_auth[4 * CHALLENGE_VALUE_MAX];
	char ctype[256];
	char digest[128]; /* Docker-Content-Digest */
	long long length; /* Content-Length, or -1 */
	char errbody[ERRBODY_KEEP];
	size_t errlen;
};

/* Which bound ended a request (struct sink's limit). */
enum limit { LIMIT_NONE, LIMIT_STALL, LIMIT_ANSWER_TIME, LIMIT_BLOB_TIME, LIMIT_ERRBODY, LIMIT_HEADERS };

/* Where a response's body goes: memory (JSON, capped) or a file (a blob,
 * hashed as it arrives, resumable). */
struct sink {
	CURL *h;
	struct resp *resp;
	struct sbuf *mem;
	size_t max;
	int too_big;
	int fd;
	struct digest_ctx *hash;
	unsigned long long got, expect; /* bytes kept; the size the manifest promises */
	unsigned long long range_from;  /* this request asked for bytes from here */
	int checked;                    /* the first body bytes of this request were seen */
	int restarted;                  /* ... and the range asked for was ignored */
	int write_errno;
	unsigned long long *progress; /* for the display, updated atomically */
	const int *cancel;            /* atomic: give up now */
	int stall_s;                  /* seconds without a byte that end a request */
	int answer_s;                 /* seconds for anything but a blob's data */
	double deadline;              /* monotonic: the whole fetch, retries included */
	double req_start, last_byte;  /* monotonic: this request's start, its last byte in */
	long cur_status;              /* the status line of the answer being read */
	size_t hdr_bytes, err_bytes;  /* this request's headers, and its error bodies */
	enum limit limit;             /* the bound that ended this request */
	int token;                    /* a request to a token service: TLS as insecure_tls says */
	int insecure_tls;             /* ... certificate not verified */
	int strict_redirects;         /* ... redirects to https only (credentials go along) */
};

unsigned long long blob_allowance(const struct reg *r, unsigned long long size);
double reg_mono_now(void);
int reg_transient(CURLcode code, long status);
void reg_backoff(int attempt);
CURLcode reg_perform(struct reg *r, struct sink *s, const char *url, const char *accept, const char *auth);
int reg_insecure_listed(const char *host);
/* HOST[:PORT] names this machine: localhost, 127.0.0.0/8 or [::1]. */
int reg_loopback(const char *host);
int reg_limit_error(const struct reg *r, const struct sink *s, const char *what, const char *who, int retried,
		    struct gerr *err);
/* For a TLS failure (an unknown certificate, a failed handshake), the hint
 * that says how to trust host (CURL_CA_BUNDLE, --tls-verify=false or, for
 * a token service, GPURUN_INSECURE_REGISTRIES); -1 for other codes. */
int reg_tls_hint(CURLcode code, const char *host, int token, struct gerr *err);

/* ---- regauth.c ------------------------------------------------------------ */

int reg_creds_hint(const struct reg *r, struct gerr *err);
int reg_authenticate(struct reg *r, CURL *h, const struct resp *rs, unsigned gen_seen, struct gerr *err);
int reg_find_credentials(struct reg *r, struct gerr *err);

/* ---- regget.c ------------------------------------------------------------- */

int reg_get(struct reg *r, struct sink *s, const char *path, const char *accept, const char *what, struct gerr *err);

struct doc {
	struct sbuf body;
	char hex[DIGEST_HEX_LEN + 1];
	char mt[256];
	json_t *j;
};
void reg_doc_free(struct doc *d);
int reg_fetch_doc(struct reg *r, CURL *h, const char *path, const char *accept, const char *what, const char *want_hex,
		  struct doc *d, struct gerr *err);

/* ---- regresolve.c --------------------------------------------------------- */

int reg_resolve(struct reg *r, CURL *h, const struct platform *pf, struct doc *man, struct gerr *err);

/* ---- regpool.c ------------------------------------------------------------ */

/* Each layer blob is fetched into a file of the scratch layout by one of
 * PULL_PARALLEL threads, hashed as it arrives, while image_prepare()
 * unpacks the layers in order from those same files as they grow (struct
 * blob_follow): the unpacker waits at the end of what has arrived, and a
 * blob's real end comes only once its digest has been checked. */
struct job {
	char hex[DIGEST_HEX_LEN + 1];
	unsigned long long size;
	unsigned long long got; /* atomic: bytes in the file */
	int done;               /* atomic: 1 fetched and verified, -1 failed */
	struct timespec start;
	struct pool *pool;
};

struct pool {
	struct reg *r;
	int blobdir;
	struct job *jobs;
	size_t n, next; /* next: atomic */
	int failed;     /* atomic: a layer failed (err says how) */
	int cancel;     /* atomic: the unpack failed, stop fetching */
	int finished;   /* atomic: for the display thread */
	pthread_mutex_t lock;
	struct gerr err; /* the first failure */
	pthread_t th[PULL_PARALLEL], display;
	size_t nth;
	int show;
	struct timespec start;
};
int blob_attach(void *ctx, const char *member, struct fd_source *in);
int pool_start(struct pool *p, struct gerr *err);
void pool_finish(struct pool *p, int cancel);

#endif
