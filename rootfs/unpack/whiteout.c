/* rootfs/unpack/whiteout.c — a layer's whiteouts in the form overlayfs reads,
 * made in a directory of the layer being unpacked: ".wh.NAME" (NAME was
 * deleted) becomes a 0:0 character device called NAME, ".wh..wh..opq" (the
 * directory hides everything below it) the user.overlay.opaque xattr, read
 * with the overlay's userxattr option.  The kernel lets anyone create the
 * 0:0 device; no other node is ever made.
 *
 * In a directory the same layer made opaque, a whiteout would only repeat
 * what the marker says, and overlayfs lists an opaque directory as it is, so
 * a whiteout left there shows as an entry nobody can stat: whichever of the
 * two comes first in the archive, none is kept. */
#include "unpack.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

/* xattr calls need a real fd, not O_PATH: through /proc. */
static void proc_path(char *buf, size_t cap, int fd)
{
	snprintf(buf, cap, "/proc/self/fd/%d", fd);
}

static int made_opaque(int dir)
{
	char proc[64], v = 0;
	proc_path(proc, sizeof proc, dir);
	return getxattr(proc, OVERLAY_OPAQUE_XATTR, &v, 1) == 1 && v == 'y';
}

/* The whiteouts made in dir before its opaque marker came. */
static int drop_whiteouts(int dir)
{
	int fd = openat(dir, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	if (!d) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	struct dirent *de;
	struct stat st;
	int rc = 0;
	while ((de = readdir(d)))
		if (de->d_type == DT_CHR && fstatat(fd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
		    S_ISCHR(st.st_mode) && st.st_rdev == makedev(0, 0) && unlinkat(fd, de->d_name, 0) < 0)
			rc = -1;
	closedir(d);
	return rc;
}

int whiteout_opaque(int dir)
{
	char proc[64];
	proc_path(proc, sizeof proc, dir);
	if (setxattr(proc, OVERLAY_OPAQUE_XATTR, "y", 1, 0) < 0)
		return -1;
	return drop_whiteouts(dir);
}

int whiteout_make(int dir, const char *name)
{
	if (made_opaque(dir))
		return 0;
	_cleanup_fd_ int fd = openat(dir, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	if (mknodat(fd, name, S_IFCHR | 0000, 0) == 0)
		return 0;
	/* An entry of this layer by that name: the whiteout replaces it. */
	struct stat st;
	if (errno != EEXIST || fstatat(fd, name, &st, AT_SYMLINK_NOFOLLOW) < 0 || S_ISDIR(st.st_mode) ||
	    unlinkat(fd, name, 0) < 0 || mknodat(fd, name, S_IFCHR | 0000, 0) < 0)
		return -1;
	return 0;
}
