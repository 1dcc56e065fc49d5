/* tools/seccomp_gen.c — build time, not part of the launcher (hence a
 * directory of its own, which the library's wildcard does not take): compile
 * gpurun's seccomp programs with libseccomp and print them as C arrays of
 * BPF instructions (the build writes them to ns/seccomp_bpf.h, which
 * ns/security.c loads with one seccomp(2) each): the deny-list, and the
 * id calls that a single-id user namespace answers with success.
 *
 * Why at build time: libseccomp resolves ~60 names, builds its rule trees and
 * generates the program on every call, which was a quarter of a launch's
 * user CPU.  The program depends only on this list and on libseccomp's own
 * syscall tables, not on the running kernel, so compiling it once gives the
 * same bytes.  libseccomp stays the source of truth: the rules below are the
 * ones the launcher used to build at run time, and the jumps are its own.
 *
 *   seccomp_gen > ns/seccomp_bpf.h */
#include <errno.h>
#include <linux/filter.h>
#include <linux/sched.h>
#include <seccomp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#define COUNT_OF(a) (sizeof(a) / sizeof((a)[0]))

/* Syscalls denied with EPERM (docker's profile leaves them out of its
 * allow-list, or allows them only with capabilities we dropped). */
/* clang-format off */
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
/* clang-format on */

static int build(scmp_filter_ctx ctx)
{
	int r;
	/* Without the 32-bit ABIs in the filter, int 0x80 would bypass it. */
	r = seccomp_arch_add(ctx, SCMP_ARCH_X86);
	if (r < 0 && r != -EEXIST)
		return r;
	r = seccomp_arch_add(ctx, SCMP_ARCH_X32);
	if (r < 0 && r != -EEXIST)
		return r;
	for (size_t i = 0; i < COUNT_OF(denied); i++) {
		int nr = seccomp_syscall_resolve_name(denied[i]);
		if (nr == __NR_SCMP_ERROR)
			continue; /* not a syscall on this architecture */
		r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), nr, 0);
		if (r < 0 && r != -EEXIST)
			return r;
	}
	/* clone() may not create namespaces; clone3 hides its flags in a
	 * struct seccomp cannot read, so it reports ENOSYS and libc falls back
	 * to clone(), whose flags we can check. */
	r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(clone), 1,
			     SCMP_A0(SCMP_CMP_MASKED_EQ, CLONE_NEWUSER, CLONE_NEWUSER));
	if (r < 0)
		return r;
	static const unsigned long ns_flags[] = {CLONE_NEWNS,  CLONE_NEWUTS, CLONE_NEWIPC,
						 CLONE_NEWPID, CLONE_NEWNET, CLONE_NEWCGROUP};
	for (size_t i = 0; i < COUNT_OF(ns_flags); i++) {
		r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(clone), 1,
				     SCMP_A0(SCMP_CMP_MASKED_EQ, ns_flags[i], ns_flags[i]));
		if (r < 0)
			return r;
	}
	r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(clone3), 0);
	if (r < 0 && r != -EEXIST)
		return r;
	/* The terminal ioctls that act on the line or the session of a
	 * terminal the command may share with its caller: TIOCSTI and
	 * TIOCLINUX push keystrokes into it (CVE-2017-5226), TIOCSETD swaps its
	 * line discipline (N_NULL leaves the caller's shell with "write error",
	 * and it needs no capability), TIOCCONS takes the console's output,
	 * TIOCVHANGUP hangs it up and TIOCEXCL keeps everyone but root from
	 * opening it again (P0 also puts its flag back: ns/termkeep.c).  The
	 * command is 32-bit, so compare masked: high bits set were the bypass
	 * of CVE-2019-10063.  TIOCNXCL stays, it only lets others open the
	 * terminal again; so does TIOCSCTTY: it cannot take a terminal from
	 * another session without CAP_SYS_ADMIN, which the command does not
	 * have. */
	static const unsigned long tty_cmds[] = {TIOCSTI, TIOCLINUX, TIOCSETD, TIOCCONS, TIOCVHANGUP, TIOCEXCL};
	for (size_t i = 0; i < COUNT_OF(tty_cmds); i++) {
		r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(ioctl), 1,
				     SCMP_A1(SCMP_CMP_MASKED_EQ, 0xffffffffUL, (scmp_datum_t)tty_cmds[i]));
		if (r < 0)
			return r;
	}
	return 0;
}

/* Unprivileged, with one id mapped, no other uid or gid exists in the
 * container: setgroups(2) is denied, setuid(100) and chown to 100 give
 * EINVAL.  Package managers do both as root (apt drops to _apt with
 * setgroups/setgid/setuid before each download; dpkg chowns what it
 * unpacks), and fail.  These calls are answered with success and do
 * nothing, as Charliecloud's --seccomp does: there is no other id to switch
 * to or give a file to, so nothing is withheld from anyone.  SECCOMP_RET_ERRNO
 * with errno 0 is the kernel's way to say "return 0 without running it". */
static const char *const fake_ids[] = {
	"setuid",      "setgid",     "setreuid",   "setregid",    "setresuid",   "setresgid",  "setfsuid",
	"setfsgid",    "setgroups",  "chown",      "fchown",      "lchown",      "fchownat",   "setuid32",
	"setgid32",    "setreuid32", "setregid32", "setresuid32", "setresgid32", "setfsuid32", "setfsgid32",
	"setgroups32", "chown32",    "fchown32",   "lchown32",
};

static int build_fake_ids(scmp_filter_ctx ctx)
{
	int r = seccomp_arch_add(ctx, SCMP_ARCH_X86);
	if (r < 0 && r != -EEXIST)
		return r;
	r = seccomp_arch_add(ctx, SCMP_ARCH_X32);
	if (r < 0 && r != -EEXIST)
		return r;
	for (size_t i = 0; i < COUNT_OF(fake_ids); i++) {
		int nr = seccomp_syscall_resolve_name(fake_ids[i]);
		if (nr == __NR_SCMP_ERROR)
			continue;
		r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(0), nr, 0);
		if (r < 0 && r != -EEXIST)
			return r;
	}
	return 0;
}

/* Compile one program and print it as the C array NAME. */
static int print_program(const char *name, int (*rules)(scmp_filter_ctx))
{
	scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
	if (!ctx) {
		fprintf(stderr, "seccomp_gen: seccomp_init failed\n");
		return 1;
	}
	int r = rules(ctx);
	if (r < 0) {
		fprintf(stderr, "seccomp_gen: build %s: %s\n", name, strerror(-r));
		return 1;
	}
	/* seccomp_export_bpf writes to an fd: a memfd, read back below. */
	int fd = memfd_create("seccomp-bpf", MFD_CLOEXEC);
	if (fd < 0 || (r = seccomp_export_bpf(ctx, fd)) < 0) {
		fprintf(stderr, "seccomp_gen: export the filter: %s\n", strerror(fd < 0 ? errno : -r));
		return 1;
	}
	off_t len = lseek(fd, 0, SEEK_END);
	if (len <= 0 || len % (off_t)sizeof(struct sock_filter) != 0 || lseek(fd, 0, SEEK_SET) != 0) {
		fprintf(stderr, "seccomp_gen: the exported filter has a bad size (%lld bytes)\n", (long long)len);
		return 1;
	}
	size_t n = (size_t)len / sizeof(struct sock_filter);
	struct sock_filter *prog = calloc(n, sizeof *prog);
	if (!prog || read(fd, prog, (size_t)len) != (ssize_t)len) {
		fprintf(stderr, "seccomp_gen: read the exported filter back\n");
		return 1;
	}
	printf("static const struct sock_filter %s[%zu] = {\n", name, n);
	for (size_t i = 0; i < n; i++)
		printf("\t{0x%04x, %3u, %3u, 0x%08x},\n", prog[i].code, prog[i].jt, prog[i].jf, prog[i].k);
	printf("};\n");
	free(prog);
	close(fd);
	seccomp_release(ctx);
	return 0;
}

int main(void)
{
	printf("/* ns/seccomp_bpf.h — generated by tools/seccomp_gen.c with libseccomp %u.%u.%u\n"
	       " * for the build machine's architecture (0x%08x) and its 32-bit ABIs.  Do not edit. */\n",
	       seccomp_version()->major, seccomp_version()->minor, seccomp_version()->micro, seccomp_arch_native());
	if (print_program("seccomp_bpf", build) || print_program("seccomp_fake_ids_bpf", build_fake_ids))
		return 1;
	return fflush(stdout) == 0 ? 0 : 1;
}
