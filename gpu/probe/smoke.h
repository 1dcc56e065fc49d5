/* gpu/probe/smoke.h — what the smoke probe's checks (smoke.c) hand to its
 * printer (report.c): one verdict per subject, the driver or a GPU. */
#ifndef GPURUN_PROBE_SMOKE_H
#define GPURUN_PROBE_SMOKE_H

#define MAX_SAY 4096
#define MAX_XIDS 16 /* distinct Xids kept per GPU */

enum form { TEXT, JSON, TAP };
extern enum form form; /* chosen by --json or --tap */

/* One Xid a GPU had: during the kernel's run (NVML) or since boot (the log). */
struct xid {
	unsigned long long num;
	unsigned count;
	int during;   /* NVML's event during the run, else from the log */
	int critical; /* fails the GPU */
};

/* What one subject (the driver, or a GPU) came to. */
struct verdict {
	char what[256]; /* "GPU 0 (NVIDIA H100, 0000:3b:00.0, GPU-...)" or "driver" */
	char name[128], bus[32], uuid[96];
	char fail[MAX_SAY];    /* reasons, one a line ("; " when printed), "" when ok */
	char note[MAX_SAY];    /* what passed, and warnings */
	int events;            /* NVML watched the kernel's run for Xid events */
	const char *no_events; /* else why not, when NVML could not */
	struct xid xids[MAX_XIDS];
	int nxids;
};

/* Prints the verdicts in the chosen form; 1 when anything failed. */
int report(const char *kernel, const char *libs, const char *nvml, struct verdict *drv, struct verdict *g, int n,
	   const char *log_unread);

/* What the Xid checks that ran found nothing in: "" when none ran. */
const char *xid_none(int events, int log_read);

#endif
