/* tests/fuzz/fuzz_gpuspec.c — device specs (--gpus, NVIDIA_VISIBLE_DEVICES,
 * docker's CSV) against a fixed four-GPU table, and capability lists.
 * Input: "SPEC\nCAPS".  A selection may only name GPUs that exist. */
#include <stdlib.h>
#include <string.h>

#include "../../gpu/gpu_int.h"

static const struct gpu_dev table[] = {
	{.index = 0, .minor = 2, .busid = "00000000:3b:00.0", .uuid = "GPU-0c9c1a44-3f53-4a35-9c7e-7e0d6c1a3b3b"},
	{.index = 1, .minor = 0, .busid = "00000000:5e:00.0", .uuid = "GPU-1d2e3f40-5162-4738-89ab-cdef01234567"},
	{.index = 2, .minor = 3, .busid = "00000000:86:00.0", .uuid = "GPU-8f7e6d5c-4b3a-4291-8071-605f4e3d2c1b"},
	{.index = 3, .minor = 1, .busid = "00000000:af:00.0", .uuid = "GPU-a0b1c2d3-e4f5-4061-9728-394a5b6c7d8e"},
};

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
	char *s = malloc(size + 1);
	memcpy(s, data, size);
	s[size] = '\0';
	char *nl = strchr(s, '\n'), *caps = nl ? nl + 1 : "";
	if (nl)
		*nl = '\0';

	struct gpu_request rq;
	struct gpu_selection sel;
	struct gerr err = {0};
	if (gpu_request_parse(s, "--gpus", &rq, &err) == 0 &&
	    gpu_request_resolve(&rq, table, 4, 0, "--gpus", "/", &sel, &err) == 0) {
		for (size_t i = 4; i < GPU_MAX; i++)
			if (sel.mask[i])
				abort();
		unsigned c;
		struct gerr e2 = {0};
		(void)caps_parse(rq.caps, &c, &e2);
	}
	gpu_request_free(&rq);

	unsigned c;
	if (caps_parse(caps, &c, &err) == 0) {
		if (c & ~(unsigned)DRVCAP_ALL)
			abort();
		(void)caps_inject_flags(c);
	}
	free(s);
	return 0;
}
