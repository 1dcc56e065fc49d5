/* tests/lib/swap_on_unlink.c — an LD_PRELOAD library for cache.bats that
 * swaps a symlink in where a directory was, at the moment a removal is open
 * to it: right after unlinkat() has said that the name is a directory, and
 * before the removal acts on that name again.  The same point in every run,
 * instead of a race won now and then.
 *
 *   SWAP_ON_UNLINK_UNDER=DIR   only in a directory whose path starts with
 *                              DIR/ (the test's cache), never elsewhere
 *   SWAP_ON_UNLINK_NAME=NAME   the entry swapped, at its first EISDIR
 *   SWAP_ON_UNLINK_AWAY=PATH   where the directory is moved (a rename: the
 *                              same file system)
 *   SWAP_ON_UNLINK_LINK=TARGET what the symlink left at NAME points to
 *
 * Only unlinkat() is wrapped, with raw system calls: no dlsym().  Unset, it
 * changes nothing. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

static int swapped;

static int under(int dirfd, const char *dir)
{
	char self[64], path[4096];
	snprintf(self, sizeof self, "/proc/self/fd/%d", dirfd);
	ssize_t n = readlink(self, path, sizeof path - 1);
	size_t l = strlen(dir);
	if (n < 0 || !l)
		return 0;
	path[n] = '\0';
	return !strncmp(path, dir, l) && path[l] == '/';
}

int unlinkat(int dirfd, const char *name, int flags)
{
	long r = syscall(SYS_unlinkat, dirfd, name, flags);
	if (r == 0 || errno != EISDIR || flags || dirfd < 0 || swapped)
		return (int)r;
	const char *dir = getenv("SWAP_ON_UNLINK_UNDER"), *want = getenv("SWAP_ON_UNLINK_NAME"),
		   *away = getenv("SWAP_ON_UNLINK_AWAY"), *link = getenv("SWAP_ON_UNLINK_LINK");
	if (!dir || !want || !away || !link || strcmp(name, want) || !under(dirfd, dir))
		return (int)r;
	swapped = 1;
	if (syscall(SYS_renameat, dirfd, name, AT_FDCWD, away) == 0)
		(void)syscall(SYS_symlinkat, link, dirfd, name);
	errno = EISDIR;
	return -1;
}
