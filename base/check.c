/* base/check.c — printing the verdicts of `gpurun doctor`.  The checks live
 * where their knowledge lives (ns/doctor.c, gpu/doctor.c, rootfs/cache/cachedoctor.c);
 * this is only the shared line format and the tally that sets the exit
 * status (or, for --json, the list base/json.c prints). */
#include "base.h"

#include <stdio.h>
#include <stdlib.h>

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
	if (ck->collect) {
		ck->items = xrealloc(ck->items, (ck->nitems + 1) * sizeof *ck->items);
		ck->items[ck->nitems++] = (struct check_item){level, xstrdup(name), text};
		text = NULL;
		return;
	}
	/* The text names driver files, CDI specs and cached images. */
	struct sbuf line = {0};
	sbuf_printf(&line, "%s  %s: ", tags[level], name);
	sbuf_add_visible(&line, text);
	puts(line.s);
	sbuf_free(&line);
	fflush(stdout);
}

void checks_free(struct checks *ck)
{
	for (size_t i = 0; i < ck->nitems; i++) {
		free(ck->items[i].name);
		free(ck->items[i].text);
	}
	free(ck->items);
	ck->items = NULL;
	ck->nitems = 0;
}

int checks_report(struct checks *ck, struct gerr *err)
{
	if (ck->collect) {
		if (checks_print_json(ck, err) < 0)
			return -1;
	} else {
		printf("%u failed, %u warning%s\n", ck->failed, ck->warned, ck->warned == 1 ? "" : "s");
	}
	int failed = ck->failed != 0;
	checks_free(ck);
	return failed;
}
