/* rootfs/cache/cache_int.h — what the cache's own files share among themselves
 * and with no other file: the helpers that more than one of cache.c,
 * cacherecord.c, cacheadmin.c and cachedoctor.c calls.  What the cache
 * offers the rest of rootfs/ is in cache.h, and the launcher's part
 * in rootfs.h. */
#ifndef GPURUN_ROOTFS_CACHE_INT_H
#define GPURUN_ROOTFS_CACHE_INT_H

#include "cache.h"

/* ---- cache.c ------------------------------------------------------------- */

/* The cache's directory when none is given: $GPURUN_CACHE, else
 * $XDG_CACHE_HOME/gpurun or ~/.cache/gpurun, or /var/cache/gpurun for root
 * (malloc'ed); NULL when there is no place for it. */
char *cache_default_root(void);
/* Write small text to ROOT/rel atomically (tmp file + rename). */
int write_file_atomic(const struct cache *c, const char *rel, const char *text, struct gerr *err);

#endif
