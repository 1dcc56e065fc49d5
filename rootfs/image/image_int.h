/* rootfs/image/image_int.h — what the image files share among themselves and
 * with no other file: the image being read (struct isrc, its members) and
 * what its manifest says (struct parsed).
 *
 *   imgarchive.c   reading an image archive once (its members), the files
 *                  of a layout directory, the JSON documents of either
 *   imgmanifest.c  docker save's manifest.json, OCI's index.json, the
 *                  version and manifest.json of skopeo's dir: layout, the
 *                  image manifest and the config
 *   image.c        image_prepare(): the image into the cache, layer by
 *                  layer, and the progress line */
#ifndef GPURUN_ROOTFS_IMAGE_INT_H
#define GPURUN_ROOTFS_IMAGE_INT_H

#include "image.h"

#define INDEX_READ_BLOCK (1024 * 1024)

struct member {
	char *name; /* without a leading "./" */
	char type;  /* 'f' file, 'l' link (symbolic or hard), 'd' directory, 'o' other */
	unsigned long long size, offset;
	char *data;   /* small members: the contents, NUL-terminated */
	int spool_fd; /* a large member of a compressed archive, or -1 */
};

struct progress;
struct isrc {
	const char *name;        /* for messages */
	int fd;                  /* the archive, or -1 */
	int dirfd;               /* an OCI layout or dir: layout directory, or -1 */
	int dir_layout;          /* dirfd is a dir: layout (skopeo's dir: transport) */
	const char *blob_suffix; /* after a dir: layout blob's hex: "" (1.1) or ".tar" (1.0) */
	int compressed;
	struct member *m;
	size_t n, cap;
	unsigned long long mem;
	struct cache *c;
	unsigned flags;
	struct progress *progress;        /* NULL: no progress line */
	const struct blob_follow *follow; /* a pull's blobs still arriving, or NULL */
	struct image_budget budget;       /* what the image may still unpack to */
};

/* What the manifest says, before anything is unpacked. */
struct parsed {
	char *ref;
	char *config_member;
	struct strv layer_members;
	struct strv layer_blob_hex; /* the blob digest the name promises, or "" */
	char *config_hex;           /* the config's digest when the manifest names it, or NULL */
};

/* ---- imgarchive.c ------------------------------------------------------- */

/* Room on the cache's file system for need bytes (what: why that much), or
 * -1 with err saying how much there is. */
int room_for(const struct isrc *s, unsigned long long need, const char *what, struct gerr *err);
/* Read s->fd once, listing its members and keeping the small ones. */
int isrc_index_archive(struct isrc *s, struct gerr *err);
/* The member called name (the last of that name), or NULL. */
struct member *isrc_find_member(struct isrc *s, const char *name);
/* A regular file of a layout directory, never through a symlink:
 * its fd (*st filled), or -1 with err. */
int isrc_dir_open(struct isrc *s, const char *name, struct stat *st, struct gerr *err);
/* A JSON document of the image, at most IMAGE_JSON_MAX bytes, parsed; its
 * sha256 must be want_hex when that is set, and goes to hex_out when that
 * is set.  NULL with err. */
json_t *isrc_member_json(struct isrc *s, const char *name, const char *want_hex, char *hex_out, struct gerr *err);

/* ---- imgmanifest.c ------------------------------------------------------ */

/* docker save's manifest.json, or an OCI layout's index.json, and the image
 * manifest it leads to: the image picked with sel, into *p. */
int manifest_parse_docker(struct isrc *s, const char *sel, struct parsed *p, struct gerr *err);
int manifest_parse_oci(struct isrc *s, const char *sel, struct parsed *p, struct gerr *err);
/* What a dir: layout's version file says, at most DIR_VERSION_MAX bytes. */
#define DIR_VERSION_PREFIX "Directory Transport Version: "
#define DIR_VERSION_MAX 64
/* A dir: layout's version file: 0 when gpurun reads that version (and
 * s->blob_suffix says how its blobs are named), else -1 with err. */
int manifest_dir_version(struct isrc *s, struct gerr *err);
/* A dir: layout's manifest.json: the image manifest itself, or an index
 * whose image for this machine is HEX.manifest.json. */
int manifest_parse_dir(struct isrc *s, const char *sel, struct parsed *p, struct gerr *err);
/* The config p names: into img->config, its diff_ids, and hex (its digest). */
int manifest_parse_config(struct isrc *s, const struct parsed *p, struct image *img, struct strv *diff_ids,
			  char hex[DIGEST_HEX_LEN + 1], struct gerr *err);
void manifest_parsed_free(struct parsed *p);

#endif
