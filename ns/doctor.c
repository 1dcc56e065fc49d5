/* ns/doctor.c — the kernel half of `gpurun doctor`: can this host do what a
 * launch does, in the mode this caller gets (root, or unprivileged with a
 * user namespace)?
 *
 * Each check repeats a launch's own step in a throw-away child: the same
 * namespaces, the same fs-context mounts (fsopen/fsmount), but every mount
 * stays detached and dies with the child, so the host is never touched.  A
 * verdict of "ok" therefore means the real step works here; a failure is
 * then explained from the sysctls and files that usually cause it, with
 * what to change. */
#include "ns.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define NOBODY 65534

/* The steps of one probe, in the order the child runs them.  errnum -1:
 * not reached (an earlier step failed). */
enum step { S_SETUID, S_USERNS, S_MAPS, S_NS, S_PROC, S_TMPFS, S_OVERLAY, S_COUNT };

struct probe {
	int errnum[S_COUNT];
};

struct probe_opts {
	int as_nobody;     /* root checking for unprivileged users */
	int userns;        /* a user namespace with the caller as root, as a launch */
	int mounts;        /* then mount + pid namespaces, /proc, tmpfs, overlay */
	const char *lower; /* the overlay's lower directory (the cache), or NULL */
};

static int write_text(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	int r = write_all(fd, text, strlen(text));
	int e = errno;
	close(fd);
	errno = e;
	return r;
}

/* A detached instance of type, configured like the launch's (source set,
 * then the flags and strings of data).  Returns the mount fd or -1. */
static int fresh(const char *type, const char *const *kv, size_t n)
{
	int fs = fsopen(type, FSOPEN_CLOEXEC);
	if (fs < 0)
		return -1;
	int r = fsconfig(fs, FSCONFIG_SET_STRING, "source", type, 0);
	for (size_t i = 0; r == 0 && i + 1 < n; i += 2)
		r = kv[i + 1] ? fsconfig(fs, FSCONFIG_SET_STRING, kv[i], kv[i + 1], 0)
			      : fsconfig(fs, FSCONFIG_SET_FLAG, kv[i], NULL, 0);
	if (r == 0)
		r = fsconfig(fs, FSCONFIG_CMD_CREATE, NULL, NULL, 0);
	int mnt = r == 0 ? fsmount(fs, FSMOUNT_CLOEXEC, 0) : -1;
	int e = errno;
	close(fs);
	errno = e;
	return mnt;
}

/* Record a step's outcome (errno when it failed); returns ok. */
static int step(struct probe *p, enum step s, int ok)
{
	p->errnum[s] = ok ? 0 : (errno ? errno : EIO);
	return ok;
}

/* pid 1 of the new pid namespace: the mounts a launch makes first. */
static void probe_mounts(struct probe *p, const struct probe_opts *o)
{
	int proc = fresh("proc", NULL, 0);
	step(p, S_PROC, proc >= 0);
	static const char *const tmpfs_kv[] = {"mode", "0755"};
	int tmp = fresh("tmpfs", tmpfs_kv, COUNT_OF(tmpfs_kv));
	if (!step(p, S_TMPFS, tmp >= 0))
		return;
	if (!step(p, S_OVERLAY,
		  mkdirat(tmp, "l", 0755) == 0 && mkdirat(tmp, "u", 0755) == 0 && mkdirat(tmp, "w", 0755) == 0))
		return;
	char lower[4200], upper[64], work[64];
	if (o->lower)
		snprintf(lower, sizeof lower, "%s", o->lower);
	else
		snprintf(lower, sizeof lower, "/proc/self/fd/%d/l", tmp);
	snprintf(upper, sizeof upper, "/proc/self/fd/%d/u", tmp);
	snprintf(work, sizeof work, "/proc/self/fd/%d/w", tmp);
	/* Cached layers are always mounted with userxattr (ns/layout.c). */
	const char *kv[] = {"lowerdir", lower, "upperdir", upper, "workdir", work, "userxattr", NULL};
	size_t n = (o->userns || o->lower) ? COUNT_OF(kv) : COUNT_OF(kv) - 2;
	step(p, S_OVERLAY, fresh("overlay", kv, n) >= 0);
}

static void probe_child(struct probe *p, const struct probe_opts *o)
{
	if (o->as_nobody && !step(p, S_SETUID,
				  setgroups(0, NULL) == 0 && setresgid(NOBODY, NOBODY, NOBODY) == 0 &&
					  setresuid(NOBODY, NOBODY, NOBODY) == 0))
		_exit(1);
	/* A uid change clears "dumpable", which would leave /proc/self/uid_map
	 * owned by root and unwritable for the user we now are. */
	if (o->as_nobody && !step(p, S_SETUID, prctl(PR_SET_DUMPABLE, 1, 0, 0, 0) == 0))
		_exit(1);
	if (o->userns) {
		uid_t uid = geteuid();
		gid_t gid = getegid();
		if (!step(p, S_USERNS, unshare(CLONE_NEWUSER) == 0))
			_exit(1);
		char map[64];
		snprintf(map, sizeof map, "0 %u 1\n", (unsigned)uid);
		int ok = write_text("/proc/self/uid_map", map) == 0 && write_text("/proc/self/setgroups", "deny") == 0;
		snprintf(map, sizeof map, "0 %u 1\n", (unsigned)gid);
		if (!step(p, S_MAPS, ok && write_text("/proc/self/gid_map", map) == 0))
			_exit(1);
	}
	if (!o->mounts) {
		/* The user namespace is only useful if it can mount: AppArmor's
		 * restriction lets unshare succeed and denies this instead. */
		step(p, S_NS, unshare(CLONE_NEWNS) == 0);
		int tmp = fresh("tmpfs", NULL, 0);
		step(p, S_TMPFS, tmp >= 0);
		_exit(0);
	}
	if (!step(p, S_NS, unshare(CLONE_NEWNS | CLONE_NEWPID) == 0))
		_exit(1);
	pid_t pid = fork();
	if (pid < 0) {
		step(p, S_PROC, 0);
		_exit(1);
	}
	if (pid == 0) {
		probe_mounts(p, o);
		_exit(0);
	}
	while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
		;
	_exit(0);
}

/* Run one probe in a child; results in *p (shared memory, since the
 * grandchild writes too). */
static int run_probe(const struct probe_opts *o, struct probe *out, struct gerr *err)
{
	struct probe *p = mmap(NULL, sizeof *p, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return gerr_set(err, errno, "mmap");
	for (int i = 0; i < S_COUNT; i++)
		p->errnum[i] = -1;
	fflush(NULL);
	pid_t pid = fork();
	if (pid < 0) {
		int e = errno;
		munmap(p, sizeof *p);
		return gerr_set(err, e, "fork");
	}
	if (pid == 0)
		probe_child(p, o);
	while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
		;
	*out = *p;
	munmap(p, sizeof *p);
	return 0;
}

/* The first step that failed, or S_COUNT when none did. */
static enum step first_failure(const struct probe *p, enum step from, enum step to)
{
	for (int s = from; s <= (int)to; s++)
		if (p->errnum[s] > 0)
			return (enum step)s;
	return S_COUNT;
}

static const char *const step_what[S_COUNT] = {
	"switch to uid 65534",  "unshare(CLONE_NEWUSER)", "write the uid and gid maps", "unshare(CLONE_NEWNS)",
	"mount a fresh procfs", "mount a tmpfs",          "mount an overlay",
};

/* A sysctl's first line, "" when it cannot be read (absent on this kernel). */
static void sysctl_read(const char *name, char *buf, size_t cap)
{
	buf[0] = '\0';
	_cleanup_fd_ int fd = open(name, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	ssize_t n = read(fd, buf, cap - 1);
	buf[n > 0 ? n : 0] = '\0';
	buf[strcspn(buf, "\n")] = '\0';
}

/* Which of the usual knobs forbids user namespaces here, as
 * "name = value" items for the message; "" when none does. */
static void userns_knobs(struct sbuf *why, struct sbuf *fix)
{
	static const struct {
		const char *path, *name, *bad, *good;
	} knobs[] = {
		{"/proc/sys/kernel/unprivileged_userns_clone", "kernel.unprivileged_userns_clone", "0", "1"},
		{"/proc/sys/kernel/apparmor_restrict_unprivileged_userns",
		 "kernel.apparmor_restrict_unprivileged_userns", "1", "0"},
		{"/proc/sys/user/max_user_namespaces", "user.max_user_namespaces", "0", "15000"},
	};
	for (size_t i = 0; i < COUNT_OF(knobs); i++) {
		char v[32];
		sysctl_read(knobs[i].path, v, sizeof v);
		if (strcmp(v, knobs[i].bad) != 0)
			continue;
		sbuf_printf(why, "%s%s = %s", why->len ? " and " : "", knobs[i].name, v);
		sbuf_printf(fix, " %s=%s", knobs[i].name, knobs[i].good);
	}
}

static void say_userns(struct checks *ck, const struct probe *p, int root)
{
	const char *name = "user namespaces";
	enum step s = first_failure(p, S_USERNS, S_TMPFS);
	if (p->errnum[S_SETUID] > 0) {
		/* Root of a user namespace cannot become nobody: its own
		 * launches need no user namespace, so only note it. */
		check_say(ck, CHECK_WARN, name, "not checked for unprivileged users: %s failed: %s",
			  step_what[S_SETUID], strerror(p->errnum[S_SETUID]));
		return;
	}
	if (s == S_COUNT) {
		check_say(ck, CHECK_OK, name, "%s can create one and mount in it",
			  root ? "unprivileged users" : "this user");
		return;
	}
	struct sbuf why = {0}, fix = {0};
	userns_knobs(&why, &fix);
	enum check_level lvl = root ? CHECK_WARN : CHECK_FAIL;
	const char *who = root ? "unprivileged launches will fail" : "gpurun cannot run unprivileged";
	if (why.len)
		check_say(ck, lvl, name, "%s: %s failed (%s) because %s; as root: sysctl -w%s", who, step_what[s],
			  strerror(p->errnum[s]), why.s, fix.s);
	else
		check_say(ck, lvl, name, "%s: %s failed: %s", who, step_what[s], strerror(p->errnum[s]));
	sbuf_free(&why);
	sbuf_free(&fix);
}

/* root_e: unprivileged, how an overlay of / fared (errno, 0 ok, -1 not
 * tried), as `gpurun / CMD` or any directory image with other file systems
 * mounted under it would: what the user namespace inherited is locked to
 * it, and overlayfs takes no lower layer with locked mounts under it. */
static void say_mounts(struct checks *ck, const struct probe *p, const struct probe_opts *o, int root_e)
{
	enum step s = first_failure(p, S_USERNS, S_NS);
	if (s != S_COUNT) {
		check_say(ck, CHECK_FAIL, "namespaces", "%s failed: %s: a launch cannot start here", step_what[s],
			  strerror(p->errnum[s]));
		return;
	}
	int e = p->errnum[S_PROC];
	if (e == 0)
		check_say(ck, CHECK_OK, "/proc", "a fresh procfs mounts in a new pid namespace");
	else if (e == EPERM)
		check_say(ck, CHECK_FAIL, "/proc",
			  "a fresh procfs cannot be mounted (%s): this /proc has parts covered by other "
			  "mounts, as inside a container; run gpurun on the host, or give the outer "
			  "container an unmasked /proc (docker --security-opt systempaths=unconfined)",
			  strerror(e));
	else
		check_say(ck, CHECK_FAIL, "/proc", "a fresh procfs cannot be mounted: %s",
			  e > 0 ? strerror(e) : "not reached");

	e = p->errnum[S_TMPFS] > 0 ? p->errnum[S_TMPFS] : p->errnum[S_OVERLAY];
	const char *mode = o->userns ? " in a user namespace" : "";
	if (e == 0 && root_e > 0)
		check_say(ck, CHECK_WARN, "overlayfs",
			  "an overlay of %s with a tmpfs upper layer mounts%s, but one of / does not (%s): "
			  "unprivileged, a directory with other file systems mounted under it cannot be a "
			  "directory image here; archives and cached images can (gpurun smoke needs no image)",
			  o->lower ? o->lower : "a tmpfs directory", mode, strerror(root_e));
	else if (e == 0)
		check_say(ck, CHECK_OK, "overlayfs", "an overlay of %s with a tmpfs upper layer mounts%s",
			  o->lower ? o->lower : "a tmpfs directory", mode);
	else if (e < 0)
		check_say(ck, CHECK_FAIL, "overlayfs", "not reached");
	else if (p->errnum[S_TMPFS] > 0)
		check_say(ck, CHECK_FAIL, "overlayfs", "a tmpfs cannot be mounted%s: %s", mode, strerror(e));
	else if (o->lower && e == EINVAL)
		check_say(ck, CHECK_FAIL, "overlayfs",
			  "the cache %s cannot be an overlay's lower layer (%s; an overlay on an "
			  "overlay too deep, or a file system overlayfs refuses; the kernel log says "
			  "which): cached images will not launch; set GPURUN_CACHE to a local disk, "
			  "or use --no-cache",
			  o->lower, strerror(e));
	else
		check_say(ck, CHECK_FAIL, "overlayfs",
			  "an overlay with a tmpfs upper layer cannot be mounted%s (%s): directory and "
			  "cached images will not launch; this needs Linux >= 6.6%s, or use --no-cache "
			  "with archives",
			  mode, strerror(e), o->userns ? "" : " for a tmpfs upper layer");
}

int ns_doctor(struct checks *ck, const char *cache_dir, struct gerr *err)
{
	int root = geteuid() == 0;
	struct probe p;
	/* Can unprivileged users get a user namespace that mounts?  As root,
	 * asked as nobody, since root itself is never refused one. */
	struct probe_opts u = {.as_nobody = root, .userns = 1};
	if (run_probe(&u, &p, err) < 0)
		return -1;
	say_userns(ck, &p, root);

	/* The namespaces and first mounts of a launch, in this caller's mode.
	 * The overlay's lower is the cache when there is one, as for cached
	 * images: an overlay there is what breaks when nested too deep. */
	struct stat st;
	struct probe_opts l = {.userns = !root, .mounts = 1};
	if (cache_dir && stat(cache_dir, &st) == 0 && S_ISDIR(st.st_mode))
		l.lower = cache_dir;
	if (!root && first_failure(&p, S_USERNS, S_MAPS) != S_COUNT) {
		check_say(ck, CHECK_WARN, "/proc", "not checked: no user namespace");
		check_say(ck, CHECK_WARN, "overlayfs", "not checked: no user namespace");
		return 0;
	}
	if (run_probe(&l, &p, err) < 0)
		return -1;
	int root_e = -1;
	if (!root && p.errnum[S_OVERLAY] == 0) {
		struct probe r;
		struct probe_opts slash = {.userns = 1, .mounts = 1, .lower = "/"};
		if (run_probe(&slash, &r, err) < 0)
			return -1;
		root_e = r.errnum[S_OVERLAY];
	}
	say_mounts(ck, &p, &l, root_e);
	return 0;
}
