/* tests/fakedriver/cuda.c — a fake libcuda.so: the two entry points gpurun
 * and simple programs use.  cuDriverGetVersion() answers without a GPU, as
 * the real one does; cuInit() reports "no device" (CUDA_ERROR_NO_DEVICE). */
#include "fake.h"

int cuDriverGetVersion(int *version);
int cuInit(unsigned int flags);

int cuDriverGetVersion(int *version)
{
	if (!version)
		return 1; /* CUDA_ERROR_INVALID_VALUE */
	*version = FAKE_CUDA_VERSION;
	return 0;
}

int cuInit(unsigned int flags)
{
	(void)flags;
	return 100; /* CUDA_ERROR_NO_DEVICE */
}
