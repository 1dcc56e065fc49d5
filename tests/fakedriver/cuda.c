/* tests/fakedriver/cuda.c — a fake libcuda.so: the entry points gpurun
 * (cudaver.c, `gpurun doctor --gpus`) and simple programs use.
 *
 * cuDriverGetVersion() answers without a GPU, as the real one does.  The
 * GPUs are the /dev/nvidia<N> character nodes under the root: cuInit()
 * succeeds when /dev/nvidiactl and at least one of them are there (inside
 * a container: what gpurun injected), else it reports CUDA_ERROR_NO_DEVICE;
 * cuDeviceGetCount() counts them.  When <root>/tmp/fake-cuda-fail exists,
 * cuInit() fails with CUDA_ERROR_UNKNOWN, as on a host whose driver does
 * not answer (a file, since gpurun's helper clears the environment).
 * <root> is FAKE_NVML_ROOT, as for the fake NVML, default "". */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fake.h"

#define CUDA_SUCCESS 0
#define CUDA_ERROR_INVALID_VALUE 1
#define CUDA_ERROR_NOT_INITIALIZED 3
#define CUDA_ERROR_NO_DEVICE 100
#define CUDA_ERROR_UNKNOWN 999

int cuDriverGetVersion(int *version);
int cuInit(unsigned int flags);
int cuDeviceGetCount(int *count);

static int initialized, ndevices;

static const char *root(void)
{
	const char *r = getenv("FAKE_NVML_ROOT");
	return r ? r : "";
}

static int is_chr(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0 && S_ISCHR(st.st_mode);
}

/* The /dev/nvidia<digits> character nodes. */
static int count_gpus(void)
{
	char dir[512], node[1024];
	snprintf(dir, sizeof dir, "%s/dev", root());
	DIR *d = opendir(dir);
	struct dirent *de;
	int n = 0;
	while (d && (de = readdir(d))) {
		const char *p = de->d_name;
		if (strncmp(p, "nvidia", 6) || !p[6] || strspn(p + 6, "0123456789") != strlen(p + 6))
			continue;
		snprintf(node, sizeof node, "%s/%s", dir, p);
		n += is_chr(node);
	}
	if (d)
		closedir(d);
	return n;
}

int cuDriverGetVersion(int *version)
{
	if (!version)
		return CUDA_ERROR_INVALID_VALUE;
	*version = FAKE_CUDA_VERSION;
	return CUDA_SUCCESS;
}

int cuInit(unsigned int flags)
{
	char path[512];
	struct stat st;
	if (flags)
		return CUDA_ERROR_INVALID_VALUE;
	snprintf(path, sizeof path, "%s/tmp/fake-cuda-fail", root());
	if (stat(path, &st) == 0)
		return CUDA_ERROR_UNKNOWN;
	snprintf(path, sizeof path, "%s/dev/nvidiactl", root());
	ndevices = is_chr(path) ? count_gpus() : 0;
	if (!ndevices)
		return CUDA_ERROR_NO_DEVICE;
	initialized = 1;
	return CUDA_SUCCESS;
}

int cuDeviceGetCount(int *count)
{
	if (!count)
		return CUDA_ERROR_INVALID_VALUE;
	if (!initialized)
		return CUDA_ERROR_NOT_INITIALIZED;
	*count = ndevices;
	return CUDA_SUCCESS;
}
