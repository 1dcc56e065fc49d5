/* tests/seccomp_wrap.c — run a command under gpurun's seccomp filter and
 * nothing else: `seccomp-wrap CMD [ARG...]` loads ns/security.c's filter
 * (libseccomp sets no_new_privs for it) and execs CMD with the caller's
 * capabilities untouched.
 *
 * tests/escape.bats builds it against libgpurun.a.  Run by the host's root,
 * whose capabilities let every dangerous call through, it shows that the
 * EPERM a probe gets inside a container comes from the filter itself, on
 * every ABI, and not only from the capabilities gpurun drops. */
#include <stdio.h>
#include <unistd.h>

#include "../ns/ns.h"

int main(int argc, char **argv)
{
	struct gerr err = {0};
	if (argc < 2) {
		fprintf(stderr, "usage: seccomp-wrap CMD [ARG...]\n");
		return 2;
	}
	if (sec_seccomp(&err) < 0) {
		fprintf(stderr, "seccomp-wrap: %s\n", err.msg);
		return 125;
	}
	execv(argv[1], argv + 1);
	perror("seccomp-wrap: exec");
	return 127;
}
