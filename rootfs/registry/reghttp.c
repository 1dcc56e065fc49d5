/* rootfs/registry/reghttp.c — one HTTP request of a registry pull, under its bounds:
 * libcurl loaded on demand, where an answer goes (struct sink: memory, or a
 * blob's file, hashed and resumable), the time and size bounds kept while
 * it arrives, which failures are worth another try, the message for a
 * request that a bound ended, and which registries are named insecure.
 *
 * HTTP and TLS are libcurl's, loaded with dlopen() on the first pull only:
 * linked, its dozen shared dependencies would cost every launch loader time.
 * Every request is bounded in bytes and in time (PULL_* in registry_int.h),
 * so that a registry cannot hold a pull, or the cache lock that waits on
 * it, for ever. */
#include "registry_int.h"

#include <arpa/inet.h>
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

/* ---- libcurl, loaded on demand -------------------------------------------- */

struct curl_api reg_curl;

int reg_curl_load(struct gerr *err)
{
	static const struct {
		size_t off;
		const char *name;
	} syms[] = {
#define SYM(f) {offsetof(__typeof__(reg_curl), f), "curl_" #f}
		SYM(global_init),  SYM(easy_init),      SYM(easy_setopt), SYM(easy_perform),
		SYM(easy_getinfo), SYM(easy_cleanup),   SYM(easy_reset),  SYM(easy_strerror),
		SYM(slist_append), SYM(slist_free_all), SYM(easy_escape), SYM(free),
#undef SYM
	};
	if (reg_curl.loaded)
		return 0;
	void *h = dlopen("libcurl.so.4", RTLD_NOW | RTLD_LOCAL);
	if (!h)
		return gerr_set(err, 0, "registry: cannot load libcurl.so.4 (install Debian's libcurl4): %s",
				dlerror());
	for (size_t i = 0; i < COUNT_OF(syms); i++) {
		void *f = dlsym(h, syms[i].name);
		if (!f)
			return gerr_set(err, 0, "registry: libcurl.so.4 has no %s", syms[i].name);
		memcpy((char *)&reg_curl + syms[i].off, &f, sizeof f);
	}
	/* Once, before any thread: curl_global_init is not thread-safe. */
	if (reg_curl.global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
		return gerr_set(err, 0, "registry: libcurl cannot initialise");
	reg_curl.loaded = 1;
	return 0;
}

/* ---- a registry session ----------------------------------------------------- */

/* A blob's data may take the answer time, plus a second per
 * PULL_BLOB_RATE bytes it is declared to have. */
unsigned long long blob_allowance(const struct reg *r, unsigned long long size)
{
	return (unsigned long long)r->answer_s + size / PULL_BLOB_RATE;
}

double reg_mono_now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static void resp_reset(struct resp *r)
{
	memset(r, 0, sizeof *r);
	r->length = -1;
}

static void copy_value(char *dst, size_t cap, const char *v, size_t n)
{
	while (n && (v[n - 1] == '\r' || v[n - 1] == '\n' || v[n - 1] == ' '))
		n--;
	while (n && *v == ' ')
		v++, n--;
	if (n >= cap)
		n = cap - 1;
	memcpy(dst, v, n);
	dst[n] = '\0';
}

static size_t on_header(char *buf, size_t size, size_t n, void *arg)
{
	struct sink *s = arg;
	size_t len = size * n;
	s->last_byte = reg_mono_now();
	s->hdr_bytes += len;
	if (s->hdr_bytes > PULL_HEADERS_MAX) {
		s->limit = LIMIT_HEADERS;
		return 0;
	}
	/* A new response (after a redirect, or a 100): forget the last one's. */
	if (len > strlen("HTTP/") && !strncmp(buf, "HTTP/", strlen("HTTP/"))) {
		s->resp->www_auth[0] = s->resp->ctype[0] = s->resp->digest[0] = '\0';
		s->resp->length = -1;
		const char *sp = memchr(buf, ' ', len);
		char num[8] = "";
		if (sp)
			copy_value(num, sizeof num, sp + 1, (size_t)(buf + len - sp - 1));
		s->cur_status = strtol(num, NULL, 10);
		return len;
	}
	const char *colon = memchr(buf, ':', len);
	if (!colon)
		return len;
	size_t kl = (size_t)(colon - buf), vl = len - kl - 1;
	const char *v = colon + 1;
	if (kl == 16 && !strncasecmp(buf, "WWW-Authenticate", kl))
		copy_value(s->resp->www_auth, sizeof s->resp->www_auth, v, vl);
	else if (kl == 12 && !strncasecmp(buf, "Content-Type", kl))
		copy_value(s->resp->ctype, sizeof s->resp->ctype, v, vl);
	else if (kl == 21 && !strncasecmp(buf, "Docker-Content-Digest", kl))
		copy_value(s->resp->digest, sizeof s->resp->digest, v, vl);
	else if (kl == 14 && !strncasecmp(buf, "Content-Length", kl)) {
		char num[32];
		copy_value(num, sizeof num, v, vl);
		s->resp->length = strtoll(num, NULL, 10);
		long status = 0;
		reg_curl.easy_getinfo(s->h, CURLINFO_RESPONSE_CODE, &status);
		/* Refused before it is read: a JSON document above the cap. */
		if (s->mem && status == 200 && s->resp->length > (long long)s->max) {
			s->too_big = 1;
			return 0;
		}
	}
	return len;
}

static size_t on_body(char *buf, size_t size, size_t n, void *arg)
{
	struct sink *s = arg;
	size_t len = size * n;
	long status = 0;
	s->last_byte = reg_mono_now();
	reg_curl.easy_getinfo(s->h, CURLINFO_RESPONSE_CODE, &status);
	if (status < 200 || status >= 300) {
		s->err_bytes += len;
		if (s->err_bytes > PULL_ERRBODY_MAX) {
			s->limit = LIMIT_ERRBODY;
			return 0;
		}
		size_t room = sizeof s->resp->errbody - 1 - s->resp->errlen;
		size_t k = len < room ? len : room;
		memcpy(s->resp->errbody + s->resp->errlen, buf, k);
		s->resp->errlen += k;
		s->resp->errbody[s->resp->errlen] = '\0';
		return len;
	}
	if (s->cancel && __atomic_load_n(s->cancel, __ATOMIC_ACQUIRE))
		return 0;
	if (s->mem) {
		if (s->mem->len + len > s->max) {
			s->too_big = 1;
			return 0;
		}
		sbuf_add(s->mem, buf, len);
		return len;
	}
	if (!s->checked) {
		s->checked = 1;
		/* Asked for a range, given the whole blob: start again. */
		if (s->range_from && status == 200) {
			if (ftruncate(s->fd, 0) < 0 || lseek(s->fd, 0, SEEK_SET) < 0) {
				s->write_errno = errno;
				return 0;
			}
			digest_free(s->hash);
			s->hash = digest_new();
			if (s->progress)
				__atomic_store_n(s->progress, 0, __ATOMIC_RELAXED);
			s->got = 0;
			s->restarted = 1;
		}
	}
	if (s->got + len > s->expect) {
		s->too_big = 1;
		return 0;
	}
	if (write_all(s->fd, buf, len) < 0) {
		s->write_errno = errno;
		return 0;
	}
	digest_update(s->hash, buf, len);
	s->got += len;
	if (s->progress)
		__atomic_store_n(s->progress, s->got, __ATOMIC_RELAXED);
	return len;
}

/* Called by libcurl at least once a second, also while nothing arrives:
 * where the time bounds are kept.  An answer's data may take the blob's
 * allowance only when it is a blob's data; anything else (headers,
 * redirects, an error answer) has answer_s. */
static int on_progress(void *arg, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal, curl_off_t ulnow)
{
	struct sink *s = arg;
	(void)dltotal, (void)dlnow, (void)ultotal, (void)ulnow;
	double now = reg_mono_now(), end = s->deadline;
	if (s->cancel && __atomic_load_n(s->cancel, __ATOMIC_ACQUIRE))
		return 1; /* even while nothing arrives */
	if (now - s->last_byte >= s->stall_s) {
		s->limit = LIMIT_STALL;
		return 1;
	}
	int blob_data = !s->mem && s->cur_status >= 200 && s->cur_status < 300;
	if (!blob_data && s->req_start + s->answer_s < end)
		end = s->req_start + s->answer_s;
	if (now >= end) {
		s->limit = !s->mem && end == s->deadline ? LIMIT_BLOB_TIME : LIMIT_ANSWER_TIME;
		return 1;
	}
	return 0;
}

int reg_transient(CURLcode code, long status)
{
	switch (code) {
	case CURLE_OK:
		return status == 408 || status == 429 || status == 500 || status == 502 || status == 503 ||
		       status == 504;
	case CURLE_COULDNT_CONNECT:
	case CURLE_SSL_CONNECT_ERROR: /* a handshake cut off by a server going away */
	case CURLE_OPERATION_TIMEDOUT:
	case CURLE_RECV_ERROR:
	case CURLE_SEND_ERROR:
	case CURLE_PARTIAL_FILE:
	case CURLE_GOT_NOTHING:
	case CURLE_HTTP2:
	case CURLE_HTTP2_STREAM: return 1;
	default: return 0;
	}
}

int reg_tls_hint(CURLcode code, const char *host, int token, struct gerr *err)
{
	switch (code) {
	case CURLE_PEER_FAILED_VERIFICATION:
	case CURLE_SSL_CACERT_BADFILE:
	case CURLE_SSL_CERTPROBLEM:
	case CURLE_SSL_ISSUER_ERROR:
	case CURLE_SSL_CONNECT_ERROR: break;
	default: return -1;
	}
	/* A token service is trusted on its own name, never by --tls-verify
	 * (that names the registry: regauth.c). */
	return gerr_hint(err,
			 "TLS with %s failed: for a registry behind a private CA, set CURL_CA_BUNDLE (or "
			 "SSL_CERT_FILE) to the CA's PEM file; to skip verification for a host you trust, %s",
			 host, token ? "name it in GPURUN_INSECURE_REGISTRIES" : "use --tls-verify=false");
}

void reg_backoff(int attempt)
{
	long ms = 250L << (attempt < 5 ? attempt : 5);
	struct timespec t = {ms / 1000, (ms % 1000) * 1000000L};
	while (nanosleep(&t, &t) < 0 && errno == EINTR)
		;
}

/* One request: url, the headers (Accept, Authorization, Range), the body
 * into sink.  Returns curl's code; resp has the status and the headers. */
CURLcode reg_perform(struct reg *r, struct sink *s, const char *url, const char *accept, const char *auth)
{
	CURL *h = s->h;
	struct curl_slist *hdrs = NULL;
	reg_curl.easy_reset(h);
	if (accept)
		hdrs = reg_curl.slist_append(hdrs, accept);
	if (auth)
		hdrs = reg_curl.slist_append(hdrs, auth);
	char range[48];
	s->checked = 0;
	s->range_from = s->mem ? 0 : s->got;
	resp_reset(s->resp);
	s->req_start = s->last_byte = reg_mono_now();
	if (!s->deadline)
		s->deadline = s->req_start + r->answer_s;
	s->stall_s = r->stall_s;
	s->answer_s = r->answer_s;
	s->cur_status = 0;
	s->hdr_bytes = s->err_bytes = 0;
	s->limit = LIMIT_NONE;
	int insecure = s->token ? s->insecure_tls : r->insecure;
	reg_curl.easy_setopt(h, CURLOPT_URL, url);
	reg_curl.easy_setopt(h, CURLOPT_HTTPHEADER, hdrs);
	reg_curl.easy_setopt(h, CURLOPT_USERAGENT, "gpurun/" GPURUN_VERSION);
	reg_curl.easy_setopt(h, CURLOPT_FOLLOWLOCATION, 1L);
	reg_curl.easy_setopt(h, CURLOPT_MAXREDIRS, 5L);
	/* Never file://, never a redirect to something other than HTTP(S). */
	reg_curl.easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
	reg_curl.easy_setopt(h, CURLOPT_REDIR_PROTOCOLS_STR, s->strict_redirects ? "https" : "http,https");
	reg_curl.easy_setopt(h, CURLOPT_NOSIGNAL, 1L); /* threads: no SIGALRM for timeouts */
	reg_curl.easy_setopt(h, CURLOPT_CONNECTTIMEOUT, 30L);
	/* The time bounds (on_progress): a stall is resumed, the others end the pull. */
	reg_curl.easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
	reg_curl.easy_setopt(h, CURLOPT_XFERINFOFUNCTION, on_progress);
	reg_curl.easy_setopt(h, CURLOPT_XFERINFODATA, s);
	reg_curl.easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
	reg_curl.easy_setopt(h, CURLOPT_HEADERDATA, s);
	reg_curl.easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
	reg_curl.easy_setopt(h, CURLOPT_WRITEDATA, s);
	if (s->range_from) {
		snprintf(range, sizeof range, "%llu-", s->range_from);
		reg_curl.easy_setopt(h, CURLOPT_RANGE, range);
	}
	if (r->cafile)
		reg_curl.easy_setopt(h, CURLOPT_CAINFO, r->cafile);
	if (r->capath)
		reg_curl.easy_setopt(h, CURLOPT_CAPATH, r->capath);
	if (insecure) {
		reg_curl.easy_setopt(h, CURLOPT_SSL_VERIFYPEER, 0L);
		reg_curl.easy_setopt(h, CURLOPT_SSL_VERIFYHOST, 0L);
	}
	CURLcode code = reg_curl.easy_perform(h);
	reg_curl.easy_getinfo(h, CURLINFO_RESPONSE_CODE, &s->resp->status);
	reg_curl.easy_setopt(h, CURLOPT_HTTPHEADER, NULL);
	reg_curl.slist_free_all(hdrs);
	return code;
}

/* HOST[:PORT] exactly as GPURUN_INSECURE_REGISTRIES lists it. */
int reg_insecure_listed(const char *host)
{
	const char *l = getenv("GPURUN_INSECURE_REGISTRIES");
	size_t hl = strlen(host);
	while (l && *l) {
		size_t n = strcspn(l, ", ");
		if (n == hl && !strncmp(l, host, n))
			return 1;
		l += n;
		l += strspn(l, ", ");
	}
	return 0;
}

int reg_loopback(const char *host)
{
	char name[256];
	size_t n;
	if (host[0] == '[') {
		n = strcspn(host + 1, "]");
		snprintf(name, sizeof name, "%.*s", (int)n, host + 1);
		struct in6_addr a6;
		return inet_pton(AF_INET6, name, &a6) == 1 && IN6_IS_ADDR_LOOPBACK(&a6);
	}
	n = strcspn(host, ":");
	snprintf(name, sizeof name, "%.*s", (int)n, host);
	struct in_addr a4;
	if (inet_pton(AF_INET, name, &a4) == 1)
		return (ntohl(a4.s_addr) >> 24) == 127;
	return !strcmp(name, "localhost");
}

/* The message for a request that a bound ended: who is the server asked
 * ("registry HOST", "token service HOST"), what the object. */
int reg_limit_error(const struct reg *r, const struct sink *s, const char *what, const char *who, int retried,
		    struct gerr *err)
{
	const char *again = retried ? " (after retries)" : "";
	switch (s->limit) {
	case LIMIT_STALL:
		return gerr_set(err, 0, "image %s: %s: no data from %s for %d s%s", r->name, what, who, s->stall_s,
				again);
	case LIMIT_BLOB_TIME:
		return gerr_set(err, 0,
				"image %s: %s: %s did not send it within %llu s (%d s plus 1 s per %d KiB of its size)",
				r->name, what, who, blob_allowance(r, s->expect), r->answer_s, PULL_BLOB_RATE >> 10);
	case LIMIT_ANSWER_TIME:
		return gerr_set(err, 0, "image %s: %s: %s did not answer within %d s", r->name, what, who, s->answer_s);
	case LIMIT_ERRBODY:
		return gerr_set(err, 0, "image %s: %s: %s sent an error answer (HTTP %ld) of more than %d KiB", r->name,
				what, who, s->cur_status, PULL_ERRBODY_MAX >> 10);
	case LIMIT_HEADERS:
		return gerr_set(err, 0, "image %s: %s: %s sent more than %d KiB of headers", r->name, what, who,
				PULL_HEADERS_MAX >> 10);
	case LIMIT_NONE: break;
	}
	return gerr_set(err, 0, "image %s: %s: failed", r->name, what);
}
