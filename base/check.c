/* base/check.c — printing the verdicts of `gpurun doctor`.  The checks live
 * where their knowledge lives (ns/doctor.c, gpu/doctor.c, rootfs/cachedoctor.c);
 * this is only the shared line format and the tally that sets the exit
 * status. */
#include "base.h"

#include <stdio.h>

void check_say(struct checks *ck, enum check_level level, const char *name, const char *fmt, ...)
{
	static const char *const tags[] = {"ok  ", "warn", "FAIL"};
	if (level == CHECK_FAIL)
		ck->failed++;
	else if (level == CHECK_WARN)
		ck->warned++;
	va_list ap;
	size_t n;
	va_start(ap, fmt);
	_cleanup_free_ char *text = xvasprintf(&n, fmt, ap);
	va_end(ap);
	/* The text names driver files, CDI specs and cached images. */
	struct sbuf line = {0};
	sbuf_printf(&line, "%s  %s: ", tags[level], name);
	sbuf_add_visible(&line, text);
	puts(line.s);
	sbuf_free(&line);
	fflush(stdout);
}
