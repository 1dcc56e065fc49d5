/* rootfs/registry/regget.c — a GET of a registry's API: reg_get(), with its
 * retries, the answer to a 401, a blob's resumption and the message an
 * error answer gets; and on it reg_fetch_doc(), a whole JSON document (a
 * manifest, a config) checked against its digest. */
#include "registry_int.h"

#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

/* The first error of a registry's error answer ({"errors":[{"code",
 * "message"}]}), or "" */
static void registry_error(const struct resp *rs, char *out, size_t cap)
{
	json_error_t je;
	json_t *o = json_loadb(rs->errbody, rs->errlen, 0, &je);
	json_t *e = json_array_get(json_object_get(o, "errors"), 0);
	const char *msg = json_string_value(json_object_get(e, "message"));
	const char *code = json_string_value(json_object_get(e, "code"));
	out[0] = '\0';
	if (msg || code)
		quote_name(out, cap, msg && *msg ? msg : code);
	json_decref(o);
}

/* GET path of the registry's API, with retries, authentication and, for a
 * file sink, resumption.  what names the object in messages.  On success
 * the status is 200 or 206. */
int reg_get(struct reg *r, struct sink *s, const char *path, const char *accept, const char *what, struct gerr *err)
{
	int attempt = 0, auth_tries = 0;
	for (;;) {
		_cleanup_free_ char *url = xasprintf("%s://%s%s", r->scheme, r->host, path);
		pthread_mutex_lock(&r->lock);
		_cleanup_free_ char *auth = r->auth ? xstrdup(r->auth) : NULL;
		unsigned gen = r->auth_gen;
		pthread_mutex_unlock(&r->lock);
		CURLcode code = reg_perform(r, s, url, accept, auth);
		int cancelled = s->cancel && __atomic_load_n(s->cancel, __ATOMIC_ACQUIRE);
		if (s->restarted && r->verbose)
			fprintf(stderr, "gpurun: %s: %s: the registry ignored the range; fetching it from the start\n",
				r->name, what);
		s->restarted = 0;
		if (auth)
			explicit_bzero(auth, strlen(auth));
		/* An insecure or loopback registry may speak plain HTTP: try that once. */
		if (r->plain_ok && !r->scheme_known && !strcmp(r->scheme, "https") &&
		    (code == CURLE_SSL_CONNECT_ERROR || code == CURLE_GOT_NOTHING || code == CURLE_RECV_ERROR)) {
			r->scheme = "http";
			r->scheme_known = 1;
			continue;
		}
		if (code == CURLE_OK && !r->scheme_known)
			r->scheme_known = 1; /* by the first request, before any other thread runs */
		if (code == CURLE_OK && s->resp->status == 401 && auth_tries++ < 2) {
			if (reg_authenticate(r, s->h, s->resp, gen, err) < 0)
				return -1;
			continue;
		}
		if (s->write_errno)
			return gerr_set(err, s->write_errno, "image %s: %s: write", r->name, what);
		/* A stall is resumed like a cut connection, within the fetch's time. */
		if (s->limit == LIMIT_STALL && attempt < r->retries && !cancelled) {
			if (r->verbose)
				fprintf(stderr, "gpurun: %s: %s: no data for %d s; trying again%s\n", r->name, what,
					s->stall_s, s->got ? " from where it stopped" : "");
			reg_backoff(attempt++);
			continue;
		}
		if (s->limit) {
			char who[QUOTED_NAME_MAX + 16];
			snprintf(who, sizeof who, "registry %s", r->host);
			return reg_limit_error(r, s, what, who, attempt > 0, err);
		}
		if (s->too_big)
			return gerr_set(err, 0, "image %s: %s is larger than %s", r->name, what,
					s->mem ? "the cap on JSON documents (4 MiB)" : "its manifest says");
		if (code == CURLE_OK && (s->resp->status == 200 || s->resp->status == 206))
			return 0;
		/* A handshake that fails at the first contact is the server's way
		 * (plain HTTP, no common protocol): no retry changes it.  Later,
		 * it is a server going away mid-pull. */
		int again =
			reg_transient(code, s->resp->status) && !(code == CURLE_SSL_CONNECT_ERROR && !r->scheme_known);
		if (again && attempt < r->retries && !cancelled) {
			if (r->verbose)
				fprintf(stderr, "gpurun: %s: %s: %s; trying again%s\n", r->name, what,
					code != CURLE_OK ? reg_curl.easy_strerror(code) : "server error",
					s->got ? " from where it stopped" : "");
			reg_backoff(attempt++);
			continue;
		}
		if (code != CURLE_OK) {
			gerr_set(err, 0, "image %s: %s: %s%s", r->name, what, reg_curl.easy_strerror(code),
				 attempt ? " (after retries)" : "");
			if (!r->insecure)
				reg_tls_hint(code, r->host, 0, err);
			return -1;
		}
		char why[256];
		registry_error(s->resp, why, sizeof why);
		long st = s->resp->status;
		if (st == 401 || st == 403) {
			gerr_set(err, 0, "image %s: %s: access denied%s%s", r->name, what, why[0] ? ": " : "", why);
			return reg_creds_hint(r, err);
		}
		if (st == 404)
			return gerr_set(err, 0, "image %s: %s: not found%s%s", r->name, what, why[0] ? ": " : "", why);
		return gerr_set(err, 0, "image %s: %s: the registry answered HTTP %ld%s%s", r->name, what, st,
				why[0] ? ": " : "", why);
	}
}

void reg_doc_free(struct doc *d)
{
	sbuf_free(&d->body);
	json_decref(d->j);
	memset(d, 0, sizeof *d);
}

/* A manifest (reference: a tag or a digest) or a config blob, whole, at most
 * IMAGE_JSON_MAX bytes, verified against want_hex when given. */
int reg_fetch_doc(struct reg *r, CURL *h, const char *path, const char *accept, const char *what, const char *want_hex,
		  struct doc *d, struct gerr *err)
{
	struct resp rs = {0};
	struct sink s = {.h = h,
			 .resp = &rs,
			 .mem = &d->body,
			 .max = IMAGE_JSON_MAX,
			 .fd = -1,
			 .deadline = reg_mono_now() + r->answer_s};
	if (reg_get(r, &s, path, accept, what, err) < 0)
		return -1;
	struct digest_ctx *dg = digest_new();
	digest_update(dg, d->body.s ? d->body.s : "", d->body.len);
	digest_final(dg, d->hex);
	const char *promised = want_hex ? want_hex : digest_parse(rs.digest);
	if (promised && strcmp(promised, d->hex))
		return gerr_set(err, 0, "image %s: %s sha256:%s: content does not match its digest", r->name, what,
				promised);
	json_error_t je;
	d->j = json_loadb(d->body.s ? d->body.s : "", d->body.len, JSON_REJECT_DUPLICATES, &je);
	if (!json_is_object(d->j))
		return gerr_set(err, 0, "image %s: %s: invalid JSON (%s, line %d)", r->name, what, je.text, je.line);
	const char *mt = json_string_value(json_object_get(d->j, "mediaType"));
	snprintf(d->mt, sizeof d->mt, "%s", mt ? mt : rs.ctype);
	d->mt[strcspn(d->mt, "; ")] = '\0';
	return 0;
}
