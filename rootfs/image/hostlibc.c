/* rootfs/image/hostlibc.c — the root `gpurun smoke` runs its probe in when
 * given no IMAGE: the host's dynamic loader and C library, as a tar archive
 * in memory that the run unpacks into its own tmpfs.
 *
 * The probe needs the C library only, and the driver's libraries libc,
 * libm, libdl, libpthread, librt and the loader (their DT_NEEDED): the ones
 * gpurun itself was loaded with, from the directory its libc came from, at
 * the paths the loader used (its PT_INTERP, libc's directory), so that the
 * loader finds them by its built-in search path.  The host's
 * /etc/debian_version comes too: it decides the image's $LIBDIR, the
 * multiarch directory the same loader searches (base/plan/plan.h).
 *
 * Not the host's / under an overlay: unprivileged, overlayfs refuses a
 * lower layer with other file systems mounted under it (the user namespace
 * got them locked), which / always has; an archive needs no overlay. */
#include "image_int.h"

#include "../../base/plan/plan.h"

#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* The files of the C library gpurun was loaded with. */
struct loaded {
	char *loader, *libc;
};

static int find_loaded(struct dl_phdr_info *info, size_t size, void *data)
{
	(void)size;
	struct loaded *l = data;
	const char *name = info->dlpi_name;
	if (!name || name[0] != '/')
		return 0;
	if (info->dlpi_addr == getauxval(AT_BASE) && !l->loader)
		l->loader = xstrdup(name);
	const char *base = strrchr(name, '/') + 1;
	if (!strcmp(base, "libc.so.6") && !l->libc)
		l->libc = xstrdup(name);
	return 0;
}

/* One ustar header (POSIX.1-1988): what libarchive's writer would make,
 * without the encryption and compression code it would link in. */
static int tar_header(int fd, const char *path, char type, mode_t perm, size_t size, struct gerr *err)
{
	char h[512];
	memset(h, 0, sizeof h);
	size_t len = strlen(path);
	const char *name = path;
	if (len > 100) { /* prefix "/" name */
		const char *cut = path + len - 100;
		cut = strchr(cut, '/');
		if (!cut || cut - path > 155)
			return gerr_set(err, ENAMETOOLONG, "the host C library: %s", path);
		memcpy(h + 345, path, (size_t)(cut - path));
		name = cut + 1;
	}
	memcpy(h, name, strlen(name));
	snprintf(h + 100, 8, "%07o", (unsigned)perm);
	snprintf(h + 108, 8, "%07o", 0);
	snprintf(h + 116, 8, "%07o", 0);
	snprintf(h + 124, 12, "%011llo", (unsigned long long)size);
	snprintf(h + 136, 12, "%011o", 0);
	h[156] = type;
	memcpy(h + 257, "ustar", 6);
	memcpy(h + 263, "00", 2);
	memset(h + 148, ' ', 8);
	unsigned sum = 0;
	for (size_t i = 0; i < sizeof h; i++)
		sum += (unsigned char)h[i];
	snprintf(h + 148, 8, "%06o", sum);
	if (write_all(fd, h, sizeof h) < 0)
		return gerr_set(err, errno, "write the host C library's root");
	return 0;
}

/* The directories above path (a relative one), parents first, once each. */
static int add_parents(int fd, const char *path, struct strv *dirs, struct gerr *err)
{
	_cleanup_free_ char *p = xstrdup(path);
	for (char *s = strchr(p, '/'); s; s = strchr(s + 1, '/')) {
		*s = '\0';
		int seen = 0;
		for (size_t i = 0; i < dirs->n && !seen; i++)
			seen = !strcmp(dirs->v[i], p);
		if (!seen) {
			_cleanup_free_ char *d = xasprintf("%s/", p);
			if (tar_header(fd, d, '5', 0755, 0, err) < 0)
				return -1;
			strv_add(dirs, xstrdup(p));
		}
		*s = '/';
	}
	return 0;
}

/* The host file src, as the archive's dst (absolute; stored relative). */
static int add_file(int fd, const char *src, const char *dst, mode_t perm, struct strv *dirs, struct gerr *err)
{
	size_t n;
	_cleanup_fd_ int in = open(src, O_RDONLY | O_CLOEXEC); /* the host's links to them are followed */
	if (in < 0)
		return gerr_set(err, errno, "the host C library: %s", src);
	_cleanup_free_ char *data = read_fd_max(in, src, 64 << 20, &n, err);
	if (!data)
		return gerr_prefix(err, "the host C library");
	const char *rel = dst + strspn(dst, "/");
	static const char zeros[512];
	if (add_parents(fd, rel, dirs, err) < 0 || tar_header(fd, rel, '0', perm, n, err) < 0)
		return -1;
	if (write_all(fd, data, n) < 0 || write_all(fd, zeros, (512 - n % 512) % 512) < 0)
		return gerr_set(err, errno, "write the host C library's root");
	return 0;
}

int image_host_libc(struct gerr *err)
{
	struct loaded l = {0};
	dl_iterate_phdr(find_loaded, &l);
	if (!l.loader || !l.libc) {
		free(l.loader);
		free(l.libc);
		return gerr_set(err, 0, "cannot tell which dynamic loader and C library gpurun runs with");
	}
	int fd = memfd_create("gpurun-smoke-root", MFD_CLOEXEC);
	if (fd < 0) {
		free(l.loader);
		free(l.libc);
		return gerr_set(err, errno, "memfd_create");
	}
	struct strv dirs = {0};
	int r = add_file(fd, l.loader, l.loader, 0755, &dirs, err);
	_cleanup_free_ char *dir = xstrdup(l.libc);
	*strrchr(dir, '/') = '\0';
	static const char *const libs[] = {"libc.so.6", "libm.so.6", "libdl.so.2", "libpthread.so.0", "librt.so.1"};
	for (size_t i = 0; r == 0 && i < COUNT_OF(libs); i++) {
		_cleanup_free_ char *path = xasprintf("%s/%s", dir, libs[i]);
		if (i == 0 || access(path, R_OK) == 0)
			r = add_file(fd, path, path, 0755, &dirs, err);
	}
	if (r == 0 && access(LIBDIR_MARKER, R_OK) == 0)
		r = add_file(fd, LIBDIR_MARKER, LIBDIR_MARKER, 0644, &dirs, err);
	static const char end[1024];
	if (r == 0 && write_all(fd, end, sizeof end) < 0)
		r = gerr_set(err, errno, "write the host C library's root");
	strv_free(&dirs);
	free(l.loader);
	free(l.libc);
	if (r == 0 && lseek(fd, 0, SEEK_SET) < 0)
		r = gerr_set(err, errno, "lseek the host C library's root");
	if (r < 0) {
		close(fd);
		return -1;
	}
	return fd;
}
