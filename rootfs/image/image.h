/* rootfs/image/image.h — what the image files offer the registry files:
 * an image read from a layout whose blobs may still be arriving
 * (image.c), the platform an image is picked for (platform.c), and what a
 * JSON document's media type says it is (mediatype.c).  image_prepare and
 * image_open are in rootfs.h; what the image files share among themselves
 * is image_int.h. */
#ifndef GPURUN_ROOTFS_IMAGE_H
#define GPURUN_ROOTFS_IMAGE_H

#include "../cache/cache.h"

/* image_prepare() for a registry pull's scratch layout whose layer blobs
 * may still be arriving: follow->attach() is asked about each layer blob of
 * the layout (member "blobs/sha256/HEX") before it is read, and sets
 * in->more when the blob is still arriving.  0, or -1 when it will never
 * arrive.  follow NULL: image_prepare() itself. */
struct blob_follow {
	int (*attach)(void *ctx, const char *member, struct fd_source *in);
	void *ctx;
};
int image_prepare_follow(const char *path, const char *name, const char *selector, struct cache *c, unsigned flags,
			 const struct blob_follow *follow, struct image *img, struct gerr *err);

/* "os/arch[/variant]"; 0, or -1 when malformed. */
struct platform {
	char os[32], arch[32], variant[32];
};
int platform_parse(const char *s, struct platform *pf);

/* platform.c: this machine's platform with the OCI names (amd64,
 * arm64, arm/v7...); "os/arch[/variant]" into out; and the entry of an
 * index's "manifests" array for want, or NULL with err saying which
 * platforms image holds. */
int host_platform(struct platform *pf);
void platform_str(const struct platform *pf, char *out, size_t cap);
json_t *platform_pick(json_t *manifests, const struct platform *want, const char *image, struct gerr *err);

/* mediatype.c: what a document's media type says it is. */
#define MT_OCI_INDEX "application/vnd.oci.image.index.v1+json"
#define MT_DOCKER_LIST "application/vnd.docker.distribution.manifest.list.v2+json"
#define MT_OCI_MANIFEST "application/vnd.oci.image.manifest.v1+json"
#define MT_DOCKER_MANIFEST "application/vnd.docker.distribution.manifest.v2+json"
enum media_kind { MEDIA_OTHER, MEDIA_INDEX, MEDIA_MANIFEST };
enum media_kind media_kind(const char *mt);

#endif
