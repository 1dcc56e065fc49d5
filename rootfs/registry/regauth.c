/* rootfs/registry/regauth.c — what a registry pull authenticates with: the answer
 * to a 401's challenge (a bearer token from the token service it names, or
 * basic auth), the credentials found in the user's auth files, and the hint
 * when they are missing or refused.
 *
 * Authentication is what registries serve public images with (an anonymous
 * bearer token from the WWW-Authenticate challenge) and what users already
 * have in their auth files (podman's order; the "auth" field of auths.*),
 * for bearer token services and for basic auth.  A credential is only ever
 * put into an Authorization header: no message, no --verbose line and no
 * plan shows one; and it goes to a token service only over verified TLS,
 * unless that service's own host was named insecure. */
#include "registry_int.h"

#include <fcntl.h>
#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

int reg_creds_hint(const struct reg *r, struct gerr *err)
{
	return gerr_hint(err,
			 r->basic ? "the credentials found for %s were refused; check them (podman login %s)"
				  : "log in first (podman login %s or docker login), or set REGISTRY_AUTH_FILE",
			 r->ref.registry, r->ref.registry);
}

/* A bearer token for the challenge, from its realm; the credentials, when
 * there are any, as basic auth to the token service. */
static int fetch_token(struct reg *r, CURL *h, const struct auth_challenge *ch, struct gerr *err)
{
	int tls = str_after(ch->realm, "https://") != NULL;
	if (!tls && !str_after(ch->realm, "http://"))
		return gerr_set(err, 0, "image %s: the registry's token service is not an http(s) URL", r->name);
	/* The realm's host[:port], as written: it is named insecure itself, or
	 * it gets no credentials but over verified TLS.  The registry that
	 * names it (and was named insecure) cannot vouch for another host. */
	const char *at = ch->realm + (tls ? 8 : 7);
	char authority[CHALLENGE_VALUE_MAX], qauth[QUOTED_NAME_MAX], who[QUOTED_NAME_MAX + 16];
	snprintf(authority, sizeof authority, "%.*s", (int)strcspn(at, "/?#"), at);
	quote_name(qauth, sizeof qauth, authority);
	snprintf(who, sizeof who, "token service %s", qauth);
	int named = reg_insecure_listed(authority) ||
		    (r->insecure && (!strcmp(authority, r->host) || !strcmp(authority, r->ref.registry)));
	if (!tls && r->basic && !named) {
		char qrealm[QUOTED_NAME_MAX];
		quote_name(qrealm, sizeof qrealm, ch->realm);
		return gerr_set(err, 0,
				"image %s: the token service %s is plain HTTP and %s was not named insecure: the "
				"credentials are not sent to it",
				r->name, qrealm, qauth);
	}
	if (!tls && !r->insecure && !named)
		return gerr_set(err, 0,
				"image %s: the registry's token service is plain HTTP (use --tls-verify=false "
				"if that is meant)",
				r->name);
	char *svc = reg_curl.easy_escape(h, ch->service, 0);
	_cleanup_free_ char *scope_txt =
		ch->scope[0] ? xstrdup(ch->scope) : xasprintf("repository:%s:pull", r->ref.repo);
	char *scope = reg_curl.easy_escape(h, scope_txt, 0);
	_cleanup_free_ char *url = xasprintf("%s%sservice=%s&scope=%s", ch->realm, strchr(ch->realm, '?') ? "&" : "?",
					     svc ? svc : "", scope ? scope : "");
	reg_curl.free(svc);
	reg_curl.free(scope);
	_cleanup_free_ char *basic = r->basic ? xasprintf("Authorization: Basic %s", r->basic) : NULL;
	struct sbuf body = {0};
	struct resp rs = {0};
	struct sink s = {.h = h,
			 .resp = &rs,
			 .mem = &body,
			 .max = TOKEN_MAX,
			 .fd = -1,
			 .token = 1,
			 .deadline = reg_mono_now() + r->answer_s,
			 /* Credentials: a certificate not verified is as good as plain HTTP. */
			 .insecure_tls = named || (!r->basic && r->insecure),
			 .strict_redirects = tls && r->basic && !named};
	CURLcode code;
	int attempt = 0;
	while ((code = reg_perform(r, &s, url, "Accept: application/json", basic)) != CURLE_OK || rs.status != 200) {
		if (!(s.limit ? s.limit == LIMIT_STALL : reg_transient(code, rs.status)) || attempt >= r->retries)
			break;
		sbuf_reset(&body);
		reg_backoff(attempt++);
	}
	int rc = -1;
	if (s.limit) {
		reg_limit_error(r, &s, "token request", who, attempt > 0, err);
	} else if (code != CURLE_OK) {
		gerr_set(err, 0, "image %s: %s: %s", r->name, who,
			 s.too_big ? "answer too large" : reg_curl.easy_strerror(code));
		if (!named)
			reg_tls_hint(code, qauth, 1, err);
	} else if (rs.status == 401 || rs.status == 403) {
		gerr_set(err, 0, "image %s: the token service refused %s", r->name,
			 r->basic ? "the credentials" : "anonymous access");
		reg_creds_hint(r, err);
	} else if (rs.status != 200) {
		gerr_set(err, 0, "image %s: token service answered HTTP %ld", r->name, rs.status);
	} else {
		json_error_t je;
		json_t *o = json_loadb(body.s ? body.s : "", body.len, 0, &je);
		const char *tok = json_string_value(json_object_get(o, "token"));
		if (!tok || !*tok)
			tok = json_string_value(json_object_get(o, "access_token"));
		size_t bad = tok ? strcspn(tok, "\r\n\t \"") : 0;
		if (!tok || !*tok || tok[bad]) {
			gerr_set(err, 0, "image %s: the token service's answer has no usable token", r->name);
		} else {
			free(r->auth);
			r->auth = xasprintf("Authorization: Bearer %s", tok);
			r->auth_gen++;
			rc = 0;
		}
		json_decref(o);
	}
	/* The answer held a token: wipe it. */
	if (body.s)
		explicit_bzero(body.s, body.cap);
	sbuf_free(&body);
	return rc;
}

/* Answer a 401: its challenge says how. */
int reg_authenticate(struct reg *r, CURL *h, const struct resp *rs, unsigned gen_seen, struct gerr *err)
{
	struct auth_challenge ch;
	int rc = 0;
	pthread_mutex_lock(&r->lock);
	if (r->auth_gen != gen_seen)
		goto out; /* another layer's request renewed it meanwhile */
	if (!rs->www_auth[0] || challenge_parse(rs->www_auth, &ch) < 0) {
		rc = gerr_set(err, 0, "image %s: the registry asks for authentication with an unreadable challenge",
			      r->name);
	} else if (!strcasecmp(ch.scheme, "Bearer")) {
		rc = fetch_token(r, h, &ch, err);
	} else if (!strcasecmp(ch.scheme, "Basic") && r->basic) {
		free(r->auth);
		r->auth = xasprintf("Authorization: Basic %s", r->basic);
		r->auth_gen++;
	} else if (!strcasecmp(ch.scheme, "Basic")) {
		rc = gerr_set(err, 0, "image %s: %s asks for credentials and none were found", r->name,
			      r->ref.registry);
		reg_creds_hint(r, err);
	} else {
		char q[64];
		quote_name(q, sizeof q, ch.scheme);
		rc = gerr_set(err, 0,
			      "image %s: the registry asks for authentication of a kind gpurun does not speak (%s)",
			      r->name, q);
	}
out:
	pthread_mutex_unlock(&r->lock);
	return rc;
}

/* ---- credentials ------------------------------------------------------------ */

/* An auths key as the registry it is for: "https://index.docker.io/v1/"
 * -> "docker.io". */
static char *auth_key_host(const char *key)
{
	if (str_after(key, "https://"))
		key = str_after(key, "https://");
	else if (str_after(key, "http://"))
		key = str_after(key, "http://");
	char *k = xstrdup(key);
	size_t n = strlen(k);
	while (n && k[n - 1] == '/')
		k[--n] = '\0';
	if (n > 3 && (!strcmp(k + n - 3, "/v1") || !strcmp(k + n - 3, "/v2")))
		k[n - 3] = '\0';
	const char *hub[] = {"index.docker.io", "registry-1.docker.io"};
	for (size_t i = 0; i < COUNT_OF(hub); i++) {
		size_t hl = strlen(hub[i]);
		if (!strncmp(k, hub[i], hl) && (!k[hl] || k[hl] == '/')) {
			char *nk = xasprintf("docker.io%s", k + hl);
			free(k);
			return nk;
		}
	}
	return k;
}

/* The "auth" of the best entry of one file for ref: the longest key that is
 * the registry or a registry/namespace prefix of the repository.  1 found,
 * 0 not, -1 on a damaged file. */
static int auth_from_file(const char *path, int legacy, const struct image_ref *ref, char **out, struct gerr *err)
{
	struct gerr ignore = {0};
	size_t len;
	_cleanup_free_ char *text = read_small_file_at(AT_FDCWD, path, 1 << 20, &len, &ignore);
	if (!text)
		return 0;
	json_error_t je;
	json_t *o = json_loadb(text, len, 0, &je), *v;
	explicit_bzero(text, len);
	if (!json_is_object(o)) {
		json_decref(o);
		return gerr_set(err, 0, "registry credentials %s: invalid JSON", path);
	}
	_cleanup_free_ char *full = xasprintf("%s/%s", ref->registry, ref->repo);
	const char *k, *best = NULL;
	size_t best_len = 0;
	/* ~/.dockercfg has the entries at the top level. */
	json_object_foreach(legacy ? o : json_object_get(o, "auths"), k, v)
	{
		_cleanup_free_ char *h = auth_key_host(k);
		size_t hl = strlen(h);
		const char *a = json_string_value(json_object_get(v, "auth"));
		if (a && *a && !strncmp(full, h, hl) && (!full[hl] || full[hl] == '/') && hl > best_len) {
			best = a;
			best_len = hl;
		}
	}
	int rc = 0;
	if (best) {
		/* It goes into a header as it is: base64 only. */
		if (best[strspn(best, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=")]) {
			rc = gerr_set(err, 0, "registry credentials %s: the entry for %s is not base64", path,
				      ref->registry);
		} else {
			*out = xstrdup(best);
			rc = 1;
		}
	}
	json_decref(o);
	return rc;
}

/* podman's order (containers-auth.json(5)): $REGISTRY_AUTH_FILE, or else
 * $XDG_RUNTIME_DIR/containers/auth.json; then
 * $XDG_CONFIG_HOME/containers/auth.json, Docker's
 * $DOCKER_CONFIG/config.json or ~/.docker/config.json, and ~/.dockercfg.
 * The first file with an entry for the registry wins. */
int reg_find_credentials(struct reg *r, struct gerr *err)
{
	struct strv files = {0};
	const char *e, *home = getenv("HOME");
	const char *override = getenv("REGISTRY_AUTH_FILE");
	if (override && *override)
		strv_add(&files, xstrdup(override));
	else if ((e = getenv("XDG_RUNTIME_DIR")) && *e)
		strv_add(&files, xasprintf("%s/containers/auth.json", e));
	if ((e = getenv("XDG_CONFIG_HOME")) && *e)
		strv_add(&files, xasprintf("%s/containers/auth.json", e));
	else if (home && *home)
		strv_add(&files, xasprintf("%s/.config/containers/auth.json", home));
	if ((e = getenv("DOCKER_CONFIG")) && *e)
		strv_add(&files, xasprintf("%s/config.json", e));
	else if (home && *home)
		strv_add(&files, xasprintf("%s/.docker/config.json", home));
	size_t modern = files.n;
	if (home && *home)
		strv_add(&files, xasprintf("%s/.dockercfg", home));
	int rc = 0;
	for (size_t i = 0; i < files.n && rc == 0; i++)
		rc = auth_from_file(files.v[i], i >= modern, &r->ref, &r->basic, err);
	strv_free(&files);
	return rc < 0 ? -1 : 0;
}
