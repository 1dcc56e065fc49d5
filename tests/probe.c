/* tests/probe.c — a static multi-call probe for the bats suites, in the
 * spirit of crun's test `init`: the tests ask it what the container looks
 * like from inside instead of relying on what an image happens to contain.
 *
 * Built by tests/lib/images.bash (gcc -static) and installed as /bin/probe in
 * every test image.  Each subcommand prints one result line (fds, ns and the
 * escape probes print one line per item) and exits 0, unless noted.  Failed
 * attempts print the errno *name* (EPERM), which is what tests assert.
 *
 *   pid | ppid | cwd | ids | caps | nnp | seccomp
 *   has-cap NAME            "CAP_SYS_ADMIN eff=no bnd=no"
 *   mknod PATH              try mknod c 1:3: "mknod: ok" | "mknod: EPERM"
 *   mount [DIR]             try a tmpfs mount on DIR (/mnt): "mount: EPERM"
 *   syscall NAME            try a privileged syscall with harmless arguments
 *   open PATH | write PATH  try to read / create-and-write PATH
 *   setgroups | chroot-escape   escape probes: SAFE/RISK lines
 *   fds                     "N -> target" for each open fd
 *   isatty N                "yes" | "no"
 *   orphans N               leave N grandchildren to be reparented, wait
 *                           until each has exited (zombie or reaped)
 *   zombies [MS]            "zombies: N", polling up to MS ms for N to be 0
 *   wait-signal [SECS]      "ready", then "got SIGXXX" when a signal arrives
 *   kill-self SIG | exit N
 *   env KEY                 the value; "KEY is unset" and exit 1 if unset
 *   stat PATH               "type=chr mode=0666 rdev=1:3 uid=0 gid=0"
 *   mountinfo-has PATH      "PATH opts=... fstype=... super=..." of the
 *                           topmost mount at PATH; exit 1 if none
 *   ns [NAME]               "NAME NAME:[inode]" for /proc/self/ns/NAME
 *   escape [NAME...]        the escape probes (default: all), one line
 *                           each: "SAFE name: why" | "RISK name: what"
 *   abi-syscall ABI NAME... a dangerous call through x86-64, x32 or i386:
 *                           "NAME ABI: EPERM" (or the errno, or "ok")
 *   privs                   "EUID CAPEFF" (what a setuid copy reports)
 *   ldisc [N]               set the line discipline of the terminal on fd 0
 *                           to N and leave it (a payload), then print it:
 *                           "ldisc: 0"; "ldisc N: EPERM" and exit 1 if refused
 *   tty-payload [hold]      leave the terminal on fd 0 exclusive, with IXON,
 *                           ECHO and ICANON off, O_NONBLOCK on its open file
 *                           and its output stopped (a payload); prints one
 *                           line first, "tty-payload: TIOCEXCL EPERM, ..."
 *                           ("ok" when it got through); hold: then wait to
 *                           be killed
 *
 * Called as "ldconfig" (an image whose ldconfig is this probe), it writes
 * what it was run with, and every escape probe, to /tmp/ldconfig-report.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <sched.h>
#include <linux/capability.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

static const char *errname(int e)
{
	const char *n = strerrorname_np(e);
	return n ? n : "EUNKNOWN";
}

static int usage(void)
{
	fprintf(stderr, "usage: probe SUBCOMMAND [ARG]  (see tests/probe.c)\n");
	return 2;
}

static void sleep_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

static long now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000L + ts.tv_nsec / 1000000L;
}

/* The value of a "Key:\tvalue" line of /proc/self/status, or NULL. */
static char *status_field(const char *key, char *buf, size_t len)
{
	FILE *f = fopen("/proc/self/status", "re");
	size_t klen = strlen(key);
	char line[512];
	char *ret = NULL;

	if (!f)
		return NULL;
	while (fgets(line, sizeof line, f)) {
		if (strncmp(line, key, klen) == 0 && line[klen] == ':') {
			char *v = line + klen + 1;
			v += strspn(v, " \t");
			v[strcspn(v, "\n")] = '\0';
			snprintf(buf, len, "%s", v);
			ret = buf;
			break;
		}
	}
	fclose(f);
	return ret;
}

static unsigned long long cap_mask(const char *key)
{
	char buf[64];
	return status_field(key, buf, sizeof buf) ? strtoull(buf, NULL, 16) : 0;
}

/* clang-format off */
static const char *cap_names[] = {
	"CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_DAC_READ_SEARCH", "CAP_FOWNER", "CAP_FSETID",
	"CAP_KILL", "CAP_SETGID", "CAP_SETUID", "CAP_SETPCAP", "CAP_LINUX_IMMUTABLE",
	"CAP_NET_BIND_SERVICE", "CAP_NET_BROADCAST", "CAP_NET_ADMIN", "CAP_NET_RAW",
	"CAP_IPC_LOCK", "CAP_IPC_OWNER", "CAP_SYS_MODULE", "CAP_SYS_RAWIO", "CAP_SYS_CHROOT",
	"CAP_SYS_PTRACE", "CAP_SYS_PACCT", "CAP_SYS_ADMIN", "CAP_SYS_BOOT", "CAP_SYS_NICE",
	"CAP_SYS_RESOURCE", "CAP_SYS_TIME", "CAP_SYS_TTY_CONFIG", "CAP_MKNOD", "CAP_LEASE",
	"CAP_AUDIT_WRITE", "CAP_AUDIT_CONTROL", "CAP_SETFCAP", "CAP_MAC_OVERRIDE",
	"CAP_MAC_ADMIN", "CAP_SYSLOG", "CAP_WAKE_ALARM", "CAP_BLOCK_SUSPEND", "CAP_AUDIT_READ",
	"CAP_PERFMON", "CAP_BPF", "CAP_CHECKPOINT_RESTORE",
};
/* clang-format on */

static int cmd_has_cap(const char *name)
{
	for (size_t i = 0; i < sizeof cap_names / sizeof cap_names[0]; i++) {
		if (strcasecmp(name, cap_names[i]) == 0 || strcasecmp(name, cap_names[i] + 4) == 0) {
			unsigned long long bit = 1ULL << i;
			printf("%s eff=%s bnd=%s\n", cap_names[i], cap_mask("CapEff") & bit ? "yes" : "no",
			       cap_mask("CapBnd") & bit ? "yes" : "no");
			return 0;
		}
	}
	fprintf(stderr, "probe: unknown capability %s\n", name);
	return 2;
}

static int cmd_ids(void)
{
	gid_t groups[256];
	int n = getgroups(256, groups);

	printf("uid=%u gid=%u euid=%u egid=%u groups=", getuid(), getgid(), geteuid(), getegid());
	for (int i = 0; i < n; i++)
		printf("%s%u", i ? "," : "", groups[i]);
	printf("\n");
	return 0;
}

static void report(const char *what, long rc)
{
	if (rc < 0)
		printf("%s: %s\n", what, errname(errno));
	else
		printf("%s: ok\n", what);
}

/* Each call is made so that, if the filter and the capabilities let it
 * through, it still changes nothing: invalid flags, missing files, a bogus
 * handle.  Only the errno tells whether the kernel looked at the arguments
 * (EINVAL, ENOENT, ...) or refused the call itself (EPERM). */
static int cmd_syscall(const char *name)
{
	long rc;
	int fd;

	errno = 0;
	if (!strcmp(name, "keyctl")) {
		rc = syscall(SYS_keyctl, 0 /* KEYCTL_GET_KEYRING_ID */, -3 /* session */, 0);
	} else if (!strcmp(name, "add_key")) {
		rc = syscall(SYS_add_key, "user", "gpurun-probe", "x", 1, -2 /* process keyring */);
	} else if (!strcmp(name, "request_key")) {
		rc = syscall(SYS_request_key, "user", "gpurun-probe-none", NULL, 0);
	} else if (!strcmp(name, "kexec_load")) {
		/* An unknown architecture in the flags: EINVAL once permitted. */
		rc = syscall(SYS_kexec_load, 0UL, 0UL, NULL, 0xdead0000UL);
	} else if (!strcmp(name, "kexec_file_load")) {
		rc = syscall(SYS_kexec_file_load, -1, -1, 0UL, "", 0xdead0000UL);
	} else if (!strcmp(name, "open_by_handle_at")) {
		struct {
			unsigned int bytes;
			int type;
			unsigned char h[8];
		} handle = {0, 0, {0}};
		fd = open("/", O_RDONLY | O_DIRECTORY);
		rc = syscall(SYS_open_by_handle_at, fd, &handle, O_RDONLY);
		if (rc >= 0)
			close((int)rc);
	} else if (!strcmp(name, "init_module")) {
		rc = syscall(SYS_init_module, NULL, 0UL, "");
	} else if (!strcmp(name, "finit_module")) {
		rc = syscall(SYS_finit_module, -1, "", 0);
	} else if (!strcmp(name, "delete_module")) {
		rc = syscall(SYS_delete_module, "gpurun_probe_no_such_module", O_NONBLOCK);
	} else if (!strcmp(name, "bpf")) {
		rc = syscall(SYS_bpf, 0xffff /* no such command */, NULL, 0);
	} else if (!strcmp(name, "unshare")) {
		rc = unshare(0x10000000 /* CLONE_NEWUSER */);
	} else if (!strcmp(name, "ptrace")) {
		rc = ptrace(PTRACE_PEEKDATA, 1, NULL, NULL);
		if (errno == 0)
			rc = 0;
	} else if (!strcmp(name, "perf_event_open")) {
		rc = syscall(SYS_perf_event_open, NULL, 0, -1, -1, 0);
	} else if (!strcmp(name, "userfaultfd")) {
		rc = syscall(SYS_userfaultfd, 0);
		if (rc >= 0)
			close((int)rc);
	} else if (!strcmp(name, "reboot")) {
		rc = syscall(SYS_reboot, 0, 0, 0, NULL); /* wrong magic: EINVAL once permitted */
	} else if (!strcmp(name, "swapon")) {
		rc = syscall(SYS_swapon, "/nonexistent-gpurun-probe", 0);
	} else if (!strcmp(name, "mount")) {
		rc = mount("none", "/nonexistent-gpurun-probe", "tmpfs", 0, NULL);
	} else if (!strcmp(name, "setns")) {
		rc = setns(-1, 0);
	} else {
		fprintf(stderr, "probe: unknown syscall %s\n", name);
		return 2;
	}
	report(name, rc);
	return 0;
}

static int cmd_mknod(const char *path)
{
	long rc = mknod(path, S_IFCHR | 0666, makedev(1, 3));
	report("mknod", rc);
	if (rc == 0)
		unlink(path);
	return 0;
}

static int cmd_mount(const char *dir)
{
	long rc = mount("none", dir, "tmpfs", 0, NULL);
	report("mount", rc);
	if (rc == 0)
		umount(dir);
	return 0;
}

static int cmd_open(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	report("open", fd);
	if (fd >= 0) {
		char c;
		report("read", read(fd, &c, 1));
		close(fd);
	}
	return 0;
}

static int cmd_write(const char *path)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0) {
		report("write", -1);
		return 0;
	}
	report("write", write(fd, "probe\n", 6));
	close(fd);
	return 0;
}

/* Judged by what it did: an unprivileged container answers setgroups with
 * success and changes nothing (ns/security.c), which is SAFE too. */
static int cmd_setgroups(void)
{
	gid_t g = 0, before[256], after[256];
	int nb = getgroups(256, before);
	int rc = setgroups(1, &g);
	int e = errno;
	int na = getgroups(256, after);
	int changed = rc == 0 && (na != nb || (na > 0 && memcmp(before, after, (size_t)na * sizeof *after)));
	if (rc == 0 && !changed)
		printf("SAFE setgroups: ok, but nothing changed\n");
	else
		printf("%s setgroups: %s\n", rc == 0 && geteuid() != 0 ? "RISK" : "SAFE", rc == 0 ? "ok" : errname(e));
	return 0;
}

/* The classic chroot escape: chroot into a subdirectory while keeping the
 * cwd outside it, then walk up.  Inside a pivoted container the walk must
 * stop at the container's own root. */
static int cmd_chroot_escape(void)
{
	struct stat before, after;
	char dir[] = "/tmp/probe-chroot.XXXXXX";
	int rootfd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	int same;

	if (rootfd < 0 || stat("/", &before) < 0 || !mkdtemp(dir)) {
		printf("chroot-escape: setup: %s\n", errname(errno));
		return 1;
	}
	if (chroot(dir) < 0) {
		printf("SAFE chroot-escape: chroot: %s\n", errname(errno));
	} else {
		for (int i = 0; i < 64; i++)
			if (chdir("..") < 0)
				break;
		if (chroot(".") < 0) {
			printf("SAFE chroot-escape: second chroot: %s\n", errname(errno));
		} else {
			stat("/", &after);
			same = before.st_dev == after.st_dev && before.st_ino == after.st_ino;
			printf("%s chroot-escape: / is %s\n", same ? "SAFE" : "RISK",
			       same ? "the container root" : "outside the container root");
		}
	}
	unlinkat(rootfd, dir + 1, AT_REMOVEDIR);
	return 0;
}

static int cmd_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;

	if (!d) {
		printf("fds: %s\n", errname(errno));
		return 1;
	}
	while ((e = readdir(d))) {
		char path[300], target[4096];
		ssize_t n;

		if (e->d_name[0] == '.' || atoi(e->d_name) == dirfd(d))
			continue;
		snprintf(path, sizeof path, "/proc/self/fd/%s", e->d_name);
		n = readlink(path, target, sizeof target - 1);
		target[n < 0 ? 0 : n] = '\0';
		printf("%s -> %s\n", e->d_name, target);
	}
	closedir(d);
	return 0;
}

/* Is pid gone or a zombie? */
static int dead(pid_t pid)
{
	char path[64], buf[512];
	snprintf(path, sizeof path, "/proc/%d/stat", pid);
	FILE *f = fopen(path, "re");
	if (!f)
		return 1;
	size_t n = fread(buf, 1, sizeof buf - 1, f);
	fclose(f);
	buf[n] = '\0';
	char *p = strrchr(buf, ')');
	return !p || p[1] == '\0' || p[2] == 'Z' || p[2] == 'X';
}

static int cmd_orphans(int n)
{
	int fds[2];
	pid_t child, kids[64];
	int got = 0;

	if (n < 1 || n > 64 || pipe(fds) < 0)
		return usage();
	child = fork();
	if (child == 0) {
		pid_t me = getpid();
		close(fds[0]);
		for (int i = 0; i < n; i++) {
			pid_t g = fork();
			if (g == 0) {
				/* Outlive the parent: exit only once reparented. */
				long deadline = now_ms() + 10000;
				while (getppid() == me && now_ms() < deadline)
					sleep_ms(1);
				_exit(0);
			}
			if (g > 0 && write(fds[1], &g, sizeof g) != sizeof g)
				_exit(1);
		}
		_exit(0);
	}
	close(fds[1]);
	waitpid(child, NULL, 0);
	while (got < n && read(fds[0], &kids[got], sizeof kids[0]) == sizeof kids[0])
		got++;
	close(fds[0]);
	long deadline = now_ms() + 10000;
	for (int i = 0; i < got; i++)
		while (!dead(kids[i]) && now_ms() < deadline)
			sleep_ms(1);
	printf("orphans: %d\n", got);
	return got == n ? 0 : 1;
}

static int count_zombies(void)
{
	DIR *d = opendir("/proc");
	struct dirent *e;
	int z = 0;

	if (!d)
		return -1;
	while ((e = readdir(d))) {
		pid_t pid = atoi(e->d_name);
		if (pid > 0 && pid != getpid()) {
			char path[64], buf[512];
			snprintf(path, sizeof path, "/proc/%d/stat", pid);
			FILE *f = fopen(path, "re");
			if (!f)
				continue;
			size_t len = fread(buf, 1, sizeof buf - 1, f);
			fclose(f);
			buf[len] = '\0';
			char *p = strrchr(buf, ')');
			if (p && p[1] && p[2] == 'Z')
				z++;
		}
	}
	closedir(d);
	return z;
}

static int cmd_zombies(long wait_ms)
{
	long deadline = now_ms() + wait_ms;
	int z;
	while ((z = count_zombies()) > 0 && now_ms() < deadline)
		sleep_ms(10);
	printf("zombies: %d\n", z);
	return 0;
}

static int parse_signal(const char *s)
{
	if (s[0] >= '0' && s[0] <= '9')
		return atoi(s);
	if (strncasecmp(s, "SIG", 3) == 0)
		s += 3;
	for (int sig = 1; sig < NSIG; sig++) {
		const char *n = sigabbrev_np(sig);
		if (n && strcasecmp(n, s) == 0)
			return sig;
	}
	return -1;
}

static volatile sig_atomic_t caught;
static void on_signal(int sig)
{
	caught = sig;
}

static int cmd_wait_signal(int secs)
{
	static const int sigs[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2};
	struct sigaction sa;
	sigset_t block, old;

	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_signal;
	sigemptyset(&block);
	for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++) {
		sigaction(sigs[i], &sa, NULL);
		sigaddset(&block, sigs[i]);
	}
	sigprocmask(SIG_BLOCK, &block, &old);
	sigdelset(&old, SIGALRM);
	for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++)
		sigdelset(&old, sigs[i]);
	alarm(secs); /* a lost signal must not hang the test suite */
	printf("ready\n");
	fflush(stdout);
	while (!caught)
		sigsuspend(&old);
	printf("got SIG%s\n", sigabbrev_np(caught));
	return 0;
}

static int cmd_kill_self(const char *name)
{
	int sig = parse_signal(name);
	sigset_t all;

	if (sig <= 0)
		return usage();
	signal(sig, SIG_DFL);
	sigemptyset(&all);
	sigaddset(&all, sig);
	sigprocmask(SIG_UNBLOCK, &all, NULL);
	fflush(stdout);
	raise(sig);
	printf("kill-self: survived SIG%s\n", sigabbrev_np(sig));
	return 1;
}

static int cmd_stat(const char *path)
{
	struct stat st;
	const char *type;

	if (lstat(path, &st) < 0) {
		printf("stat: %s\n", errname(errno));
		return 1;
	}
	switch (st.st_mode & S_IFMT) {
	case S_IFREG: type = "reg"; break;
	case S_IFDIR: type = "dir"; break;
	case S_IFLNK: type = "lnk"; break;
	case S_IFCHR: type = "chr"; break;
	case S_IFBLK: type = "blk"; break;
	case S_IFIFO: type = "fifo"; break;
	case S_IFSOCK: type = "sock"; break;
	default: type = "unknown";
	}
	printf("type=%s mode=%04o rdev=%u:%u uid=%u gid=%u\n", type, st.st_mode & 07777, major(st.st_rdev),
	       minor(st.st_rdev), st.st_uid, st.st_gid);
	return 0;
}

static int cmd_mountinfo_has(const char *path)
{
	FILE *f = fopen("/proc/self/mountinfo", "re");
	char line[4096], found[4096] = "";

	if (!f) {
		printf("mountinfo: %s\n", errname(errno));
		return 1;
	}
	/* id parent maj:min root mountpoint opts [optional...] - fstype source super */
	while (fgets(line, sizeof line, f)) {
		char root[1024], mnt[1024], opts[1024], fstype[256], src[1024], super[1024];
		char *dash = strstr(line, " - ");
		if (!dash || sscanf(line, "%*s %*s %*s %1023s %1023s %1023s", root, mnt, opts) != 3 ||
		    sscanf(dash + 3, "%255s %1023s %1023s", fstype, src, super) != 3)
			continue;
		if (strcmp(mnt, path) == 0) /* the last one listed is on top */
			snprintf(found, sizeof found, "%s opts=%s fstype=%s super=%s", mnt, opts, fstype, super);
	}
	fclose(f);
	if (!found[0]) {
		printf("%s: not a mount point\n", path);
		return 1;
	}
	printf("%s\n", found);
	return 0;
}

static int print_ns(const char *name)
{
	char path[64], target[256];
	ssize_t n;

	snprintf(path, sizeof path, "/proc/self/ns/%s", name);
	n = readlink(path, target, sizeof target - 1);
	if (n < 0) {
		printf("%s %s\n", name, errname(errno));
		return 1;
	}
	target[n] = '\0';
	printf("%s %s\n", name, target);
	return 0;
}

static int cmd_ns(const char *name)
{
	static const char *all[] = {"cgroup", "ipc", "mnt", "net", "pid", "time", "user", "uts"};
	if (name)
		return print_ns(name);
	for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
		print_ns(all[i]);
	return 0;
}

/* ---- escape probes: `probe escape [NAME...]` ------------------------------
 *
 * One line per probe, "SAFE name: why" or "RISK name: what got through".
 * Every probe is harmless when it succeeds: mounts go on a private temporary
 * directory and are undone, files are opened and closed without a byte
 * written, pid 1 is attached and detached at once, devices are made in a
 * temporary directory and removed.  A probe of a system call counts as SAFE
 * only when the call is refused for permission (EPERM/EACCES): its
 * arguments are chosen so that the kernel, once it lets the call through,
 * fails it for another reason (EFAULT, EINVAL, EBADF) or does nothing, so
 * any other answer, ENOSYS included, says the protection under test did not
 * answer.
 *
 * Careful on a host: umount and remount-rw act on the caller's own mount
 * namespace.  Inside gpurun that is the container's; outside, run them only
 * under `unshare -m --propagation private` (tests/escape.bats does). */

static void verdict(int risk, const char *name, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void verdict(int risk, const char *name, const char *fmt, ...)
{
	va_list ap;
	printf("%s %s: ", risk ? "RISK" : "SAFE", name);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
}

static int denied(int e)
{
	return e == EPERM || e == EACCES;
}

/* A system call made for its verdict: SAFE when refused for permission. */
static void call_verdict(const char *name, long rc, int e)
{
	if (rc < 0 && denied(e))
		verdict(0, name, "%s", errname(e));
	else if (rc < 0)
		verdict(1, name, "not refused: %s", errname(e));
	else
		verdict(1, name, "succeeded");
}

/* A private, empty directory for a probe to work in; "" on failure. */
static int scratch_dir(char *dir, size_t len)
{
	const char *bases[] = {"/tmp", "/var/tmp", "/dev/shm", "/run"};
	for (size_t i = 0; i < sizeof bases / sizeof bases[0]; i++) {
		snprintf(dir, len, "%s/probe-escape.XXXXXX", bases[i]);
		if (mkdtemp(dir))
			return 0;
	}
	return -1;
}

static void esc_mknod(const char *name, unsigned maj, unsigned min)
{
	char dir[64], path[96];
	if (scratch_dir(dir, sizeof dir) < 0) {
		verdict(0, name, "no writable directory to try in (%s)", errname(errno));
		return;
	}
	snprintf(path, sizeof path, "%s/node", dir);
	if (mknod(path, S_IFCHR | 0600, makedev(maj, min)) == 0) {
		verdict(1, name, "made the character device %u:%u", maj, min);
		unlink(path);
	} else {
		verdict(!denied(errno), name, "%s", errname(errno));
	}
	rmdir(dir);
}

static void esc_mount(const char *name)
{
	char dir[64];
	if (scratch_dir(dir, sizeof dir) < 0) {
		verdict(0, name, "no writable directory to try in (%s)", errname(errno));
		return;
	}
	if (mount("none", dir, "tmpfs", 0, "size=4k") == 0) {
		verdict(1, name, "mounted a tmpfs on %s", dir);
		umount2(dir, MNT_DETACH);
	} else {
		verdict(!denied(errno), name, "%s", errname(errno));
	}
	rmdir(dir);
}

/* The paths gpurun masks or binds read-only: unmounting one (or making it
 * writable again) would reach the host's kernel knobs or another GPU. */
static const char *const guarded_paths[] = {
	"/proc/driver/nvidia", "/proc/sys", "/proc/sysrq-trigger", "/proc/irq", "/proc/bus", "/proc/fs", "/sys",
};

static void esc_umount(const char *path)
{
	char name[128];
	snprintf(name, sizeof name, "umount:%s", path);
	if (umount2(path, MNT_DETACH) == 0)
		verdict(1, name, "unmounted");
	else if (errno == ENOENT)
		verdict(0, name, "ENOENT (nothing there)");
	else
		call_verdict(name, -1, errno);
}

static void esc_remount(const char *path)
{
	char name[128];
	struct stat st;
	snprintf(name, sizeof name, "remount-rw:%s", path);
	if (stat(path, &st) < 0) {
		verdict(0, name, "%s (nothing there)", errname(errno));
		return;
	}
	/* A bind remount without MS_RDONLY would clear the read-only flag. */
	if (mount(NULL, path, NULL, MS_REMOUNT | MS_BIND, NULL) == 0)
		verdict(1, name, "made writable");
	else
		call_verdict(name, -1, errno);
}

static void esc_pivot_root(void)
{
	char dir[64];
	if (scratch_dir(dir, sizeof dir) < 0) {
		verdict(0, "pivot_root", "no writable directory to try in (%s)", errname(errno));
		return;
	}
	/* Not a mount point: EINVAL once the call is permitted, never a pivot. */
	long rc = syscall(SYS_pivot_root, dir, dir);
	call_verdict("pivot_root", rc, errno);
	rmdir(dir);
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

/* In the child: map ourselves to root of the new user namespace, mount a
 * tmpfs on dir.  The exit status is the errno (0: mounted). */
static int userns_child_mount(const char *dir, uid_t uid, gid_t gid)
{
	char map[64];
	snprintf(map, sizeof map, "0 %u 1\n", (unsigned)uid);
	if (write_file("/proc/self/uid_map", map) < 0)
		return errno ? errno : EIO;
	write_file("/proc/self/setgroups", "deny");
	snprintf(map, sizeof map, "0 %u 1\n", (unsigned)gid);
	if (write_file("/proc/self/gid_map", map) < 0)
		return errno ? errno : EIO;
	if (mount("none", dir, "tmpfs", 0, "size=4k") < 0)
		return errno;
	umount2(dir, MNT_DETACH);
	return 0;
}

/* A new user namespace (by unshare, or by clone's flags), then a mount in
 * it: the way out when the outer namespace forbids mounting. */
static void esc_userns_mount(const char *name, int use_clone)
{
	char dir[64];
	uid_t uid = geteuid();
	gid_t gid = getegid();
	int pfd[2];
	if (scratch_dir(dir, sizeof dir) < 0 || pipe(pfd) < 0) {
		verdict(0, name, "no writable directory to try in (%s)", errname(errno));
		return;
	}
	long pid;
	if (use_clone) {
		/* Raw clone without a new stack: a fork that asks for namespaces. */
		pid = syscall(SYS_clone, CLONE_NEWUSER | CLONE_NEWNS | SIGCHLD, NULL, NULL, NULL, 0);
	} else {
		pid = fork();
		if (pid == 0) {
			if (unshare(CLONE_NEWUSER | CLONE_NEWNS) < 0) {
				int e = errno;
				if (write(pfd[1], &e, sizeof e) != sizeof e)
					_exit(1);
				_exit(0);
			}
		}
	}
	if (pid == 0) {
		int e = 0;
		if (write(pfd[1], &e, sizeof e) != sizeof e)
			_exit(1);
		_exit(userns_child_mount(dir, uid, gid));
	}
	close(pfd[1]);
	if (pid < 0) {
		call_verdict(name, -1, errno);
	} else {
		int e = -1, status = 0;
		if (read(pfd[0], &e, sizeof e) != sizeof e)
			e = EIO;
		waitpid((pid_t)pid, &status, 0);
		if (e != 0)
			verdict(!denied(e), name, "new user namespace: %s", errname(e));
		else if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
			verdict(1, name, "mounted a tmpfs in a new user namespace");
		else
			verdict(0, name, "new user namespace made, mount refused: %s",
				WIFEXITED(status) ? errname(WEXITSTATUS(status)) : "killed");
	}
	close(pfd[0]);
	rmdir(dir);
}

static void esc_ptrace_init(void)
{
	if (ptrace(PTRACE_ATTACH, 1, NULL, NULL) < 0) {
		verdict(0, "ptrace-init", "%s", errname(errno));
		return;
	}
	int status;
	waitpid(1, &status, __WALL);
	ptrace(PTRACE_DETACH, 1, NULL, NULL);
	verdict(1, "ptrace-init", "attached to pid 1 (and detached)");
}

static unsigned long long mount_id(const char *path)
{
	struct statx stx;
	if (statx(AT_FDCWD, path, 0, STATX_MNT_ID, &stx) < 0 || !(stx.stx_mask & STATX_MNT_ID))
		return 0;
	return stx.stx_mnt_id;
}

/* /proc/1/exe: in a container, pid 1 may be the launcher, a host binary.
 * Even an O_PATH handle is enough to reopen it for writing once it stops
 * running (CVE-2019-5736).  /proc/self/exe: while it runs the kernel
 * refuses to open it for writing (ETXTBSY), so what counts is whether it
 * could be written once it stops: a binary of the image's own root is
 * the container's to change; one bound from elsewhere (the host's GPU
 * tools, a volume) must not be writable. */
static void esc_proc_exe(const char *name, const char *path)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd >= 0) {
		close(fd);
		verdict(1, name, "opened %s for writing", path);
		return;
	}
	int e = errno;
	if (!strcmp(path, "/proc/1/exe")) {
		fd = open(path, O_PATH | O_CLOEXEC);
		if (fd >= 0) {
			close(fd);
			verdict(1, name, "a handle on pid 1's binary (writing: %s)", errname(e));
			return;
		}
		e = errno;
	} else if (faccessat(AT_FDCWD, path, W_OK, AT_EACCESS) == 0) {
		unsigned long long exe = mount_id(path), root = mount_id("/");
		if (exe && root && exe != root) {
			verdict(1, name, "writable once it stops running (now %s), and not on the root file system",
				errname(e));
			return;
		}
		verdict(0, name, "%s (and on the root file system)", errname(e));
		return;
	}
	verdict(0, name, "%s", errname(e));
}

/* Opened for writing and closed: nothing is written. */
static void esc_open(const char *name, const char *path, int flags)
{
	int fd = open(path, flags | O_CLOEXEC);
	if (fd >= 0) {
		close(fd);
		verdict(1, name, "opened %s%s", path, (flags & O_ACCMODE) == O_RDONLY ? "" : " for writing");
	} else {
		verdict(0, name, "%s", errname(errno));
	}
}

/* The first of fds 0-2 that is a terminal, or -1 (and a SAFE verdict). */
static int tty_fd(const char *name)
{
	for (int i = 0; i <= 2; i++)
		if (isatty(i))
			return i;
	verdict(0, name, "no terminal on fd 0-2");
	return -1;
}

/* A file a container must not read: refused, or masked by /dev/null (as
 * gpurun and docker mask /proc/kcore), is SAFE. */
static void esc_read(const char *name, const char *path)
{
	struct stat st;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		verdict(0, name, "%s", errname(errno));
		return;
	}
	int masked = fstat(fd, &st) == 0 && S_ISCHR(st.st_mode) && st.st_rdev == makedev(1, 3);
	close(fd);
	if (masked)
		verdict(0, name, "masked by /dev/null");
	else
		verdict(1, name, "opened %s", path);
}

static void esc_tty_ioctl(const char *name, unsigned long req)
{
	int fd = tty_fd(name);
	if (fd < 0)
		return;
	/* TIOCSTI pushes one space into the terminal's input; TIOCLINUX 6
	 * (TIOCL_GETSHIFTSTATE) only reads. */
	char arg = req == TIOCSTI ? ' ' : 6;
	long rc = ioctl(fd, req, &arg);
	call_verdict(name, rc, errno);
}

/* TIOCEXCL keeps everyone but root from opening the terminal again (less,
 * vim, ssh and sudo's prompts open /dev/tty).  Put back at once when it got
 * through. */
static void esc_tiocexcl(const char *name)
{
	int fd = tty_fd(name);
	if (fd < 0)
		return;
	if (ioctl(fd, TIOCEXCL) < 0) {
		call_verdict(name, -1, errno);
		return;
	}
	int e = ioctl(fd, TIOCNXCL) < 0 ? errno : 0;
	verdict(1, name, "made the terminal exclusive (put back: %s)", e ? errname(e) : "ok");
}

/* TIOCSETD to N_NULL makes a terminal swallow what is written to it: the
 * caller's shell is left with "write error" once the container is gone.
 * Put back at once when it got through. */
static void esc_tiocsetd(const char *name)
{
	int fd = tty_fd(name), old = 0, null_disc = 27 /* N_NULL */;
	if (fd < 0)
		return;
	if (ioctl(fd, TIOCGETD, &old) < 0) {
		verdict(1, name, "TIOCGETD: %s", errname(errno));
		return;
	}
	if (ioctl(fd, TIOCSETD, &null_disc) < 0) {
		call_verdict(name, -1, errno);
		return;
	}
	int e = ioctl(fd, TIOCSETD, &old) < 0 ? errno : 0;
	verdict(1, name, "set N_NULL (put back: %s)", e ? errname(e) : "ok");
}

/* TIOCCONS sends the console's output to the terminal.  Asked on a
 * read-only open of it (as /dev/tty, which anyone may open, else through
 * its fd's link), so that once let through the kernel can only answer
 * EBADF: nothing is ever redirected. */
static void esc_tioccons(const char *name)
{
	char path[32];
	int fd = tty_fd(name);
	if (fd < 0)
		return;
	int ro = open("/dev/tty", O_RDONLY | O_NOCTTY | O_CLOEXEC);
	if (ro < 0) {
		snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
		ro = open(path, O_RDONLY | O_NOCTTY | O_CLOEXEC);
	}
	if (ro < 0) {
		verdict(1, name, "open the terminal read-only: %s", errname(errno));
		return;
	}
	long rc = ioctl(ro, TIOCCONS);
	int e = errno;
	close(ro);
	call_verdict(name, rc, e);
}

/* `ldisc [N]`: a payload that changes the terminal and leaves it so; the
 * test outside reads the line discipline back and restores it. */
static int cmd_ldisc(const char *n)
{
	int disc;
	if (n) {
		disc = atoi(n);
		if (ioctl(0, TIOCSETD, &disc) < 0) {
			printf("ldisc %s: %s\n", n, errname(errno));
			return 1;
		}
	}
	if (ioctl(0, TIOCGETD, &disc) < 0) {
		printf("ldisc: %s\n", errname(errno));
		return 1;
	}
	printf("ldisc: %d\n", disc);
	return 0;
}

/* `tty-payload [hold]`: what a command holding the caller's terminal can
 * do to it with no capability, left for the caller to find.  The line goes
 * out before the output is stopped (nothing written after it would), and
 * O_NONBLOCK comes last: a test that sees it knows the rest is done. */
static int cmd_tty_payload(const char *arg)
{
	int excl = ioctl(0, TIOCEXCL) < 0 ? errno : 0;
	struct termios t;
	if (tcgetattr(0, &t) < 0) {
		printf("tty-payload: tcgetattr: %s\n", errname(errno));
		return 1;
	}
	t.c_iflag &= ~(tcflag_t)IXON;
	t.c_lflag &= ~(tcflag_t)(ECHO | ICANON);
	if (tcsetattr(0, TCSANOW, &t) < 0) {
		printf("tty-payload: tcsetattr: %s\n", errname(errno));
		return 1;
	}
	printf("tty-payload: TIOCEXCL %s, IXON ECHO ICANON off, output stopped, O_NONBLOCK\n",
	       excl ? errname(excl) : "ok");
	fflush(stdout);
	/* Nothing can say so from here on: the exit status does. */
	if (tcflow(0, TCOOFF) < 0)
		return 3;
	int fl = fcntl(0, F_GETFL);
	if (fl < 0 || fcntl(0, F_SETFL, fl | O_NONBLOCK) < 0)
		return 4;
	if (arg && !strcmp(arg, "hold"))
		for (;;)
			pause();
	return 0;
}

/* fds other than 0-2 (and the directory being read): a leaked host fd is a
 * way out (CVE-2024-21626). */
static void esc_fds(const char *name, const char *dirpath, int keep_pipes)
{
	DIR *d = opendir(dirpath);
	struct dirent *e;
	char found[1024] = "";
	if (!d) {
		verdict(0, name, "%s", errname(errno));
		return;
	}
	while ((e = readdir(d))) {
		char path[300], target[512];
		int n = atoi(e->d_name);
		if (e->d_name[0] == '.' || (!keep_pipes && (n <= 2 || n == dirfd(d))))
			continue;
		snprintf(path, sizeof path, "%s/%s", dirpath, e->d_name);
		ssize_t len = readlink(path, target, sizeof target - 1);
		target[len < 0 ? 0 : len] = '\0';
		/* pid 1's own pipes and signalfd are no way out; a path is. */
		if (keep_pipes && target[0] != '/')
			continue;
		size_t l = strlen(found);
		snprintf(found + l, sizeof found - l, "%s%s -> %s", l ? ", " : "", e->d_name, target);
	}
	closedir(d);
	if (found[0])
		verdict(1, name, "%s", found);
	else
		verdict(0, name, keep_pipes ? "no file or directory reachable" : "none above 2");
}

static void esc_cwd(void)
{
	char buf[4096];
	struct stat root, cur, up;
	if (!getcwd(buf, sizeof buf)) {
		verdict(errno == ENOENT, "cwd", "getcwd: %s", errname(errno));
		return;
	}
	if (buf[0] != '/') {
		verdict(1, "cwd", "outside the root: %s", buf);
		return;
	}
	/* Walk up: the top of the cwd's tree must be our root. */
	int fd = open(".", O_PATH | O_DIRECTORY | O_CLOEXEC);
	stat("/", &root);
	for (int i = 0; fd >= 0 && i < 4096; i++) {
		int upfd = openat(fd, "..", O_PATH | O_DIRECTORY | O_CLOEXEC);
		fstat(fd, &cur);
		fstat(upfd, &up);
		close(fd);
		fd = upfd;
		if (cur.st_dev == up.st_dev && cur.st_ino == up.st_ino)
			break;
	}
	if (fd >= 0)
		close(fd);
	int same = cur.st_dev == root.st_dev && cur.st_ino == root.st_ino;
	verdict(!same, "cwd", same ? "%s, inside the root" : "%s leads outside the root", buf);
}

/* "euid CapEff" of this process: what the setuid probe reports back. */
static int cmd_privs(void)
{
	printf("%u %llx\n", geteuid(), cap_mask("CapEff"));
	return 0;
}

/* Exec a setuid copy of the probe: it must come back with no more than we
 * have (no_new_privs, nosuid mounts, unmapped owners). */
static void esc_setuid(const char *path)
{
	struct stat st;
	int pfd[2];
	char line[128] = "";
	if (stat(path, &st) < 0) {
		verdict(0, "setuid", "%s: %s", path, errname(errno));
		return;
	}
	if (!(st.st_mode & S_ISUID)) {
		verdict(0, "setuid", "%s has no setuid bit", path);
		return;
	}
	if (pipe(pfd) < 0) {
		verdict(0, "setuid", "pipe: %s", errname(errno));
		return;
	}
	fflush(stdout);
	pid_t pid = fork();
	if (pid == 0) {
		dup2(pfd[1], 1);
		execl(path, "probe", "privs", (char *)NULL);
		_exit(127);
	}
	close(pfd[1]);
	ssize_t n = read(pfd[0], line, sizeof line - 1);
	line[n < 0 ? 0 : n] = '\0';
	close(pfd[0]);
	waitpid(pid, NULL, 0);
	unsigned euid;
	unsigned long long eff;
	if (sscanf(line, "%u %llx", &euid, &eff) != 2) {
		verdict(0, "setuid", "%s did not run", path);
		return;
	}
	unsigned long long mine = cap_mask("CapEff");
	if (euid != geteuid() || (eff & ~mine))
		verdict(1, "setuid", "%s ran with euid %u, CapEff %llx (we have %u, %llx)", path, euid, eff, geteuid(),
			mine);
	else
		verdict(0, "setuid", "%s ran with euid %u and no new capabilities", path, euid);
}

/* The minors of the GPUs this container was given, from the per-GPU
 * information files (all 0-255 when there is no such directory). */
static int selected_minor(unsigned minor)
{
	DIR *d = opendir("/proc/driver/nvidia/gpus");
	struct dirent *e;
	int found = 0, any = 0;
	if (!d)
		return 0;
	while ((e = readdir(d))) {
		char path[512], line[256];
		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof path, "/proc/driver/nvidia/gpus/%s/information", e->d_name);
		FILE *f = fopen(path, "re");
		while (f && fgets(line, sizeof line, f)) {
			unsigned m;
			if (sscanf(line, "Device Minor: %u", &m) == 1) {
				any = 1;
				found |= m == minor;
			}
		}
		if (f)
			fclose(f);
	}
	closedir(d);
	return any && found;
}

static void esc_gpu_node(void)
{
	DIR *d = opendir("/dev");
	struct dirent *e;
	char extra[512] = "";
	while (d && (e = readdir(d))) {
		char path[300];
		struct stat st;
		unsigned n;
		char tail;
		if (sscanf(e->d_name, "nvidia%u%c", &n, &tail) != 1)
			continue;
		snprintf(path, sizeof path, "/dev/%s", e->d_name);
		if (stat(path, &st) == 0 && S_ISCHR(st.st_mode) && !selected_minor(minor(st.st_rdev))) {
			size_t l = strlen(extra);
			snprintf(extra + l, sizeof extra - l, "%s%s", l ? " " : "", path);
		}
	}
	if (d)
		closedir(d);
	if (extra[0])
		verdict(1, "gpu-node", "GPU nodes not selected are present: %s", extra);
	else
		esc_mknod("gpu-node", 195, 0);
}

/* clang-format off */
static const char *const escape_names[] = {
	"mknod", "mount", "umount", "remount-rw", "pivot_root", "userns-mount", "userns-clone", "keyctl",
	"add_key", "bpf", "perf_event_open", "userfaultfd", "io_uring", "open_by_handle_at", "kexec_load",
	"ptrace-init", "proc-1-exe", "proc-self-exe", "kcore", "proc-sys", "sysrq-trigger", "core_pattern",
	"tiocsti", "tioclinux", "tiocsetd", "tioccons", "tiocexcl", "fds", "fds-pid1", "cwd", "setuid", "gpu-node", "setgroups", "chroot-escape",
};
/* clang-format on */

/* The harmless call behind each system-call probe (also used by abi-syscall
 * for the x86-64 ABI). */
static long escape_syscall(const char *name)
{
	if (!strcmp(name, "keyctl"))
		return syscall(SYS_keyctl, 0xffff /* no such operation */, 0, 0, 0, 0);
	if (!strcmp(name, "add_key"))
		return syscall(SYS_add_key, NULL, NULL, NULL, 0, 0);
	if (!strcmp(name, "bpf"))
		return syscall(SYS_bpf, 0xffff, NULL, 0);
	if (!strcmp(name, "perf_event_open"))
		return syscall(SYS_perf_event_open, NULL, 0, -1, -1, 0);
	if (!strcmp(name, "userfaultfd"))
		return syscall(SYS_userfaultfd, 1 /* UFFD_USER_MODE_ONLY */ | 0x8000 /* invalid */);
	if (!strcmp(name, "io_uring"))
		return syscall(SYS_io_uring_setup, 0, NULL);
	if (!strcmp(name, "open_by_handle_at"))
		return syscall(SYS_open_by_handle_at, -1, NULL, 0);
	if (!strcmp(name, "kexec_load"))
		return syscall(SYS_kexec_load, 0UL, 0UL, NULL, 0xdead0000UL);
	errno = ENOSYS;
	return -2;
}

static int run_escape(const char *name)
{
	long rc;
	if (!strcmp(name, "mknod")) {
		esc_mknod(name, 1, 3);
	} else if (!strcmp(name, "mount")) {
		esc_mount(name);
	} else if (!strcmp(name, "umount") || !strcmp(name, "remount-rw")) {
		for (size_t i = 0; i < sizeof guarded_paths / sizeof guarded_paths[0]; i++)
			(name[0] == 'u' ? esc_umount : esc_remount)(guarded_paths[i]);
	} else if (!strncmp(name, "umount:", 7)) {
		esc_umount(name + 7);
	} else if (!strncmp(name, "remount-rw:", 11)) {
		esc_remount(name + 11);
	} else if (!strcmp(name, "pivot_root")) {
		esc_pivot_root();
	} else if (!strcmp(name, "userns-mount") || !strcmp(name, "userns-clone")) {
		esc_userns_mount(name, name[7] == 'c');
	} else if ((rc = escape_syscall(name)) != -2) {
		int e = errno;
		if (rc >= 0 &&
		    (!strcmp(name, "userfaultfd") || !strcmp(name, "io_uring") || !strcmp(name, "open_by_handle_at")))
			close((int)rc);
		call_verdict(name, rc, e);
	} else if (!strcmp(name, "ptrace-init")) {
		esc_ptrace_init();
	} else if (!strcmp(name, "proc-1-exe")) {
		esc_proc_exe(name, "/proc/1/exe");
	} else if (!strcmp(name, "proc-self-exe")) {
		esc_proc_exe(name, "/proc/self/exe");
	} else if (!strcmp(name, "kcore")) {
		esc_read(name, "/proc/kcore");
	} else if (!strcmp(name, "proc-sys")) {
		esc_open(name, "/proc/sys/kernel/panic", O_WRONLY);
	} else if (!strcmp(name, "sysrq-trigger")) {
		esc_open(name, "/proc/sysrq-trigger", O_WRONLY);
	} else if (!strcmp(name, "core_pattern")) {
		esc_open(name, "/proc/sys/kernel/core_pattern", O_WRONLY);
	} else if (!strcmp(name, "tiocsti")) {
		esc_tty_ioctl(name, TIOCSTI);
	} else if (!strcmp(name, "tioclinux")) {
		esc_tty_ioctl(name, TIOCLINUX);
	} else if (!strcmp(name, "tiocsetd")) {
		esc_tiocsetd(name);
	} else if (!strcmp(name, "tioccons")) {
		esc_tioccons(name);
	} else if (!strcmp(name, "tiocexcl")) {
		esc_tiocexcl(name);
	} else if (!strcmp(name, "fds")) {
		esc_fds(name, "/proc/self/fd", 0);
	} else if (!strcmp(name, "fds-pid1")) {
		esc_fds(name, "/proc/1/fd", 1);
	} else if (!strcmp(name, "cwd")) {
		esc_cwd();
	} else if (!strcmp(name, "setuid")) {
		esc_setuid("/bin/probe-suid");
	} else if (!strncmp(name, "setuid:", 7)) {
		esc_setuid(name + 7);
	} else if (!strcmp(name, "gpu-node")) {
		esc_gpu_node();
	} else if (!strcmp(name, "setgroups")) {
		cmd_setgroups();
	} else if (!strcmp(name, "chroot-escape")) {
		cmd_chroot_escape();
	} else {
		fprintf(stderr, "probe: unknown escape probe %s\n", name);
		return 2;
	}
	fflush(stdout);
	return 0;
}

static int cmd_escape(int n, char **names)
{
	int rc = 0;
	if (n == 0)
		for (size_t i = 0; i < sizeof escape_names / sizeof escape_names[0]; i++)
			rc |= run_escape(escape_names[i]);
	for (int i = 0; i < n; i++)
		rc |= run_escape(names[i]);
	return rc;
}

/* ---- `probe abi-syscall ABI NAME...`: one system call through one ABI ----
 *
 * The seccomp filter must deny the dangerous calls whichever way they are
 * made: the x86-64 `syscall` instruction, the same instruction with the x32
 * bit (0x40000000) and x32's numbers, and i386's `int $0x80` with i386's
 * numbers (the kernel's compat table).  The numbers are those of
 * asm/unistd_64.h, unistd_x32.h and unistd_32.h; 0 means the ABI has no such
 * call.  The arguments are small integers and NULL pointers (i386 takes 32-bit
 * pointers): permitted, each call fails with EFAULT, EINVAL or EBADF, or
 * (clone) makes a child that exits at once.  The terminal ioctls go to fd
 * -1 (EBADF), also with bits above the 32-bit command set ("-high"): the
 * kernel drops them, so a filter comparing all 64 bits would miss them.
 * Prints "NAME ABI: EPERM" (or the errno name, or "ok"). */
struct abi_call {
	const char *name;
	long nr64, nr32, nrx32; /* nrx32 without __X32_SYSCALL_BIT */
	long a[5];
};

#define CLONE_FORK_NEWUSER (0x10000000L /* CLONE_NEWUSER */ | 17L /* SIGCHLD */)
#define CLONE_FORK_NEWNS (0x00020000L /* CLONE_NEWNS */ | 17L)

static const struct abi_call abi_calls[] = {
	{"mount", 165, 21, 165, {0, 0, 0, 0, 0}},
	{"umount2", 166, 52, 166, {0, 0x80000000L /* invalid flag */, 0, 0, 0}},
	{"umount", 0, 22, 0, {0, 0, 0, 0, 0}},
	{"pivot_root", 155, 217, 155, {0, 0, 0, 0, 0}},
	{"unshare", 272, 310, 272, {1 /* not a namespace flag */, 0, 0, 0, 0}},
	{"setns", 308, 346, 308, {-1, 0, 0, 0, 0}},
	{"clone-newuser", 56, 120, 56, {CLONE_FORK_NEWUSER, 0, 0, 0, 0}},
	{"clone-newns", 56, 120, 56, {CLONE_FORK_NEWNS, 0, 0, 0, 0}},
	{"keyctl", 250, 288, 250, {0xffff, 0, 0, 0, 0}},
	{"add_key", 248, 286, 248, {0, 0, 0, 0, 0}},
	{"request_key", 249, 287, 249, {0, 0, 0, 0, 0}},
	{"bpf", 321, 357, 321, {0xffff, 0, 0, 0, 0}},
	{"perf_event_open", 298, 336, 298, {0, 0, -1, -1, 0}},
	{"userfaultfd", 323, 374, 323, {1 | 0x8000, 0, 0, 0, 0}},
	{"io_uring_setup", 425, 425, 425, {0, 0, 0, 0, 0}},
	{"io_uring_enter", 426, 426, 426, {-1, 0, 0, 0, 0}},
	{"io_uring_register", 427, 427, 427, {-1, 0, 0, 0, 0}},
	{"open_by_handle_at", 304, 342, 304, {-1, 0, 0, 0, 0}},
	{"name_to_handle_at", 303, 341, 303, {-1, 0, 0, 0, 0x80000000L}},
	{"kexec_load", 246, 283, 528, {0, 0, 0, 0xdead0000L, 0}},
	{"kexec_file_load", 320, 0, 320, {-1, -1, 0, 0, 0xdead0000L}},
	{"init_module", 175, 128, 175, {0, 0, 0, 0, 0}},
	{"finit_module", 313, 350, 313, {-1, 0, 0, 0, 0}},
	{"delete_module", 176, 129, 176, {0, 0, 0, 0, 0}},
	{"fsopen", 430, 430, 430, {0, 0, 0, 0, 0}},
	{"fsconfig", 431, 431, 431, {-1, 0, 0, 0, 0}},
	{"fsmount", 432, 432, 432, {-1, 0, 0, 0, 0}},
	{"fspick", 433, 433, 433, {-1, 0, 0, 0, 0}},
	{"open_tree", 428, 428, 428, {-1, 0, 0xffffffffL, 0, 0}},
	{"move_mount", 429, 429, 429, {-1, 0, -1, 0, 0}},
	{"mount_setattr", 442, 442, 442, {-1, 0, 0xffffffffL, 0, 0}},
	{"ioctl-tiocsti", 16, 54, 514, {-1, 0x5412 /* TIOCSTI */, 0, 0, 0}},
	{"ioctl-tioclinux", 16, 54, 514, {-1, 0x541C /* TIOCLINUX */, 0, 0, 0}},
	{"ioctl-tiocsetd", 16, 54, 514, {-1, 0x5423 /* TIOCSETD */, 0, 0, 0}},
	{"ioctl-tiocsetd-high", 16, 54, 514, {-1, 0x100005423L, 0, 0, 0}},
	{"ioctl-tioccons", 16, 54, 514, {-1, 0x541D /* TIOCCONS */, 0, 0, 0}},
	{"ioctl-tioccons-high", 16, 54, 514, {-1, 0x10000541DL, 0, 0, 0}},
	{"ioctl-tiocvhangup", 16, 54, 514, {-1, 0x5437 /* TIOCVHANGUP */, 0, 0, 0}},
	{"ioctl-tiocexcl", 16, 54, 514, {-1, 0x540C /* TIOCEXCL */, 0, 0, 0}},
	{"ioctl-tiocexcl-high", 16, 54, 514, {-1, 0x10000540CL, 0, 0, 0}},
};

/* i386's int $0x80 from 64-bit code: the kernel reads ebx, ecx, edx, esi,
 * edi and answers in eax; r8-r11 are not preserved. */
static long syscall_i386(long nr, const long *a)
{
	long ret;
	__asm__ volatile("int $0x80"
			 : "=a"(ret)
			 : "0"(nr), "b"(a[0]), "c"(a[1]), "d"(a[2]), "S"(a[3]), "D"(a[4])
			 : "memory", "r8", "r9", "r10", "r11", "cc");
	return (long)(int)ret;
}

static int cmd_abi_syscall(const char *abi, int n, char **names)
{
	int i386 = !strcmp(abi, "i386"), x32 = !strcmp(abi, "x32");
	if (!i386 && !x32 && strcmp(abi, "x86-64")) {
		fprintf(stderr, "probe: ABI is x86-64, x32 or i386\n");
		return 2;
	}
	for (int k = 0; k < n; k++) {
		const struct abi_call *c = NULL;
		for (size_t i = 0; i < sizeof abi_calls / sizeof abi_calls[0]; i++)
			if (!strcmp(abi_calls[i].name, names[k]))
				c = &abi_calls[i];
		if (!c) {
			fprintf(stderr, "probe: unknown system call %s\n", names[k]);
			return 2;
		}
		long nr = i386 ? c->nr32 : x32 ? c->nrx32 : c->nr64;
		if (!nr) {
			printf("%s %s: no such call\n", c->name, abi);
			continue;
		}
		fflush(stdout);
		long rc;
		int e = 0;
		if (i386) {
			rc = syscall_i386(nr, c->a);
			if (rc < 0 && rc > -4096) {
				e = (int)-rc;
				rc = -1;
			}
		} else {
			rc = syscall(x32 ? nr | 0x40000000L : nr, c->a[0], c->a[1], c->a[2], c->a[3], c->a[4]);
			e = errno;
		}
		if (rc == 0 && !strncmp(c->name, "clone", 5))
			_exit(0); /* the child of a permitted clone */
		if (rc > 0 && !strncmp(c->name, "clone", 5))
			waitpid((pid_t)rc, NULL, __WALL);
		else if (rc > 2)
			close((int)rc); /* a descriptor, if anything */
		printf("%s %s: %s\n", c->name, abi, rc < 0 ? errname(e) : "ok");
	}
	return 0;
}

/* Called as ldconfig (the image's ldconfig is the probe): what gpurun ran
 * it with, and every escape probe, into /tmp/ldconfig-report, where the
 * command reads it. */
static int ldconfig_report(int argc, char **argv)
{
	extern char **environ;
	char buf[4096];
	if (!freopen("/tmp/ldconfig-report", "w", stdout))
		return 1;
	setvbuf(stdout, NULL, _IOLBF, 0);
	cmd_ids();
	char eff[64] = "?", bnd[64] = "?", prm[64] = "?", amb[64] = "?", inh[64] = "?";
	status_field("CapEff", eff, sizeof eff);
	status_field("CapPrm", prm, sizeof prm);
	status_field("CapBnd", bnd, sizeof bnd);
	status_field("CapAmb", amb, sizeof amb);
	status_field("CapInh", inh, sizeof inh);
	printf("CapEff=%s CapPrm=%s CapBnd=%s CapAmb=%s CapInh=%s\n", eff, prm, bnd, amb, inh);
	printf("NoNewPrivs: %s\n", status_field("NoNewPrivs", buf, sizeof buf) ? buf : "?");
	printf("Seccomp: %s\n", status_field("Seccomp", buf, sizeof buf) ? buf : "?");
	int n = 0;
	for (char **e = environ; e && *e; e++)
		n++;
	printf("environment: %d variables\n", n);
	for (char **e = environ; e && *e; e++)
		printf("env %s\n", *e);
	printf("cwd: %s\n", getcwd(buf, sizeof buf) ? buf : errname(errno));
	printf("argv:");
	for (int i = 0; i < argc; i++)
		printf(" %s", argv[i]);
	printf("\n");
	cmd_escape(0, NULL);
	return 0;
}

int main(int argc, char **argv)
{
	const char *cmd = argc > 1 ? argv[1] : "";
	const char *arg = argc > 2 ? argv[2] : NULL;
	char buf[4096];
	int rc;

	/* Line-buffered even into a pipe, so "ready" and partial output show. */
	setvbuf(stdout, NULL, _IOLBF, 0);

	const char *base = strrchr(argv[0], '/');
	if (!strcmp(base ? base + 1 : argv[0], "ldconfig"))
		return ldconfig_report(argc, argv);
	if (!strcmp(cmd, "escape"))
		return cmd_escape(argc - 2, argv + 2);
	if (!strcmp(cmd, "ldisc"))
		return cmd_ldisc(arg);
	if (!strcmp(cmd, "tty-payload"))
		return cmd_tty_payload(arg);
	if (!strcmp(cmd, "privs"))
		return cmd_privs();
	if (!strcmp(cmd, "abi-syscall") && argc > 3)
		return cmd_abi_syscall(argv[2], argc - 3, argv + 3);

	if (!strcmp(cmd, "pid"))
		return printf("%d\n", getpid()) < 0;
	if (!strcmp(cmd, "ppid"))
		return printf("%d\n", getppid()) < 0;
	if (!strcmp(cmd, "cwd"))
		return getcwd(buf, sizeof buf) ? printf("%s\n", buf) < 0 : (printf("cwd: %s\n", errname(errno)), 1);
	if (!strcmp(cmd, "ids"))
		return cmd_ids();
	if (!strcmp(cmd, "caps")) {
		char eff[64] = "?", bnd[64] = "?", prm[64] = "?";
		status_field("CapEff", eff, sizeof eff);
		status_field("CapBnd", bnd, sizeof bnd);
		status_field("CapPrm", prm, sizeof prm);
		printf("CapEff=%s CapPrm=%s CapBnd=%s\n", eff, prm, bnd);
		return 0;
	}
	if (!strcmp(cmd, "nnp") || !strcmp(cmd, "seccomp")) {
		const char *key = cmd[0] == 'n' ? "NoNewPrivs" : "Seccomp";
		printf("%s: %s\n", key, status_field(key, buf, sizeof buf) ? buf : "?");
		return 0;
	}
	if (!strcmp(cmd, "fds"))
		return cmd_fds();
	if (!strcmp(cmd, "setgroups"))
		return cmd_setgroups();
	if (!strcmp(cmd, "chroot-escape"))
		return cmd_chroot_escape();
	if (!strcmp(cmd, "zombies"))
		return cmd_zombies(arg ? atol(arg) : 0);
	if (!strcmp(cmd, "wait-signal"))
		return cmd_wait_signal(arg ? atoi(arg) : 60);
	if (!strcmp(cmd, "mount"))
		return cmd_mount(arg ? arg : "/mnt");
	if (!strcmp(cmd, "ns"))
		return cmd_ns(arg);
	if (!arg)
		return usage();

	/* Subcommands with a required argument. */
	if (!strcmp(cmd, "has-cap"))
		return cmd_has_cap(arg);
	if (!strcmp(cmd, "mknod"))
		return cmd_mknod(arg);
	if (!strcmp(cmd, "syscall"))
		return cmd_syscall(arg);
	if (!strcmp(cmd, "open"))
		return cmd_open(arg);
	if (!strcmp(cmd, "write"))
		return cmd_write(arg);
	if (!strcmp(cmd, "isatty"))
		return printf("%s\n", isatty(atoi(arg)) ? "yes" : "no") < 0;
	if (!strcmp(cmd, "orphans"))
		return cmd_orphans(atoi(arg));
	if (!strcmp(cmd, "kill-self"))
		return cmd_kill_self(arg);
	if (!strcmp(cmd, "exit"))
		return atoi(arg);
	if (!strcmp(cmd, "env")) {
		const char *v = getenv(arg);
		if (!v) {
			printf("%s is unset\n", arg);
			return 1;
		}
		printf("%s\n", v);
		return 0;
	}
	if (!strcmp(cmd, "stat"))
		return cmd_stat(arg);
	if (!strcmp(cmd, "mountinfo-has"))
		return cmd_mountinfo_has(arg);
	rc = usage();
	return rc;
}
