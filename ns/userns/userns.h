/* ns/userns/userns.h — user namespaces with more than one id: the caller's
 * subordinate id ranges (/etc/subuid, /etc/subgid), the full map made from
 * them with Debian's newuidmap and newgidmap as podman makes it, and work
 * run in a child that is root of a user namespace with that map.  It sits
 * below rootfs/ (tests/layering.sh): the image cache makes and removes its
 * trees under the same map the container gets.  All of it is idmap.c's. */
#ifndef GPURUN_NS_USERNS_H
#define GPURUN_NS_USERNS_H

#include <sys/types.h>

#include "../../base/base.h"

/* The caller's subordinate ranges; uid_count 0: none.  in_uid and in_gid
 * are the caller's ids inside: 0 (root) unless the caller keeps its own
 * (--userns keep-id), when the range fills the ids around them. */
struct subids {
	uid_t uid;
	gid_t gid;
	unsigned long uid_start, uid_count, gid_start, gid_count;
	uid_t in_uid;
	gid_t in_gid;
};
/* The caller's first ranges in /etc/subuid and /etc/subgid (by name or
 * uid), when the caller is not root, newuidmap and newgidmap are installed
 * and GPURUN_NO_SUBID is unset (or 0); -1 when there is no full map to
 * make.  After subid_keep_caller(1), the map keeps the caller's own ids
 * inside (none when a range is too short to fill the ids below them). */
int subid_lookup(uid_t uid, gid_t gid, struct subids *out);
/* --userns keep-id, for every map this process makes or looks up: the
 * launch's, and the cache area's whose trees the launch binds. */
void subid_keep_caller(int on);
/* The full map for the process pid (in its own user namespace), written by
 * newuidmap and newgidmap: in_uid -> the caller, the other ids 0..N -> the
 * range in order (0 -> the caller, 1..N -> the range, by default). */
int subid_write_maps(const struct subids *s, pid_t pid, struct gerr *err);

/* The map as a directory name ("u100000-65536-g100000-65536", with
 * "-k1000-1000" when the caller keeps its ids), and back (-1 for any other
 * name); the caller's own uid and gid complete it. */
#define IDMAP_KEY_MAX 96
void idmap_key(const struct subids *m, char *buf, size_t cap);
int idmap_from_key(const char *key, struct subids *m);
/* fn(arg, result, err) in a child that is root of a new user namespace
 * with map m; meanwhile this process runs during(during_arg) when set.
 * The child's result (result_len bytes) and error come back here. */
struct idmap_work {
	int (*fn)(void *arg, void *result, struct gerr *err);
	void *arg;
	void *result;
	size_t result_len;
	int (*during)(void *arg, struct gerr *err);
	void *during_arg;
};
int idmap_run(const struct subids *m, const struct idmap_work *w, struct gerr *err);

#endif
