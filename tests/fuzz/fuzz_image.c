/* tests/fuzz/fuzz_image.c — libFuzzer target for image_prepare() on an
 * image archive: arbitrary bytes as a `docker save` or OCI archive (plain
 * or compressed), read in dry-run mode, so that manifest.json, index.json,
 * nested indexes, configs, digests and member paths are all parsed from
 * hostile input.  Nothing is written: the cache has no directory.
 * Checks: never a crash or leak, and an error is one line naming the image. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "../../rootfs/rootfs.h"

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
	int fd = memfd_create("fuzz-image", MFD_CLOEXEC);
	if (fd < 0 || write(fd, data, size) != (ssize_t)size)
		abort();
	char path[64];
	snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
	struct cache c = {.root = (char *)"/nonexistent/gpurun-fuzz-cache", .fd = -1, .lockfd = -1};
	struct image img;
	struct gerr err = {0};
	/* Both with and without a selector: the picking code differs. */
	for (int sel = 0; sel < 2; sel++) {
		memset(&err, 0, sizeof err);
		int r = image_prepare(path, NULL, sel ? "gpurun/test:latest" : NULL, &c, IMAGE_DRY_RUN | IMAGE_QUIET,
				      &img, &err);
		if (r < 0 && (strchr(err.msg, '\n') || !strstr(err.msg, path)))
			abort();
		image_free(&img);
	}
	close(fd);
	return 0;
}
