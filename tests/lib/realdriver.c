/* tests/lib/realdriver.c — the probe realdriver.bats runs inside a container
 * with NVIDIA's real user-space files: it loads libcuda.so.1 and
 * libnvidia-ml.so.1 the way CUDA programs and nvidia-smi do (dlopen by
 * SONAME, through the image's loader and ld.so.cache) and prints what the
 * libraries themselves answer with no kernel driver behind them:
 *   cuDriverGetVersion=<n> cuInit=<CUresult> nvmlInit_v2=<nvmlReturn_t>
 * Exit 0 when both libraries loaded and exported those functions; 1 with
 * dlerror()'s words when one did not (a load failure). */
#include <dlfcn.h>
#include <stdio.h>

static void *sym(void *lib, const char *name)
{
	void *f = dlsym(lib, name);
	if (!f)
		fprintf(stderr, "realdriver probe: %s: %s\n", name, dlerror());
	return f;
}

int main(void)
{
	void *cuda = dlopen("libcuda.so.1", RTLD_NOW);
	if (!cuda) {
		fprintf(stderr, "realdriver probe: dlopen libcuda.so.1: %s\n", dlerror());
		return 1;
	}
	void *nvml = dlopen("libnvidia-ml.so.1", RTLD_NOW);
	if (!nvml) {
		fprintf(stderr, "realdriver probe: dlopen libnvidia-ml.so.1: %s\n", dlerror());
		return 1;
	}
	int (*get_version)(int *) = (int (*)(int *))sym(cuda, "cuDriverGetVersion");
	int (*cu_init)(unsigned) = (int (*)(unsigned))sym(cuda, "cuInit");
	int (*nvml_init)(void) = (int (*)(void))sym(nvml, "nvmlInit_v2");
	if (!get_version || !cu_init || !nvml_init)
		return 1;
	int version = -1;
	int r = get_version(&version);
	printf("cuDriverGetVersion=%d (CUresult %d) cuInit=%d nvmlInit_v2=%d\n", version, r, cu_init(0), nvml_init());
	return 0;
}
