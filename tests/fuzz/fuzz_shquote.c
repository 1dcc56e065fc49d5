/* tests/fuzz/fuzz_shquote.c — the one quoting function (base/str.c) against
 * a reader of the only forms it may write: bare safe words, '...', \' and
 * "$(printf '\ooo...')".  For any input without NUL the reader gets the same
 * bytes back; no byte a terminal acts on appears raw, except newlines that
 * end the input, inside quotes; the comment form holds no newline at all.
 * tests/quoting.bats feeds the same corpus to dash, bash and busybox sh. */
#include <stdlib.h>
#include <string.h>

#include "../../base/base.h"

/* Decode q into out (room for the worst case); -1 on any form not listed. */
static long decode(const char *q, char *out)
{
	size_t n = 0;
	while (*q) {
		if (*q == '\'') {
			const char *end = strchr(q + 1, '\'');
			if (!end)
				return -1;
			memcpy(out + n, q + 1, (size_t)(end - q - 1));
			n += (size_t)(end - q - 1);
			q = end + 1;
		} else if (q[0] == '\\' && q[1] == '\'') {
			out[n++] = '\'';
			q += 2;
		} else if (!strncmp(q, "\"$(printf '", 11)) {
			q += 11;
			while (q[0] == '\\') {
				if (q[1] < '0' || q[1] > '3' || q[2] < '0' || q[2] > '7' || q[3] < '0' || q[3] > '7')
					return -1;
				out[n++] = (char)((q[1] - '0') * 64 + (q[2] - '0') * 8 + (q[3] - '0'));
				q += 4;
			}
			if (strncmp(q, "')\"", 3))
				return -1;
			/* what command substitution would drop */
			if (n && out[n - 1] == '\n')
				return -1;
			q += 3;
		} else if (strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789@%+=:,./-_", *q)) {
			out[n++] = *q++;
		} else {
			return -1;
		}
	}
	return (long)n;
}

static int raw_control(const char *q, int allow_trailing_newlines)
{
	size_t len = strlen(q), end = len;
	if (allow_trailing_newlines && end && q[end - 1] == '\'')
		for (end--; end && q[end - 1] == '\n'; end--)
			;
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)q[i];
		if ((c < 0x20 || c == 0x7f) && !(c == '\n' && i >= end))
			return 1;
	}
	return 0;
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
	char *s = malloc(size + 1);
	memcpy(s, data, size);
	s[size] = '\0'; /* a NUL inside ends the string, as it would in argv */
	size_t len = strlen(s);

	struct sbuf b = {0};
	sbuf_shquote(&b, s);
	char *out = malloc(len + 1);
	if (decode(b.s, out) != (long)len || memcmp(out, s, len))
		abort();
	if (raw_control(b.s, 1))
		abort();
	sbuf_free(&b);

	sbuf_showquote(&b, s);
	if (strchr(b.s, '\n') || raw_control(b.s, 0))
		abort();
	sbuf_free(&b);

	sbuf_add_visible(&b, s);
	if (b.s && raw_control(b.s, 0))
		abort();
	sbuf_free(&b);
	free(out);
	free(s);
	return 0;
}
