/* base/check.c — the verdicts of `gpurun doctor`, collected: the checks
 * live where their knowledge lives (ns/doctor.c, gpu/doctor.c,
 * rootfs/cache/cachedoctor.c) and each gives one verdict here; the tally
 * that sets the exit status is kept as they come.  Printing them is the
 * command line's (cli/doctor.c): as each comes, through ck->say, or all
 * at the end (--json). */
#include "base.h"

#include <stdlib.h>
#include <string.h>

/* Each check's stable id (docs/json.md): its name is for people and may
 * change with them; the id is for programs and does not. */
static const struct {
	const char *name, *id;
} check_ids[] = {
	{"cache", "cache"},
	{"user namespaces", "userns"},
	{"namespaces", "namespaces"},
	{"/proc", "proc"},
	{"overlayfs", "overlayfs"},
	{"NVIDIA driver", "driver"},
	{"NVIDIA devices", "devices"},
	{"nvidia-uvm", "uvm"},
	{"nvidia-persistenced", "persistenced"},
	{"ld.so.cache", "ldcache"},
	{"driver versions", "versions"},
	{"CDI specs", "cdi"},
	{"GPUs", "gpus"},
	{"NVML", "nvml"},
	{"libcuda", "libcuda"},
};

const char *check_id(const char *name)
{
	for (size_t i = 0; i < COUNT_OF(check_ids); i++)
		if (!strcmp(check_ids[i].name, name))
			return check_ids[i].id;
	return "other";
}

void check_say(struct checks *ck, enum check_level level, const char *name, const char *fmt, ...)
{
	if (level == CHECK_FAIL)
		ck->failed++;
	else if (level == CHECK_WARN)
		ck->warned++;
	va_list ap;
	size_t n;
	va_start(ap, fmt);
	_cleanup_free_ char *text = xvasprintf(&n, fmt, ap);
	va_end(ap);
	struct check_item it = {level, (char *)name, text};
	if (ck->say) {
		ck->say(&it);
		return;
	}
	ck->items = xrealloc(ck->items, (ck->nitems + 1) * sizeof *ck->items);
	ck->items[ck->nitems++] = (struct check_item){level, xstrdup(name), text};
	text = NULL;
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
