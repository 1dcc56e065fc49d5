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
 * Nothing here calls the driver in this process: the driver-wide checks
 * run in one child, then each GPU's in a child of its own, all at once,
 * each bounded by the deadline (--deadline=SECONDS, deadline.c), so that a
 * GPU that hangs in the driver is a FAIL of its own and the others still
 * get their verdict.  A fork after cuInit would leave the child a driver
 * it cannot use, which is why even the census of the GPUs is a child's.
 *
 * --report-only: gpurun found the driver too broken for a launch (no
 * device nodes, nvidia-uvm, driver or ld.so.cache) and runs the probe on
 * the host only to say so, from its --fail=ID,TEXT arguments, in the form
 * asked for: one printer for every verdict.  --doctor and its
 * --check=ID,LEVEL,NAME,TEXT arguments put `gpurun doctor`'s verdicts in
 * the same report (`gpurun smoke --doctor`).
 *
 * Output (report.c): one line per GPU, then a summary (or --json, --tap).  Exit 0
 * when every check passed, 1 otherwise, 2 for a bad argument.
 *
 * Text from gpurun's arguments (the log's Xid messages, why the log was
 * not read, doctor's verdicts) comes already escaped by gpurun, printable
 * and on one line. */
#include <ctype.h>
#include <dlfcn.h>
#include <limits.h>
#include <link.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../nvml.h"
#include "smoke.h"

#define XID_WAIT_MS 200 /* how long an Xid event of the kernel's run may take to arrive */
#define N 1024          /* kernel threads: 4 blocks of 256 */
#define DEADLINE_S 60.0 /* each GPU's, unless --deadline says otherwise */
#define REBOOT "Reboot, or reload the nvidia kernel modules"

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
		say(g, L_FAIL, "kernel", "cuCtxCreate: %s", cu_err(r));
		return;
	}
	if ((r = cu.load(&mod, ptx)) != 0)
		say(g, L_FAIL, "kernel", "cuModuleLoadData (PTX JIT): %s", cu_err(r));
	else if ((r = cu.function(&fn, mod, "smoke")) != 0)
		say(g, L_FAIL, "kernel", "cuModuleGetFunction: %s", cu_err(r));
	else if ((r = cu.alloc(&d, sizeof host)) != 0)
		say(g, L_FAIL, "kernel", "cuMemAlloc: %s", cu_err(r));
	else {
		void *args[] = {&d, &n};
		memset(host, 0xff, sizeof host);
		if ((r = cu.launch(fn, N / 256, 1, 1, 256, 1, 1, 0, NULL, args, NULL)) != 0)
			say(g, L_FAIL, "kernel", "cuLaunchKernel: %s", cu_err(r));
		else if ((r = cu.sync()) != 0)
			say(g, L_FAIL, "kernel", "the kernel: %s", cu_err(r));
		else if ((r = cu.dtoh(host, d, sizeof host)) != 0)
			say(g, L_FAIL, "kernel", "cuMemcpyDtoH: %s", cu_err(r));
		else {
			unsigned bad = 0, first = 0;
			for (unsigned i = 0; i < N; i++)
				if (host[i] != 2 * i && !bad++)
					first = i;
			if (bad)
				say(g, L_FAIL, "kernel", "kernel: %u of %u results wrong (out[%u] = %u, want %u)", bad,
				    N, first, host[first], 2 * first);
			else
				say(g, L_OK, "kernel", "kernel ok");
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
 * when there is nothing to collect (*no_events or g says why). */
static nvml_event_set xid_watch(nvml_dev h, struct verdict *g, const char **no_events)
{
	unsigned long long types = 0;
	nvml_event_set set = NULL;
	nvmlReturn_t r;
	if (!nv.event_types || !nv.event_set || !nv.event_register || !nv.event_wait || !nv.event_free) {
		*no_events = "Xid events not supported (NVML has no nvmlEventSetWait_v2)";
		return NULL;
	}
	if ((r = nv.event_types(h, &types)) == NVML_ERROR_NOT_SUPPORTED ||
	    (r == NVML_SUCCESS && !(types & NVML_EVENT_TYPE_XID_CRITICAL_ERROR))) {
		*no_events = "Xid events not supported";
		return NULL;
	}
	if (r != NVML_SUCCESS) {
		say(g, L_FAIL, "xid.run", "nvmlDeviceGetSupportedEventTypes: %s", nv_err(r));
		return NULL;
	}
	if ((r = nv.event_set(&set)) != NVML_SUCCESS) {
		say(g, L_FAIL, "xid.run", "nvmlEventSetCreate: %s", nv_err(r));
		return NULL;
	}
	if ((r = nv.event_register(h, NVML_EVENT_TYPE_XID_CRITICAL_ERROR, set)) != NVML_SUCCESS) {
		if (r == NVML_ERROR_NOT_SUPPORTED)
			*no_events = "Xid events not supported";
		else
			say(g, L_FAIL, "xid.run", "nvmlDeviceRegisterEvents: %s", nv_err(r));
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
			say(g, L_FAIL, "xid.run", "nvmlEventSetWait_v2: %s", nv_err(r));
			break;
		}
		if (!(e.eventType & NVML_EVENT_TYPE_XID_CRITICAL_ERROR))
			continue;
		if (xid_add(g, e.eventData, 1, 1, 1))
			say(g, L_FAIL, "xid.run", "Xid %llu during the run", e.eventData);
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
			say(g, L_FAIL, "xid.boot", "Xid %llu since boot%s: %s", l->num, times, l->text);
		else
			say(g, L_WARN, "xid.boot", "Xid %llu since boot%s: %s", l->num, times, l->text);
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
			say(g, L_FAIL, "ecc", "%llu uncorrected ECC error%s since boot", ecc, ecc == 1 ? "" : "s");
		else
			say(g, L_OK, "ecc", "ECC 0");
	} else if (nv.ecc && r != NVML_ERROR_NOT_SUPPORTED)
		say(g, L_FAIL, "ecc", "nvmlDeviceGetTotalEccErrors: %s", nv_err(r));
	int pending = 0;
	if (nv.retired_pending && nv.retired_pending(h, &pending) == 0 && pending)
		say(g, L_FAIL, "retired-pages", "retired pages pending: reset the GPU or reboot");
	unsigned corr = 0, unc = 0, rpending = 0, rfailed = 0;
	if (nv.remapped && nv.remapped(h, &corr, &unc, &rpending, &rfailed) == 0) {
		if (rfailed)
			say(g, L_FAIL, "row-remapping", "row remapping failed: the GPU needs service");
		else if (rpending)
			say(g, L_FAIL, "row-remapping", "row remapping pending: reset the GPU or reboot");
	}
	int mode = 0;
	if (nv.persistence && nv.persistence(h, &mode) == 0) {
		if (mode)
			say(g, L_OK, "persistence", "persistence on");
		else
			say(g, L_WARN, "persistence", "persistence mode off");
	}
	struct fabric_info fi;
	memset(&fi, 0, sizeof fi);
	if (nv.fabric && nv.fabric(h, &fi) == 0 && fi.state != FABRIC_NOT_SUPPORTED) {
		if (fi.state != FABRIC_COMPLETED)
			say(g, L_FAIL, "fabric",
			    "not registered with the NVSwitch fabric (state %u): is nvidia-fabricmanager running?",
			    fi.state);
		else if (fi.status != 0)
			say(g, L_FAIL, "fabric", "NVSwitch fabric registration failed: %s", nv_err(fi.status));
		else
			say(g, L_OK, "fabric", "fabric ok");
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

void say(struct verdict *v, enum level level, const char *id, const char *fmt, ...)
{
	if (v->nchecks == MAX_CHECKS || v->used >= MAX_SAY - 1)
		return;
	va_list ap;
	va_start(ap, fmt);
	int w = vsnprintf(v->text + v->used, MAX_SAY - v->used, fmt, ap);
	va_end(ap);
	if (w < 0 || (size_t)w >= MAX_SAY - v->used) {
		v->text[v->used] = '\0'; /* cut, an escaped text would mislead */
		return;
	}
	struct check *c = &v->checks[v->nchecks++];
	snprintf(c->id, sizeof c->id, "%s", id);
	c->level = level;
	c->off = v->used;
	v->used += (unsigned)w + 1;
}

int has_level(const struct verdict *v, enum level level)
{
	for (int i = 0; i < v->nchecks; i++)
		if (v->checks[i].level == (int)level)
			return 1;
	return 0;
}

/* What every part of the probe is told, and the census of the GPUs. */
static const char *host_libcuda, *log_unread = "gpurun did not read the kernel log";
static struct logged logged[256];
static int nlogged;

struct census {
	char libs[64], nvml[96];
	struct verdict drv;
	int n;
	char name[MAX_GPUS][128], bus[MAX_GPUS][32];
};

/* The driver's libraries loaded and their versions compared with the
 * kernel module's; libcuda's and NVML's entry points found.  What fails is
 * said in drv; returns whether libcuda is usable, and *nvml_ok whether
 * NVML initialised (its failure waits in nvml_fail: with no device at all
 * NVML fails too, and that is said once, as "no device"). */
static int load_driver(const char *kernel, char *libs, size_t libs_cap, char *nvml, size_t nvml_cap,
		       struct verdict *drv, char *nvml_fail, size_t fail_cap, int *nvml_ok)
{
	*nvml_ok = 0;
	if (!kernel[0])
		say(drv, L_FAIL, "module", "no NVIDIA kernel module (/proc/driver/nvidia/version)");
	if (host_libcuda && kernel[0]) {
		snprintf(libs, libs_cap, "%s", host_libcuda);
		clean(libs);
		say(drv, L_FAIL, "versions",
		    "kernel module %s but libcuda %s: a driver upgraded without a reboot? " REBOOT, kernel, libs);
	}
	void *lc = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
	if (!lc)
		say(drv, L_FAIL, "libcuda", "libcuda.so.1 does not load: %s", dlerror());
	void *ln = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
	if (!ln)
		say(drv, L_FAIL, "nvml", "libnvidia-ml.so.1 does not load: %s", dlerror());
	if (lc) {
		library_version(lc, libs, libs_cap);
		if (kernel[0] && libs[0] && strcmp(kernel, libs))
			say(drv, L_FAIL, "versions",
			    "kernel module %s but libcuda %s: a driver upgraded without a reboot? " REBOOT, kernel,
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
			say(drv, L_FAIL, "libcuda", "libcuda.so.1 lacks a driver API entry point the smoke test uses");
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
			snprintf(nvml_fail, fail_cap, "nvmlInit_v2: %s", nv.init ? nv_err(r) : "no such symbol");
		} else {
			*nvml_ok = 1;
			if (nv.version && nv.version(nvml, (unsigned)nvml_cap) == 0) {
				clean(nvml);
				if (kernel[0] && strcmp(kernel, nvml))
					say(drv, L_FAIL, "versions",
					    "kernel module %s but NVML %s: a driver upgraded without a reboot? " REBOOT,
					    kernel, nvml);
			}
		}
	}
	return lc != NULL;
}

/* The driver-wide checks, and each GPU's name and bus id in CUDA's order
 * (a child: this is the first cuInit). */
static void census(void *arg, void *out)
{
	const char *kernel = arg;
	struct census *c = out;
	char nvml_fail[MAX_SAY / 4] = "";
	int nvml_ok;
	int lc = load_driver(kernel, c->libs, sizeof c->libs, c->nvml, sizeof c->nvml, &c->drv, nvml_fail,
			     sizeof nvml_fail, &nvml_ok);
	int n = 0;
	if (lc) {
		CUresult r = cu.init(0);
		if (r == CUDA_ERROR_NO_DEVICE)
			say(&c->drv, L_FAIL, "devices", "no device: cuInit: %s", cu_err(r));
		else if (r != 0)
			say(&c->drv, L_FAIL, "cuinit", "cuInit: %s", cu_err(r));
		else if ((r = cu.count(&n)) != 0)
			say(&c->drv, L_FAIL, "devices", "cuDeviceGetCount: %s", cu_err(r));
		else if (n == 0)
			say(&c->drv, L_FAIL, "devices", "no device: cuDeviceGetCount is 0");
		if (n > MAX_GPUS)
			n = MAX_GPUS;
	}
	if (n && nvml_fail[0])
		say(&c->drv, L_FAIL, "nvml", "%s", nvml_fail);
	for (int i = 0; i < n; i++) {
		CUdevice dev;
		snprintf(c->name[i], sizeof c->name[i], "?");
		snprintf(c->bus[i], sizeof c->bus[i], "?");
		if (cu.get(&dev, i) != 0)
			continue;
		if (cu.name(c->name[i], sizeof c->name[i], dev) != 0)
			snprintf(c->name[i], sizeof c->name[i], "?");
		if (cu.bus_id(c->bus[i], sizeof c->bus[i], dev) != 0)
			snprintf(c->bus[i], sizeof c->bus[i], "?");
		for (char *p = c->bus[i]; *p; p++) /* NVML and /proc spell it in lower case */
			*p = (char)tolower((unsigned char)*p);
		clean(c->name[i]);
		clean(c->bus[i]);
	}
	if (!has_level(&c->drv, L_FAIL) && n)
		say(&c->drv, L_OK, "devices", "cuInit: %d device%s", n, n == 1 ? "" : "s");
	c->n = n;
}

/* One GPU's checks, on its own driver (a child of its own). */
struct gpu_job {
	const char *kernel;
	int index;
	const struct census *c;
};

static void probe_gpu(void *arg, void *out)
{
	const struct gpu_job *job = arg;
	struct verdict *g = out, scratch;
	char libs[64] = "", nvml[96] = "", nvml_fail[MAX_SAY / 4] = "";
	int nvml_ok;
	memset(&scratch, 0, sizeof scratch);
	snprintf(g->name, sizeof g->name, "%s", job->c->name[job->index]);
	snprintf(g->bus, sizeof g->bus, "%s", job->c->bus[job->index]);
	/* The census said what is wrong with the driver; here only this GPU. */
	int lc = load_driver(job->kernel, libs, sizeof libs, nvml, sizeof nvml, &scratch, nvml_fail, sizeof nvml_fail,
			     &nvml_ok);
	CUdevice dev;
	CUresult r;
	if (!lc) {
		say(g, L_FAIL, "cuinit", "libcuda.so.1 is not usable here");
		return;
	}
	if ((r = cu.init(0)) != 0) {
		say(g, L_FAIL, "cuinit", "cuInit: %s", cu_err(r));
		return;
	}
	if ((r = cu.get(&dev, job->index)) != 0) {
		say(g, L_FAIL, "cuda.device", "cuDeviceGet: %s", cu_err(r));
		return;
	}
	nvml_dev h = NULL;
	nvml_event_set watch = NULL;
	const char *no_events = NULL;
	nvmlReturn_t nr = 0;
	if (nvml_ok && (!nv.by_bus || (nr = nv.by_bus(g->bus, &h)) != 0)) {
		say(g, L_FAIL, "nvml.device", "NVML does not see %s: %s", g->bus,
		    nv.by_bus ? nv_err(nr) : "no nvmlDeviceGetHandleByPciBusId_v2");
		h = NULL;
	}
	if (h)
		watch = xid_watch(h, g, &no_events);
	run_kernel(dev, g);
	if (watch)
		xid_collect(watch, g);
	if (h)
		health(h, g);
	xid_logged(g, logged, nlogged);
	if (no_events)
		say(g, L_SKIP, "xid.run", "%s", no_events);
	if (!g->nxids && *xid_none(g->events, !log_unread))
		say(g, L_OK, "xid", "%s", xid_none(g->events, !log_unread));
}

/* The UUID the driver's information file gives the GPU at bus, for a GPU
 * whose probe never answered: a file, not a driver call. */
static void proc_uuid(const char *bus, char *out, size_t cap)
{
	char path[128], line[256];
	out[0] = '\0';
	snprintf(path, sizeof path, "/proc/driver/nvidia/gpus/%s/information", bus);
	FILE *f = strchr(bus, '/') ? NULL : fopen(path, "re");
	while (f && fgets(line, sizeof line, f)) {
		const char *v = strncmp(line, "GPU UUID:", 9) ? NULL : line + 9;
		if (!v)
			continue;
		v += strspn(v, " \t");
		snprintf(out, cap, "%.*s", (int)strcspn(v, " \t\n"), v);
		if (strncmp(out, "GPU-", 4) || strchr(out, '?'))
			out[0] = '\0';
		clean(out);
		break;
	}
	if (f)
		fclose(f);
}

/* "ID,TEXT" -> a check of v at level. */
static int parse_fail(const char *arg, struct verdict *v)
{
	const char *comma = strchr(arg, ',');
	if (!comma || comma == arg || comma - arg >= 24)
		return 0;
	char id[24];
	snprintf(id, sizeof id, "%.*s", (int)(comma - arg), arg);
	say(v, L_FAIL, id, "%s", comma + 1);
	return 1;
}

/* "ID,LEVEL,NAME,TEXT" -> d (pointing into arg, which it cuts). */
static int parse_check(char *arg, struct doctor_check *d)
{
	char *f[3];
	for (int i = 0; i < 3; i++) {
		f[i] = arg;
		arg = strchr(arg, ',');
		if (!arg)
			return 0;
		*arg++ = '\0';
	}
	static const char *const levels[] = {"ok", "warn", "fail"};
	d->level = -1;
	for (int i = 0; i < 3; i++)
		if (!strcmp(f[1], levels[i]))
			d->level = i == 0 ? L_OK : i == 1 ? L_WARN : L_FAIL;
	d->id = f[0];
	d->name = f[2];
	d->text = arg;
	return d->level >= 0 && *d->id && *d->name;
}

static int usage(void)
{
	fprintf(stderr, "usage: gpurun-smoke [--json|--tap] [--deadline=SECONDS] [--host-libcuda=VERSION] "
			"[--xid-log-read|--xid-log-unread=WHY] [--xid=BUS,XID,COUNT,C|W,TEXT]... "
			"[--doctor [--check=ID,LEVEL,NAME,TEXT]...] [--report-only [--kernel-module=VERSION] "
			"[--fail=ID,TEXT]...]\n");
	return 2;
}

int main(int argc, char **argv)
{
	static struct verdict drv, gpus[MAX_GPUS];
	static struct doctor_check doctor[MAX_DOCTOR];
	static struct census c;
	struct facts f = {.deadline = DEADLINE_S, .ndoctor = -1};
	int report_only = 0;
	const char *kernel_arg = NULL;
	for (int i = 1; i < argc; i++) {
		char *end;
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
		else if (!strncmp(argv[i], "--deadline=", 11) && (f.deadline = strtod(argv[i] + 11, &end)) > 0 &&
			 !*end && f.deadline <= 86400)
			continue;
		else if (!strcmp(argv[i], "--doctor"))
			f.ndoctor = f.ndoctor < 0 ? 0 : f.ndoctor;
		else if (!strncmp(argv[i], "--check=", 8) && f.ndoctor >= 0 && f.ndoctor < MAX_DOCTOR &&
			 parse_check(argv[i] + 8, &doctor[f.ndoctor]))
			f.ndoctor++;
		else if (!strcmp(argv[i], "--report-only"))
			report_only = 1;
		else if (!strncmp(argv[i], "--kernel-module=", 16) && report_only)
			kernel_arg = argv[i] + 16;
		else if (!strncmp(argv[i], "--fail=", 7) && report_only && parse_fail(argv[i] + 7, &drv))
			continue;
		else
			return usage();
	}
	f.doctor = doctor;
	f.log_unread = log_unread;
	f.libs = f.nvml = "";
	char kernel[64];
	if (report_only) {
		snprintf(kernel, sizeof kernel, "%s", kernel_arg ? kernel_arg : "");
		clean(kernel);
		f.kernel = kernel;
		if (f.log_unread)
			say(&drv, L_SKIP, "xid-log", "Xids since boot not checked: %s", f.log_unread);
		return report(&f, &drv, gpus, 0);
	}
	kernel_version(kernel, sizeof kernel);
	f.kernel = kernel;
	struct bounded cb;
	if (bounded_start(&cb, census, kernel, &c, sizeof c) < 0 || bounded_wait(&cb, 1, f.deadline) != 1) {
		/* What the census found before it hung is lost with it. */
		memset(&c, 0, sizeof c);
		say(&drv, L_FAIL, "deadline", "the driver's checks (loading libcuda and NVML, cuInit) %s", cb.why);
	} else {
		drv = c.drv;
		f.libs = c.libs;
		f.nvml = c.nvml;
	}
	if (f.log_unread)
		say(&drv, L_SKIP, "xid-log", "Xids since boot not checked: %s", f.log_unread);
	static struct bounded gb[MAX_GPUS];
	static struct gpu_job jobs[MAX_GPUS];
	int started = 0;
	for (int i = 0; i < c.n; i++, started++) {
		jobs[i] = (struct gpu_job){kernel, i, &c};
		if (bounded_start(&gb[i], probe_gpu, &jobs[i], &gpus[i], sizeof gpus[i]) < 0)
			break;
	}
	bounded_wait(gb, started, f.deadline);
	for (int i = 0; i < c.n; i++) {
		if (i < started && !gb[i].why[0])
			continue;
		/* Nothing came back: the GPU's verdict is how its child ended. */
		memset(&gpus[i], 0, sizeof gpus[i]);
		snprintf(gpus[i].name, sizeof gpus[i].name, "%s", c.name[i]);
		snprintf(gpus[i].bus, sizeof gpus[i].bus, "%s", c.bus[i]);
		proc_uuid(c.bus[i], gpus[i].uuid, sizeof gpus[i].uuid);
		if (i >= started)
			say(&gpus[i], L_FAIL, "probe", "its probe did not start: %s", gb[started].why);
		else
			say(&gpus[i], L_FAIL, gb[i].killed ? "deadline" : "probe", "its probe %s", gb[i].why);
	}
	return report(&f, &drv, gpus, c.n);
}
