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
 * <root> is FAKE_NVML_ROOT, as for the fake NVML, default "".
 *
 * For gpurun-smoke (gpu/probe/smoke.c) it also has the driver API of one
 * kernel launch: device i is the i-th <root>/proc/driver/nvidia/gpus/<bus>
 * in bus order (inside a container: the selected GPUs), cuModuleLoadData
 * accepts PTX text with a ".entry smoke", whose launch "runs" by writing
 * out[i] = 2*i in host memory, except on a GPU whose gpus/<bus> directory
 * holds fake-smoke-kernel, where out[7] comes back wrong.
 *
 * A GPU that hangs, for gpurun-smoke's deadline: with fake-smoke-hang in
 * its gpus/<bus> directory, cuCtxSynchronize (waiting for the kernel) never
 * returns on that GPU; with fake-smoke-hang-init, cuInit never returns
 * while that GPU is visible.  The hung process names itself
 * "fake-cuda-hang" (its comm), so that a test finds it to freeze it into
 * the uninterruptible sleep of a GPU stuck in the driver. */
#include <ctype.h>
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fake.h"

#define CUDA_SUCCESS 0
#define CUDA_ERROR_INVALID_VALUE 1
#define CUDA_ERROR_OUT_OF_MEMORY 2
#define CUDA_ERROR_NOT_INITIALIZED 3
#define CUDA_ERROR_INVALID_DEVICE 101
#define CUDA_ERROR_INVALID_CONTEXT 201
#define CUDA_ERROR_INVALID_PTX 218
#define CUDA_ERROR_NOT_FOUND 500
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

static void load_buses(void);
static char buses[64][32];
static int nbuses;

/* Is MARKER in the gpus/<bus> directory of a visible GPU (bus NULL: any)? */
static int bus_marked(const char *bus, const char *marker)
{
	char path[2200];
	struct stat st;
	for (int i = 0; i < nbuses; i++) {
		if (bus && strcmp(bus, buses[i]))
			continue;
		snprintf(path, sizeof path, "%s/proc/driver/nvidia/gpus/%s/%s", root(), buses[i], marker);
		if (stat(path, &st) == 0)
			return 1;
	}
	return 0;
}

/* What a wedged GPU does to its caller: nothing, ever. */
static void hang(void)
{
	prctl(PR_SET_NAME, "fake-cuda-hang");
	for (;;)
		pause();
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
	load_buses();
	if (bus_marked(NULL, "fake-smoke-hang-init"))
		hang();
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

/* The gpus/<bus> directories in bus order (the names sort so). */

static int by_name(const void *a, const void *b)
{
	return strcmp(a, b);
}

static void load_buses(void)
{
	char dir[512];
	snprintf(dir, sizeof dir, "%s/proc/driver/nvidia/gpus", root());
	DIR *d = opendir(dir);
	struct dirent *de;
	nbuses = 0;
	while (d && (de = readdir(d)) && nbuses < 64)
		if (de->d_name[0] != '.')
			snprintf(buses[nbuses++], sizeof buses[0], "%.31s", de->d_name);
	if (d)
		closedir(d);
	qsort(buses, (size_t)nbuses, sizeof buses[0], by_name);
}

static int bad_device(int dev)
{
	if (!initialized)
		return CUDA_ERROR_NOT_INITIALIZED;
	if (nbuses == 0)
		load_buses();
	return dev < 0 || dev >= ndevices || dev >= nbuses ? CUDA_ERROR_INVALID_DEVICE : CUDA_SUCCESS;
}

int cuGetErrorName(int r, const char **s);
int cuDeviceGet(int *dev, int ordinal);
int cuDeviceGetName(char *name, int len, int dev);
int cuDeviceGetPCIBusId(char *bus, int len, int dev);
int cuCtxCreate_v2(void **ctx, unsigned flags, int dev);
int cuCtxDestroy_v2(void *ctx);
int cuModuleLoadData(void **mod, const void *image);
int cuModuleGetFunction(void **fn, void *mod, const char *name);
int cuMemAlloc_v2(unsigned long long *p, size_t n);
int cuMemFree_v2(unsigned long long p);
int cuLaunchKernel(void *fn, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
		   unsigned shared, void *stream, void **params, void **extra);
int cuCtxSynchronize(void);
int cuMemcpyDtoH_v2(void *dst, unsigned long long src, size_t n);

int cuGetErrorName(int r, const char **s)
{
	switch (r) {
	case CUDA_SUCCESS: *s = "CUDA_SUCCESS"; return 0;
	case CUDA_ERROR_NO_DEVICE: *s = "CUDA_ERROR_NO_DEVICE"; return 0;
	case CUDA_ERROR_INVALID_DEVICE: *s = "CUDA_ERROR_INVALID_DEVICE"; return 0;
	case CUDA_ERROR_INVALID_PTX: *s = "CUDA_ERROR_INVALID_PTX"; return 0;
	case CUDA_ERROR_UNKNOWN: *s = "CUDA_ERROR_UNKNOWN"; return 0;
	}
	return CUDA_ERROR_INVALID_VALUE;
}

static int current = -1; /* the device of the one context */

int cuDeviceGet(int *dev, int ordinal)
{
	int r = bad_device(ordinal);
	if (r == CUDA_SUCCESS)
		*dev = ordinal;
	return r;
}

int cuDeviceGetName(char *name, int len, int dev)
{
	int r = bad_device(dev);
	if (r == CUDA_SUCCESS)
		snprintf(name, (size_t)len, "Fake GPU %s", buses[dev]);
	return r;
}

int cuDeviceGetPCIBusId(char *bus, int len, int dev)
{
	int r = bad_device(dev);
	if (r == CUDA_SUCCESS) { /* the driver writes it upper case */
		snprintf(bus, (size_t)len, "%s", buses[dev]);
		for (char *p = bus; *p; p++)
			*p = (char)toupper((unsigned char)*p);
	}
	return r;
}

int cuCtxCreate_v2(void **ctx, unsigned flags, int dev)
{
	int r = bad_device(dev);
	(void)flags;
	if (r == CUDA_SUCCESS) {
		current = dev;
		*ctx = &current;
	}
	return r;
}

int cuCtxDestroy_v2(void *ctx)
{
	(void)ctx;
	current = -1;
	return CUDA_SUCCESS;
}

static char module, function;

int cuModuleLoadData(void **mod, const void *image)
{
	if (current < 0)
		return CUDA_ERROR_INVALID_CONTEXT;
	if (!image || !strstr(image, ".entry smoke"))
		return CUDA_ERROR_INVALID_PTX;
	*mod = &module;
	return CUDA_SUCCESS;
}

int cuModuleGetFunction(void **fn, void *mod, const char *name)
{
	if (mod != &module || strcmp(name, "smoke"))
		return CUDA_ERROR_NOT_FOUND;
	*fn = &function;
	return CUDA_SUCCESS;
}

int cuMemAlloc_v2(unsigned long long *p, size_t n)
{
	void *m = calloc(1, n);
	if (!m)
		return CUDA_ERROR_OUT_OF_MEMORY;
	*p = (uintptr_t)m;
	return CUDA_SUCCESS;
}

int cuMemFree_v2(unsigned long long p)
{
	free((void *)(uintptr_t)p);
	return CUDA_SUCCESS;
}

int cuLaunchKernel(void *fn, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
		   unsigned shared, void *stream, void **params, void **extra)
{
	(void)gy, (void)gz, (void)by, (void)bz, (void)shared, (void)stream, (void)extra;
	if (fn != &function || !params || current < 0)
		return CUDA_ERROR_INVALID_VALUE;
	unsigned long long dptr = *(unsigned long long *)params[0];
	unsigned *out = (unsigned *)(uintptr_t)dptr;
	unsigned n = *(unsigned *)params[1];
	for (unsigned i = 0; i < n && i < gx * bx; i++)
		out[i] = 2 * i;
	char marker[512];
	struct stat st;
	snprintf(marker, sizeof marker, "%s/proc/driver/nvidia/gpus/%s/fake-smoke-kernel", root(), buses[current]);
	if (n > 7 && stat(marker, &st) == 0)
		out[7] = 0;
	return CUDA_SUCCESS;
}

int cuCtxSynchronize(void)
{
	if (current < 0)
		return CUDA_ERROR_INVALID_CONTEXT;
	if (bus_marked(buses[current], "fake-smoke-hang"))
		hang();
	return CUDA_SUCCESS;
}

int cuMemcpyDtoH_v2(void *dst, unsigned long long src, size_t n)
{
	memcpy(dst, (void *)(uintptr_t)src, n);
	return CUDA_SUCCESS;
}
