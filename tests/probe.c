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
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <sched.h>
#include <linux/capability.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/types.h>
#include <sys/wait.h>
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

static int cmd_setgroups(void)
{
	gid_t g = 0;
	int rc = setgroups(1, &g);
	printf("%s setgroups: %s\n", rc == 0 && geteuid() != 0 ? "RISK" : "SAFE",
	       rc == 0 ? "ok" : errname(errno));
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
	printf("type=%s mode=%04o rdev=%u:%u uid=%u gid=%u\n", type, st.st_mode & 07777,
	       major(st.st_rdev), minor(st.st_rdev), st.st_uid, st.st_gid);
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
			snprintf(found, sizeof found, "%s opts=%s fstype=%s super=%s", mnt, opts, fstype,
				 super);
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

int main(int argc, char **argv)
{
	const char *cmd = argc > 1 ? argv[1] : "";
	const char *arg = argc > 2 ? argv[2] : NULL;
	char buf[4096];
	int rc;

	/* Line-buffered even into a pipe, so "ready" and partial output show. */
	setvbuf(stdout, NULL, _IOLBF, 0);

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
