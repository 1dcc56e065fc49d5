/* base/check.c — printing the verdicts of `gpurun doctor`.  The checks live
 * where their knowledge lives (ns/doctor.c, gpu/doctor.c, rootfs/cache.c);
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
	va_start(ap, fmt);
	printf("%s  %s: ", tags[level], name);
	vprintf(fmt, ap);
	putchar('\n');
	va_end(ap);
	fflush(stdout);
}
