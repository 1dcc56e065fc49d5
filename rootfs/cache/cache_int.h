/* rootfs/cache/cache_int.h — what the cache's own files share among themselves
 * and with no other file: the helpers that more than one of cache.c,
 * cacherecord.c, cacheadmin.c, cachedoctor.c and kept.c calls.  What the cache
 * offers the rest of rootfs/ is in cache.h, and the launcher's part
 * in rootfs.h. */
#ifndef GPURUN_ROOTFS_CACHE_INT_H
#define GPURUN_ROOTFS_CACHE_INT_H

#include <jansson.h>

#include "cache.h"

/* ---- cache.c ------------------------------------------------------------- */

/* The cache's directory when none is given: $GPURUN_CACHE, else
 * $XDG_CACHE_HOME/gpurun or ~/.cache/gpurun, or /var/cache/gpurun for root
 * (malloc'ed); NULL when there is no place for it. */
char *cache_default_root(void);
/* Write small text to ROOT/rel atomically (tmp file + rename). */
int write_file_atomic(const struct cache *c, const char *rel, const char *text, struct gerr *err);

/* ---- cacherecord.c ------------------------------------------------------- */

/* The JSON object in the file rel of dirfd (at most max bytes), or NULL
 * when it is missing, too big or not an object: a record nobody trusts. */
json_t *cache_read_object_at(int dirfd, const char *rel, size_t max);

/* ---- cache.c: the areas ---------------------------------------------------- */

/* The cache's areas: TOP itself (the caller's own ids) first, then one per
 * subordinate id map under TOP/idmaps (an area of a map is opened with
 * it, so that its trees are removed through it).  Areas that cannot be
 * opened are left out. */
struct cache_areas {
	struct cache *v;
	size_t n;
};
struct cache_areas cache_areas_open(const struct cache *c);
void cache_areas_close(struct cache_areas *a);

#endif
