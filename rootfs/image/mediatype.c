/* rootfs/image/mediatype.c — the one table of the JSON documents gpurun reads by
 * media type: which are image indexes (an OCI index, a Docker manifest
 * list) and which image manifests, for a registry's answers and a local OCI
 * layout alike. */
#include "image.h"

#include <string.h>

static const struct {
	const char *type;
	enum media_kind kind;
} media_types[] = {
	{MT_OCI_INDEX, MEDIA_INDEX},
	{MT_DOCKER_LIST, MEDIA_INDEX},
	{MT_OCI_MANIFEST, MEDIA_MANIFEST},
	{MT_DOCKER_MANIFEST, MEDIA_MANIFEST},
};

enum media_kind media_kind(const char *mt)
{
	for (size_t i = 0; mt && i < COUNT_OF(media_types); i++)
		if (!strcmp(mt, media_types[i].type))
			return media_types[i].kind;
	return MEDIA_OTHER;
}
