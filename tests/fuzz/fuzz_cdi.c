/* tests/fuzz/fuzz_cdi.c — CDI spec files (YAML or JSON) through the
 * parser that --device and `gpurun cdi list` read /etc/cdi with.  A spec
 * it accepts must hold what the parser promises: a valid kind, at least
 * one device, absolute container paths. */
#include <stdlib.h>
#include <string.h>

#include "../../gpu/cdi/cdi.h"

static void check_edits(const struct cdi_edits *e)
{
	for (size_t i = 0; i < e->nnodes; i++)
		if (!e->nodes[i].path || e->nodes[i].path[0] != '/')
			abort();
	for (size_t i = 0; i < e->nmounts; i++)
		if (e->mounts[i].container_path[0] != '/' || e->mounts[i].host_path[0] != '/')
			abort();
	for (size_t i = 0; i < e->nhooks; i++)
		if (e->hooks[i].path[0] != '/')
			abort();
	for (size_t i = 0; i < e->env.n; i++)
		if (!strchr(e->env.v[i], '='))
			abort();
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
	struct cdi_spec s;
	struct gerr err = {0};
	if (cdi_parse((const char *)data, size, &s, &err) == 0) {
		char kind[512];
		const char *name;
		if (!s.ndevs || !strchr(s.kind, '/'))
			abort();
		for (size_t i = 0; i < s.ndevs; i++) {
			char *q = malloc(strlen(s.kind) + strlen(s.devs[i].name) + 2);
			strcpy(q, s.kind);
			strcat(q, "=");
			strcat(q, s.devs[i].name);
			if (cdi_split_name(q, kind, sizeof kind, &name) < 0)
				abort();
			free(q);
			check_edits(&s.devs[i].edits);
		}
		check_edits(&s.edits);
	} else if (!err.msg[0]) {
		abort();
	}
	cdi_spec_free(&s);
	return 0;
}
