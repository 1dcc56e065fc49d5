/* tests/fuzz/fuzz_passwd.c — libFuzzer target for passwd_find(),
 * group_find() and group_memberships(), which parse an image's /etc/passwd and /etc/group (hostile
 * text: any bytes, NULs included).  Input: the key, a newline, the file.
 * Checks that what is found matches the key and fits its buffers. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../rootfs/rootfs.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const uint8_t *nl = memchr(data, '\n', size);
	size_t klen = nl ? (size_t)(nl - data) : size;
	char *key = malloc(klen + 1);
	struct pw_entry pw;
	unsigned long gid = 0;
	if (!key)
		return 0;
	memcpy(key, data, klen);
	key[klen] = '\0';
	/* The file gets its own allocation of exactly its length, so ASan
	 * sees any read past it. */
	size_t tlen = nl ? size - klen - 1 : 0;
	char *text = malloc(tlen ? tlen : 1);
	if (!text) {
		free(key);
		return 0;
	}
	if (tlen)
		memcpy(text, nl + 1, tlen);

	int numeric = *key && strspn(key, "0123456789") == strlen(key);
	if (passwd_find(text, tlen, key, &pw) == 1) {
		if (strnlen(pw.name, sizeof pw.name) == sizeof pw.name ||
		    strnlen(pw.home, sizeof pw.home) == sizeof pw.home)
			abort();
		if (pw.uid >= UINT32_MAX || pw.gid >= UINT32_MAX)
			abort();
		if (numeric ? pw.uid != strtoul(key, NULL, 10) : strcmp(pw.name, key) != 0)
			abort();
	}
	if (group_find(text, tlen, key, &gid) == 1) {
		if (gid >= UINT32_MAX || (numeric && gid != strtoul(key, NULL, 10)))
			abort();
	}
	/* The key as a user name: each gid valid, once, never the skipped one. */
	unsigned long gids[8];
	size_t n = group_memberships(text, tlen, key, 0, gids, 8);
	for (size_t i = 0; i < n && i < 8; i++) {
		if (gids[i] >= UINT32_MAX || gids[i] == 0)
			abort();
		for (size_t k = 0; k < i; k++)
			if (gids[k] == gids[i])
				abort();
	}
	free(text);
	free(key);
	return 0;
}
