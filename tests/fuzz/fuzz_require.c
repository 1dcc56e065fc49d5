/* tests/fuzz/fuzz_require.c — NVIDIA_REQUIRE_* expressions (gpu/require.c)
 * and the version comparison behind them.  Input: "EXPR\nVERSION_A\nVERSION_B". */
#include <stdlib.h>
#include <string.h>

#include "../../gpu/gpu_int.h"

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
	char *s = malloc(size + 1);
	memcpy(s, data, size);
	s[size] = '\0';
	char *a = strchr(s, '\n'), *b = NULL;
	if (a) {
		*a++ = '\0';
		b = strchr(a, '\n');
		if (b)
			*b++ = '\0';
	}

	struct gerr err = {0};
	struct req_facts full = {"12.4", "550.54.14", "9.0", "Tesla"}, none = {0};
	int valid = require_validate(s, &err) == 0;
	(void)require_uses_cuda(s);
	int r1 = require_eval(s, &full, &err), r2 = require_eval(s, &none, &err);
	/* Validity does not depend on the facts; unknown facts satisfy. */
	if ((r1 < 0) != !valid || (r2 < 0) != !valid || (valid && r2 != 1))
		abort();

	if (a && b) {
		int c1, c2;
		if (version_compare(a, b, &c1) == 0) {
			if (version_compare(b, a, &c2) != 0 || c1 != -c2)
				abort();
		}
	}
	free(s);
	return 0;
}
