/* ns/security.c — what the command (and the image's ldconfig) gets before
 * exec: a reduced capability set (libcap-ng), no_new_privs, and a seccomp
 * deny-list (libseccomp) modelled on docker's default profile.
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
 * added by a future kernel is allowed until it is listed here, which is why
 * tests/escape.bats names every dangerous call and checks each one, through
 * all three x86 ABIs (x86-64, x32, i386's int 0x80), with this filter alone
 * and inside a container.  That test found i386's old umount(2), which has no
 * x86-64 twin, missing from the list. */
#include "ns.h"

#include <cap-ng.h>
#include <errno.h>
#include <linux/sched.h>
#include <seccomp.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>

/* docker's default set minus CAP_MKNOD (GPU isolation depends on it). */
static const int keep_caps[] = {
	CAP_CHOWN,  CAP_DAC_OVERRIDE, CAP_FSETID,  CAP_FOWNER,	 CAP_NET_RAW,
	CAP_SETGID, CAP_SETUID,	      CAP_SETFCAP, CAP_SETPCAP,	 CAP_NET_BIND_SERVICE,
	CAP_SYS_CHROOT, CAP_KILL,     CAP_AUDIT_WRITE,
};

/* Keep docker's set in the given capability sets (none: sets 0), nothing
 * else anywhere; ambient caps would survive exec of a non-root uid. */
static int caps_apply(unsigned sets, struct gerr *err)
{
	capng_clear(CAPNG_SELECT_BOTH);
	for (size_t i = 0; sets && i < COUNT_OF(keep_caps); i++)
		capng_update(CAPNG_ADD, sets, (unsigned)keep_caps[i]);
	int r = capng_apply(CAPNG_SELECT_BOTH);
	if (r < 0)
		return gerr_set(err, errno ? errno : EPERM, "drop capabilities (libcap-ng error %d)", r);
	if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0 && errno != EINVAL)
		return gerr_set(err, errno, "clear ambient capabilities");
	return 0;
}

int sec_drop_caps(int keep_root_caps, struct gerr *err)
{
	/* A non-root user keeps docker's bounding set but no live caps. */
	return caps_apply(keep_root_caps ? CAPNG_EFFECTIVE | CAPNG_PERMITTED | CAPNG_BOUNDING_SET
					 : CAPNG_BOUNDING_SET,
			  err);
}

/* For what gpurun runs from the image before the command (its ldconfig):
 * nothing at all, not even a bounding set to exec into.  Root in the
 * container still owns the image's /etc, which is all ldconfig writes. */
int sec_drop_all_caps(struct gerr *err)
{
	return caps_apply(0, err);
}

int sec_no_new_privs(struct gerr *err)
{
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		return gerr_set(err, errno, "prctl(PR_SET_NO_NEW_PRIVS)");
	return 0;
}

/* Syscalls denied with EPERM (docker's profile leaves them out of its
 * allow-list, or allows them only with capabilities we dropped). */
static const char *const denied[] = {
	"add_key", "request_key", "keyctl",			  /* keyrings are not namespaced */
	"kexec_load", "kexec_file_load", "reboot",		  /* the host kernel */
	"init_module", "finit_module", "delete_module",		  /* kernel modules */
	"bpf", "perf_event_open", "userfaultfd",		  /* exploit primitives */
	"io_uring_setup", "io_uring_enter", "io_uring_register", /* repeated kernel bugs */
	"open_by_handle_at", "name_to_handle_at",		  /* the 2014 "shocker" escape */
	"mount", "umount", "umount2", "pivot_root", "move_mount", "open_tree", "fsopen",
	"fsconfig", "fsmount", "fspick", "mount_setattr",	  /* mount escapes */
	"setns", "unshare",					  /* new namespaces */
	"swapon", "swapoff", "acct", "quotactl", "quotactl_fd", "lookup_dcookie",
	"settimeofday", "clock_settime", "clock_adjtime", "adjtimex", "stime",
	"iopl", "ioperm", "syslog", "uselib", "nfsservctl", "vm86", "vm86old",
	"get_kernel_syms", "query_module", "create_module", "ustat", "sysfs", "_sysctl",
};

int sec_seccomp(struct gerr *err)
{
	scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
	int r;
	if (!ctx)
		return gerr_set(err, ENOMEM, "seccomp_init");
	/* Without the 32-bit ABIs in the filter, int 0x80 would bypass it. */
	r = seccomp_arch_add(ctx, SCMP_ARCH_X86);
	if (r < 0 && r != -EEXIST)
		goto fail;
	r = seccomp_arch_add(ctx, SCMP_ARCH_X32);
	if (r < 0 && r != -EEXIST)
		goto fail;
	for (size_t i = 0; i < COUNT_OF(denied); i++) {
		int nr = seccomp_syscall_resolve_name(denied[i]);
		if (nr == __NR_SCMP_ERROR)
			continue; /* not a syscall on this architecture */
		r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), nr, 0);
		if (r < 0 && r != -EEXIST)
			goto fail;
	}
	/* clone() may not create namespaces; clone3 hides its flags in a
	 * struct seccomp cannot read, so it reports ENOSYS and libc falls back
	 * to clone(), whose flags we can check. */
	r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(clone), 1,
			     SCMP_A0(SCMP_CMP_MASKED_EQ, CLONE_NEWUSER, CLONE_NEWUSER));
	if (r < 0)
		goto fail;
	static const unsigned long ns_flags[] = {CLONE_NEWNS,  CLONE_NEWUTS, CLONE_NEWIPC,
						 CLONE_NEWPID, CLONE_NEWNET, CLONE_NEWCGROUP};
	for (size_t i = 0; i < COUNT_OF(ns_flags); i++) {
		r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(clone), 1,
				     SCMP_A0(SCMP_CMP_MASKED_EQ, ns_flags[i], ns_flags[i]));
		if (r < 0)
			goto fail;
	}
	r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(clone3), 0);
	if (r < 0 && r != -EEXIST)
		goto fail;
	/* TIOCSTI/TIOCLINUX push keystrokes into a shared terminal
	 * (CVE-2017-5226); the command is 32-bit, so compare masked. */
	r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(ioctl), 1,
			     SCMP_A1(SCMP_CMP_MASKED_EQ, 0xffffffffUL, (scmp_datum_t)TIOCSTI));
	if (r < 0)
		goto fail;
	r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(ioctl), 1,
			     SCMP_A1(SCMP_CMP_MASKED_EQ, 0xffffffffUL, (scmp_datum_t)TIOCLINUX));
	if (r < 0)
		goto fail;
	r = seccomp_load(ctx);
	if (r < 0)
		goto fail;
	seccomp_release(ctx);
	return 0;
fail:
	seccomp_release(ctx);
	return gerr_set(err, -r, "load the seccomp filter");
}
