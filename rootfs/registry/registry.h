/* rootfs/registry/registry.h — what the registry's files offer the fuzz
 * targets and unit tests: the pure parsers of registry pulls (ref.c):
 * image references and WWW-Authenticate challenges.  registry_prepare is
 * in rootfs.h; what the registry's files share among themselves is
 * registry_int.h. */
#ifndef GPURUN_ROOTFS_REGISTRY_H
#define GPURUN_ROOTFS_REGISTRY_H

#include "../image/image.h"

/* docker://[REGISTRY/]REPO[:TAG|@sha256:HEX], normalised as docker does:
 * registry "docker.io" when the first component has no '.' or ':' and is
 * not "localhost"; "library/" before a one-component Docker Hub name; tag
 * "latest" when neither tag nor digest is given. */
struct image_ref {
	char *registry; /* "docker.io", "127.0.0.1:5000" */
	char *repo;     /* "library/ubuntu" */
	char *tag;      /* or NULL */
	char *digest;   /* "sha256:<hex>", or NULL */
};
int ref_parse(const char *s, struct image_ref *r, struct gerr *err);
void ref_free(struct image_ref *r);
char *ref_string(const struct image_ref *r); /* "docker.io/library/ubuntu:latest" */

/* The first challenge of a WWW-Authenticate header value (RFC 9110
 * auth-params, quoted strings unescaped).  0, or -1 when malformed. */
#define CHALLENGE_VALUE_MAX 1024
struct auth_challenge {
	char scheme[16]; /* "Bearer", "Basic" */
	char realm[CHALLENGE_VALUE_MAX];
	char service[CHALLENGE_VALUE_MAX];
	char scope[CHALLENGE_VALUE_MAX];
	char error[CHALLENGE_VALUE_MAX];
};
int challenge_parse(const char *value, struct auth_challenge *c);

#endif
