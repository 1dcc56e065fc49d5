/* base/str.c — string buffers and vectors, the shell quoting of the
 * teaching view, and the one decimal parser.  See base.h. */
#include "base.h"

#include <stdio.h>
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

/* The length of the character at s when a terminal shows it as itself: a
 * printable ASCII byte or a well-formed UTF-8 sequence that is not a C1
 * control; 0 for anything a terminal could act on (C0 and C1 controls, DEL,
 * and bytes that are not valid UTF-8, which an 8-bit terminal reads as C1). */
static size_t visible_len(const unsigned char *s)
{
	if (s[0] >= 0x20 && s[0] < 0x7f)
		return 1;
	if (s[0] < 0xc2 || s[0] > 0xf4)
		return 0;
	size_t n = s[0] >= 0xf0 ? 4 : s[0] >= 0xe0 ? 3 : 2;
	for (size_t i = 1; i < n; i++)
		if ((s[i] & 0xc0) != 0x80) /* also stops at the NUL */
			return 0;
	if ((n == 2 && s[0] == 0xc2 && s[1] < 0xa0) || (n == 3 && s[0] == 0xe0 && s[1] < 0xa0) ||
	    (n == 3 && s[0] == 0xed && s[1] >= 0xa0) || (n == 4 && s[0] == 0xf0 && s[1] < 0x90) ||
	    (n == 4 && s[0] == 0xf4 && s[1] >= 0x90))
		return 0; /* C1 controls, overlong forms, surrogates, past U+10FFFF */
	return n;
}

static void octal(struct sbuf *b, const unsigned char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		sbuf_printf(b, "\\%03o", s[i]);
}

/* Single quotes keep every byte but the quote itself, so they can never be
 * ended from inside; what a terminal would act on is written as
 * "$(printf '\ooo')" instead, which dash, bash and busybox sh all turn back
 * into the same bytes.  Command substitution drops trailing newlines, so a
 * newline inside such a run takes the next character into the same printf;
 * only newlines that end the whole string stay raw, inside the quotes (or,
 * for a comment or message line, are shown as printf too). */
static void shquote(struct sbuf *b, const char *str, int one_line)
{
	static const char safe[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
				   "0123456789@%+=:,./-_";
	const unsigned char *s = (const unsigned char *)str;
	if (*s && strspn(str, safe) == strlen(str)) {
		sbuf_puts(b, str);
		return;
	}
	if (!*s) {
		sbuf_puts(b, "''");
		return;
	}
	int in_quote = 0;
	while (*s) {
		size_t n = visible_len(s);
		if (n && *s == '\'') {
			sbuf_puts(b, in_quote ? "'\\'" : "\\'");
			in_quote = 0;
			s++;
			continue;
		}
		if (n) {
			if (!in_quote)
				sbuf_add(b, "'", 1);
			in_quote = 1;
			sbuf_add(b, (const char *)s, n);
			s += n;
			continue;
		}
		const unsigned char *end = s;
		while (*end && !visible_len(end))
			end++;
		size_t tail = 0; /* newlines that end the string */
		if (!*end)
			while (end - tail > s && end[-1 - (ptrdiff_t)tail] == '\n')
				tail++;
		if (one_line)
			tail = 0;
		if (in_quote)
			sbuf_add(b, "'", 1);
		in_quote = 0;
		if (end - tail > s) {
			sbuf_puts(b, "\"$(printf '");
			octal(b, s, (size_t)(end - tail - s));
			if (end[-1] == '\n' && *end) {
				size_t m = visible_len(end);
				octal(b, end, m);
				end += m;
			}
			sbuf_puts(b, "')\"");
		}
		if (tail) {
			sbuf_add(b, "'", 1);
			for (size_t i = 0; i < tail; i++)
				sbuf_add(b, "\n", 1);
			sbuf_add(b, "'", 1);
		}
		s = end;
	}
	if (in_quote)
		sbuf_add(b, "'", 1);
}

void sbuf_shquote(struct sbuf *b, const char *s)
{
	shquote(b, s, 0);
}

void sbuf_showquote(struct sbuf *b, const char *s)
{
	shquote(b, s, 1);
}

void sbuf_add_visible(struct sbuf *b, const char *str)
{
	const unsigned char *s = (const unsigned char *)str;
	while (*s) {
		size_t n = visible_len(s);
		if (n) {
			sbuf_add(b, (const char *)s, n);
			s += n;
		} else {
			sbuf_printf(b, "\\%03o", *s++);
		}
	}
}

char *xvisible(const char *s)
{
	struct sbuf b = {0};
	sbuf_add_visible(&b, s);
	return b.s ? b.s : xstrdup("");
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

const char *str_after(const char *s, const char *prefix)
{
	size_t n = strlen(prefix);
	return s && !strncmp(s, prefix, n) ? s + n : NULL;
}

void size_human(char *buf, size_t cap, unsigned long long b)
{
	static const char *const units[] = {"B", "kB", "MB", "GB", "TB"};
	double x = (double)b;
	size_t u = 0;
	while (x >= 1000 && u + 1 < COUNT_OF(units)) {
		x /= 1000;
		u++;
	}
	snprintf(buf, cap, u ? "%.1f%s" : "%.0f%s", x, units[u]);
}
