/* gpu/probe/smoke.h — what the smoke probe's parts share: the checks
 * (smoke.c) fill one verdict per subject, the driver or a GPU, each run in
 * a child bounded by a deadline (deadline.c); the printer (report.c) says
 * them in the chosen form. */
#ifndef GPURUN_PROBE_SMOKE_H
#define GPURUN_PROBE_SMOKE_H

#include <sys/types.h>

#define MAX_GPUS 64
#define MAX_SAY 4096  /* the text of one verdict's checks, all together */
#define MAX_CHECKS 48 /* checks kept per verdict */
#define MAX_XIDS 16   /* distinct Xids kept per GPU */
#define MAX_DOCTOR 64 /* doctor's verdicts handed over by gpurun (--check) */

enum form { TEXT, JSON, TAP };
extern enum form form; /* chosen by --json or --tap */

/* A check's outcome; "skip": it could not run here (said why), not a failure. */
enum level { L_OK, L_WARN, L_FAIL, L_SKIP };

/* One Xid a GPU had: during the kernel's run (NVML) or since boot (the log). */
struct xid {
	unsigned long long num;
	unsigned count;
	int during;   /* NVML's event during the run, else from the log */
	int critical; /* fails the GPU */
};

/* One check of a verdict: a stable id (docs/json.md) and what it found.
 * The text is at text[off] in the verdict. */
struct check {
	char id[24];
	int level;
	unsigned off;
};

/* What one subject (the driver, or a GPU) came to.  Plain data: a child
 * fills it and writes it whole to its parent. */
struct verdict {
	char name[128], bus[32], uuid[96];
	struct check checks[MAX_CHECKS];
	int nchecks;
	char text[MAX_SAY];
	unsigned used;
	int events; /* NVML watched the kernel's run for Xid events */
	struct xid xids[MAX_XIDS];
	int nxids;
};

/* Add a check to v; a text that does not fit whole is left out. */
void say(struct verdict *v, enum level level, const char *id, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
/* Any check of v at this level? */
int has_level(const struct verdict *v, enum level level);

/* A verdict of doctor's, as gpurun hands it over (--check=ID,LEVEL,NAME,TEXT). */
struct doctor_check {
	const char *id, *name, *text;
	int level; /* L_OK, L_WARN or L_FAIL */
};

/* Everything the report says, beyond the verdicts. */
struct facts {
	const char *kernel, *libs, *nvml; /* versions, "" when not known */
	const char *log_unread;           /* why the kernel log was not read, NULL when it was */
	double deadline;                  /* seconds each GPU's probe may take */
	const struct doctor_check *doctor;
	int ndoctor; /* -1: no doctor checks were asked for */
};

/* Prints the verdicts in the chosen form; 1 when anything failed. */
int report(const struct facts *f, struct verdict *drv, struct verdict *g, int n);

/* What the Xid checks that ran found nothing in: "" when none ran. */
const char *xid_none(int events, int log_read);

/* ---- deadline.c: a piece of the probe in a child, bounded in time ---- */

/* One child: fn(arg, out) runs there and its out (size bytes) comes back. */
struct bounded {
	pid_t pid;
	int fd;     /* the child's answer, -1 once it is all read */
	int exited; /* reaped */
	int status; /* its wait status, when exited */
	size_t got; /* bytes of out read */
	void *out;
	size_t size;
	char why[512]; /* when it did not answer whole: what happened, for a FAIL */
	int killed;    /* still there at the deadline: sent SIGKILL */
	int timed_out; /* and its answer was not in */
	int stuck;     /* and it outlived SIGKILL (why says so) */
};

/* Start fn in a child whose standard streams are /dev/null; 0, or -1 with
 * b->why set. */
int bounded_start(struct bounded *b, void (*fn)(void *arg, void *out), void *arg, void *out, size_t size);
/* Wait for the children until each answered whole and exited, or until
 * `seconds` after now; then SIGKILL the rest and give them a short grace
 * to go.  A child that outlived it is left behind, not waited for: b->why
 * names its state ('D': stuck in the kernel, uninterruptible).  Returns the
 * number of children that answered whole and exited 0. */
int bounded_wait(struct bounded *b, int n, double seconds);

#endif
