/* ns/util.c — errors as values, checked allocation, string buffers and the
 * shell quoting used by the teaching view.  See util.h. */
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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

void gerr_die(const struct gerr *err)
{
	fprintf(stderr, "gpurun: %s\n", err->msg);
	if (err->hint[0])
		fprintf(stderr, "hint: %s\n", err->hint);
	exit(err->code ? err->code : GPURUN_EXIT_FAIL);
}

void die(int code, const char *fmt, ...)
{
	va_list ap;
	fputs("gpurun: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(code);
}

void die_errno(const char *fmt, ...)
{
	int e = errno;
	va_list ap;
	fputs("gpurun: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, ": %s\n", strerror(e));
	exit(GPURUN_EXIT_FAIL);
}

void warnx_(const char *fmt, ...)
{
	va_list ap;
	fputs("gpurun: warning: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

void *xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);
	if (!p)
		die(GPURUN_EXIT_FAIL, "out of memory");
	return p;
}

void *xcalloc(size_t n, size_t m)
{
	void *p = calloc(n ? n : 1, m ? m : 1);
	if (!p)
		die(GPURUN_EXIT_FAIL, "out of memory");
	return p;
}

void *xrealloc(void *p, size_t n)
{
	p = realloc(p, n ? n : 1);
	if (!p)
		die(GPURUN_EXIT_FAIL, "out of memory");
	return p;
}

char *xstrdup(const char *s)
{
	char *d = strdup(s ? s : "");
	if (!d)
		die(GPURUN_EXIT_FAIL, "out of memory");
	return d;
}

static char *xvasprintf(size_t *len, const char *fmt, va_list ap)
{
	char *s;
	int n = vasprintf(&s, fmt, ap);
	if (n < 0)
		die(GPURUN_EXIT_FAIL, "out of memory");
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

void sbuf_add(struct sbuf *b, const char *s, size_t n)
{
	if (b->len + n + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 128;
		while (cap < b->len + n + 1)
			cap *= 2;
		b->s = xrealloc(b->s, cap);
		b->cap = cap;
	}
	memcpy(b->s + b->len, s, n);
	b->len += n;
	b->s[b->len] = '\0';
}

void sbuf_puts(struct sbuf *b, const char *s)
{
	sbuf_add(b, s, strlen(s));
}

void sbuf_printf(struct sbuf *b, const char *fmt, ...)
{
	size_t n;
	va_list ap;
	va_start(ap, fmt);
	char *s = xvasprintf(&n, fmt, ap);
	va_end(ap);
	sbuf_add(b, s, n);
	free(s);
}

void sbuf_shquote(struct sbuf *b, const char *s)
{
	static const char safe[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
				   "0123456789@%+=:,./-_";
	if (*s && strspn(s, safe) == strlen(s)) {
		sbuf_puts(b, s);
		return;
	}
	sbuf_add(b, "'", 1);
	for (; *s; s++) {
		if (*s == '\'')
			sbuf_puts(b, "'\\''");
		else
			sbuf_add(b, s, 1);
	}
	sbuf_add(b, "'", 1);
}

void sbuf_free(struct sbuf *b)
{
	free(b->s);
	b->s = NULL;
	b->len = b->cap = 0;
}

char *read_small_file_at(int dirfd, const char *path, size_t max, size_t *len, struct gerr *err)
{
	struct stat st;
	_cleanup_fd_ int fd = openat(dirfd, path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	if (fd < 0) {
		gerr_set(err, errno, "open %s", path);
		return NULL;
	}
	if (fstat(fd, &st) < 0) {
		gerr_set(err, errno, "stat %s", path);
		return NULL;
	}
	if (!S_ISREG(st.st_mode)) {
		gerr_set(err, 0, "%s: not a regular file", path);
		return NULL;
	}
	size_t cap = 4096, n = 0;
	char *buf = xmalloc(cap + 1);
	for (;;) {
		if (n == cap) {
			if (cap >= max) {
				free(buf);
				gerr_set(err, 0, "%s: larger than %zu bytes", path, max);
				return NULL;
			}
			cap = cap * 2 > max ? max : cap * 2;
			buf = xrealloc(buf, cap + 1);
		}
		ssize_t r = read(fd, buf + n, cap - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			int e = errno;
			free(buf);
			gerr_set(err, e, "read %s", path);
			return NULL;
		}
		if (r == 0)
			break;
		n += (size_t)r;
	}
	buf[n] = '\0';
	if (len)
		*len = n;
	return buf;
}

int parse_decimal(const char *s, size_t n, unsigned long max, unsigned long *out)
{
	unsigned long v = 0;
	/* 19 digits always fit in 64 bits, so the loop cannot overflow. */
	if (n == 0 || n > 19)
		return -1;
	for (size_t i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		v = v * 10 + (unsigned long)(s[i] - '0');
	}
	if (v > max)
		return -1;
	*out = v;
	return 0;
}

int write_all(int fd, const void *buf, size_t n)
{
	const char *p = buf;
	while (n > 0) {
		ssize_t w = write(fd, p, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return -1;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

void cleanup_fdp(int *fd)
{
	if (*fd >= 0) {
		int e = errno;
		close(*fd);
		errno = e;
	}
}

void cleanup_freep(void *p)
{
	free(*(void **)p);
}
