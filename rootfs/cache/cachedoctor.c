/* rootfs/cache/cachedoctor.c — `gpurun doctor`'s check of the image cache: is
 * there a cache directory this user can write, or a place to make one, and
 * for a caller with subordinate id ranges, can the full map its images are
 * unpacked and removed under be made. */
#include "cache_int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

static int map_made(void *arg, void *result, struct gerr *err)
{
	(void)arg;
	(void)result;
	(void)err;
	return 0;
}

/* With ranges, a launch's images are unpacked and removed by a child of
 * the full map: made once here the way they are (ns/userns/idmap.c), so that
 * a range newuidmap refuses is named now, not at the first unpack.  -1
 * when it failed (and was said); else map gets what the cache line adds. */
static int map_check(struct checks *ck, const char *name, const char *root, char *map, size_t cap)
{
	struct subids m;
	if (subid_lookup(geteuid(), getegid(), &m) < 0)
		return 0;
	struct idmap_work w = {.fn = map_made};
	struct gerr e = {0};
	if (idmap_run(&m, &w, &e) < 0) {
		check_say(ck, CHECK_FAIL, name,
			  "%s: images cannot be unpacked under your subordinate ids (%lu+%lu): %s%s%s; "
			  "GPURUN_NO_SUBID=1 maps one id instead",
			  root, m.uid_start, m.uid_count, e.msg, e.hint[0] ? "; " : "", e.hint);
		return -1;
	}
	char key[IDMAP_KEY_MAX];
	idmap_key(&m, key, sizeof key);
	snprintf(map, cap, "; images are unpacked under your subordinate ids %lu+%lu, in idmaps/%s", m.uid_start,
		 m.uid_count, key);
	return 0;
}

/* `gpurun doctor`: is there a cache this user can write, or a place to make
 * one?  Only looks and writes one file it removes at once; the mode fix a
 * launch makes (chmod 0700) is not made here. */
char *cache_doctor(struct checks *ck)
{
	const char *name = "cache";
	char *root = cache_default_root();
	if (!root) {
		check_say(ck, CHECK_FAIL, name,
			  "no place for it (no GPURUN_CACHE, XDG_CACHE_HOME or HOME): images and "
			  "archives need --no-cache; set GPURUN_CACHE to a directory of your own");
		return NULL;
	}
	_cleanup_fd_ int fd = open(root, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 && errno == ENOENT) {
		/* A launch would create it: can it, under the nearest parent
		 * that exists? */
		_cleanup_free_ char *up = xstrdup(root);
		char *slash;
		int e = ENOENT;
		while (e == ENOENT) {
			if (!(slash = strrchr(up, '/')))
				strcpy(up, "."); /* a relative GPURUN_CACHE: under the current directory */
			else
				slash[slash == up] = '\0';
			e = access(up, F_OK) == 0 ? 0 : errno;
		}
		/* Root passes access(2) everywhere: try for real. */
		if (!e) {
			_cleanup_free_ char *t = xasprintf("%s/.gpurun-doctor-%ld", up, (long)getpid());
			e = mkdir(t, 0700) == 0 ? 0 : errno;
			if (!e)
				rmdir(t);
		}
		if (e)
			check_say(ck, CHECK_FAIL, name,
				  "%s cannot be created: %s: %s; set GPURUN_CACHE to a directory of your "
				  "own, or use --no-cache",
				  root, up, strerror(e));
		else
			check_say(ck, CHECK_OK, name,
				  "%s does not exist yet; the first launch of an image "
				  "creates it under %s",
				  root, up);
		return root;
	}
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0) {
		check_say(ck, CHECK_FAIL, name,
			  "%s: %s; set GPURUN_CACHE to a directory of your own, or use "
			  "--no-cache",
			  root, strerror(errno));
		return root;
	}
	if (st.st_uid != geteuid()) {
		check_say(ck, CHECK_FAIL, name, "%s belongs to uid %u, not to you (uid %u); set GPURUN_CACHE", root,
			  (unsigned)st.st_uid, (unsigned)geteuid());
		return root;
	}
	/* Writing for real: root passes every permission check, a read-only
	 * mount or a full disk does not. */
	char probe[32];
	snprintf(probe, sizeof probe, ".doctor-%ld", (long)getpid());
	int tfd = openat(fd, probe, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (tfd < 0) {
		check_say(ck, CHECK_FAIL, name,
			  "%s is not writable: %s; set GPURUN_CACHE to a directory of "
			  "your own, or use --no-cache",
			  root, strerror(errno));
		return root;
	}
	int e = write(tfd, "x", 1) == 1 ? 0 : errno;
	close(tfd);
	unlinkat(fd, probe, 0);
	if (e) {
		check_say(ck, CHECK_FAIL, name, "%s: cannot write: %s", root, strerror(e));
		return root;
	}
	char map[256] = "";
	if (map_check(ck, name, root, map, sizeof map) < 0)
		return root;
	struct statvfs vs;
	unsigned long long avail = fstatvfs(fd, &vs) == 0 ? (unsigned long long)vs.f_bavail * vs.f_frsize : 0;
	char h[32];
	size_human(h, sizeof h, avail);
	check_say(ck, avail < (256ULL << 20) ? CHECK_WARN : CHECK_OK, name, "%s is writable, %s free%s%s", root, h,
		  avail < (256ULL << 20) ? ": images may not fit; `gpurun cache prune` frees space" : "", map);
	return root;
}
