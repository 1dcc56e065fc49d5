/* ns/trace.c — --verbose's lines on stderr, as `sh -x` shows commands. */
#include "ns.h"

#include <stdio.h>
#include <string.h>

void ns_trace(const char *text)
{
	struct sbuf b = {0};
	for (const char *line = text; line && *line;) {
		size_t n = strcspn(line, "\n");
		sbuf_puts(&b, "+ ");
		sbuf_add(&b, line, n);
		sbuf_puts(&b, "\n");
		line += n + (line[n] == '\n');
	}
	if (b.s)
		fputs(b.s, stderr);
	sbuf_free(&b);
}
