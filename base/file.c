/* base/file.c — small-file reading, full writes, the one in-root open and
 * the cleanup helpers.  See base.h. */
#include "base.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

/* How often a lookup raced by a rename is tried again: enough for any
 * honest tree, and bounded so that a tree renamed in a loop on purpose
 * cannot hold a launch forever. */
#define OPENAT2_TRIES 16

static int openat2_retry(int dirfd, const char *path, int flags, unsigned long long resolve)
{
	struct open_how how = {.flags = (unsigned long long)(flags | O_CLOEXEC), .resolve = resolve};
	path += strspn(path, "/");
	long fd = -1;
	for (int i = 0; i < OPENAT2_TRIES; i++) {
		fd = syscall(SYS_openat2, dirfd, *path ? path : ".", &how, sizeof how);
		if (fd >= 0 || errno != EAGAIN)
			break;
	}
	return (int)fd;
}

int open_in_root(int dirfd, const char *path, int flags)
{
#ifdef GPURUN_TEST_NO_RESOLVE_IN_ROOT
	/* Only in the gpurun tests/cve.bats builds for itself: without this
	 * protection its CVE-2024-0132 class replays must reach the host. */
	return openat2_retry(dirfd, path, flags, RESOLVE_NO_MAGICLINKS);
#else
	return openat2_retry(dirfd, path, flags, RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS);
#endif
}

int open_beneath_nofollow(int dirfd, const char *path, int flags)
{
	return openat2_retry(dirfd, path, flags, RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS);
}

char *read_fd_max(int fd, const char *what, size_t max, size_t *len, struct gerr *err)
{
	size_t cap = 4096, n = 0;
	char *buf = xmalloc(cap + 1);
	for (;;) {
		if (n == cap) {
			if (cap >= max) {
				free(buf);
				gerr_set(err, 0, "%s: larger than %zu bytes", what, max);
				return NULL;
			}
			cap = cap * 2 > max ? max : cap * 2;
			buf = xrealloc(buf, cap + 1);
		}
		ssize_t r = read(fd, buf + n, cap - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			int e = errno;
			free(buf);
			gerr_set(err, e, "read %s", what);
			return NULL;
		}
		if (r == 0)
			break;
		n += (size_t)r;
	}
	buf[n] = '\0';
	if (len)
		*len = n;
	return buf;
}

char *read_small_file_at(int dirfd, const char *path, size_t max, size_t *len, struct gerr *err)
{
	struct stat st;
	_cleanup_fd_ int fd = openat(dirfd, path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	if (fd < 0) {
		gerr_set(err, errno, "open %s", path);
		return NULL;
	}
	if (fstat(fd, &st) < 0) {
		gerr_set(err, errno, "stat %s", path);
		return NULL;
	}
	if (!S_ISREG(st.st_mode)) {
		gerr_set(err, 0, "%s: not a regular file", path);
		return NULL;
	}
	return read_fd_max(fd, path, max, len, err);
}

int write_all(int fd, const void *buf, size_t n)
{
	const char *p = buf;
	while (n > 0) {
		ssize_t w = write(fd, p, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return -1;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

void cleanup_fdp(int *fd)
{
	if (*fd >= 0) {
		int e = errno;
		close(*fd);
		errno = e;
	}
}

void cleanup_freep(void *p)
{
	free(*(void **)p);
}

/* "0 0 4294967295" is the identity map of the initial user namespace; any
 * map that covers fewer ids makes chown to the missing ones fail. */
static int map_is_full(const char *path)
{
	size_t len;
	struct gerr ignore = {0};
	_cleanup_free_ char *text = read_small_file_at(AT_FDCWD, path, 4096, &len, &ignore);
	unsigned long long covered = 0;
	for (char *line = text, *next; line && *line; line = next) {
		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		unsigned long inner, outer, count;
		if (sscanf(line, "%lu %lu %lu", &inner, &outer, &count) == 3)
			covered += count;
	}
	return covered >= 4294967295ULL;
}

int ids_all_mapped(void)
{
	return map_is_full("/proc/self/uid_map") && map_is_full("/proc/self/gid_map");
}
