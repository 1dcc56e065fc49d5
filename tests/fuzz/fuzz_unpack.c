/* tests/fuzz/fuzz_unpack.c — libFuzzer target for rootfs_probe() and
 * rootfs_unpack(): arbitrary bytes as an image archive (compressed or not),
 * unpacked into a fresh directory that is removed afterwards.
 *
 * Beyond "no crash, no leak": nothing may appear next to the target
 * directory (a '..' escape), and a refusal must be a one-line message.  The
 * caps are lowered (512 entries, 8 MiB of data) so that a decompression bomb
 * costs milliseconds, not the fuzzing run. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../rootfs/unpack/unpack.h"

static const struct unpack_limits fuzz_limits = {
	.max_entries = 512,
	.max_path = 4096,
	.max_bytes = 8 << 20,
};

static char parent[4096];
static int parent_fd = -1, home_fd = -1;

/* Remove dfd/name and everything below it without following symlinks. */
static void rm_tree(int dfd, const char *name)
{
	int fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd >= 0) {
		DIR *d = fdopendir(fd);
		struct dirent *de;
		if (!d)
			abort();
		while ((de = readdir(d))) {
			if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
				rm_tree(fd, de->d_name);
		}
		closedir(d);
		if (unlinkat(dfd, name, AT_REMOVEDIR) < 0)
			abort();
	} else if (unlinkat(dfd, name, 0) < 0 && errno != ENOENT) {
		abort();
	}
}

static void remove_parent(void)
{
	if (parent_fd >= 0 && fchdir(home_fd) == 0)
		rm_tree(AT_FDCWD, parent);
}

static void setup(void)
{
	const char *tmp = getenv("TMPDIR");
	snprintf(parent, sizeof parent, "%s/fuzz_unpack.XXXXXX", tmp && *tmp ? tmp : "/tmp");
	home_fd = open(".", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (home_fd < 0 || !mkdtemp(parent))
		abort();
	parent_fd = open(parent, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (parent_fd < 0)
		abort();
	atexit(remove_parent);
}

/* The directory next to "root" must hold nothing else. */
static void check_no_escape(void)
{
	int fd = openat(parent_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	struct dirent *de;
	if (!d)
		abort();
	while ((de = readdir(d))) {
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, "..") && strcmp(de->d_name, "root")) {
			fprintf(stderr, "fuzz_unpack: '%s' written outside the target\n", de->d_name);
			abort();
		}
	}
	closedir(d);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct gerr err = {0};
	struct unpack_stats st;
	if (parent_fd < 0)
		setup();
	int in = memfd_create("archive", MFD_CLOEXEC);
	if (in < 0 || write_all(in, data, size) < 0 || lseek(in, 0, SEEK_SET) < 0)
		abort();
	if (rootfs_probe(in, "fuzz", &err) < 0 && (strchr(err.msg, '\n') || strncmp(err.msg, "image fuzz: ", 12)))
		abort();
	if (lseek(in, 0, SEEK_CUR) != 0)
		abort();

	if (mkdirat(parent_fd, "root", 0700) < 0)
		abort();
	int root = openat(parent_fd, "root", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (root < 0)
		abort();
	memset(&err, 0, sizeof err);
	int rc = rootfs_unpack_limited(in, "fuzz", root, UNPACK_CLEAR_SUID, &fuzz_limits, &st, &err);
	if (rc < 0 && (strchr(err.msg, '\n') || strncmp(err.msg, "unpack fuzz: ", 13)))
		abort();
	if (rc == 0 && (st.entries + st.devices_skipped + st.dev_skipped == 0 || st.bytes > fuzz_limits.max_bytes))
		abort();
	if (fchdir(home_fd) < 0)
		abort();
	check_no_escape();
	close(root);
	close(in);
	rm_tree(parent_fd, "root");
	return 0;
}
