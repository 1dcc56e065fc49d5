/* base/str.c — string buffers and vectors, the shell quoting of the
 * teaching view, and the one decimal parser.  See base.h. */
#include "base.h"

#include <stdlib.h>
#include <string.h>

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

void sbuf_reset(struct sbuf *b)
{
	b->len = 0;
	if (b->s)
		b->s[0] = '\0';
}

void sbuf_free(struct sbuf *b)
{
	free(b->s);
	b->s = NULL;
	b->len = b->cap = 0;
}

void strv_add(struct strv *s, char *owned)
{
	s->v = xrealloc(s->v, (s->n + 2) * sizeof *s->v);
	s->v[s->n++] = owned;
	s->v[s->n] = NULL;
}

void strv_free(struct strv *s)
{
	for (size_t i = 0; i < s->n; i++)
		free(s->v[i]);
	free(s->v);
	s->v = NULL;
	s->n = 0;
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
