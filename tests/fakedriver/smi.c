/* tests/fakedriver/smi.c — a fake nvidia-smi.
 *
 * Like the real one it is dynamically linked and loads NVML by SONAME,
 * dlopen("libnvidia-ml.so.1"), through the dynamic loader: inside a
 * container it works only when the injected library is known to the
 * loader, i.e. after ldconfig ran (or with LD_LIBRARY_PATH).  Output and
 * exit codes follow the real tool:
 *   nvidia-smi -L    "GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-...)"
 *   nvidia-smi       a short summary with driver/CUDA versions, bus ids
 *                    and minors (the fake's own layout)
 *   12: libnvidia-ml.so not found, 9: driver not reachable, 6: no GPU. */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

typedef int (*init_fn)(void);
typedef int (*count_fn)(unsigned *);
typedef int (*handle_fn)(unsigned, void **);
typedef int (*str_fn)(void *, char *, unsigned);
typedef int (*uint_fn)(void *, unsigned *);
typedef int (*sysstr_fn)(char *, unsigned);
typedef int (*sysint_fn)(int *);

struct nvml {
	init_fn init;
	count_fn count;
	handle_fn handle;
	str_fn name, uuid;
	uint_fn minor;
	sysstr_fn driver;
	sysint_fn cuda;
};

static void *sym(void *h, const char *name, int *missing)
{
	void *p = dlsym(h, name);
	if (!p)
		*missing = 1;
	return p;
}

int main(int argc, char **argv)
{
	int list = argc > 1 && !strcmp(argv[1], "-L");
	if (argc > 2 || (argc == 2 && !list)) {
		fprintf(stderr, "usage: nvidia-smi [-L]\n");
		return 2;
	}
	void *h = dlopen("libnvidia-ml.so.1", RTLD_NOW);
	if (!h) {
		printf("NVIDIA-SMI couldn't find libnvidia-ml.so library in your system. Please make sure "
		       "that the NVIDIA Display Driver is properly installed and present in your system.\n"
		       "Please also try adding directory that contains libnvidia-ml.so to your system PATH.\n");
		return 12;
	}
	int missing = 0;
	struct nvml n = {
		.init = (init_fn)sym(h, "nvmlInit_v2", &missing),
		.count = (count_fn)sym(h, "nvmlDeviceGetCount_v2", &missing),
		.handle = (handle_fn)sym(h, "nvmlDeviceGetHandleByIndex_v2", &missing),
		.name = (str_fn)sym(h, "nvmlDeviceGetName", &missing),
		.uuid = (str_fn)sym(h, "nvmlDeviceGetUUID", &missing),
		.minor = (uint_fn)sym(h, "nvmlDeviceGetMinorNumber", &missing),
		.driver = (sysstr_fn)sym(h, "nvmlSystemGetDriverVersion", &missing),
		.cuda = (sysint_fn)sym(h, "nvmlSystemGetCudaDriverVersion", &missing),
	};
	if (missing) {
		printf("Failed to initialize NVML: Function Not Found\n");
		return 13;
	}
	if (n.init() != 0) {
		printf("NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. "
		       "Make sure that the latest NVIDIA driver is installed and running.\n\n");
		return 9;
	}
	unsigned count = 0;
	if (n.count(&count) != 0 || count == 0) {
		printf("No devices were found\n");
		return 6;
	}
	if (!list) {
		char ver[32] = "";
		int cuda = 0;
		n.driver(ver, sizeof ver);
		n.cuda(&cuda);
		printf("NVIDIA-SMI %s    Driver Version: %s    CUDA Version: %d.%d\n", ver, ver, cuda / 1000,
		       cuda % 1000 / 10);
	}
	for (unsigned i = 0; i < count; i++) {
		void *d;
		char name[96] = "", uuid[96] = "";
		unsigned minor = 0;
		if (n.handle(i, &d) != 0 || n.name(d, name, sizeof name) != 0 || n.uuid(d, uuid, sizeof uuid) != 0 ||
		    n.minor(d, &minor) != 0) {
			printf("Unable to determine the device handle for GPU%u: Unknown Error\n", i);
			return 255;
		}
		if (list)
			printf("GPU %u: %s (UUID: %s)\n", i, name, uuid);
		else
			printf("GPU %u: %s  minor %u  %s\n", i, name, minor, uuid);
	}
	return 0;
}
