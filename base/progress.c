/* base/progress.c — the one printer of progress on a terminal: lines on
 * stderr redrawn in place (carriage return, erase the line; cursor up over
 * a block of lines), and the clock and megabyte figures they show.  An
 * image's unpack line (rootfs/image/image.c) and a pull's block of layer lines
 * (rootfs/registry/regpool.c) both print through it; the callers decide that stderr
 * is a terminal.
 *
 * While a line is on the terminal without its newline, a signal that ends
 * gpurun (Ctrl-C, a hangup, kill) first ends the line, so that the shell's
 * prompt or the next message starts on a line of its own; then it ends
 * gpurun as it would have.  A signal the caller ignores stays ignored. */
#include "base.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static const int progress_sigs[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};
static struct sigaction progress_old[COUNT_OF(progress_sigs)];
static volatile sig_atomic_t progress_open;
static int progress_hooked;

static void progress_interrupted(int sig)
{
	if (progress_open) {
		ssize_t r = write(STDERR_FILENO, "\n", 1);
		(void)r;
	}
	signal(sig, SIG_DFL);
	raise(sig);
}

/* on: a line is open (hook the signals once); off: none is (unhook). */
static void progress_hook(int on)
{
	progress_open = on;
	if (on == progress_hooked)
		return;
	for (size_t i = 0; i < COUNT_OF(progress_sigs); i++) {
		if (!on) {
			sigaction(progress_sigs[i], &progress_old[i], NULL);
			continue;
		}
		struct sigaction sa = {.sa_handler = progress_interrupted};
		sigemptyset(&sa.sa_mask);
		if (sigaction(progress_sigs[i], NULL, &progress_old[i]) == 0 && progress_old[i].sa_handler != SIG_IGN)
			sigaction(progress_sigs[i], &sa, NULL);
	}
	progress_hooked = on;
}

double seconds_since(const struct timespec *t)
{
	struct timespec now;
	clock_gettime(CLOCK_MONOTONIC, &now);
	return (double)(now.tv_sec - t->tv_sec) + (double)(now.tv_nsec - t->tv_nsec) / 1e9;
}

double progress_mb_per_s(unsigned long long bytes, double secs)
{
	return secs > 0 ? (double)bytes / 1e6 / secs : 0.0;
}

/* One write per line: stderr is unbuffered, and a line drawn in pieces
 * flickers. */
void progress_print(int end, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char *text = xvasprintf(NULL, fmt, ap);
	va_end(ap);
	/* Hooked before the line shows: a ^C typed on seeing it must find
	 * the hook in place. */
	if (!end)
		progress_hook(1);
	fprintf(stderr, "\r\033[K%s%s", text, end ? "\n" : "");
	free(text);
	if (end)
		progress_hook(0);
}

void progress_clear(void)
{
	if (progress_open)
		fputs("\r\033[K", stderr);
	progress_hook(0);
}

void progress_up(size_t lines)
{
	fprintf(stderr, "\033[%zuA", lines);
}
