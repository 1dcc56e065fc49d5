/* tests/unit/ref_test.c — the pure parsers of registry pulls (rootfs/registry/ref.c),
 * table-driven: image references normalised as docker does (docker.io,
 * library/, latest; registries with ports, localhost and IPv6; tags and
 * digests) or refused with their exact message, WWW-Authenticate
 * challenges and platform strings.  tests/fuzz/fuzz_ref.c fuzzes the same
 * functions.
 *
 *   ref_test --list     the names of the cases
 *   ref_test CASE       run one case: exit 0, or 1 with what was wrong
 *
 * tests/unit.bats runs every case; `make unit` builds this under ASan and
 * UBSan. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../rootfs/registry/registry.h"
#include "unit.h"

#define HEX "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
#define DGST "sha256:" HEX
#define BADNAME "invalid repository name (lowercase letters, digits and separators)"

/* "REGISTRY REPO TAG DIGEST", "-" for a part that is not set. */
static void describe(const struct image_ref *r, char *out, size_t cap)
{
	snprintf(out, cap, "%s %s %s %s", r->registry ? r->registry : "-", r->repo ? r->repo : "-",
		 r->tag ? r->tag : "-", r->digest ? r->digest : "-");
}

struct ref_case {
	const char *in;
	const char *want; /* describe()'s line, or NULL when refused */
	const char *err;  /* the exact message when refused */
};

static void run_ref_cases(const struct ref_case *cases, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		struct image_ref r, again;
		struct gerr err = {0};
		char got[1200];
		int rc = ref_parse(cases[i].in, &r, &err);
		if (!cases[i].want) {
			CHECK(rc < 0, "\"%s\": accepted", cases[i].in);
			CHECK(!strcmp(err.msg, cases[i].err), "\"%s\": message \"%s\", want \"%s\"", cases[i].in,
			      err.msg, cases[i].err);
			continue;
		}
		CHECK(rc == 0, "\"%s\": refused: %s", cases[i].in, err.msg);
		if (rc < 0)
			continue;
		describe(&r, got, sizeof got);
		CHECK(!strcmp(got, cases[i].want), "\"%s\": got \"%s\", want \"%s\"", cases[i].in, got, cases[i].want);
		/* The canonical string is a reference to the same image. */
		char *canon = ref_string(&r);
		CHECK(ref_parse(canon, &again, &err) == 0, "%s: refused: %s", canon, err.msg);
		char again_s[1200];
		describe(&again, again_s, sizeof again_s);
		CHECK(!strcmp(again_s, got), "%s: parses to \"%s\"", canon, again_s);
		free(canon);
		ref_free(&again);
		ref_free(&r);
	}
}

/* docker's normalisation: the first component is a registry only with a
 * dot, a port, brackets or as "localhost"; Docker Hub's aliases are
 * docker.io, its one-component names are under library/, no tag is latest. */
static void case_normalise(void)
{
	static const struct ref_case cases[] = {
		{"ubuntu", "docker.io library/ubuntu latest -", NULL},
		{"docker://ubuntu", "docker.io library/ubuntu latest -", NULL},
		{"ubuntu:22.04", "docker.io library/ubuntu 22.04 -", NULL},
		{"library/ubuntu", "docker.io library/ubuntu latest -", NULL},
		{"docker.io/ubuntu", "docker.io library/ubuntu latest -", NULL},
		{"docker.io/library/ubuntu:24.04", "docker.io library/ubuntu 24.04 -", NULL},
		{"index.docker.io/ubuntu", "docker.io library/ubuntu latest -", NULL},
		{"registry-1.docker.io/nvidia/cuda:12.4.1-base-ubuntu22.04",
		 "docker.io nvidia/cuda 12.4.1-base-ubuntu22.04 -", NULL},
		{"nvidia/cuda:12.4.1", "docker.io nvidia/cuda 12.4.1 -", NULL},
		{"nvcr.io/nvidia/pytorch:24.01-py3", "nvcr.io nvidia/pytorch 24.01-py3 -", NULL},
		{"ghcr.io/a/b/c/d", "ghcr.io a/b/c/d latest -", NULL},
		{"localhost/img", "localhost img latest -", NULL},
		{"localhost:5000/img:v1", "localhost:5000 img v1 -", NULL},
		{"127.0.0.1:5000/a/b:t", "127.0.0.1:5000 a/b t -", NULL},
		{"[::1]:5000/img", "[::1]:5000 img latest -", NULL},
		{"[fe80::1]/img", "[fe80::1] img latest -", NULL},
		{"my-registry.example.com:443/team/app", "my-registry.example.com:443 team/app latest -", NULL},
		{"Quay.IO/org/app", "Quay.IO org/app latest -", NULL},
		/* Not registries: no dot, no port, not exactly localhost. */
		{"localhostx/img", "docker.io localhostx/img latest -", NULL},
		{"foo/bar", "docker.io foo/bar latest -", NULL},
		{"example.com", "docker.io library/example.com latest -", NULL},
	};
	run_ref_cases(cases, COUNT_OF(cases));
}

/* Tags: a word character first, then word characters, dots and dashes, 128
 * at most; digests: sha256 only, 64 lowercase hex digits, with or without
 * a tag; path components: lowercase, joined by '.', '_', "__" or dashes. */
static void case_tags_digests(void)
{
	static const struct ref_case cases[] = {
		{"ubuntu@" DGST, "docker.io library/ubuntu - " DGST, NULL},
		{"ubuntu:22.04@" DGST, "docker.io library/ubuntu 22.04 " DGST, NULL},
		{"quay.io/org/repo@" DGST, "quay.io org/repo - " DGST, NULL},
		{"localhost:5000/img@" DGST, "localhost:5000 img - " DGST, NULL},
		{"ubuntu:_x", "docker.io library/ubuntu _x -", NULL},
		{"ubuntu:V1.0-RC_2", "docker.io library/ubuntu V1.0-RC_2 -", NULL},
		{"a__b/c.d-e_f", "docker.io a__b/c.d-e_f latest -", NULL},
		{"a---b", "docker.io library/a---b latest -", NULL},
		{"0/1", "docker.io 0/1 latest -", NULL},
		{"ubuntu:", NULL, "image reference 'ubuntu:': invalid tag"},
		{"ubuntu:-x", NULL, "image reference 'ubuntu:-x': invalid tag"},
		{"ubuntu:.x", NULL, "image reference 'ubuntu:.x': invalid tag"},
		{"ubuntu:a b", NULL, "image reference 'ubuntu:a b': invalid tag"},
		{"ubuntu:a+b", NULL, "image reference 'ubuntu:a+b': invalid tag"},
		{"ubuntu@sha256:abc", NULL,
		 "image reference 'ubuntu@sha256:abc': invalid digest (want sha256: and 64 hex digits)"},
		{"ubuntu@sha512:" HEX HEX, NULL,
		 "image reference 'ubuntu@sha512:" HEX HEX "': invalid digest (want sha256: and 64 hex digits)"},
		{"ubuntu@sha256:0123456789ABCDEF0123456789abcdef0123456789abcdef0123456789abcdef", NULL,
		 "image reference 'ubuntu@sha256:0123456789ABCDEF0123456789abcdef0123456789abcdef0123456789abcdef': "
		 "invalid digest (want sha256: and 64 hex digits)"},
		{"ubuntu@" DGST ":tag", NULL,
		 "image reference 'ubuntu@" DGST ":tag': invalid digest (want sha256: and 64 hex digits)"},
		{"ubuntu@", NULL, "image reference 'ubuntu@': invalid digest (want sha256: and 64 hex digits)"},
		{"UBUNTU", NULL, "image reference 'UBUNTU': " BADNAME},
		{"Localhost/img", NULL, "image reference 'Localhost/img': " BADNAME},
		{"ubuntu:latest:x", NULL, "image reference 'ubuntu:latest:x': " BADNAME},
		{"a//b", NULL, "image reference 'a//b': " BADNAME},
		{"a/b/", NULL, "image reference 'a/b/': " BADNAME},
		{"a..b", NULL, "image reference 'a..b': " BADNAME},
		{"a___b", NULL, "image reference 'a___b': " BADNAME},
		{"a.-b", NULL, "image reference 'a.-b': " BADNAME},
		{"-a", NULL, "image reference '-a': " BADNAME},
		{"a-", NULL, "image reference 'a-': " BADNAME},
		{"a b", NULL, "image reference 'a b': " BADNAME},
		{"a?b", NULL, "image reference 'a?b': " BADNAME},
		{"a%2fb", NULL, "image reference 'a%2fb': " BADNAME},
		/* Control bytes are quoted in the message, never echoed. */
		{"ubu\nntu", NULL, "image reference 'ubu\\x0antu': " BADNAME},
		{"ubuntu:\x1b[31m", NULL, "image reference 'ubuntu:\\x1b[31m': invalid tag"},
	};
	run_ref_cases(cases, COUNT_OF(cases));

	/* A tag of 128 characters is one, of 129 is not. */
	char in[200], want[400];
	memset(in, 0, sizeof in);
	memcpy(in, "ubuntu:", 7);
	memset(in + 7, 't', 128);
	snprintf(want, sizeof want, "docker.io library/ubuntu %s -", in + 7);
	struct ref_case tag128[] = {{in, want, NULL}};
	run_ref_cases(tag128, 1);
	in[7 + 128] = 't';
	snprintf(want, sizeof want, "image reference '%s': invalid tag", in);
	struct ref_case tag129[] = {{in, NULL, want}};
	run_ref_cases(tag129, 1);
}

/* Registry hosts: letters, digits, dots and dashes, not at either end, a
 * port of 1 to 5 digits; or an IPv6 address in brackets. */
static void case_registries(void)
{
	static const struct ref_case cases[] = {
		{"-host.com/x", NULL, "image reference '-host.com/x': invalid registry host"},
		{"host.com-/x", NULL, "image reference 'host.com-/x': invalid registry host"},
		{".host.com/x", NULL, "image reference '.host.com/x': invalid registry host"},
		{"host.com./x", NULL, "image reference 'host.com./x': invalid registry host"},
		{"ho_st.com/x", NULL, "image reference 'ho_st.com/x': invalid registry host"},
		{"host.com:/x", NULL, "image reference 'host.com:/x': invalid registry host"},
		{"host.com:123456/x", NULL, "image reference 'host.com:123456/x': invalid registry host"},
		{"host.com:80a/x", NULL, "image reference 'host.com:80a/x': invalid registry host"},
		{":5000/x", NULL, "image reference ':5000/x': invalid registry host"},
		{"ubuntu:bad/tag", NULL, "image reference 'ubuntu:bad/tag': invalid registry host"},
		{"[]/x", NULL, "image reference '[]/x': invalid registry host"},
		{"[::1/x", NULL, "image reference '[::1/x': invalid registry host"},
		{"[::g]/x", NULL, "image reference '[::g]/x': invalid registry host"},
		{"[::1]x/img", NULL, "image reference '[::1]x/img': invalid registry host"},
		{"example.com/", NULL, "image reference 'example.com/': no repository name"},
		{"localhost:5000/", NULL, "image reference 'localhost:5000/': no repository name"},
		{"", NULL, "image reference '': empty"},
		{"docker://", NULL, "image reference 'docker://': empty"},
		/* Credentials are refused and never echoed. */
		{"user:secret@registry.example.com/img", NULL,
		 "image reference: credentials in a reference are not supported; log in (podman login or docker "
		 "login) or use REGISTRY_AUTH_FILE"},
		{"docker://user@host.com/img:1", NULL,
		 "image reference: credentials in a reference are not supported; log in (podman login or docker "
		 "login) or use REGISTRY_AUTH_FILE"},
	};
	run_ref_cases(cases, COUNT_OF(cases));
}

/* docker's length limits: 255 bytes of normalised name, and the message's
 * copy of the input cut with "..." at 240 bytes. */
static void case_lengths(void)
{
	char in[1100], want[1400];
	struct gerr err = {0};
	struct image_ref r;

	/* docker.io/library/ + 237 bytes is 255: the most there is room for. */
	memset(in, 0, sizeof in);
	memset(in, 'a', 237);
	CHECK(ref_parse(in, &r, &err) == 0 && strlen(r.repo) == 245, "237 bytes: %s", err.msg);
	ref_free(&r);
	in[237] = 'a';
	CHECK(ref_parse(in, &r, &err) < 0 && strstr(err.msg, "': name too long") &&
		      !strncmp(err.msg, "image reference 'aaaa", 21),
	      "238 bytes: \"%s\"", err.msg);

	/* A path over 255 bytes, under a registry. */
	memset(in, 0, sizeof in);
	memcpy(in, "r.io/", 5);
	memset(in + 5, 'a', 256);
	CHECK(ref_parse(in, &r, &err) < 0 && strstr(err.msg, "': name too long"), "256-byte path: \"%s\"", err.msg);

	/* More than 1020 bytes in all is refused before it is looked at. */
	memset(in, 0, sizeof in);
	memset(in, 'a', 1021);
	CHECK(ref_parse(in, &r, &err) < 0 && strstr(err.msg, "': too long"), "1021 bytes: \"%s\"", err.msg);

	/* The message quotes the first 232 bytes, then "...". */
	memset(in, 0, sizeof in);
	memset(in, 'A', 250);
	snprintf(want, sizeof want, "image reference '%.232s...': " BADNAME, in);
	CHECK(ref_parse(in, &r, &err) < 0 && !strcmp(err.msg, want), "250 bytes: \"%s\"", err.msg);
}

/* The canonical strings the cache and messages use. */
static void case_canonical(void)
{
	static const struct {
		const char *in, *want;
	} cases[] = {
		{"ubuntu", "docker.io/library/ubuntu:latest"},
		{"docker://nvidia/cuda:12.4.1", "docker.io/nvidia/cuda:12.4.1"},
		{"index.docker.io/library/ubuntu", "docker.io/library/ubuntu:latest"},
		{"ubuntu@" DGST, "docker.io/library/ubuntu@" DGST},
		{"ubuntu:22.04@" DGST, "docker.io/library/ubuntu:22.04@" DGST},
		{"localhost:5000/img", "localhost:5000/img:latest"},
		{"[::1]:5000/a/b:c", "[::1]:5000/a/b:c"},
	};
	for (size_t i = 0; i < COUNT_OF(cases); i++) {
		struct image_ref r;
		struct gerr err = {0};
		CHECK(ref_parse(cases[i].in, &r, &err) == 0, "%s: %s", cases[i].in, err.msg);
		char *s = ref_string(&r);
		CHECK(!strcmp(s, cases[i].want), "%s: \"%s\", want \"%s\"", cases[i].in, s, cases[i].want);
		free(s);
		ref_free(&r);
	}
}

/* WWW-Authenticate: the first challenge's scheme and the four parameters
 * gpurun uses, quoted strings unescaped; anything malformed refused. */
static void case_challenges(void)
{
	static const struct {
		const char *in;
		const char *want; /* "SCHEME|REALM|SERVICE|SCOPE|ERROR", NULL: refused */
	} cases[] = {
		{"Bearer realm=\"https://auth.docker.io/token\",service=\"registry.docker.io\","
		 "scope=\"repository:library/ubuntu:pull\"",
		 "Bearer|https://auth.docker.io/token|registry.docker.io|repository:library/ubuntu:pull|"},
		{"Basic realm=\"Registry Realm\"", "Basic|Registry Realm|||"},
		{"Bearer", "Bearer||||"},
		{"Bearer realm=https://r.io/token,service=r.io", "Bearer|https://r.io/token|r.io||"},
		{"Bearer realm=\"a\\\"b\\\\c\"", "Bearer|a\"b\\c|||"},
		{"  Bearer   realm = \"x\" ,  service=\"y\"  ", "Bearer|x|y||"},
		{"Bearer REALM=\"x\",Service=\"y\",SCOPE=\"z\"", "Bearer|x|y|z|"},
		{"Bearer foo=\"bar\",realm=\"x\"", "Bearer|x|||"},
		{"Bearer error=\"invalid_token\",realm=\"x\"", "Bearer|x|||invalid_token"},
		{"Bearer realm=\"x\", Basic realm=\"y\"", "Bearer|x|||"},
		{"Bearer realm=\"\"", "Bearer||||"},
		{"", NULL},
		{"   ", NULL},
		{"\"Bearer\"", NULL},
		{"Bearer realm=\"x", NULL},
		{"Bearer realm=\"x\" junk", NULL},
		{"Bearer ,", NULL},
		{"Bearer realm=\"a\x01b\"", NULL},
		{"Bearer realm=\"a\x7f\"", NULL},
		{"Bearer realm=x;y", NULL},
		{"ABearerSchemeThatIsTooLong realm=\"x\"", NULL},
	};
	for (size_t i = 0; i < COUNT_OF(cases); i++) {
		struct auth_challenge c;
		int r = challenge_parse(cases[i].in, &c);
		if (!cases[i].want) {
			CHECK(r < 0, "\"%s\": accepted", cases[i].in);
			continue;
		}
		char got[5 * CHALLENGE_VALUE_MAX];
		snprintf(got, sizeof got, "%s|%s|%s|%s|%s", c.scheme, c.realm, c.service, c.scope, c.error);
		CHECK(r == 0 && !strcmp(got, cases[i].want), "\"%s\": r %d, \"%s\", want \"%s\"", cases[i].in, r, got,
		      cases[i].want);
	}

	/* A value of 1023 bytes fits the field with its NUL; 1024 does not. */
	static char in[CHALLENGE_VALUE_MAX + 32];
	struct auth_challenge c;
	memcpy(in, "Bearer realm=\"", 14);
	memset(in + 14, 'x', CHALLENGE_VALUE_MAX - 1);
	memcpy(in + 14 + CHALLENGE_VALUE_MAX - 1, "\"", 2);
	CHECK(challenge_parse(in, &c) == 0 && strlen(c.realm) == CHALLENGE_VALUE_MAX - 1, "1023 bytes refused");
	memset(in + 14, 'x', CHALLENGE_VALUE_MAX);
	memcpy(in + 14 + CHALLENGE_VALUE_MAX, "\"", 2);
	CHECK(challenge_parse(in, &c) < 0, "1024 bytes accepted");
}

/* --platform: os/arch[/variant], each part non-empty, under 32 bytes, of
 * letters, digits, '_', '-' and '.'. */
static void case_platforms(void)
{
	static const struct {
		const char *in;
		const char *want; /* "OS|ARCH|VARIANT", NULL: refused */
	} cases[] = {
		{"linux/amd64", "linux|amd64|"},
		{"linux/arm64/v8", "linux|arm64|v8"},
		{"linux/arm/v7", "linux|arm|v7"},
		{"windows/amd64", "windows|amd64|"},
		{"linux/ppc64le", "linux|ppc64le|"},
		{"linux", NULL},
		{"", NULL},
		{"/amd64", NULL},
		{"linux/", NULL},
		{"linux//v7", NULL},
		{"linux/arm/", NULL},
		{"linux/arm/v7/x", NULL},
		{"linux/am d64", NULL},
		{"linux/amd64\n", NULL},
		{"linux/amd64:x", NULL},
		{"a-very-long-operating-system-name/amd64", NULL},
		{"linux/0123456789012345678901234567890123", NULL},
	};
	for (size_t i = 0; i < COUNT_OF(cases); i++) {
		struct platform p;
		int r = platform_parse(cases[i].in, &p);
		if (!cases[i].want) {
			CHECK(r < 0, "\"%s\": accepted", cases[i].in);
			continue;
		}
		char got[128];
		snprintf(got, sizeof got, "%s|%s|%s", p.os, p.arch, p.variant);
		CHECK(r == 0 && !strcmp(got, cases[i].want), "\"%s\": r %d, \"%s\"", cases[i].in, r, got);
	}
}

static const struct unit_case cases[] = {
	{"normalise", case_normalise}, {"tags-digests", case_tags_digests}, {"registries", case_registries},
	{"lengths", case_lengths},     {"canonical", case_canonical},       {"challenges", case_challenges},
	{"platforms", case_platforms},
};

int main(int argc, char **argv)
{
	return unit_main(argc, argv, cases, COUNT_OF(cases));
}
