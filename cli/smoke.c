/* cli/smoke.c — `gpurun smoke [--gpus SPEC] [--json|--tap] [--doctor]
 * [--gpu-timeout SECONDS] [IMAGE]`: the GPU check a CI job runs, turned
 * into an ordinary `run` of the probe gpurun ships, bound read-only into
 * the container (gpu/smoke.c finds it and the host's facts it gets).
 *
 * Without IMAGE the container's root is the host's C library and nothing
 * else (rootfs/image/hostlibc.c), unpacked into the run's memory: the probe
 * needs only that, and it needs no overlay, which an unprivileged launch
 * cannot stack on the host's / (ns/rootbuild.c says why).
 *
 * smoke owns its verdict whenever the node can be judged: a driver too
 * broken for the launch (gpu/smoke.c's preflight) is a `driver` FAIL, said
 * by the probe run on the host in the form asked for, exit 1, never
 * gpurun's own failure.  --doctor puts `gpurun doctor`'s verdicts in the
 * same report: one command, one document, one exit status for a nightly
 * job.  Exit status: the probe's (0 all passed, 1 a check failed), 125
 * gpurun failed (bad options, an image or cache it cannot use). */
#include "cli.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../gpu/gpu.h"
#include "../ns/ns.h"
#include "../rootfs/rootfs.h"

enum { V_GPU_TIMEOUT = 100, V_DOCTOR };

/* clang-format off */
static const struct opt smoke_opts[] = {
	{V_GPUS, "gpus", NULL, 0, OPT_VALUE, "SPEC", "the GPUs to test, as run's --gpus (default all)"},
	{V_JSON, "json", NULL, 0, OPT_FLAG, NULL, "one JSON document (docs/json.md)"},
	{V_TAP, "tap", NULL, 0, OPT_FLAG, NULL, "Test Anything Protocol"},
	{V_DOCTOR, "doctor", NULL, 0, OPT_FLAG, NULL, "also run doctor's checks, in the same report"},
	{V_GPU_TIMEOUT, "gpu-timeout", NULL, 0, OPT_VALUE, "SECONDS", "each GPU's deadline (default 60)"},
	{V_DRIVER_ROOT, "driver-root", NULL, 0, OPT_VALUE, "DIR", "where the host driver lives"},
	{V_HELP, "help", NULL, 'h', OPT_FLAG, NULL, "this text"},
	{0},
};
static const struct opt_use smoke_uses[] = {{"smoke", NULL, smoke_opts, " [IMAGE]", 1, 0}};
/* clang-format on */

static void smoke_help(const struct verb *v)
{
	verb_print_uses(stdout, v, "usage: ");
	fputs("\nRun gpurun's GPU smoke test in IMAGE (default: a root of the host's C\n"
	      "library) on the selected GPUs: a CUDA kernel on each, NVML's health, the\n"
	      "driver's versions; with --doctor, doctor's checks too.  The check a\n"
	      "nightly CI job runs: gpurun smoke --doctor --json.\n"
	      "Exit status 0 all passed, 1 a check failed, 125 gpurun failed.\n\n",
	      stdout);
	opt_help(stdout, smoke_opts, NULL);
}

/* --gpu-timeout: seconds, a fraction allowed, up to a day. */
static const char *parse_timeout(const char *val)
{
	char *end;
	double d = strtod(val, &end);
	if (end == val || *end || !(d > 0) || d > 86400) {
		struct sbuf q = {0};
		sbuf_showquote(&q, val);
		die(GPURUN_EXIT_FAIL, "smoke: --gpu-timeout %s: expected seconds, more than 0 and at most 86400", q.s);
	}
	return val;
}

/* doctor's verdicts, for the probe's report (--doctor). */
static void doctor_args(const char *driver_root, const char *gpus, struct strv *a)
{
	struct checks ck = {0};
	struct gerr err = {0};
	_cleanup_free_ char *cache = cache_doctor(&ck);
	if (ns_doctor(&ck, cache, &err) < 0)
		gerr_die(&err);
	gpu_doctor(&ck, driver_root, gpus);
	static const char *const levels[] = {"ok", "warn", "fail"};
	strv_add(a, xstrdup("--doctor"));
	for (size_t i = 0; i < ck.nitems; i++) {
		_cleanup_free_ char *shown = xvisible(ck.items[i].text);
		strv_add(a, xasprintf("--check=%s,%s,%s,%s", check_id(ck.items[i].name), levels[ck.items[i].level],
				      ck.items[i].name, shown));
	}
	checks_free(&ck);
}

static int smoke_verb(const struct verb *v, int argc, char **argv, const char *driver_root)
{
	const char *gpus = "all", *form = NULL, *image = NULL, *timeout = NULL, *val;
	int doctor = 0;
	const struct opt *o;
	struct gerr err = {0};
	struct opt_state s = OPT_STATE(argc, argv);
	for (int r;;) {
		if ((r = opt_next(&s, smoke_opts, &o, &val, &err)) < 0)
			die(GPURUN_EXIT_FAIL, "smoke: %s", err.msg);
		if (r == 0 && s.i < argc) {
			if (image) {
				struct sbuf q = {0};
				sbuf_showquote(&q, argv[s.i]);
				die(GPURUN_EXIT_FAIL, "smoke: unexpected argument %s", q.s);
			}
			image = argv[s.i++];
			continue;
		}
		if (r == 0)
			break;
		switch (o->id) {
		case V_GPUS: gpus = val; break;
		case V_JSON: form = "--json"; break;
		case V_TAP: form = "--tap"; break;
		case V_DOCTOR: doctor = 1; break;
		case V_GPU_TIMEOUT: timeout = parse_timeout(val); break;
		case V_DRIVER_ROOT: driver_root = val; break;
		case V_HELP: smoke_help(v); return 0;
		}
	}
	_cleanup_free_ char *probe = smoke_probe_path(&err);
	if (!probe)
		gerr_die(&err);
	/* The probe's own arguments, the same for the launch and for a
	 * verdict said without one. */
	struct strv pa = {0};
	if (form)
		strv_add(&pa, xstrdup(form));
	if (timeout)
		strv_add(&pa, xasprintf("--deadline=%s", timeout));
	if (doctor)
		doctor_args(driver_root, gpus, &pa);
	smoke_probe_args(driver_root, &pa);

	struct strv fails = {0};
	int pre = smoke_preflight(driver_root, gpus, &fails, &err);
	if (pre < 0)
		die(GPURUN_EXIT_FAIL, "smoke: %s", err.msg);
	if (pre > 0) {
		/* No launch can happen: the probe, run here, says why. */
		struct strv a = {0};
		strv_add(&a, xstrdup(probe));
		strv_add(&a, xstrdup("--report-only"));
		for (size_t i = 0; i < pa.n; i++)
			strv_add(&a, xstrdup(pa.v[i]));
		for (size_t i = 0; i < fails.n; i++)
			strv_add(&a, xstrdup(fails.v[i]));
		fflush(NULL);
		execv(probe, a.v);
		die(GPURUN_EXIT_FAIL, "smoke: cannot run %s: %s", probe, strerror(errno));
	}

	struct strv a = {0};
	strv_add(&a, xstrdup("run"));
	if (driver_root) {
		strv_add(&a, xstrdup("--driver-root"));
		strv_add(&a, xstrdup(driver_root));
	}
	/* smoke's --gpus N is an index as run's is; docker's form says so
	 * without run's note for a bare number. */
	int bare = *gpus && strspn(gpus, "0123456789") == strlen(gpus);
	strv_add(&a, xasprintf("--gpus=%s%s", bare ? "device=" : "", gpus));
	strv_add(&a, xasprintf("--volume=%s:/.gpurun-smoke:ro", probe));
	strv_add(&a, xstrdup("--entrypoint=/.gpurun-smoke"));
	if (!image) {
		int fd = image_host_libc(&err);
		if (fd < 0)
			gerr_die(&err);
		strv_add(&a, xstrdup("--no-cache"));
		strv_add(&a, xstrdup("--quiet"));
		strv_add(&a, xstrdup("--"));
		strv_add(&a, xasprintf("/proc/self/fd/%d", fd));
	} else {
		strv_add(&a, xstrdup("--"));
		strv_add(&a, xstrdup(image));
	}
	for (size_t i = 0; i < pa.n; i++)
		strv_add(&a, xstrdup(pa.v[i]));
	return run_main((int)a.n, a.v, NULL);
}

const struct verb verb_smoke = {"smoke", smoke_verb, smoke_uses, COUNT_OF(smoke_uses), 1};
