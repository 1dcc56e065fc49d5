/* tests/fakedriver/modprobe.c — a fake nvidia-modprobe for the `nouvm`
 * topology (tests/fakedriver/build.sh).
 *
 * gpurun runs the driver root's nvidia-modprobe chrooted into that root,
 * so "/" here is the fake driver root.  Like the real one it creates the
 * nodes it is asked for: -c=N /dev/nvidiactl and /dev/nvidiaN, -u with -c
 * /dev/nvidia-uvm and -tools (major 510, the fake's nvidia-uvm), -m
 * /dev/nvidia-modeset.  For the tests it also appends what it was given
 * to /var/log/nvidia-modprobe.log: its arguments, its whole environment,
 * whether stdin is /dev/null and which fds it inherited.  Statically linked: the fake root has no
 * libc of its own.  Exit 1 when a node cannot be made (not root). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

extern char **environ;

static int make(const char *path, unsigned maj, unsigned min)
{
	if (mknod(path, S_IFCHR | 0666, makedev(maj, min)) < 0 && errno != EEXIST) {
		fprintf(stderr, "nvidia-modprobe: mknod %s: %s\n", path, strerror(errno));
		return 1;
	}
	return chmod(path, 0666) < 0;
}

int main(int argc, char **argv)
{
	FILE *log = fopen("/var/log/nvidia-modprobe.log", "a");
	struct stat st;
	int uvm = 0, modeset = 0, bad = 0, nminors = 0;
	unsigned minors[16];
	if (log) {
		fputs("args:", log);
		for (int i = 1; i < argc; i++)
			fprintf(log, " %s", argv[i]);
		fputs("\nenv:", log);
		for (char **e = environ; *e; e++)
			fprintf(log, " %s", *e);
		fprintf(log, "\nstdin: %s\nfds:",
			fstat(0, &st) == 0 && S_ISCHR(st.st_mode) && st.st_rdev == makedev(1, 3) ? "/dev/null"
												 : "other");
		int logfd = fileno(log);
		for (int fd = 0; fd < 1024; fd++)
			if (fd != logfd && fcntl(fd, F_GETFD) >= 0)
				fprintf(log, " %d", fd);
		fputc('\n', log);
		fclose(log);
	}
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-u"))
			uvm = 1;
		else if (!strcmp(argv[i], "-m"))
			modeset = 1;
		else if (!strncmp(argv[i], "-c=", 3) && nminors < 16)
			minors[nminors++] = (unsigned)atoi(argv[i] + 3);
	}
	for (int i = 0; i < nminors; i++) {
		char path[32];
		if (uvm) {
			bad |= make("/dev/nvidia-uvm", 510, 0) | make("/dev/nvidia-uvm-tools", 510, 1);
			continue;
		}
		snprintf(path, sizeof path, "/dev/nvidia%u", minors[i]);
		bad |= make("/dev/nvidiactl", 195, 255) | make(path, 195, minors[i]);
	}
	if (modeset)
		bad |= make("/dev/nvidia-modeset", 195, 254);
	return bad;
}
