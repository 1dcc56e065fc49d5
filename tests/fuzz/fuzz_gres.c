/* tests/fuzz/fuzz_gres.c — the Slurm parsers of gpu/slurm.c on arbitrary
 * bytes: gres.conf text (by length, not NUL-terminated, as read from a
 * file), and the first line as a SLURM_STEP_GPUS list, a host list and a
 * File= list.  Host lists with ranges expand to many names: every
 * expansion must stay within gres.conf's file limit. */
#include <stdlib.h>
#include <string.h>

#include "../../gpu/gpu_int.h"

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
	char *buf = malloc(size ? size : 1);
	memcpy(buf, data, size);
	struct strv files = {0};
	struct gerr err = {0};
	int r = slurm_gres_parse(buf, size, "n1", &files, &err);
	if (r < 0 ? !err.msg[0] : files.n > 1024 || (r == 0 && files.n))
		abort();
	for (size_t i = 0; i < files.n; i++)
		if (!files.v[i] || !files.v[i][0])
			abort();
	strv_free(&files);
	free(buf);

	size_t n = strnlen((const char *)data, size);
	char *line = malloc(n + 1);
	memcpy(line, data, n);
	line[n] = '\0';
	line[strcspn(line, "\n")] = '\0';

	unsigned idx[GPU_MAX];
	size_t nidx;
	if (slurm_parse_indexes(line, idx, GPU_MAX, &nidx) == 0 && nidx > GPU_MAX)
		abort();
	int m = slurm_hostlist_match(line, "n1");
	if (m < -1 || m > 1)
		abort();
	struct strv v = {0};
	if (slurm_expand_files(line, &v) == 0 && v.n > 1024)
		abort();
	strv_free(&v);
	free(line);
	return 0;
}
