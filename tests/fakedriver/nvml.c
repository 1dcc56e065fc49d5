/* tests/fakedriver/nvml.c — a fake libnvidia-ml.so.1 for GPU-less tests.
 *
 * It sees GPUs the way the real NVML does inside a container: a GPU exists
 * when its /proc/driver/nvidia/gpus/<bus>/information is visible AND its
 * /dev/nvidia<minor> character node is present.  Inside a gpurun container
 * both are what gpurun injected, so `nvidia-smi -L` lists exactly the
 * selected GPUs.  Indexes are PCI bus order, as NVML numbers them.
 * FAKE_NVML_ROOT (default "") prefixes both paths, for checks on the host.
 *
 * MIG: a GPU is in MIG mode when proc/driver/nvidia/capabilities/gpu<minor>/mig
 * exists, and its MIG devices are the gi<G>/ci<C> directories there, indexed
 * in the reverse of gpurun's order (so a match by position would show).
 * A MIG UUID is derived from the parent's: "MIG-" + the parent's UUID
 * without "GPU-", its last four hex digits replaced by GI and CI as %02x
 * (GPU-a1000000-...-444455556666, GI 2, CI 1: MIG-a1000000-...-444455550201).
 * When <root>/tmp/fake-nvml-log-on exists, nvmlInit_v2 appends to
 * <root>/tmp/fake-nvml.log one line: "env=<number of environment
 * variables> uid=<uid> cwd=<cwd> root=<1 when /.complete, the fake driver
 * root's marker, is at />", so tests see how gpurun's helper runs it.
 * When <root>/tmp/fake-nvml-fail exists, nvmlInit_v2 fails with
 * NVML_ERROR_UNKNOWN, as a driver whose kernel side does not answer: a
 * file, not a variable, because gpurun's helper runs NVML with an empty
 * environment, chrooted in the driver root.
 *
 * Health, for gpurun-smoke (gpu/probe/smoke.c): every GPU is healthy, with
 * persistence mode on and no NVSwitch fabric, unless its
 * <root>/proc/driver/nvidia/gpus/<bus>/ (inside a container: what gpurun
 * bound there) holds a marker: fake-smoke-ecc (3 volatile uncorrected ECC
 * errors), fake-smoke-remap (a row remapping failure), fake-smoke-persistence
 * (persistence mode off), fake-smoke-fabric (an NVSwitch GPU the fabric
 * manager has not registered), fake-smoke-xid holding a number (NVML's
 * Xid event of that number, delivered by the first nvmlEventSetWait_v2
 * after the GPU was registered in the set: an Xid during the run),
 * fake-smoke-xid-unsupported (nvmlDeviceGetSupportedEventTypes says
 * NVML_ERROR_NOT_SUPPORTED, as on GPUs without Xid events).
 *
 * The ABI is NVML's for the subset nvidia-smi -L and nvidia-container-cli
 * use (names, argument types, return codes, nvmlPciInfo_t v3 layout), and
 * the Xid events gpurun-smoke watches (nvmlEventData_t as nvml.h has it). */
#include <ctype.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "fake.h"

typedef int nvmlReturn_t;
#define NVML_SUCCESS 0
#define NVML_ERROR_UNINITIALIZED 1
#define NVML_ERROR_INVALID_ARGUMENT 2
#define NVML_ERROR_NOT_SUPPORTED 3
#define NVML_ERROR_NOT_FOUND 6
#define NVML_ERROR_INSUFFICIENT_SIZE 7
#define NVML_ERROR_DRIVER_NOT_LOADED 9
#define NVML_ERROR_TIMEOUT 10
#define NVML_ERROR_UNKNOWN 999

#define MAX_GPUS 64
#define MAX_MIGS 512
#define NVML_DEVICE_MIG_ENABLE 1

struct nvmlDevice_st {
	unsigned index, minor, domain, bus, device;
	char busid[32]; /* "00000000:3b:00.0" */
	char uuid[96];
	char name[96];
	struct nvmlDevice_st *parent; /* a MIG device's GPU, else NULL */
	unsigned gi, ci;
};
typedef struct nvmlDevice_st *nvmlDevice_t;

typedef struct {
	char busIdLegacy[16];
	unsigned int domain;
	unsigned int bus;
	unsigned int device;
	unsigned int pciDeviceId;
	unsigned int pciSubSystemId;
	char busId[32];
} nvmlPciInfo_t;

static struct nvmlDevice_st gpus[MAX_GPUS];
static unsigned ngpus;
static struct nvmlDevice_st migs[MAX_MIGS];
static unsigned nmigs;
static int initialized;
static char driver_version[32];

#define EXPORT __attribute__((visibility("default")))

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

static void trim_copy(char *dst, size_t cap, const char *v)
{
	while (*v == ' ' || *v == '\t')
		v++;
	snprintf(dst, cap, "%s", v);
	size_t n = strlen(dst);
	while (n && isspace((unsigned char)dst[n - 1]))
		dst[--n] = '\0';
}

static int read_information(const char *dir, struct nvmlDevice_st *g)
{
	char path[1024], line[256];
	int have_minor = 0;
	snprintf(path, sizeof path, "%s/information", dir);
	FILE *f = fopen(path, "re");
	if (!f)
		return 0;
	memset(g, 0, sizeof *g);
	while (fgets(line, sizeof line, f)) {
		char *colon = strchr(line, ':');
		if (!colon)
			continue;
		*colon = '\0';
		const char *v = colon + 1;
		if (!strcmp(line, "Model"))
			trim_copy(g->name, sizeof g->name, v);
		else if (!strcmp(line, "GPU UUID"))
			trim_copy(g->uuid, sizeof g->uuid, v);
		else if (!strcmp(line, "Device Minor"))
			have_minor = sscanf(v, "%u", &g->minor) == 1;
		else if (!strcmp(line, "Bus Location"))
			sscanf(v, " %x:%x:%x", &g->domain, &g->bus, &g->device);
	}
	fclose(f);
	snprintf(g->busid, sizeof g->busid, "%08x:%02x:%02x.0", g->domain, g->bus, g->device);
	return have_minor;
}

static int by_bus(const void *a, const void *b)
{
	return strcmp(((const struct nvmlDevice_st *)a)->busid, ((const struct nvmlDevice_st *)b)->busid);
}

static int load(void)
{
	char path[512];
	snprintf(path, sizeof path, "%s/proc/driver/nvidia/version", root());
	FILE *f = fopen(path, "re");
	if (!f)
		return NVML_ERROR_DRIVER_NOT_LOADED;
	char line[256] = "";
	if (!fgets(line, sizeof line, f))
		line[0] = '\0';
	fclose(f);
	/* The first token that looks like 550.54.14. */
	driver_version[0] = '\0';
	for (char *save = NULL, *t = strtok_r(line, " \t\n", &save); t; t = strtok_r(NULL, " \t\n", &save))
		if (isdigit((unsigned char)t[0]) && strchr(t, '.')) {
			snprintf(driver_version, sizeof driver_version, "%s", t);
			break;
		}
	snprintf(path, sizeof path, "%s/dev/nvidiactl", root());
	if (!is_chr(path))
		return NVML_ERROR_DRIVER_NOT_LOADED;

	ngpus = 0;
	snprintf(path, sizeof path, "%s/proc/driver/nvidia/gpus", root());
	DIR *d = opendir(path);
	struct dirent *de;
	while (d && (de = readdir(d)) && ngpus < MAX_GPUS) {
		char dir[768], node[512];
		if (de->d_name[0] == '.')
			continue;
		snprintf(dir, sizeof dir, "%s/%s", path, de->d_name);
		if (!read_information(dir, &gpus[ngpus]))
			continue;
		snprintf(node, sizeof node, "%s/dev/nvidia%u", root(), gpus[ngpus].minor);
		if (is_chr(node))
			ngpus++;
	}
	if (d)
		closedir(d);
	qsort(gpus, ngpus, sizeof gpus[0], by_bus);
	for (unsigned i = 0; i < ngpus; i++)
		gpus[i].index = i;
	return NVML_SUCCESS;
}

extern char **environ;

/* See the top: how the caller runs us, when a test asks. */
static void log_caller(void)
{
	char path[512], cwd[512];
	struct stat st;
	snprintf(path, sizeof path, "%s/tmp/fake-nvml-log-on", root());
	if (stat(path, &st) != 0)
		return;
	size_t n = 0;
	while (environ && environ[n])
		n++;
	if (!getcwd(cwd, sizeof cwd))
		snprintf(cwd, sizeof cwd, "?");
	snprintf(path, sizeof path, "%s/tmp/fake-nvml.log", root());
	FILE *f = fopen(path, "ae");
	if (!f)
		return;
	fprintf(f, "env=%zu uid=%u cwd=%s root=%d\n", n, (unsigned)getuid(), cwd, stat("/.complete", &st) == 0);
	fclose(f);
}

static int by_id(const void *a, const void *b)
{
	const struct nvmlDevice_st *x = a, *y = b;
	return x->gi != y->gi ? (x->gi > y->gi ? -1 : 1) : (x->ci > y->ci ? -1 : x->ci < y->ci);
}

/* The gi<G>/ci<C> directories of one GPU's MIG capabilities. */
static void load_migs(struct nvmlDevice_st *g)
{
	char dir[512];
	snprintf(dir, sizeof dir, "%s/proc/driver/nvidia/capabilities/gpu%u/mig", root(), g->minor);
	DIR *d = opendir(dir);
	struct dirent *de;
	unsigned first = nmigs;
	while (d && (de = readdir(d))) {
		unsigned gi;
		char gidir[800];
		if (sscanf(de->d_name, "gi%u", &gi) != 1)
			continue;
		snprintf(gidir, sizeof gidir, "%s/%s", dir, de->d_name);
		DIR *c = opendir(gidir);
		struct dirent *ce;
		while (c && (ce = readdir(c)) && nmigs < MAX_MIGS) {
			unsigned ci;
			if (sscanf(ce->d_name, "ci%u", &ci) != 1)
				continue;
			struct nvmlDevice_st *m = &migs[nmigs++];
			*m = *g;
			m->parent = g;
			m->gi = gi;
			m->ci = ci;
			size_t ul = strlen(g->uuid);
			snprintf(m->uuid, sizeof m->uuid, "MIG-%.*s%02x%02x", ul > 8 ? (int)(ul - 8) : 0,
				 ul > 8 ? g->uuid + 4 : "", gi & 0xff, ci & 0xff);
		}
		if (c)
			closedir(c);
	}
	if (d)
		closedir(d);
	qsort(migs + first, nmigs - first, sizeof migs[0], by_id);
}

static int mig_mode(const struct nvmlDevice_st *g)
{
	char dir[512];
	struct stat st;
	snprintf(dir, sizeof dir, "%s/proc/driver/nvidia/capabilities/gpu%u/mig", root(), g->minor);
	return stat(dir, &st) == 0 && S_ISDIR(st.st_mode);
}

EXPORT nvmlReturn_t nvmlInit_v2(void)
{
	log_caller();
	char fail[512];
	struct stat st;
	snprintf(fail, sizeof fail, "%s/tmp/fake-nvml-fail", root());
	if (stat(fail, &st) == 0)
		return NVML_ERROR_UNKNOWN;
	int r = load();
	nmigs = 0;
	for (unsigned i = 0; r == NVML_SUCCESS && i < ngpus; i++)
		load_migs(&gpus[i]);
	initialized = r == NVML_SUCCESS;
	return r;
}

EXPORT nvmlReturn_t nvmlInit(void)
{
	return nvmlInit_v2();
}

EXPORT nvmlReturn_t nvmlInitWithFlags(unsigned int flags)
{
	(void)flags;
	return nvmlInit_v2();
}

EXPORT nvmlReturn_t nvmlShutdown(void)
{
	if (!initialized)
		return NVML_ERROR_UNINITIALIZED;
	initialized = 0;
	return NVML_SUCCESS;
}

EXPORT const char *nvmlErrorString(nvmlReturn_t r)
{
	switch (r) {
	case NVML_SUCCESS: return "Success";
	case NVML_ERROR_UNINITIALIZED: return "Uninitialized";
	case NVML_ERROR_INVALID_ARGUMENT: return "Invalid Argument";
	case NVML_ERROR_NOT_SUPPORTED: return "Not Supported";
	case NVML_ERROR_NOT_FOUND: return "Not Found";
	case NVML_ERROR_INSUFFICIENT_SIZE: return "Insufficient Size";
	case NVML_ERROR_DRIVER_NOT_LOADED: return "Driver Not Loaded";
	case NVML_ERROR_TIMEOUT: return "Timeout";
	}
	return "Unknown Error";
}

static nvmlReturn_t copy_out(char *dst, unsigned len, const char *src)
{
	if (!initialized)
		return NVML_ERROR_UNINITIALIZED;
	if (!dst)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (strlen(src) + 1 > len)
		return NVML_ERROR_INSUFFICIENT_SIZE;
	memcpy(dst, src, strlen(src) + 1);
	return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlSystemGetDriverVersion(char *version, unsigned int len)
{
	return copy_out(version, len, driver_version);
}

EXPORT nvmlReturn_t nvmlSystemGetCudaDriverVersion(int *v)
{
	if (!v)
		return NVML_ERROR_INVALID_ARGUMENT;
	*v = FAKE_CUDA_VERSION;
	return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlSystemGetCudaDriverVersion_v2(int *v)
{
	return nvmlSystemGetCudaDriverVersion(v);
}

EXPORT nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *count)
{
	if (!initialized)
		return NVML_ERROR_UNINITIALIZED;
	if (!count)
		return NVML_ERROR_INVALID_ARGUMENT;
	*count = ngpus;
	return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetCount(unsigned int *count)
{
	return nvmlDeviceGetCount_v2(count);
}

EXPORT nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t *dev)
{
	if (!initialized)
		return NVML_ERROR_UNINITIALIZED;
	if (!dev || index >= ngpus)
		return NVML_ERROR_INVALID_ARGUMENT;
	*dev = &gpus[index];
	return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetHandleByIndex(unsigned int index, nvmlDevice_t *dev)
{
	return nvmlDeviceGetHandleByIndex_v2(index, dev);
}

static int valid(nvmlDevice_t d)
{
	return initialized && d >= gpus && d < gpus + ngpus;
}

static int valid_mig(nvmlDevice_t d)
{
	return initialized && d >= migs && d < migs + nmigs;
}

EXPORT nvmlReturn_t nvmlDeviceGetMigMode(nvmlDevice_t d, unsigned int *current, unsigned int *pending)
{
	if (!valid(d) || !current || !pending)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (!mig_mode(d))
		return NVML_ERROR_NOT_SUPPORTED;
	*current = *pending = NVML_DEVICE_MIG_ENABLE;
	return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetMaxMigDeviceCount(nvmlDevice_t d, unsigned int *count)
{
	if (!valid(d) || !count)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (!mig_mode(d))
		return NVML_ERROR_NOT_SUPPORTED;
	*count = 7; /* an A100's */
	return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetMigDeviceHandleByIndex(nvmlDevice_t d, unsigned int index, nvmlDevice_t *mig)
{
	if (!valid(d) || !mig)
		return NVML_ERROR_INVALID_ARGUMENT;
	unsigned k = 0;
	for (unsigned i = 0; i < nmigs; i++)
		if (migs[i].parent == d && k++ == index) {
			*mig = &migs[i];
			return NVML_SUCCESS;
		}
	return NVML_ERROR_NOT_FOUND;
}

EXPORT nvmlReturn_t nvmlDeviceGetGpuInstanceId(nvmlDevice_t d, unsigned int *id)
{
	if (!valid_mig(d) || !id)
		return NVML_ERROR_INVALID_ARGUMENT;
	*id = d->gi;
	return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetComputeInstanceId(nvmlDevice_t d, unsigned int *id)
{
	if (!valid_mig(d) || !id)
		return NVML_ERROR_INVALID_ARGUMENT;
	*id = d->ci;
	return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t d, char *name, unsigned int len)
{
	return valid(d) ? copy_out(name, len, d->name) : NVML_ERROR_INVALID_ARGUMENT;
}

EXPORT nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t d, char *uuid, unsigned int len)
{
	return valid(d) || valid_mig(d) ? copy_out(uuid, len, d->uuid) : NVML_ERROR_INVALID_ARGUMENT;
}

EXPORT nvmlReturn_t nvmlDeviceGetMinorNumber(nvmlDevice_t d, unsigned int *minor)
{
	if (!valid(d) || !minor)
		return NVML_ERROR_INVALID_ARGUMENT;
	*minor = d->minor;
	return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetIndex(nvmlDevice_t d, unsigned int *index)
{
	if (!valid(d) || !index)
		return NVML_ERROR_INVALID_ARGUMENT;
	*index = d->index;
	return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t d, nvmlPciInfo_t *pci)
{
	if (!valid(d) || !pci)
		return NVML_ERROR_INVALID_ARGUMENT;
	memset(pci, 0, sizeof *pci);
	pci->domain = d->domain;
	pci->bus = d->bus;
	pci->device = d->device;
	pci->pciDeviceId = 0x233010de; /* vendor 10de: NVIDIA */
	snprintf(pci->busIdLegacy, sizeof pci->busIdLegacy, "%04x:%02x:%02x.0", d->domain, d->bus, d->device);
	snprintf(pci->busId, sizeof pci->busId, "%s", d->busid);
	return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetPciInfo_v2(nvmlDevice_t d, nvmlPciInfo_t *pci)
{
	return nvmlDeviceGetPciInfo_v3(d, pci);
}

EXPORT nvmlReturn_t nvmlDeviceGetPciInfo(nvmlDevice_t d, nvmlPciInfo_t *pci)
{
	return nvmlDeviceGetPciInfo_v3(d, pci);
}

EXPORT nvmlReturn_t nvmlDeviceGetCudaComputeCapability(nvmlDevice_t d, int *major, int *minor)
{
	(void)major;
	(void)minor;
	return valid(d) ? NVML_ERROR_NOT_SUPPORTED : NVML_ERROR_INVALID_ARGUMENT;
}

/* Whether d's gpus/<bus> directory holds the marker. */
static int marked(nvmlDevice_t d, const char *marker)
{
	char path[512];
	struct stat st;
	snprintf(path, sizeof path, "%s/proc/driver/nvidia/gpus/%04x:%02x:%02x.0/%s", root(), d->domain, d->bus,
		 d->device, marker);
	return stat(path, &st) == 0;
}

/* "0000:3B:00.0" or "00000000:3b:00.0", as NVML takes either. */
EXPORT nvmlReturn_t nvmlDeviceGetHandleByPciBusId_v2(const char *bus, nvmlDevice_t *dev)
{
	unsigned domain, b, device;
	if (!initialized)
		return NVML_ERROR_UNINITIALIZED;
	if (!bus || !dev || sscanf(bus, "%x:%x:%x", &domain, &b, &device) != 3)
		return NVML_ERROR_INVALID_ARGUMENT;
	for (unsigned i = 0; i < ngpus; i++)
		if (gpus[i].domain == domain && gpus[i].bus == b && gpus[i].device == device) {
			*dev = &gpus[i];
			return NVML_SUCCESS;
		}
	return NVML_ERROR_NOT_FOUND;
}

EXPORT nvmlReturn_t nvmlDeviceGetTotalEccErrors(nvmlDevice_t d, int type, int counter, unsigned long long *count)
{
	if (!valid(d) || !count || type < 0 || type > 1 || counter < 0 || counter > 1)
		return NVML_ERROR_INVALID_ARGUMENT;
	*count = type == 1 && marked(d, "fake-smoke-ecc") ? 3 : 0;
	return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetRemappedRows(nvmlDevice_t d, unsigned *corr, unsigned *unc, unsigned *pending,
					      unsigned *failed)
{
	if (!valid(d) || !corr || !unc || !pending || !failed)
		return NVML_ERROR_INVALID_ARGUMENT;
	*corr = *pending = 0;
	*unc = *failed = (unsigned)marked(d, "fake-smoke-remap");
	return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetPersistenceMode(nvmlDevice_t d, int *mode)
{
	if (!valid(d) || !mode)
		return NVML_ERROR_INVALID_ARGUMENT;
	*mode = !marked(d, "fake-smoke-persistence");
	return NVML_SUCCESS;
}

/* nvmlGpuFabricInfo_t */
struct fabric_info {
	char cluster_uuid[16];
	nvmlReturn_t status;
	unsigned clique_id;
	unsigned char state; /* 0 not supported, 1 not started, 2 in progress, 3 completed */
};

EXPORT nvmlReturn_t nvmlDeviceGetGpuFabricInfo(nvmlDevice_t d, struct fabric_info *fi)
{
	if (!valid(d) || !fi)
		return NVML_ERROR_INVALID_ARGUMENT;
	memset(fi, 0, sizeof *fi);
	fi->state = marked(d, "fake-smoke-fabric") ? 1 : 0;
	fi->status = NVML_ERROR_NOT_SUPPORTED;
	return NVML_SUCCESS;
}

/* ---- Xid events --------------------------------------------------------- */

#define EVENT_XID 0x8ULL /* nvmlEventTypeXidCriticalError */
#define MAX_SETS 64

typedef struct {
	nvmlDevice_t device;
	unsigned long long eventType;
	unsigned long long eventData;
	unsigned int gpuInstanceId;
	unsigned int computeInstanceId;
} nvmlEventData_t;

struct nvmlEventSet_st {
	int used;
	unsigned char watched[MAX_GPUS];   /* by index: registered for Xids */
	unsigned char delivered[MAX_GPUS]; /* its fake-smoke-xid event was waited for */
};
typedef struct nvmlEventSet_st *nvmlEventSet_t;
static struct nvmlEventSet_st sets[MAX_SETS];

static int valid_set(nvmlEventSet_t s)
{
	return initialized && s >= sets && s < sets + MAX_SETS && s->used;
}

EXPORT nvmlReturn_t nvmlDeviceGetSupportedEventTypes(nvmlDevice_t d, unsigned long long *types)
{
	if (!valid(d) || !types)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (marked(d, "fake-smoke-xid-unsupported"))
		return NVML_ERROR_NOT_SUPPORTED;
	*types = 0x1ULL | 0x2ULL | 0x4ULL | EVENT_XID | 0x10ULL; /* ECC, P-state, Xid, clocks */
	return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlEventSetCreate(nvmlEventSet_t *set)
{
	if (!initialized)
		return NVML_ERROR_UNINITIALIZED;
	if (!set)
		return NVML_ERROR_INVALID_ARGUMENT;
	for (unsigned i = 0; i < MAX_SETS; i++)
		if (!sets[i].used) {
			memset(&sets[i], 0, sizeof sets[i]);
			sets[i].used = 1;
			*set = &sets[i];
			return NVML_SUCCESS;
		}
	return NVML_ERROR_UNKNOWN;
}

EXPORT nvmlReturn_t nvmlDeviceRegisterEvents(nvmlDevice_t d, unsigned long long types, nvmlEventSet_t set)
{
	if (!valid(d) || !valid_set(set))
		return NVML_ERROR_INVALID_ARGUMENT;
	if (marked(d, "fake-smoke-xid-unsupported"))
		return NVML_ERROR_NOT_SUPPORTED;
	if (types & EVENT_XID)
		set->watched[d->index] = 1;
	return NVML_SUCCESS;
}

/* The Xid in d's fake-smoke-xid marker, 0 when there is none. */
static unsigned long long marked_xid(nvmlDevice_t d)
{
	char path[512];
	unsigned long long xid = 0;
	snprintf(path, sizeof path, "%s/proc/driver/nvidia/gpus/%04x:%02x:%02x.0/fake-smoke-xid", root(), d->domain,
		 d->bus, d->device);
	FILE *f = fopen(path, "re");
	if (!f)
		return 0;
	if (fscanf(f, "%llu", &xid) != 1)
		xid = 0;
	fclose(f);
	return xid;
}

/* The marked Xid of a registered GPU once, then NVML_ERROR_TIMEOUT at once:
 * the tests wait for nothing. */
EXPORT nvmlReturn_t nvmlEventSetWait_v2(nvmlEventSet_t set, nvmlEventData_t *data, unsigned int timeoutms)
{
	(void)timeoutms;
	if (!valid_set(set) || !data)
		return NVML_ERROR_INVALID_ARGUMENT;
	for (unsigned i = 0; i < ngpus; i++) {
		unsigned long long xid;
		if (!set->watched[i] || set->delivered[i] || !(xid = marked_xid(&gpus[i])))
			continue;
		set->delivered[i] = 1;
		memset(data, 0, sizeof *data);
		data->device = &gpus[i];
		data->eventType = EVENT_XID;
		data->eventData = xid;
		data->gpuInstanceId = data->computeInstanceId = 0xffffffffu;
		return NVML_SUCCESS;
	}
	return NVML_ERROR_TIMEOUT;
}

EXPORT nvmlReturn_t nvmlEventSetFree(nvmlEventSet_t set)
{
	if (!valid_set(set))
		return NVML_ERROR_INVALID_ARGUMENT;
	set->used = 0;
	return NVML_SUCCESS;
}
