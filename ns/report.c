/* ns/report.c — how a setup error in P1 or P2 reaches P0: as the one line
 * gerr_format() makes, over the error pipe that P0 reads and prints. */
#include <stdarg.h>
#include <stdio.h>
#include <unistd.h>

#include "exec.h"

/* P0 prints it; P1 or P2 exits 125 (or the error's code).  Where the pipe
 * is gone (P0 died), stderr is the last resort. */
void setup_fail(int err_fd, const struct gerr *err)
{
	struct sbuf b = {0};
	gerr_format(err, &b);
	if (write_all(err_fd, b.s, b.len) < 0)
		(void)write_all(2, b.s, b.len);
	_exit(err->code ? err->code : GPURUN_EXIT_FAIL);
}

/* setup_fail() with a fresh message: "what: strerror(errnum)". */
void setup_failf(int err_fd, int errnum, const char *fmt, ...)
{
	struct gerr err = {0};
	char msg[sizeof err.msg];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	gerr_set(&err, errnum, "%s", msg);
	setup_fail(err_fd, &err);
}
