/* tests/fuzz/fuzz_tarpath.c — libFuzzer target for rootfs_check_entry_path(),
 * the lexical gate every archive entry name and hard-link target passes.
 * Beyond "no crash", it checks the promise: an accepted path is relative,
 * has no ".." component and is at most 4096 bytes; a refused one gets a
 * one-line message that names it. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../rootfs/rootfs.h"

static int has_dotdot(const char *p)
{
	for (const char *c = p; *c; c++)
		if ((c == p || c[-1] == '/') && c[0] == '.' && c[1] == '.' && (c[2] == '/' || !c[2]))
			return 1;
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *path = malloc(size + 1);
	struct gerr err = {0};
	if (!path)
		return 0;
	memcpy(path, data, size);
	path[size] = '\0'; /* names stop at the first NUL, as in a tar header */

	if (rootfs_check_entry_path(path, &err) == 0) {
		if (!*path || path[0] == '/' || has_dotdot(path) || strlen(path) > 4096)
			abort();
	} else {
		if (!err.msg[0] || strchr(err.msg, '\n') || strncmp(err.msg, "entry '", 7))
			abort();
	}
	free(path);
	return 0;
}
