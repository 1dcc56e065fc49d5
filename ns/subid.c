/* ns/subid.c — who runs gpurun and the user namespace that follows from
 * it: the caller's ids, and whether the container gets the full id map of
 * the caller's subordinate ranges (ns/userns/idmap.c reads them and writes the
 * map with Debian's newuidmap and newgidmap, as podman does) or one id.
 *
 * Why: with one id mapped, no other user exists in the container, so
 * package managers that switch to a service user (apt's _apt) or chown to
 * one cannot work for real (ns/security.c then answers those calls with a
 * harmless success).  A range makes them real.  The image cache makes its
 * trees under the same map, found by the same lookup (rootfs/cache/cache.c), so
 * the image's files keep their owners inside. */
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "exec.h"

/* Root of a user namespace whose setgroups is denied (`unshare -r`, a
 * rootless container) cannot set groups at all: gpurun runs there as
 * root, keeping the groups it has, as it must. */
static int setgroups_denied(void)
{
	char buf[8] = "";
	_cleanup_fd_ int fd = open("/proc/self/setgroups", O_RDONLY | O_CLOEXEC);
	return fd >= 0 && read(fd, buf, sizeof buf - 1) > 0 && !strncmp(buf, "deny", 4);
}

/* Root runs without a user namespace.  Unprivileged, with ranges and
 * Debian's uidmap, the full map podman makes; else one id mapped: no other
 * id exists to switch to or give files to, and the calls that would need
 * one are answered (ns/security.c). */
void ns_caller(struct run_config *cfg)
{
	cfg->host_uid = geteuid();
	cfg->host_gid = getegid();
	cfg->unprivileged = cfg->host_uid != 0;
	if (cfg->unprivileged)
		(void)subid_lookup(cfg->host_uid, cfg->host_gid, &cfg->subids);
	cfg->fake_ids = cfg->unprivileged && !cfg->subids.uid_count;
	/* Archives keep their owners where the image's ids exist: as root
	 * with every id mapped, and with the range, whose map P1 is root of
	 * when it unpacks a --no-cache image (the cache unpacks under the
	 * same map, ns/userns/idmap.c). */
	cfg->keep_owner = cfg->unprivileged ? cfg->subids.uid_count > 0 : ids_all_mapped();
	cfg->setgroups_denied = !cfg->unprivileged && setgroups_denied();
}
