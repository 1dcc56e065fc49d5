/* rootfs/cache/cache.h — what the cache's files offer the image and
 * registry files: its locks, layers and scratch directories (cache.c), and
 * the image records and the fast path's (cacherecord.c).  Opening and
 * closing the cache, and `cache ls|rm|prune`, are in rootfs.h; what the
 * cache's own files share among themselves is cache_int.h. */
#ifndef GPURUN_ROOTFS_CACHE_H
#define GPURUN_ROOTFS_CACHE_H

#include <sys/stat.h>

#include "../unpack/unpack.h"

#define IMAGE_JSON_MAX (4 << 20) /* an image record, manifest, index or config */
/* cache.c: locks, layers, scratch directories */
int cache_lock(const struct cache *c, const char *name, struct gerr *err);
void cache_unlock(int lockfd);
char *cache_layer_path(const struct cache *c, const char *hex);
int cache_has_layer(const struct cache *c, const char *hex);
unsigned long long cache_layer_bytes(const struct cache *c, const char *hex);
/* A new directory under ROOT/tmp; returns its path relative to ROOT. */
char *cache_tmpdir(const struct cache *c, const char *what, int *dirfd, struct gerr *err);
int cache_commit_layer(const struct cache *c, const char *tmprel, const char *hex, unsigned long long bytes,
		       struct gerr *err);
/* Remove name under dirfd and all below it; what the caller cannot remove
 * in an area of a subordinate map (c's, NULL for none) is removed by the
 * root of that map.  0, or -1 with errno. */
int cache_remove_tree(const struct cache *c, int dirfd, const char *name);
/* cacherecord.c: image records and the fast path */
int cache_put_image(const struct cache *c, const char *hex, const struct image *img, struct gerr *err);
int cache_get_image(const struct cache *c, const char *hex, struct image *img, struct gerr *err);
char *cache_source_key(const struct stat *st, const char *selector);
int cache_lookup_source(const struct cache *c, const char *key, char hex[64 + 1]);
int cache_put_source(const struct cache *c, const char *key, const char *hex, struct gerr *err);
/* A JSON array's strings as a NULL-terminated list (an empty array gives an
 * empty list, not NULL); NULL when a is not an array. */
typedef struct json_t json_t;
char **json_to_strv(json_t *a);
/* Every source the image's record lists, oldest first, as a new JSON array
 * of {"source": PATH-OR-REF, "ref": NAME:TAG (when one was picked)}
 * (empty when there is no record). */
json_t *cache_image_sources(const struct cache *c, const char *hex);

#endif
