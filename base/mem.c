/* base/mem.c — allocation that cannot return NULL.  Running out of memory
 * is the one failure gpurun handles by stopping on the spot (with exit 125
 * and one line): no caller could add context that would help. */
#include "base.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

__attribute__((noreturn)) static void out_of_memory(void)
{
	static const char msg[] = "gpurun: out of memory\n";
	/* write(2), not stdio: stdio may itself need memory. */
	if (write(2, msg, sizeof msg - 1) < 0)
		_exit(GPURUN_EXIT_FAIL);
	exit(GPURUN_EXIT_FAIL);
}

void *xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);
	if (!p)
		out_of_memory();
	return p;
}

void *xcalloc(size_t n, size_t m)
{
	void *p = calloc(n ? n : 1, m ? m : 1);
	if (!p)
		out_of_memory();
	return p;
}

void *xrealloc(void *p, size_t n)
{
	p = realloc(p, n ? n : 1);
	if (!p)
		out_of_memory();
	return p;
}

char *xstrdup(const char *s)
{
	char *d = strdup(s ? s : "");
	if (!d)
		out_of_memory();
	return d;
}

char *xstrndup(const char *s, size_t n)
{
	char *d = strndup(s, n);
	if (!d)
		out_of_memory();
	return d;
}

char *xvasprintf(size_t *len, const char *fmt, va_list ap)
{
	char *s;
	int n = vasprintf(&s, fmt, ap);
	if (n < 0)
		out_of_memory();
	if (len)
		*len = (size_t)n;
	return s;
}

char *xasprintf(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char *s = xvasprintf(NULL, fmt, ap);
	va_end(ap);
	return s;
}
