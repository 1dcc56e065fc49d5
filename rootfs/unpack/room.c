/* rootfs/unpack/room.c — how much an image may take: the cap on what it unpacks
 * to (--max-image-size, GPURUN_MAX_IMAGE_SIZE) and the free-space checks
 * made before an import or an unpack starts, so that a full disk is
 * refused in one line instead of met halfway. */
#include "unpack.h"

#include "../../base/opt.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/statvfs.h>

static unsigned long long max_image_bytes = IMAGE_MAX_SIZE_DEFAULT;

static void rootfs_set_max_image_size(unsigned long long bytes)
{
	max_image_bytes = bytes ? bytes : IMAGE_MAX_SIZE_DEFAULT;
}

/* The value is not echoed: it is the caller's text, and the name of the
 * option or variable says where it came from. */
int rootfs_max_image_size_from(const char *opt, struct gerr *err)
{
	const char *v = opt, *what = "--max-image-size";
	if (!v) {
		v = getenv("GPURUN_MAX_IMAGE_SIZE");
		what = "GPURUN_MAX_IMAGE_SIZE";
		if (!v || !*v)
			return 0;
	}
	unsigned long long n;
	if (opt_size1000(v, &n) < 0 || n == 0)
		return gerr_set(err, 0, "%s: not a size; expected one such as 500M or 10G", what);
	rootfs_set_max_image_size(n);
	return 0;
}

unsigned long long rootfs_max_image_size(void)
{
	return max_image_bytes;
}

static void size_words(char *buf, size_t cap, unsigned long long n)
{
	static const char *const units[] = {"kB", "MB", "GB", "TB"};
	unsigned long long div = 1000ULL * 1000 * 1000 * 1000;
	for (size_t u = COUNT_OF(units); u-- > 0; div /= 1000) {
		if (n && n % div == 0) {
			snprintf(buf, cap, "%llu %s", n / div, units[u]);
			return;
		}
	}
	snprintf(buf, cap, "%llu bytes", n);
}

int image_cap_error(struct gerr *err, unsigned long long max)
{
	char cap[64];
	size_words(cap, sizeof cap, max);
	return gerr_set(err, 0,
			"the image unpacks to more than %s, the cap on an image's size "
			"(--max-image-size or GPURUN_MAX_IMAGE_SIZE)",
			cap);
}

int room_check(int fd, unsigned long long need, const char *who, const char *what, const char *where, struct gerr *err)
{
	struct statvfs vs;
	if (fstatvfs(fd, &vs) < 0)
		return gerr_set(err, errno, "%s: statvfs %s", who, where);
	unsigned long long avail = (unsigned long long)vs.f_bavail * vs.f_frsize;
	if (need <= avail)
		return 0;
	char n[64], a[64];
	size_words(n, sizeof n, need);
	size_words(a, sizeof a, avail);
	return gerr_set(err, 0, "%s: needs at least %s (%s), but the file system of %s has %s free", who, n, what,
			where, a);
}

/* Before a whole image is unpacked into dirfd: its file system must have
 * room for at least the archive's size, a lower bound of what a tar (even a
 * compressed one: compression only pays on the way in) unpacks to, rarely
 * wrong.  Refused now rather than after the file system has filled up. */
int archive_room_check(int in_fd, const char *name, int dirfd, struct gerr *err)
{
	struct stat st;
	if (fstat(in_fd, &st) < 0 || !S_ISREG(st.st_mode))
		return 0; /* nothing to go by: the unpack says ENOSPC if it comes to it */
	_cleanup_free_ char *who = xasprintf("unpack %s", name);
	if (room_check(dirfd, (unsigned long long)st.st_size, who, "the archive's size", "the root", err) == 0)
		return 0;
	if (err->errnum) { /* no statvfs: as above */
		gerr_clear(err);
		return 0;
	}
	return -1;
}
