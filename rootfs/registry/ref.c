/* rootfs/registry/ref.c — the pure parsers of registry pulls, kept apart from the
 * network code so that a fuzzer can reach them: image references
 * ("docker://[REGISTRY/]REPO[:TAG|@sha256:DIGEST]", normalised as docker
 * does it), WWW-Authenticate challenges, and platform strings.
 *
 * A reference becomes part of URLs and of messages, so it is checked
 * strictly, with the grammar of the distribution project's reference
 * package: lowercase path components joined by '.', '_', "__" or dashes, a
 * host of letters, digits, dots and dashes with an optional port, a tag of
 * at most 128 characters, and only sha256 digests. */
#include "registry.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#define REF_NAME_MAX 255
#define TAG_MAX 128

static int is_lower_alnum(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

/* One path component: [a-z0-9]+ ((\.|_|__|-+)[a-z0-9]+)* */
static int component_ok(const char *s, size_t n)
{
	size_t i = 0;
	if (!n || !is_lower_alnum(s[0]) || !is_lower_alnum(s[n - 1]))
		return 0;
	while (i < n) {
		if (is_lower_alnum(s[i])) {
			i++;
			continue;
		}
		size_t sep = i;
		if (s[i] == '.')
			i++;
		else if (s[i] == '_')
			i += i + 1 < n && s[i + 1] == '_' ? 2 : 1;
		else if (s[i] == '-')
			while (i < n && s[i] == '-')
				i++;
		else
			return 0;
		if (i >= n || !is_lower_alnum(s[i]) || i == sep)
			return 0;
	}
	return 1;
}

/* host[:port]: letters, digits, '.', '-' (not at either end), or "[v6]". */
static int host_ok(const char *s, size_t n)
{
	size_t h = n;
	const char *colon = memchr(s, ':', n);
	if (n && s[0] == '[') {
		const char *close = memchr(s, ']', n);
		if (!close || close == s + 1)
			return 0;
		for (const char *p = s + 1; p < close; p++)
			if (!isxdigit((unsigned char)*p) && *p != ':')
				return 0;
		h = (size_t)(close - s) + 1;
		colon = h < n ? s + h : NULL;
		if (colon && *colon != ':')
			return 0;
	} else {
		if (colon)
			h = (size_t)(colon - s);
		if (!h || s[0] == '-' || s[0] == '.' || s[h - 1] == '-' || s[h - 1] == '.')
			return 0;
		for (size_t i = 0; i < h; i++)
			if (!isalnum((unsigned char)s[i]) && s[i] != '.' && s[i] != '-')
				return 0;
	}
	if (colon) {
		size_t pl = n - (size_t)(colon - s) - 1;
		if (!pl || pl > 5 || strspn(colon + 1, "0123456789") < pl)
			return 0;
	}
	return 1;
}

static int tag_ok(const char *t)
{
	size_t n = strlen(t);
	if (!n || n > TAG_MAX || !(isalnum((unsigned char)t[0]) || t[0] == '_'))
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!isalnum((unsigned char)t[i]) && t[i] != '_' && t[i] != '.' && t[i] != '-')
			return 0;
	return 1;
}

void ref_free(struct image_ref *r)
{
	free(r->registry);
	free(r->repo);
	free(r->tag);
	free(r->digest);
	memset(r, 0, sizeof *r);
}

int ref_parse(const char *s, struct image_ref *r, struct gerr *err)
{
	char q[QUOTED_NAME_MAX];
	memset(r, 0, sizeof *r);
	/* USER:PASSWORD@HOST/...: never echoed, never used. */
	const char *userinfo = strchr(s, '@');
	if (userinfo && strchr(userinfo, '/'))
		return gerr_set(err, 0,
				"image reference: credentials in a reference are not supported; log in "
				"(podman login or docker login) or use REGISTRY_AUTH_FILE");
	quote_name(q, sizeof q, s);
	if (str_after(s, "docker://"))
		s = str_after(s, "docker://");
	size_t len = strlen(s);
	if (!len || len > 4 * REF_NAME_MAX)
		return gerr_set(err, 0, "image reference '%s': %s", q, len ? "too long" : "empty");
	_cleanup_free_ char *name = xstrdup(s);
	char *at = strchr(name, '@');
	if (at) {
		*at++ = '\0';
		if (!digest_parse(at))
			return gerr_set(err, 0, "image reference '%s': invalid digest (want sha256: and 64 hex digits)",
					q);
		r->digest = xstrdup(at);
	}
	/* A tag's colon comes after the last slash; a port's before it. */
	char *slash = strrchr(name, '/'), *colon = strrchr(slash ? slash : name, ':');
	if (colon) {
		*colon++ = '\0';
		if (!tag_ok(colon)) {
			ref_free(r);
			return gerr_set(err, 0, "image reference '%s': invalid tag", q);
		}
		r->tag = xstrdup(colon);
	}
	/* docker's rule: the first component is a registry when it has a dot
	 * or a port, or is "localhost". */
	char *first_end = strchr(name, '/');
	const char *path = name;
	if (first_end) {
		size_t fl = (size_t)(first_end - name);
		if (memchr(name, '.', fl) || memchr(name, ':', fl) || (fl == 9 && !strncmp(name, "localhost", 9)) ||
		    name[0] == '[') {
			if (!host_ok(name, fl)) {
				ref_free(r);
				return gerr_set(err, 0, "image reference '%s': invalid registry host", q);
			}
			r->registry = xstrndup(name, fl);
			path = first_end + 1;
		}
	}
	if (!r->registry || !strcmp(r->registry, "index.docker.io") || !strcmp(r->registry, "registry-1.docker.io")) {
		free(r->registry);
		r->registry = xstrdup("docker.io");
	}
	if (!*path || strlen(path) > REF_NAME_MAX) {
		ref_free(r);
		return gerr_set(err, 0, "image reference '%s': %s", q, *path ? "name too long" : "no repository name");
	}
	for (const char *c = path;;) {
		const char *e = strchr(c, '/');
		size_t n = e ? (size_t)(e - c) : strlen(c);
		if (!component_ok(c, n)) {
			ref_free(r);
			return gerr_set(err, 0,
					"image reference '%s': invalid repository name (lowercase letters, digits "
					"and separators)",
					q);
		}
		if (!e)
			break;
		c = e + 1;
	}
	if (!strcmp(r->registry, "docker.io") && !strchr(path, '/'))
		r->repo = xasprintf("library/%s", path);
	else
		r->repo = xstrdup(path);
	/* docker's limit, on the whole normalised name. */
	if (strlen(r->registry) + 1 + strlen(r->repo) > REF_NAME_MAX) {
		ref_free(r);
		return gerr_set(err, 0, "image reference '%s': name too long", q);
	}
	if (!r->tag && !r->digest)
		r->tag = xstrdup("latest");
	return 0;
}

char *ref_string(const struct image_ref *r)
{
	if (r->digest)
		return xasprintf("%s/%s%s%s@%s", r->registry, r->repo, r->tag ? ":" : "", r->tag ? r->tag : "",
				 r->digest);
	return xasprintf("%s/%s:%s", r->registry, r->repo, r->tag);
}

/* ---- WWW-Authenticate ------------------------------------------------------ */

static const char *skip_ws(const char *p)
{
	while (*p == ' ' || *p == '\t')
		p++;
	return p;
}

/* token68 / token characters of RFC 9110 */
static int tchar(char c)
{
	return isalnum((unsigned char)c) || (c && strchr("!#$%&'*+-.^_`|~", c));
}

int challenge_parse(const char *v, struct auth_challenge *c)
{
	memset(c, 0, sizeof *c);
	const char *p = skip_ws(v);
	size_t n = 0;
	while (tchar(p[n]))
		n++;
	if (!n || n >= sizeof c->scheme)
		return -1;
	memcpy(c->scheme, p, n);
	p = skip_ws(p + n);
	/* auth-param *( "," auth-param ), a value a token or a quoted string. */
	while (*p) {
		const char *k = p;
		size_t kl = 0;
		while (tchar(k[kl]))
			kl++;
		if (!kl)
			return -1;
		p = skip_ws(k + kl);
		if (*p != '=')
			break; /* the next challenge starts: only the first counts */
		p = skip_ws(p + 1);
		char val[CHALLENGE_VALUE_MAX];
		size_t vl = 0;
		if (*p == '"') {
			for (p++; *p && *p != '"'; p++) {
				if (*p == '\\' && p[1])
					p++;
				if (vl + 1 >= sizeof val)
					return -1;
				val[vl++] = *p;
			}
			if (*p != '"')
				return -1;
			p++;
		} else {
			while (tchar(*p) || *p == '/' || *p == ':') {
				if (vl + 1 >= sizeof val)
					return -1;
				val[vl++] = *p++;
			}
		}
		val[vl] = '\0';
		for (size_t i = 0; i < vl; i++)
			if ((unsigned char)val[i] < 0x20 || val[i] == 0x7f)
				return -1;
		char *dst = NULL;
		if (kl == 5 && !strncasecmp(k, "realm", 5))
			dst = c->realm;
		else if (kl == 7 && !strncasecmp(k, "service", 7))
			dst = c->service;
		else if (kl == 5 && !strncasecmp(k, "scope", 5))
			dst = c->scope;
		else if (kl == 5 && !strncasecmp(k, "error", 5))
			dst = c->error;
		if (dst)
			memcpy(dst, val, vl + 1);
		p = skip_ws(p);
		if (*p == ',')
			p = skip_ws(p + 1);
		else if (*p)
			return -1;
	}
	return 0;
}
