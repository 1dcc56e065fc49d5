/* tests/cve/cveprobe.c — the probes of tests/cve.bats that tests/probe.c
 * has no subcommand for: each replays one step of a published escape and
 * prints "SAFE name: why" when it was refused, "RISK name: what" when it
 * got through.  Built static by the suite (like the probe) and copied into
 * its images as /bin/cveprobe.
 *
 *   tiocsti | tiocsti-high  push one space into the terminal on fd 0-2 with
 *                           TIOCSTI, plainly or with bits above 32 set in
 *                           the command (CVE-2017-5226, CVE-2019-10063)
 *   naive-filter CMD...     run CMD under the seccomp filter flatpak had
 *                           before CVE-2019-10063: ioctl denied when its
 *                           whole 64-bit command equals TIOCSTI
 *   cgroup-mount DIR [NS]   mount the cgroup v1 freezer hierarchy on DIR (in
 *                           a new user and mount namespace with NS = userns)
 *                           and open its release_agent for writing, nothing
 *                           written (CVE-2022-0492)
 *   open-w PATH...          open each PATH for writing; nothing is written
 *   ldconfig-report OUT     write to OUT who runs it: pid, namespaces,
 *                           capabilities, and whether "/" is the image
 *                           (its marker /.cveprobe-image-root is there)
 *
 * Called as "ldconfig" (an image whose ldconfig is this probe), it writes
 * that report to /tmp/cve-ldconfig-report (CVE-2024-0136/0137). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

static const char *errname(int e)
{
	const char *n = strerrorname_np(e);
	return n ? n : "EUNKNOWN";
}

static int usage(void)
{
	fprintf(stderr, "usage: cveprobe SUBCOMMAND [ARG...]  (see tests/cve/cveprobe.c)\n");
	return 2;
}

/* TIOCSTI with the command as the kernel reads it (32 bits) or with a high
 * bit set, which the kernel drops and a filter comparing 64 bits does not. */
static int cmd_tiocsti(const char *name, unsigned long high)
{
	int fd = -1;
	for (int i = 0; i <= 2 && fd < 0; i++)
		if (isatty(i))
			fd = i;
	if (fd < 0) {
		printf("SAFE %s: no terminal on fd 0-2\n", name);
		return 0;
	}
	char c = ' ';
	long rc = syscall(SYS_ioctl, fd, (unsigned long)TIOCSTI | high, &c);
	if (rc == 0)
		printf("RISK %s: succeeded\n", name);
	else if (errno == EPERM || errno == EACCES)
		printf("SAFE %s: %s\n", name, errname(errno));
	else
		printf("RISK %s: not refused: %s\n", name, errname(errno));
	return 0;
}

static int cmd_naive_filter(char **argv)
{
	/* libseccomp's SCMP_CMP_EQ on an argument compares both halves:
	 * deny when the high half is 0 and the low half is TIOCSTI. */
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_ioctl, 0, 5),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[1]) + 4),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0, 0, 3),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[1])),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, TIOCSTI, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = {.len = sizeof f / sizeof f[0], .filter = f};
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 || prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) < 0) {
		fprintf(stderr, "cveprobe: naive-filter: %s\n", strerror(errno));
		return 1;
	}
	execvp(argv[0], argv);
	fprintf(stderr, "cveprobe: naive-filter: exec %s: %s\n", argv[0], strerror(errno));
	return 127;
}

static int write_file(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ssize_t n = write(fd, text, strlen(text));
	close(fd);
	return n == (ssize_t)strlen(text) ? 0 : -1;
}

static int cgroup_mount(const char *dir, int userns)
{
	uid_t uid = getuid();
	gid_t gid = getgid();
	if (userns) {
		/* CVE-2022-0492: what a container did to get CAP_SYS_ADMIN over a
		 * new mount namespace, then a cgroup v1 hierarchy of its own. */
		if (unshare(CLONE_NEWUSER | CLONE_NEWNS) < 0) {
			printf("SAFE cgroup-mount: unshare: %s\n", errname(errno));
			return 0;
		}
		char map[64];
		snprintf(map, sizeof map, "0 %u 1", uid);
		write_file("/proc/self/setgroups", "deny");
		write_file("/proc/self/uid_map", map);
		snprintf(map, sizeof map, "0 %u 1", gid);
		write_file("/proc/self/gid_map", map);
	}
	if (mount("cgroup", dir, "cgroup", MS_NOSUID | MS_NODEV | MS_NOEXEC, "freezer") < 0) {
		printf("SAFE cgroup-mount: mount: %s\n", errname(errno));
		return 0;
	}
	char path[4096];
	snprintf(path, sizeof path, "%s/release_agent", dir);
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd >= 0) {
		close(fd);
		printf("RISK cgroup-mount: opened release_agent for writing\n");
	} else {
		printf("RISK cgroup-mount: mounted (release_agent: %s)\n", errname(errno));
	}
	umount2(dir, MNT_DETACH);
	return 0;
}

static int cmd_open_w(int n, char **paths)
{
	for (int i = 0; i < n; i++) {
		int fd = open(paths[i], O_WRONLY | O_CLOEXEC | O_NONBLOCK);
		if (fd >= 0) {
			close(fd);
			printf("RISK open-w %s: opened for writing\n", paths[i]);
		} else {
			printf("SAFE open-w %s: %s\n", paths[i], errname(errno));
		}
	}
	return 0;
}

static void ns_line(FILE *f, const char *name)
{
	char path[64], target[128];
	snprintf(path, sizeof path, "/proc/self/ns/%s", name);
	ssize_t n = readlink(path, target, sizeof target - 1);
	target[n < 0 ? 0 : n] = '\0';
	fprintf(f, "ns %s\n", n < 0 ? errname(errno) : target);
}

static int cmd_report(const char *out)
{
	FILE *f = fopen(out, "we");
	if (!f) {
		fprintf(stderr, "cveprobe: %s: %s\n", out, strerror(errno));
		return 1;
	}
	fprintf(f, "pid %d\n", (int)getpid());
	ns_line(f, "mnt");
	ns_line(f, "pid");
	ns_line(f, "user");
	char line[256];
	FILE *st = fopen("/proc/self/status", "re");
	while (st && fgets(line, sizeof line, st))
		if (!strncmp(line, "CapEff:", 7))
			fprintf(f, "CapEff %s", line + 7 + strspn(line + 7, " \t"));
	if (st)
		fclose(st);
	fprintf(f, "root %s\n", access("/.cveprobe-image-root", F_OK) == 0 ? "image" : "not the image");
	return fclose(f) == 0 ? 0 : 1;
}

int main(int argc, char **argv)
{
	const char *base = strrchr(argv[0], '/');
	base = base ? base + 1 : argv[0];
	if (!strcmp(base, "ldconfig"))
		return cmd_report("/tmp/cve-ldconfig-report");
	if (argc < 2)
		return usage();
	const char *cmd = argv[1];
	if (!strcmp(cmd, "tiocsti"))
		return cmd_tiocsti("tiocsti", 0);
	if (!strcmp(cmd, "tiocsti-high"))
		return cmd_tiocsti("tiocsti-high", 1UL << 32);
	if (!strcmp(cmd, "naive-filter") && argc > 2)
		return cmd_naive_filter(argv + 2);
	if (!strcmp(cmd, "cgroup-mount") && argc > 2)
		return cgroup_mount(argv[2], argc > 3 && !strcmp(argv[3], "userns"));
	if (!strcmp(cmd, "open-w"))
		return cmd_open_w(argc - 2, argv + 2);
	if (!strcmp(cmd, "ldconfig-report") && argc > 2)
		return cmd_report(argv[2]);
	return usage();
}
