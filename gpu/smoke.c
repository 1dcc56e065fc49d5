/* gpu/smoke.c — what `gpurun smoke` (cli/smoke.c) needs from the host for
 * the GPU smoke test a CI job runs, an ordinary `run` of the probe gpurun
 * ships (gpu/probe/smoke.c, installed as libexec/gpurun/gpurun-smoke) bound
 * read-only into the container: where that probe is, and the host's facts
 * it gets as arguments.  Without IMAGE the container's root is the
 * host's C library alone (rootfs/image/hostlibc.c): the probe needs only
 * that, and the host's is the one the probe was built against.
 *
 * gpurun injects only the libraries of the kernel module's version, so
 * after a driver upgrade without a reboot the container gets no libcuda at
 * all; the version of the one the driver root has is found here and handed
 * to the probe, which reports the mismatch.
 *
 * The Xids the kernel logged since boot are read here too, on the host,
 * from the driver root's dev/kmsg (the container has no kernel log), where
 * NVIDIA's own tools (nvidia-bug-report, DCGM) find them; the probe gets
 * them as arguments, escaped, and matches them to its GPUs.
 *
 * Before any of that, smoke_preflight tries the GPU half of the launch as
 * a dry run: a driver too broken for a launch (no device nodes, no
 * nvidia-uvm, no driver, no ld.so.cache) is then the node's verdict, said
 * by the probe run on the host with doctor's reasons and advice, rather
 * than gpurun's own failure. */
#include "gpu_int.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The probe: beside the gpurun of the build tree, or in the libexec of an
 * installed one.  It runs as the container's process, so when we are root
 * it must be root's alone, as the driver's own files must (docs/design.md, "Modes"). */
char *smoke_probe_path(struct gerr *err)
{
	char self[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
	if (n < 0) {
		gerr_set(err, errno, "cannot read /proc/self/exe");
		return NULL;
	}
	self[n] = '\0';
	*strrchr(self, '/') = '\0';
	char *tree = xasprintf("%s/gpu/probe/gpurun-smoke", self);
	char *installed = xasprintf("%s/../libexec/gpurun/gpurun-smoke", self);
	char *p = access(tree, X_OK) == 0 ? tree : installed;
	free(p == tree ? installed : tree);
	struct stat st;
	if (stat(p, &st) < 0)
		gerr_set(err, errno, "cannot find the smoke probe: %s", p);
	else if (geteuid() == 0 && (st.st_uid != 0 || (st.st_mode & 022)))
		gerr_set(err, 0, "the smoke probe is not root's alone: %s", p);
	else
		return p;
	free(p);
	return NULL;
}

/* The version in the file name of the driver root's libcuda when it is
 * not the kernel module's ("535.261.03"), else NULL. */
static char *stale_libcuda(const char *driver_root)
{
	struct gpu_driver drv;
	struct gerr err = {0};
	if (gpu_discover(gpu_default_root(driver_root), &drv, &err) < 0)
		return NULL; /* no driver: the probe says so */
	char *v = drv_other_version(&drv, "libcuda.so", NULL);
	gpu_driver_free(&drv);
	return v;
}

/* Xids that NVIDIA's Xid catalogue (https://docs.nvidia.com/deploy/xid-errors/,
 * "Xid Errors": the recovery action of each) says need a GPU reset or a
 * reboot, or that point at the hardware (uncorrectable and contained ECC
 * errors, row remapping and page retirement failures, NVLink, the GPU off
 * the bus, GSP timeouts and errors).  They fail the GPU; any other Xid
 * since boot is a warning. */
static const unsigned long long xid_critical[] = {48, 63, 64, 74, 79, 92, 94, 95, 119, 120, 140};

#define MAX_LOGGED 64    /* distinct (GPU, Xid) pairs handed to the probe */
#define XID_TEXT_MAX 200 /* of a message, before quoting */

/* One Xid of the log, counted by GPU and number; the last message kept. */
struct logged_xid {
	char bus[32]; /* NVML's form, "00000000:3b:00.0" */
	unsigned long long num;
	unsigned count;
	char *text;
};

static int xid_is_critical(unsigned long long num)
{
	for (size_t i = 0; i < sizeof xid_critical / sizeof xid_critical[0]; i++)
		if (xid_critical[i] == num)
			return 1;
	return 0;
}

/* One kmsg record "PRIO,SEQ,USEC,FLAGS[,...];MESSAGE" -> MESSAGE with the
 * kernel's \xNN escapes undone, as dmesg shows it (new string); NULL for a
 * continuation line (" KEY=VALUE") or anything that is not a record. */
static char *kmsg_message(const char *line)
{
	const char *semi = strchr(line, ';');
	if (!isdigit((unsigned char)line[0]) || !semi || strcspn(line, ";") > 128)
		return NULL;
	struct sbuf b = {0};
	for (const char *p = semi + 1; *p; p++) {
		unsigned v;
		if (p[0] == '\\' && p[1] == 'x' && isxdigit((unsigned char)p[2]) && isxdigit((unsigned char)p[3]) &&
		    sscanf(p + 2, "%2x", &v) == 1 && v) {
			char c = (char)v;
			sbuf_add(&b, &c, 1);
			p += 3;
		} else {
			sbuf_add(&b, p, 1);
		}
	}
	return b.s ? b.s : xstrdup("");
}

/* "NVRM: Xid (PCI:0000:3b:00): 79, pid=..., GPU has fallen off the bus."
 * -> bus (NVML's form), the number and where the text after it starts;
 * -1 when msg is not an Xid line. */
static int xid_parse(const char *msg, char bus[32], unsigned long long *num, const char **text)
{
	const char *p = strstr(msg, "NVRM: Xid (");
	if (!p)
		return -1;
	p += strlen("NVRM: Xid (");
	if (str_after(p, "PCI:"))
		p = str_after(p, "PCI:");
	const char *close = strchr(p, ')');
	if (!close || close - p >= 24 || close[1] != ':')
		return -1;
	/* The driver leaves the function out ("0000:3b:00"): a GPU is function 0. */
	char id[32];
	snprintf(id, sizeof id, "%.*s%s", (int)(close - p), p, memchr(p, '.', (size_t)(close - p)) ? "" : ".0");
	if (busid_normalize(id, bus, 32) < 0)
		return -1;
	p = close + 2;
	while (*p == ' ')
		p++;
	if (!isdigit((unsigned char)*p))
		return -1;
	char *end;
	errno = 0;
	*num = strtoull(p, &end, 10);
	if (errno || (*end && *end != ','))
		return -1;
	p = end;
	if (*p == ',')
		p++;
	while (*p == ' ')
		p++;
	*text = p;
	return 0;
}

/* Count the Xid of one log line, if it is one. */
static void xid_count(const char *line, struct logged_xid *xs, int *n)
{
	_cleanup_free_ char *msg = kmsg_message(line);
	char bus[32];
	unsigned long long num;
	const char *text;
	if (!msg || xid_parse(msg, bus, &num, &text) < 0)
		return;
	struct logged_xid *x = NULL;
	for (int i = 0; i < *n && !x; i++)
		if (xs[i].num == num && !strcmp(xs[i].bus, bus))
			x = &xs[i];
	if (!x) {
		if (*n == MAX_LOGGED)
			return;
		x = &xs[(*n)++];
		memset(x, 0, sizeof *x);
		snprintf(x->bus, sizeof x->bus, "%s", bus);
		x->num = num;
	}
	x->count++;
	free(x->text);
	x->text = xstrndup(text, XID_TEXT_MAX);
}

/* The Xids in the kernel log at path, from its oldest record on: the real
 * /dev/kmsg (one record a read, EAGAIN at its end, EPIPE for records
 * overwritten while we read, which we skip) or, in the fake driver kit, a
 * regular file of records, read to its end.  0, or -1 with err saying why
 * the log could not be read. */
static int kmsg_xids(const char *path, struct logged_xid *xs, int *n, struct gerr *err)
{
	struct sbuf q = {0};
	sbuf_showquote(&q, path);
	_cleanup_fd_ int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
	struct stat st;
	int rc;
	if (fd < 0)
		rc = gerr_set(err, errno, "%s", q.s);
	else if (fstat(fd, &st) < 0)
		rc = gerr_set(err, errno, "stat %s", q.s);
	else if (!S_ISCHR(st.st_mode) && !S_ISREG(st.st_mode))
		rc = gerr_set(err, 0, "%s: neither the kernel's log device nor a file", q.s);
	else /* as root, a log a user could have written would be that user's word */
		rc = trust_path("the kernel log", path, err);
	if (rc == 0 && S_ISCHR(st.st_mode) && lseek(fd, 0, SEEK_DATA) < 0)
		rc = gerr_set(err, errno, "seek %s", q.s);
	/* A kmsg record is at most 8 KiB (CONSOLE_EXT_LOG_MAX); a longer line
	 * of a file is skipped whole. */
	static char buf[16384];
	size_t have = 0;
	int skipping = 0;
	while (rc == 0) {
		ssize_t got = read(fd, buf + have, sizeof buf - 1 - have);
		if (got < 0 && (errno == EINTR || errno == EPIPE))
			continue;
		if (got < 0 && errno == EAGAIN)
			break;
		if (got < 0) {
			rc = gerr_set(err, errno, "read %s", q.s);
			break;
		}
		if (got == 0) {
			if (have && !skipping) {
				buf[have] = '\0';
				xid_count(buf, xs, n);
			}
			break;
		}
		have += (size_t)got;
		buf[have] = '\0';
		char *line = buf, *nl;
		while ((nl = memchr(line, '\n', have - (size_t)(line - buf)))) {
			*nl = '\0';
			if (!skipping)
				xid_count(line, xs, n);
			skipping = 0;
			line = nl + 1;
		}
		have -= (size_t)(line - buf);
		memmove(buf, line, have);
		if (have == sizeof buf - 1) {
			have = 0;
			skipping = 1;
		}
	}
	sbuf_free(&q);
	return rc;
}

/* The probe's arguments for the Xids since boot: --xid-log-read and one
 * --xid=BUS,NUM,COUNT,C|W,TEXT each, the text quoted; or why the log was
 * not read, as a note, never a failure: the GPUs may be fine. */
static void xid_args(const char *driver_root, struct strv *a)
{
	const char *root = gpu_default_root(driver_root);
	_cleanup_free_ char *path = xasprintf("%s/dev/kmsg", strcmp(root, "/") ? root : "");
	struct logged_xid xs[MAX_LOGGED];
	int n = 0;
	struct gerr err = {0};
	if (kmsg_xids(path, xs, &n, &err) < 0) {
		_cleanup_free_ char *why = xvisible(err.msg);
		strv_add(a,
			 xasprintf("--xid-log-unread=%s%s", why,
				   err.errnum == EPERM ? " (kernel.dmesg_restrict is set: reading it needs CAP_SYSLOG)"
						       : ""));
	} else {
		strv_add(a, xstrdup("--xid-log-read"));
	}
	for (int i = 0; i < n; i++) {
		/* Prose, escaped as doctor's verdicts are, not shell-quoted. */
		_cleanup_free_ char *shown = xvisible(xs[i].text);
		strv_add(a, xasprintf("--xid=%s,%llu,%u,%c,%s", xs[i].bus, xs[i].num, xs[i].count,
				      xid_is_critical(xs[i].num) ? 'C' : 'W', shown));
		free(xs[i].text);
	}
}

int smoke_preflight(const char *driver_root, const char *gpus, struct strv *a, struct gerr *err)
{
	struct gpu_request rq;
	int r = gpu_request_parse(gpus, "--gpus", &rq, err);
	gpu_request_free(&rq);
	if (r < 0)
		return -1;
	/* What the launch will do first, changing nothing on the host: where
	 * it would run nvidia-modprobe, that is left to the launch. */
	struct plan p = {0};
	struct gpu_opts o = {.driver_root = driver_root, .gpus = gpus, .dry_run = 1};
	struct gpu_result res = {0};
	struct gerr why = {0};
	r = gpu_configure(&p, &o, &res, &why);
	plan_free(&p);
	free(res.ldconfig_dirs);
	free(res.compat_driver);
	strv_free(&res.host_steps);
	if (r == 0)
		return 0;
	/* doctor's driver checks say why, each with what to change; when
	 * none of them fails, the launch's own message does. */
	struct checks ck = {0};
	gpu_doctor_driver(&ck, driver_root, NULL);
	int said = 0;
	for (size_t i = 0; i < ck.nitems; i++) {
		if (ck.items[i].level != CHECK_FAIL)
			continue;
		_cleanup_free_ char *shown = xvisible(ck.items[i].text);
		strv_add(a, xasprintf("--fail=%s,%s: %s", check_id(ck.items[i].name), ck.items[i].name, shown));
		said = 1;
	}
	checks_free(&ck);
	if (!said) {
		_cleanup_free_ char *shown = xvisible(why.msg);
		strv_add(a, xasprintf("--fail=launch,%s", shown));
	}
	struct gpu_driver drv;
	if (gpu_discover(gpu_default_root(driver_root), &drv, &why) == 0) {
		strv_add(a, xasprintf("--kernel-module=%s", drv.version));
		gpu_driver_free(&drv);
	}
	return 1;
}

void smoke_probe_args(const char *driver_root, struct strv *a)
{
	xid_args(driver_root, a);
	char *stale = stale_libcuda(driver_root);
	if (stale)
		strv_add(a, xasprintf("--host-libcuda=%s", stale));
	free(stale);
}
