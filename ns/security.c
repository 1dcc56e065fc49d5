/* ns/security.c — what the command (and the image's ldconfig) gets before
 * exec: a reduced capability set (libcap-ng), no_new_privs, and a seccomp
 * deny-list modelled on docker's default profile, compiled by libseccomp at
 * build time (tools/seccomp_gen.c).
 *
 * Why these three: a root payload that kept CAP_MKNOD could re-create
 * /dev/nvidia1 and defeat --gpus 0; CAP_SYS_ADMIN would let it mount its way
 * out; keyrings, kexec, modules and bpf are not namespaced at all.
 *
 * Why a deny-list and not docker's allow-list: the filter is the third
 * wall, not the first.  What keeps the command in is the namespaces, the
 * dropped capabilities and no_new_privs; most of what docker's allow-list
 * leaves out also needs a capability we drop.  The filter is there for the
 * kernel surface that no capability guards (keyrings, userfaultfd, io_uring,
 * perf, bpf in some configurations, new user namespaces) and, once more, for
 * the mount and namespace calls.  The payloads are CUDA, MPI, NCCL and
 * profilers, whose system calls follow new kernels and glibc: an allow-list
 * turns each new call (clone3, faccessat2, rseq, ...) into a breakage that
 * docker has to answer with ENOSYS rules and a release.  The price: a call
 * added by a future kernel is allowed until it is listed
 * (tools/seccomp_gen.c), which is why tests/escape.bats names every
 * dangerous call and checks each one, through all three x86 ABIs (x86-64,
 * x32, i386's int 0x80), with this filter alone and inside a container.  That test found i386's old umount(2), which has no
 * x86-64 twin, missing from the list. */
#include "ns.h"

#include <cap-ng.h>
#include <errno.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

/* docker's default set minus CAP_MKNOD (GPU isolation depends on it). */
static const int keep_caps[] = {
	CAP_CHOWN,   CAP_DAC_OVERRIDE, CAP_FSETID,           CAP_FOWNER,     CAP_NET_RAW, CAP_SETGID,      CAP_SETUID,
	CAP_SETFCAP, CAP_SETPCAP,      CAP_NET_BIND_SERVICE, CAP_SYS_CHROOT, CAP_KILL,    CAP_AUDIT_WRITE,
};

/* Keep docker's set in the given capability sets (none: sets 0), and
 * CAP_SETUID alone where setuid (effective and permitted, for one
 * setresuid), nothing else anywhere; ambient caps would survive exec of a
 * non-root uid.  libcap-ng empties the bounding set before it sets the
 * others, while CAP_SETPCAP is still there. */
static int caps_apply(unsigned sets, int setuid, struct gerr *err)
{
	capng_clear(CAPNG_SELECT_BOTH);
	for (size_t i = 0; sets && i < COUNT_OF(keep_caps); i++)
		capng_update(CAPNG_ADD, sets, (unsigned)keep_caps[i]);
	if (setuid)
		capng_update(CAPNG_ADD, CAPNG_EFFECTIVE | CAPNG_PERMITTED, CAP_SETUID);
	int r = capng_apply(CAPNG_SELECT_BOTH);
	if (r < 0)
		return gerr_set(err, errno ? errno : EPERM, "drop capabilities (libcap-ng error %d)", r);
	if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0 && errno != EINVAL)
		return gerr_set(err, errno, "clear ambient capabilities");
	return 0;
}

void sec_describe_caps(struct sbuf *b)
{
	for (size_t i = 0; i < COUNT_OF(keep_caps); i++) {
		const char *name = capng_capability_to_name((unsigned)keep_caps[i]);
		if (name)
			sbuf_printf(b, ",+%s", name);
	}
}

int sec_drop_caps(int keep_root_caps, struct gerr *err)
{
	/* A non-root user keeps docker's bounding set but no live caps. */
	return caps_apply(keep_root_caps ? CAPNG_EFFECTIVE | CAPNG_PERMITTED | CAPNG_BOUNDING_SET : CAPNG_BOUNDING_SET,
			  0, err);
}

/* For what gpurun runs from the image before the command (its ldconfig):
 * nothing at all, not even a bounding set to exec into.  A switch away
 * from uid 0 clears the effective and permitted sets (no
 * SECBIT_KEEP_CAPS), which is checked rather than trusted. */
int sec_drop_all_caps(uid_t uid, struct gerr *err)
{
	if (caps_apply(0, uid != 0, err) < 0)
		return -1;
	if (!uid)
		return 0;
	if (setresuid(uid, uid, uid) < 0)
		return gerr_set(err, errno, "switch to uid %u", (unsigned)uid);
	/* CAPNG_SELECT_CAPS: capget(2).  The bounding set libcap-ng would read
	 * from /proc/<getpid()>/status, which in ldconfig's own pid namespace
	 * is the container's pid 1. */
	if (capng_get_caps_process() < 0 || capng_have_capabilities(CAPNG_SELECT_CAPS) != CAPNG_NONE)
		return gerr_set(err, EPERM, "capabilities left after the switch to uid %u", (unsigned)uid);
	return 0;
}

int sec_no_new_privs(struct gerr *err)
{
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		return gerr_set(err, errno, "prctl(PR_SET_NO_NEW_PRIVS)");
	return 0;
}

/* The deny-list itself (keyrings, kexec, modules, bpf, perf, userfaultfd,
 * io_uring, open_by_handle_at, every mount call, setns/unshare, clone's
 * namespace flags, clone3 as ENOSYS, the terminal ioctls TIOCSTI, TIOCLINUX,
 * TIOCSETD, TIOCCONS, TIOCVHANGUP and TIOCEXCL, ...) lives in
 * tools/seccomp_gen.c: libseccomp compiles it there, at build time, into
 * the BPF program below, so a launch pays one seccomp(2) instead of
 * libseccomp's rule trees (a quarter of a launch's user CPU). */
#include "seccomp_bpf.h"

static int load_program(const struct sock_filter *insns, size_t n, const char *what, struct gerr *err)
{
	struct sock_fprog prog = {.len = (unsigned short)n, .filter = (struct sock_filter *)insns};
	/* As seccomp_load() did: without CAP_SYS_ADMIN the kernel wants
	 * no_new_privs first, and the filter is never meant without it. */
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		return gerr_set(err, errno, "prctl(PR_SET_NO_NEW_PRIVS)");
	if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) < 0)
		return gerr_set(err, errno, "load %s", what);
	return 0;
}

int sec_seccomp(struct gerr *err)
{
	return load_program(seccomp_bpf, COUNT_OF(seccomp_bpf), "the seccomp filter", err);
}

/* The id calls a single-id user namespace cannot honour (setgroups, set*id,
 * chown to another id) answered with success, so that package managers run
 * (tools/seccomp_gen.c says why that withholds nothing).  A second filter
 * on top of the deny-list: the kernel runs both and the stricter answer
 * wins, and "errno 0" is stricter than "allow". */
int sec_seccomp_fake_ids(struct gerr *err)
{
	return load_program(seccomp_fake_ids_bpf, COUNT_OF(seccomp_fake_ids_bpf), "the seccomp filter of the id calls",
			    err);
}
