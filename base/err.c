/* base/err.c — errors as values (struct gerr) and the few functions that
 * print them and exit, which only gpurun.c calls.  See base.h. */
#include "base.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void vformat(char *dst, size_t cap, const char *fmt, va_list ap)
{
	int n = vsnprintf(dst, cap, fmt, ap);
	if (n < 0)
		dst[0] = '\0';
}

int gerr_set(struct gerr *err, int errnum, const char *fmt, ...)
{
	va_list ap;
	if (!err)
		return -1;
	va_start(ap, fmt);
	vformat(err->msg, sizeof err->msg, fmt, ap);
	va_end(ap);
	if (errnum) {
		size_t l = strlen(err->msg);
		snprintf(err->msg + l, sizeof err->msg - l, ": %s", strerror(errnum));
	}
	err->errnum = errnum;
	err->hint[0] = '\0';
	if (!err->code)
		err->code = GPURUN_EXIT_FAIL;
	return -1;
}

int gerr_hint(struct gerr *err, const char *fmt, ...)
{
	va_list ap;
	if (!err)
		return -1;
	va_start(ap, fmt);
	vformat(err->hint, sizeof err->hint, fmt, ap);
	va_end(ap);
	return -1;
}

int gerr_prefix(struct gerr *err, const char *fmt, ...)
{
	char pre[512], old[sizeof err->msg];
	va_list ap;
	if (!err)
		return -1;
	va_start(ap, fmt);
	vformat(pre, sizeof pre, fmt, ap);
	va_end(ap);
	memcpy(old, err->msg, sizeof old);
	/* Assemble by hand: the result is truncated to the buffer on purpose. */
	size_t lp = strnlen(pre, sizeof pre), lo = strnlen(old, sizeof old), cap = sizeof err->msg - 1;
	size_t n = 0;
	for (size_t i = 0; i < lp && n < cap; i++)
		err->msg[n++] = pre[i];
	for (const char *sep = ": "; *sep && n < cap; sep++)
		err->msg[n++] = *sep;
	for (size_t i = 0; i < lo && n < cap; i++)
		err->msg[n++] = old[i];
	err->msg[n] = '\0';
	return -1;
}

void gerr_clear(struct gerr *err)
{
	memset(err, 0, sizeof *err);
}

/* Messages carry names from images, registries and driver roots: what a
 * terminal would act on is written as \ooo, whatever the caller quoted. */
void gerr_format(const struct gerr *err, struct sbuf *b)
{
	sbuf_puts(b, "gpurun: ");
	sbuf_add_visible(b, err->msg);
	sbuf_puts(b, "\n");
	if (err->hint[0]) {
		sbuf_puts(b, "hint: ");
		sbuf_add_visible(b, err->hint);
		sbuf_puts(b, "\n");
	}
}

/* "PREFIX<message>\n" on stderr, the message shown as gerr_format shows it. */
static void print_line(const char *prefix, const char *fmt, va_list ap)
{
	struct sbuf b = {0};
	size_t n;
	char *msg = xvasprintf(&n, fmt, ap);
	sbuf_puts(&b, prefix);
	sbuf_add_visible(&b, msg);
	sbuf_puts(&b, "\n");
	fputs(b.s, stderr);
	free(msg);
	sbuf_free(&b);
}

void errorx_(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	print_line("gpurun: ", fmt, ap);
	va_end(ap);
}

void warnx_(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	print_line("gpurun: warning: ", fmt, ap);
	va_end(ap);
}
