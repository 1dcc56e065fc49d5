/* gpu/probe/smoke.c — gpurun-smoke, the probe `gpurun smoke` runs inside
 * the container: it proves each visible GPU usable end to end through the
 * driver's own libraries, and asks NVML whether it is healthy.
 *
 * Linked against libc and libdl only, so it runs in any glibc image and in
 * the bare root gpurun makes for it.  Per GPU: libcuda JIT-compiles a tiny
 * PTX kernel (out[i] = 2*i), runs it and the result is checked; NVML gives
 * volatile uncorrected ECC errors, pending page retirement and row
 * remapping failures, persistence mode and, on NVSwitch systems, whether
 * the fabric manager registered the GPU.  Xids: NVML's Xid events of the
 * kernel's run (registered before it, collected after it) fail the GPU;
 * those the kernel logged since boot, which gpurun read on the host
 * (gpu/smoke.c, where the catalogue of critical ones is) and hands over
 * with --xid, fail it or warn.  For the driver as a whole: the
 * kernel module's version (/proc/driver/nvidia/version) must be the
 * user-space libraries' (libcuda's file name, NVML's answer); they differ
 * after a driver upgrade without a reboot, when nothing CUDA works.
 * gpurun then injects no libcuda (it takes only the kernel module's
 * version) and says with --host-libcuda=VERSION which one the host has.
 *
 * Output (report.c): one line per GPU, then a summary (or --json, --tap).  Exit 0
 * when every check passed, 1 otherwise, 2 for a bad argument.
 *
 * Text from gpurun's arguments (the log's Xid messages, why the log was
 * not read) comes already quoted by gpurun's quoting function, printable
 * and on one line. */
#include <ctype.h>
#include <dlfcn.h>
#include <limits.h>
#include <link.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../nvml.h"
#include "smoke.h"

#define MAX_GPUS 64
#define XID_WAIT_MS 200 /* how long an Xid event of the kernel's run may take to arrive */
#define N 1024          /* kernel threads: 4 blocks of 256 */

/* out[i] = 2 * i for i < n. */
static const char ptx[] = ".version 6.0\n"
			  ".target sm_50\n"
			  ".address_size 64\n"
			  ".visible .entry smoke(.param .u64 out, .param .u32 n)\n"
			  "{\n"
			  "  .reg .pred %p;\n"
			  "  .reg .b32 %r<6>;\n"
			  "  .reg .b64 %rd<4>;\n"
			  "  ld.param.u64 %rd1, [out];\n"
			  "  ld.param.u32 %r1, [n];\n"
			  "  mov.u32 %r2, %ctaid.x;\n"
			  "  mov.u32 %r3, %ntid.x;\n"
			  "  mov.u32 %r4, %tid.x;\n"
			  "  mad.lo.s32 %r5, %r2, %r3, %r4;\n"
			  "  setp.ge.u32 %p, %r5, %r1;\n"
			  "  @%p bra DONE;\n"
			  "  cvta.to.global.u64 %rd2, %rd1;\n"
			  "  mul.wide.u32 %rd3, %r5, 4;\n"
			  "  add.s64 %rd2, %rd2, %rd3;\n"
			  "  shl.b32 %r2, %r5, 1;\n"
			  "  st.global.u32 [%rd2], %r2;\n"
			  "DONE:\n"
			  "  ret;\n"
			  "}\n";

typedef int CUresult;
typedef int CUdevice;
typedef void *CUcontext, *CUmodule, *CUfunction, *CUstream;
typedef unsigned long long CUdeviceptr;
typedef int nvmlReturn_t;
struct fabric_info { /* nvmlGpuFabricInfo_t */
	char cluster_uuid[16];
	nvmlReturn_t status;
	unsigned clique_id;
	unsigned char state;
};
#define CUDA_ERROR_NO_DEVICE 100
#define FABRIC_NOT_SUPPORTED 0
#define FABRIC_COMPLETED 3

static struct {
	CUresult (*init)(unsigned);
	CUresult (*count)(int *);
	CUresult (*get)(CUdevice *, int);
	CUresult (*name)(char *, int, CUdevice);
	CUresult (*bus_id)(char *, int, CUdevice);
	CUresult (*ctx_create)(CUcontext *, unsigned, CUdevice);
	CUresult (*ctx_destroy)(CUcontext);
	CUresult (*load)(CUmodule *, const void *);
	CUresult (*function)(CUfunction *, CUmodule, const char *);
	CUresult (*alloc)(CUdeviceptr *, size_t);
	CUresult (*free_)(CUdeviceptr);
	CUresult (*launch)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, CUstream,
			   void **, void **);
	CUresult (*sync)(void);
	CUresult (*dtoh)(void *, CUdeviceptr, size_t);
	CUresult (*error_name)(CUresult, const char **);
} cu;

static struct {
	nvmlReturn_t (*init)(void);
	const char *(*error)(nvmlReturn_t);
	nvmlReturn_t (*version)(char *, unsigned);
	nvmlReturn_t (*by_bus)(const char *, nvml_dev *);
	nvmlReturn_t (*uuid)(nvml_dev, char *, unsigned);
	nvmlReturn_t (*ecc)(nvml_dev, int, int, unsigned long long *);
	nvmlReturn_t (*retired_pending)(nvml_dev, int *);
	nvmlReturn_t (*remapped)(nvml_dev, unsigned *, unsigned *, unsigned *, unsigned *);
	nvmlReturn_t (*persistence)(nvml_dev, int *);
	nvmlReturn_t (*fabric)(nvml_dev, struct fabric_info *);
	nvmlReturn_t (*event_types)(nvml_dev, unsigned long long *);
	nvmlReturn_t (*event_set)(nvml_event_set *);
	nvmlReturn_t (*event_register)(nvml_dev, unsigned long long, nvml_event_set);
	nvmlReturn_t (*event_wait)(nvml_event_set, nvml_event *, unsigned);
	nvmlReturn_t (*event_free)(nvml_event_set);
} nv;

enum form form;

/* An Xid of the log since boot, as gpurun hands it over: --xid=BUS,NUM,COUNT,C|W,TEXT. */
struct logged {
	unsigned domain, bus, dev, fn;
	unsigned long long num;
	unsigned count;
	int critical;
	const char *text; /* quoted by gpurun */
};

/* Text from the driver (names, versions) made printable. */
static void clean(char *s)
{
	for (; *s; s++)
		if (!isprint((unsigned char)*s))
			*s = '?';
}

/* Append one reason: reasons are kept one a line, because a quoted text
 * may hold the "; " they are printed with.  One that does not fit whole is
 * left out: cut, a quoted text would lose its closing quote. */
static __attribute__((format(printf, 2, 3))) void add(char *buf, const char *fmt, ...)
{
	size_t n = strlen(buf);
	if (n + 2 >= MAX_SAY)
		return;
	if (n)
		buf[n++] = '\n';
	va_list ap;
	va_start(ap, fmt);
	int w = vsnprintf(buf + n, MAX_SAY - n, fmt, ap);
	va_end(ap);
	if (w < 0 || (size_t)w >= MAX_SAY - n)
		buf[n ? n - 1 : 0] = '\0';
}

static const char *cu_err(CUresult r)
{
	static char buf[64];
	const char *s = NULL;
	if (cu.error_name && cu.error_name(r, &s) == 0 && s)
		snprintf(buf, sizeof buf, "%.40s (%d)", s, r);
	else
		snprintf(buf, sizeof buf, "CUresult %d", r);
	return buf;
}

static const char *nv_err(nvmlReturn_t r)
{
	static char buf[96];
	snprintf(buf, sizeof buf, "%.60s (%d)", nv.error ? nv.error(r) : "NVML error", r);
	return buf;
}

#define SYM(lib, field, name) (*(void **)&(field) = dlsym((lib), (name)))

/* The kernel module's version, "" when no module is loaded. */
static void kernel_version(char *out, size_t cap)
{
	char line[256] = "";
	out[0] = '\0';
	FILE *f = fopen("/proc/driver/nvidia/version", "re");
	if (!f)
		return;
	if (!fgets(line, sizeof line, f))
		line[0] = '\0';
	fclose(f);
	for (char *save = NULL, *t = strtok_r(line, " \t\n", &save); t; t = strtok_r(NULL, " \t\n", &save))
		if (isdigit((unsigned char)t[0]) && strchr(t, '.')) {
			snprintf(out, cap, "%s", t);
			break;
		}
	clean(out);
}

/* The version in the file name of the libcuda the loader mapped
 * (libcuda.so.1 -> libcuda.so.535.261.03), "" when it has none. */
static void library_version(void *lib, char *out, size_t cap)
{
	struct link_map *lm = NULL;
	char real[PATH_MAX];
	out[0] = '\0';
	if (dlinfo(lib, RTLD_DI_LINKMAP, &lm) != 0 || !lm || !realpath(lm->l_name, real))
		return;
	const char *base = strrchr(real, '/') ? strrchr(real, '/') + 1 : real;
	const char *v = strstr(base, ".so.");
	if (v && strchr(v + 4, '.'))
		snprintf(out, cap, "%s", v + 4);
	clean(out);
}

/* out[i] = 2*i on device dev, or why not. */
static void run_kernel(CUdevice dev, struct verdict *g)
{
	CUcontext ctx = NULL;
	CUmodule mod = NULL;
	CUfunction fn = NULL;
	CUdeviceptr d = 0;
	static unsigned host[N];
	unsigned n = N;
	CUresult r;
	if ((r = cu.ctx_create(&ctx, 0, dev)) != 0) {
		add(g->fail, "cuCtxCreate: %s", cu_err(r));
		return;
	}
	if ((r = cu.load(&mod, ptx)) != 0)
		add(g->fail, "cuModuleLoadData (PTX JIT): %s", cu_err(r));
	else if ((r = cu.function(&fn, mod, "smoke")) != 0)
		add(g->fail, "cuModuleGetFunction: %s", cu_err(r));
	else if ((r = cu.alloc(&d, sizeof host)) != 0)
		add(g->fail, "cuMemAlloc: %s", cu_err(r));
	else {
		void *args[] = {&d, &n};
		memset(host, 0xff, sizeof host);
		if ((r = cu.launch(fn, N / 256, 1, 1, 256, 1, 1, 0, NULL, args, NULL)) != 0)
			add(g->fail, "cuLaunchKernel: %s", cu_err(r));
		else if ((r = cu.sync()) != 0)
			add(g->fail, "the kernel: %s", cu_err(r));
		else if ((r = cu.dtoh(host, d, sizeof host)) != 0)
			add(g->fail, "cuMemcpyDtoH: %s", cu_err(r));
		else {
			unsigned bad = 0, first = 0;
			for (unsigned i = 0; i < N; i++)
				if (host[i] != 2 * i && !bad++)
					first = i;
			if (bad)
				add(g->fail, "kernel: %u of %u results wrong (out[%u] = %u, want %u)", bad, N, first,
				    host[first], 2 * first);
			else
				add(g->note, "kernel ok");
		}
		if (d)
			cu.free_(d);
	}
	cu.ctx_destroy(ctx); /* unloads the module too */
}

/* Count one Xid for g; the first MAX_XIDS distinct ones are kept. */
static struct xid *xid_add(struct verdict *g, unsigned long long num, int during, int critical, unsigned count)
{
	for (int i = 0; i < g->nxids; i++)
		if (g->xids[i].num == num && g->xids[i].during == during) {
			g->xids[i].count += count;
			return NULL;
		}
	if (g->nxids == MAX_XIDS)
		return NULL;
	struct xid *x = &g->xids[g->nxids++];
	*x = (struct xid){num, count, during, critical};
	return x;
}

/* Register for the GPU's Xid events before its kernel runs, so that an Xid
 * the run causes is seen even when the kernel's result looks right.  NULL
 * when there is nothing to collect (g says why, when it is worth saying). */
static nvml_event_set xid_watch(nvml_dev h, struct verdict *g)
{
	unsigned long long types = 0;
	nvml_event_set set = NULL;
	nvmlReturn_t r;
	if (!nv.event_types || !nv.event_set || !nv.event_register || !nv.event_wait || !nv.event_free) {
		g->no_events = "Xid events not supported (NVML has no nvmlEventSetWait_v2)";
		return NULL;
	}
	if ((r = nv.event_types(h, &types)) == NVML_ERROR_NOT_SUPPORTED ||
	    (r == NVML_SUCCESS && !(types & NVML_EVENT_TYPE_XID_CRITICAL_ERROR))) {
		g->no_events = "Xid events not supported";
		return NULL;
	}
	if (r != NVML_SUCCESS) {
		add(g->fail, "nvmlDeviceGetSupportedEventTypes: %s", nv_err(r));
		return NULL;
	}
	if ((r = nv.event_set(&set)) != NVML_SUCCESS) {
		add(g->fail, "nvmlEventSetCreate: %s", nv_err(r));
		return NULL;
	}
	if ((r = nv.event_register(h, NVML_EVENT_TYPE_XID_CRITICAL_ERROR, set)) != NVML_SUCCESS) {
		if (r == NVML_ERROR_NOT_SUPPORTED)
			g->no_events = "Xid events not supported";
		else
			add(g->fail, "nvmlDeviceRegisterEvents: %s", nv_err(r));
		nv.event_free(set);
		return NULL;
	}
	g->events = 1;
	return set;
}

/* After the kernel: every Xid event that arrives within XID_WAIT_MS of the
 * last fails the GPU.  Bounded, in case a broken GPU never stops. */
static void xid_collect(nvml_event_set set, struct verdict *g)
{
	for (int i = 0; i < 256; i++) {
		nvml_event e;
		memset(&e, 0, sizeof e);
		nvmlReturn_t r = nv.event_wait(set, &e, XID_WAIT_MS);
		if (r == NVML_ERROR_TIMEOUT)
			break;
		if (r != NVML_SUCCESS) {
			add(g->fail, "nvmlEventSetWait_v2: %s", nv_err(r));
			break;
		}
		if (!(e.eventType & NVML_EVENT_TYPE_XID_CRITICAL_ERROR))
			continue;
		if (xid_add(g, e.eventData, 1, 1, 1))
			add(g->fail, "Xid %llu during the run", e.eventData);
	}
	nv.event_free(set);
}

/* "0000:3b:00.0" -> its numbers; 0 when it is not a bus id. */
static int bus_parse(const char *s, unsigned *domain, unsigned *bus, unsigned *dev, unsigned *fn)
{
	int end = 0;
	return sscanf(s, "%x:%x:%x.%x%n", domain, bus, dev, fn, &end) == 4 && s[end] == '\0';
}

/* The log's Xids for g's bus id, in either spelling of the domain. */
static void xid_logged(struct verdict *g, const struct logged *lx, int nlx)
{
	unsigned domain, bus, dev, fn;
	if (!bus_parse(g->bus, &domain, &bus, &dev, &fn))
		return;
	for (int i = 0; i < nlx; i++) {
		const struct logged *l = &lx[i];
		if (l->domain != domain || l->bus != bus || l->dev != dev || l->fn != fn)
			continue;
		xid_add(g, l->num, 0, l->critical, l->count);
		char times[32] = "";
		if (l->count > 1)
			snprintf(times, sizeof times, ", %u times, the last", l->count);
		if (l->critical)
			add(g->fail, "Xid %llu since boot%s: %s", l->num, times, l->text);
		else
			add(g->note, "warning: Xid %llu since boot%s: %s", l->num, times, l->text);
	}
}

/* NVML's view of the GPU: health, persistence, fabric. */
static void health(nvml_dev h, struct verdict *g)
{
	nvmlReturn_t r;
	if (nv.uuid && nv.uuid(h, g->uuid, sizeof g->uuid) == 0)
		clean(g->uuid);
	unsigned long long ecc = 0;
	/* NVML_MEMORY_ERROR_TYPE_UNCORRECTED, NVML_VOLATILE_ECC (since boot) */
	if (nv.ecc && (r = nv.ecc(h, 1, 0, &ecc)) == 0) {
		if (ecc)
			add(g->fail, "%llu uncorrected ECC error%s since boot", ecc, ecc == 1 ? "" : "s");
		else
			add(g->note, "ECC 0");
	} else if (nv.ecc && r != NVML_ERROR_NOT_SUPPORTED)
		add(g->fail, "nvmlDeviceGetTotalEccErrors: %s", nv_err(r));
	int pending = 0;
	if (nv.retired_pending && nv.retired_pending(h, &pending) == 0 && pending)
		add(g->fail, "retired pages pending: reset the GPU or reboot");
	unsigned corr = 0, unc = 0, rpending = 0, rfailed = 0;
	if (nv.remapped && nv.remapped(h, &corr, &unc, &rpending, &rfailed) == 0) {
		if (rfailed)
			add(g->fail, "row remapping failed: the GPU needs service");
		else if (rpending)
			add(g->fail, "row remapping pending: reset the GPU or reboot");
	}
	int mode = 0;
	if (nv.persistence && nv.persistence(h, &mode) == 0)
		add(g->note, mode ? "persistence on" : "warning: persistence mode off");
	struct fabric_info fi;
	memset(&fi, 0, sizeof fi);
	if (nv.fabric && nv.fabric(h, &fi) == 0 && fi.state != FABRIC_NOT_SUPPORTED) {
		if (fi.state != FABRIC_COMPLETED)
			add(g->fail,
			    "not registered with the NVSwitch fabric (state %u): is nvidia-fabricmanager running?",
			    fi.state);
		else if (fi.status != 0)
			add(g->fail, "NVSwitch fabric registration failed: %s", nv_err(fi.status));
		else
			add(g->note, "fabric ok");
	}
}

/* --xid=BUS,NUM,COUNT,C|W,TEXT -> l; 0 when malformed. */
static int parse_logged(const char *arg, struct logged *l)
{
	char bus[32], level;
	int end = 0;
	if (sscanf(arg, "%31[^,],%llu,%u,%c,%n", bus, &l->num, &l->count, &level, &end) != 4 || !end ||
	    (level != 'C' && level != 'W') || !bus_parse(bus, &l->domain, &l->bus, &l->dev, &l->fn))
		return 0;
	l->critical = level == 'C';
	l->text = arg + end;
	return 1;
}

int main(int argc, char **argv)
{
	const char *host_libcuda = NULL, *log_unread = "gpurun did not read the kernel log";
	static struct logged logged[256];
	int nlogged = 0;
	for (int i = 1; i < argc; i++) {
		if (!strncmp(argv[i], "--host-libcuda=", 15))
			host_libcuda = argv[i] + 15;
		else if (!strcmp(argv[i], "--json"))
			form = JSON;
		else if (!strcmp(argv[i], "--tap"))
			form = TAP;
		else if (!strcmp(argv[i], "--xid-log-read"))
			log_unread = NULL;
		else if (!strncmp(argv[i], "--xid-log-unread=", 17))
			log_unread = argv[i] + 17;
		else if (!strncmp(argv[i], "--xid=", 6) && nlogged < (int)(sizeof logged / sizeof logged[0]) &&
			 parse_logged(argv[i] + 6, &logged[nlogged]))
			nlogged++;
		else {
			fprintf(stderr, "usage: gpurun-smoke [--json|--tap] [--host-libcuda=VERSION] [--xid-log-read|"
					"--xid-log-unread=WHY] [--xid=BUS,XID,COUNT,C|W,TEXT]...\n");
			return 2;
		}
	}
	static struct verdict drv, gpus[MAX_GPUS];
	char kernel[64], libs[64] = "", nvml[96] = "", nvml_fail[MAX_SAY] = "";
	kernel_version(kernel, sizeof kernel);
	snprintf(drv.what, sizeof drv.what, "driver");
	if (!kernel[0])
		add(drv.fail, "no NVIDIA kernel module (/proc/driver/nvidia/version)");
	if (host_libcuda && kernel[0]) {
		snprintf(libs, sizeof libs, "%s", host_libcuda);
		clean(libs);
		add(drv.fail, "kernel module %s but libcuda %s: a driver upgraded without a reboot?", kernel, libs);
	}
	void *lc = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
	if (!lc)
		add(drv.fail, "libcuda.so.1 does not load: %s", dlerror());
	void *ln = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
	if (!ln)
		add(drv.fail, "libnvidia-ml.so.1 does not load: %s", dlerror());
	if (lc) {
		library_version(lc, libs, sizeof libs);
		if (kernel[0] && libs[0] && strcmp(kernel, libs))
			add(drv.fail, "kernel module %s but libcuda %s: a driver upgraded without a reboot?", kernel,
			    libs);
		SYM(lc, cu.init, "cuInit"), SYM(lc, cu.count, "cuDeviceGetCount"), SYM(lc, cu.get, "cuDeviceGet");
		SYM(lc, cu.name, "cuDeviceGetName"), SYM(lc, cu.bus_id, "cuDeviceGetPCIBusId");
		SYM(lc, cu.ctx_create, "cuCtxCreate_v2"), SYM(lc, cu.ctx_destroy, "cuCtxDestroy_v2");
		SYM(lc, cu.load, "cuModuleLoadData"), SYM(lc, cu.function, "cuModuleGetFunction");
		SYM(lc, cu.alloc, "cuMemAlloc_v2"), SYM(lc, cu.free_, "cuMemFree_v2");
		SYM(lc, cu.launch, "cuLaunchKernel"), SYM(lc, cu.sync, "cuCtxSynchronize");
		SYM(lc, cu.dtoh, "cuMemcpyDtoH_v2"), SYM(lc, cu.error_name, "cuGetErrorName");
		if (!cu.init || !cu.count || !cu.get || !cu.name || !cu.bus_id || !cu.ctx_create || !cu.ctx_destroy ||
		    !cu.load || !cu.function || !cu.alloc || !cu.free_ || !cu.launch || !cu.sync || !cu.dtoh) {
			add(drv.fail, "libcuda.so.1 lacks a driver API entry point the smoke test uses");
			lc = NULL;
		}
	}
	if (ln) {
		SYM(ln, nv.init, "nvmlInit_v2"), SYM(ln, nv.error, "nvmlErrorString");
		SYM(ln, nv.version, "nvmlSystemGetDriverVersion"),
			SYM(ln, nv.by_bus, "nvmlDeviceGetHandleByPciBusId_v2");
		SYM(ln, nv.uuid, "nvmlDeviceGetUUID"), SYM(ln, nv.ecc, "nvmlDeviceGetTotalEccErrors");
		SYM(ln, nv.retired_pending, "nvmlDeviceGetRetiredPagesPendingStatus");
		SYM(ln, nv.remapped, "nvmlDeviceGetRemappedRows"),
			SYM(ln, nv.persistence, "nvmlDeviceGetPersistenceMode");
		SYM(ln, nv.fabric, "nvmlDeviceGetGpuFabricInfo"); /* only NVML >= 525 */
		SYM(ln, nv.event_types, "nvmlDeviceGetSupportedEventTypes");
		SYM(ln, nv.event_set, "nvmlEventSetCreate"), SYM(ln, nv.event_register, "nvmlDeviceRegisterEvents");
		SYM(ln, nv.event_wait, "nvmlEventSetWait_v2"), SYM(ln, nv.event_free, "nvmlEventSetFree");
		nvmlReturn_t r = nv.init ? nv.init() : -1;
		if (r != 0) {
			/* said only when CUDA sees a GPU: with no device, NVML fails too */
			add(nvml_fail, "nvmlInit_v2: %s", nv.init ? nv_err(r) : "no such symbol");
			ln = NULL;
		} else if (nv.version && nv.version(nvml, sizeof nvml) == 0) {
			clean(nvml);
			if (kernel[0] && strcmp(kernel, nvml))
				add(drv.fail, "kernel module %s but NVML %s: a driver upgraded without a reboot?",
				    kernel, nvml);
		}
	}
	int n = 0;
	if (lc) {
		CUresult r = cu.init(0);
		if (r == CUDA_ERROR_NO_DEVICE)
			add(drv.fail, "no device: cuInit: %s", cu_err(r));
		else if (r != 0)
			add(drv.fail, "cuInit: %s", cu_err(r));
		else if ((r = cu.count(&n)) != 0)
			add(drv.fail, "cuDeviceGetCount: %s", cu_err(r));
		else if (n == 0)
			add(drv.fail, "no device: cuDeviceGetCount is 0");
		if (n > MAX_GPUS)
			n = MAX_GPUS;
	}
	if (n && nvml_fail[0])
		add(drv.fail, "%s", nvml_fail);
	for (int i = 0; i < n; i++) {
		struct verdict *g = &gpus[i];
		CUdevice dev;
		CUresult r;
		if ((r = cu.get(&dev, i)) != 0) {
			add(g->fail, "cuDeviceGet: %s", cu_err(r));
			continue;
		}
		if (cu.name(g->name, sizeof g->name, dev) != 0)
			snprintf(g->name, sizeof g->name, "?");
		if (cu.bus_id(g->bus, sizeof g->bus, dev) != 0)
			snprintf(g->bus, sizeof g->bus, "?");
		for (char *p = g->bus; *p; p++) /* NVML and /proc spell it in lower case */
			*p = (char)tolower((unsigned char)*p);
		clean(g->name);
		clean(g->bus);
		nvml_dev h = NULL;
		nvml_event_set watch = NULL;
		nvmlReturn_t nr;
		if (ln && (!nv.by_bus || (nr = nv.by_bus(g->bus, &h)) != 0)) {
			add(g->fail, "NVML does not see %s: %s", g->bus,
			    nv.by_bus ? nv_err(nr) : "no nvmlDeviceGetHandleByPciBusId_v2");
			h = NULL;
		}
		if (h)
			watch = xid_watch(h, g);
		run_kernel(dev, g);
		if (watch)
			xid_collect(watch, g);
		if (h)
			health(h, g);
		xid_logged(g, logged, nlogged);
		if (g->no_events)
			add(g->note, "%s", g->no_events);
		if (!g->nxids && *xid_none(g->events, !log_unread))
			add(g->note, "%s", xid_none(g->events, !log_unread));
	}
	return report(kernel, libs, nvml, &drv, gpus, n, log_unread);
}
