/* tests/lib/cut_on_read.c — an LD_PRELOAD library for unpack.bats that cuts
 * an image file short while gpurun reads it through a mapping, at the same
 * point every run instead of after a guessed delay.
 *
 *   CUT_ON_READ_PATH=FILE   the file to cut (matched by device and inode)
 *   CUT_ON_READ_SIZE=N      the size it is cut to
 *   CUT_ON_READ_AFTER=K     cut when the K-th piece of the mapping is asked
 *                           for (rootfs/unpack/source.c faults each piece in with
 *                           one madvise(MADV_POPULATE_READ)); 0: right after
 *                           the mapping is made
 *
 * Only mmap() and madvise() are wrapped, as raw system calls: no dlsym(),
 * whose allocations could map memory and call back in here.  Unset, it
 * changes nothing. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef MADV_POPULATE_READ
#define MADV_POPULATE_READ 22
#endif

static uintptr_t watch_lo, watch_hi; /* the watched mapping */
static long pieces;
static int cut_done, cut_fd = -1;
static struct stat target; /* st_nlink 0: no file to cut */

/* The file is found now, at start: by the time it is mapped the launch may
 * be in a mount namespace where its path is hidden. */
__attribute__((constructor)) static void find_target(void)
{
	const char *path = getenv("CUT_ON_READ_PATH");
	if (!path || stat(path, &target) < 0)
		target.st_nlink = 0;
}

static void cut(void)
{
	const char *size = getenv("CUT_ON_READ_SIZE");
	if (!__atomic_exchange_n(&cut_done, 1, __ATOMIC_SEQ_CST) && size)
		(void)ftruncate(cut_fd, strtoll(size, NULL, 10));
}

void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	/* syscall() sets errno and returns -1, which is MAP_FAILED. */
	long r = syscall(SYS_mmap, addr, len, prot, flags, fd, off);
	if (r == -1)
		return MAP_FAILED;
	const char *after = getenv("CUT_ON_READ_AFTER");
	struct stat a;
	if (target.st_nlink && fd >= 0 && !watch_hi && fstat(fd, &a) == 0 && a.st_dev == target.st_dev &&
	    a.st_ino == target.st_ino) {
		char self[64];
		snprintf(self, sizeof self, "/proc/self/fd/%d", fd);
		cut_fd = open(self, O_WRONLY | O_CLOEXEC);
		watch_lo = (uintptr_t)r;
		watch_hi = (uintptr_t)r + len;
		if (!after || atol(after) <= 0)
			cut();
	}
	return (void *)r;
}

int madvise(void *addr, size_t len, int advice)
{
	uintptr_t p = (uintptr_t)addr;
	if (advice == MADV_POPULATE_READ && watch_hi && p >= watch_lo && p < watch_hi) {
		const char *after = getenv("CUT_ON_READ_AFTER");
		if (after && __atomic_add_fetch(&pieces, 1, __ATOMIC_SEQ_CST) == atol(after))
			cut();
	}
	return (int)syscall(SYS_madvise, addr, len, advice);
}
