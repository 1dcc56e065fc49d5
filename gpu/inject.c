/* gpu/inject.c — gpu_configure(): what `nvidia-container-cli configure`
 * does, as ops appended to the plan (nothing is mounted here).
 *
 * The story, in the reference tool's order: decide whether this is a GPU container at all and with
 * which capabilities; read the driver; select the GPUs; check the
 * requirements before anything is mounted; then the ops — device nodes
 * (MIG capability and IMEX channel nodes too), the masked
 * /proc/driver/nvidia with the selected MIG devices' capability files,
 * binaries, libraries (32-bit ones for compat32), firmware, IPC, graphics
 * JSON files — and the directories for the ldconfig run the caller adds
 * after the pivot.
 *
 * Selection precedence: --gpus, else NVIDIA_VISIBLE_DEVICES
 * from the container environment (-e), else no GPU.  The host's own
 * environment never selects GPUs.  NVIDIA_MIG_CONFIG_DEVICES,
 * NVIDIA_MIG_MONITOR_DEVICES and NVIDIA_IMEX_CHANNELS are read from the
 * container environment too (gpu/mig.c). */
#include "gpu_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define OPF_DRIVER_FILE (OPF_RO | OPF_NODEV | OPF_NOSUID | OPF_REPLACE)
#define OPF_DEV_NODE (OPF_DEVICE | OPF_RO | OPF_NOSUID | OPF_NOEXEC | OPF_REPLACE)
#define OPF_MASK (OPF_RO | OPF_NOSUID | OPF_NODEV | OPF_NOEXEC)
#define APP_PROFILE_DIR "/etc/nvidia/nvidia-application-profiles-rc.d"

/* The container's value of key, or NULL.  The environment holds each key
 * once (gpurun.c lets a later -e replace an earlier one). */
static const char *container_getenv(const struct gpu_opts *o, const char *key)
{
	size_t kl = strlen(key);
	for (size_t i = 0; i < o->nenv; i++)
		if (!strncmp(o->env[i], key, kl) && o->env[i][kl] == '=')
			return o->env[i] + kl + 1;
	return NULL;
}

/* Go's strconv.ParseBool true values, as the NVIDIA hook reads them. */
static int env_true(const char *v)
{
	static const char *const yes[] = {"1", "t", "T", "TRUE", "true", "True"};
	for (size_t i = 0; v && i < COUNT_OF(yes); i++)
		if (!strcmp(v, yes[i]))
			return 1;
	return 0;
}

/* The "legacy image" rule: CUDA_VERSION without NVIDIA_REQUIRE_CUDA (an
 * empty value counts as none, as the toolkit reads them). */
static int legacy_image(const struct gpu_opts *o)
{
	const char *v = container_getenv(o, "CUDA_VERSION"), *r = container_getenv(o, "NVIDIA_REQUIRE_CUDA");
	return v && *v && !(r && *r);
}

/* One numeric semver part: digits, no leading zero; the value in *out. */
static const char *semver_part(const char *s, unsigned *out)
{
	unsigned long v;
	size_t n = strspn(s, "0123456789");
	if (!n || (n > 1 && *s == '0') || parse_decimal(s, n, 0xffffffffUL, &v) < 0)
		return NULL;
	*out = (unsigned)v;
	return s + n;
}

/* CUDA_VERSION as the toolkit reads it, a semantic version with an
 * optional "v": "12" and "12.4" are shorthands (12.0, 12.4), "12.4.1",
 * "12.4.1-rc1+b2" are full versions; MAJOR.MINOR of it into out. */
static int cuda_version_major_minor(const char *v, unsigned *major, unsigned *minor)
{
	unsigned patch;
	const char *p = semver_part(v + (*v == 'v'), major);
	*minor = 0;
	if (!p)
		return -1;
	if (*p == '.' && !(p = semver_part(p + 1, minor)))
		return -1;
	if (*p == '.') {
		if (!(p = semver_part(p + 1, &patch)))
			return -1;
		/* Pre-release and build suffixes only after a full version. */
		if (*p == '-' || *p == '+')
			return p[1] && strspn(p + 1, "0123456789abcdefghijklmnopqrstuvwxyz"
						     "ABCDEFGHIJKLMNOPQRSTUVWXYZ-.+") == strlen(p + 1)
				       ? 0
				       : -1;
	}
	return *p ? -1 : 0;
}

static int pick_caps(const struct gpu_opts *o, const struct gpu_request *rq, unsigned *caps, struct gerr *err)
{
	const char *list = o->caps, *what = "--caps";
	if (!list && rq->caps[0]) {
		list = rq->caps;
		what = "--gpus capabilities";
	}
	if (!list) {
		list = container_getenv(o, "NVIDIA_DRIVER_CAPABILITIES");
		what = "NVIDIA_DRIVER_CAPABILITIES";
	}
	if (caps_parse(list, caps, err) < 0)
		return gerr_prefix(err, "%s", what);
	if (!*caps)
		*caps = legacy_image(o) && !o->caps ? DRVCAP_ALL : DRVCAP_DEFAULT;
	return 0;
}

/* --require values, then (unless NVIDIA_DISABLE_REQUIRE) every
 * NVIDIA_REQUIRE_* of the container (but _JETPACK) and the legacy
 * CUDA_VERSION rule.  The disable switch is the image's escape hatch for
 * its own constraints; an explicit --require is always checked. */
static int collect_requires(const struct gpu_opts *o, struct strv *reqs, struct gerr *err)
{
	for (size_t i = 0; i < o->nrequires; i++)
		strv_add(reqs, xstrdup(o->requires[i]));
	if (env_true(container_getenv(o, "NVIDIA_DISABLE_REQUIRE")))
		return 0;
	for (size_t i = 0; i < o->nenv; i++) {
		const char *e = o->env[i];
		if (!strncmp(e, "NVIDIA_REQUIRE_", 15) && strncmp(e, "NVIDIA_REQUIRE_JETPACK=", 23))
			strv_add(reqs, xstrdup(strchr(e, '=') + 1));
	}
	if (legacy_image(o)) {
		const char *v = container_getenv(o, "CUDA_VERSION");
		unsigned major, minor;
		if (cuda_version_major_minor(v, &major, &minor) < 0)
			return gerr_set(err, 0, "invalid CUDA_VERSION %.64s (want a version: 12, 12.4, 12.4.1)", v);
		strv_add(reqs, xasprintf("cuda>=%u.%u", major, minor));
	}
	for (size_t i = 0; i < reqs->n; i++)
		if (require_validate(reqs->v[i], err) < 0)
			return -1;
	return 0;
}

/* Every requirement, once per selected GPU (arch and brand are per GPU),
 * or once with them unknown when no GPU is selected. */
static int check_requires(struct gpu_driver *drv, const struct strv *reqs, const struct inj_set *set, struct gerr *err)
{
	char cuda[32];
	int need_cuda = 0;
	for (size_t i = 0; i < reqs->n; i++)
		need_cuda |= require_uses_cuda(reqs->v[i]);
	struct req_facts f = {.driver = drv->version};
	if (need_cuda) {
		struct gerr why = {0};
		if (cuda_driver_version(drv, cuda, sizeof cuda, &why) == 0)
			f.cuda = cuda;
		else
			warnx_("cannot read the CUDA version (%s); cuda requirements count as met", why.msg);
	}
	for (size_t i = 0; i < reqs->n; i++) {
		for (size_t g = 0; g < (set->ngpus ? set->ngpus : 1); g++) {
			const struct gpu_dev *gpu = set->ngpus ? set->gpus[g] : NULL;
			f.arch = gpu && strcmp(gpu->arch, "n/a") ? gpu->arch : NULL;
			f.arch_unknown = gpu && !f.arch;
			f.brand = gpu ? gpu->brand : NULL;
			int r = require_eval(reqs->v[i], &f, err);
			if (r < 0)
				return -1;
			if (r == 0) {
				if (f.arch_unknown && require_uses_arch(reqs->v[i]))
					gerr_hint(err,
						  "GPU %u is a %s, whose architecture gpurun does not know "
						  "(it reads no NVML): no arch condition can be met on it",
						  gpu->index, gpu->model);
				else if (gpu)
					gerr_hint(err, "GPU %u is a %s (arch %s, brand %s); the driver is %s%s%s",
						  gpu->index, gpu->model, gpu->arch, gpu->brand, drv->version,
						  f.cuda ? ", CUDA " : "", f.cuda ? f.cuda : "");
				return -1;
			}
		}
	}
	return 0;
}

static void add_devices(struct plan *p, const struct gpu_driver *drv, const struct inj_set *set)
{
	for (size_t i = 0; i < set->ndevs; i++) {
		const struct inj_dev *d = &set->devs[i];
		_cleanup_free_ char *src = xasprintf("%s%s", drv->rootpath, d->dst);
		/* Bound, never mknod'ed: a ro bind of a char node still allows
		 * writes to the device, so no nodev here, and exec checks the
		 * source's st_rdev against ours. */
		struct op *op = plan_bind(p, src, d->dst, OPF_DEV_NODE);
		op->rdev = d->rdev;
		if (d->gpu)
			/* Named after the index: the minor is a different number. */
			plan_why(op, "GPU %u = PCI %s, minor %u", d->gpu->index, d->gpu->procdir, d->gpu->minor);
		else if (d->why)
			plan_why(op, "%s", d->why);
	}
	/* NVIDIA_MIG_CONFIG/MONITOR_DEVICES: the whole directory.  Read-only
	 * (the toolkit's is not): its nodes stay usable as devices, as the
	 * ones above, but nothing in the host's directory can be changed. */
	for (size_t i = 0; i < set->ncaps; i++)
		if (set->caps[i].dir && !strncmp(set->caps[i].dst, "/dev/", 5))
			plan_why(plan_bind(p, set->caps[i].src, set->caps[i].dst,
					   OPF_DIR | OPF_RO | OPF_NOSUID | OPF_NOEXEC),
				 "MIG management: every MIG capability node");
}

static void add_text_file(struct plan *p, const struct gpu_driver *drv, const char *name, int params)
{
	struct gerr ignore = {0};
	size_t len;
	char dst[64];
	snprintf(dst, sizeof dst, "/proc/driver/nvidia/%s", name);
	_cleanup_free_ char *text = drv_read(drv, dst, 1 << 20, &len, &ignore);
	if (!text)
		return; /* a missing registry is skipped, as the reference does */
	/* The printed plan copies the file it was read from. */
	_cleanup_free_ char *src = xasprintf("%s%s", drv->rootpath, dst);
	if (!params) {
		plan_file(p, dst, text, len, 0444)->src = xstrdup(src);
		return;
	}
	_cleanup_free_ char *fixed = procfs_params_no_modify(text, len, &len);
	struct op *op = plan_file(p, dst, fixed, len, 0444);
	op->src = xstrdup(src);
	op->flags |= OPF_PARAMS;
	plan_why(op, "ModifyDeviceFiles 0: no mknod of other GPUs' nodes");
}

/* /proc/driver/nvidia with only the selected GPUs, as nvidia-container-cli
 * masks it.  The
 * container's procfs is the host kernel's, so the tmpfs goes on
 * /proc/driver/nvidia when the host has that directory.  A host without
 * the NVIDIA module (a fake driver root in the tests) has no such
 * directory and procfs refuses mkdir, so there the tmpfs covers
 * /proc/driver and nvidia/ is made inside it. */
static void add_procfs(struct plan *p, const struct gpu_driver *drv, const struct inj_set *set)
{
	struct stat st;
	int host_has = stat("/proc/driver/nvidia", &st) == 0 && S_ISDIR(st.st_mode);
	const char *mnt = host_has ? "/proc/driver/nvidia" : "/proc/driver";
	struct op *op = plan_tmpfs(p, mnt, "mode=0555", OPF_NOSUID | OPF_NODEV | OPF_NOEXEC);
	plan_why(op, "hide the host's list of GPUs");
	if (!host_has)
		plan_mkdir(p, "/proc/driver/nvidia", 0555);
	add_text_file(p, drv, "params", 1);
	add_text_file(p, drv, "version", 0);
	add_text_file(p, drv, "registry", 0);
	plan_mkdir(p, "/proc/driver/nvidia/gpus", 0555);
	for (size_t i = 0; i < set->ngpus; i++) {
		const struct gpu_dev *g = set->gpus[i];
		_cleanup_free_ char *src = xasprintf("%s/proc/driver/nvidia/gpus/%s", drv->rootpath, g->procdir);
		_cleanup_free_ char *dst = xasprintf("/proc/driver/nvidia/gpus/%s", g->procdir);
		plan_bind(p, src, dst, OPF_DIR | OPF_MASK);
	}
	/* The MIG capability files of the selected MIG devices (or, for MIG
	 * management, the whole directory), read-only at their own paths. */
	for (size_t i = 0; i < set->ncaps; i++) {
		const struct inj_file *f = &set->caps[i];
		if (strncmp(f->dst, "/proc/", 6))
			continue;
		if (!f->dir) {
			_cleanup_free_ char *dir = xstrdup(f->dst);
			*strrchr(dir, '/') = '\0';
			plan_mkdir(p, dir, 0555);
		}
		struct op *b = plan_bind(p, f->src, f->dst, (f->dir ? OPF_DIR : 0) | OPF_MASK);
		if (f->dir)
			plan_why(b, "MIG management: every MIG capability");
	}
	plan_add(p, OP_REMOUNT, OPF_MASK, NULL, mnt);
}

static const struct inj_file *find_lib(const struct inj_set *set, const char *prefix)
{
	size_t pl = strlen(prefix);
	for (size_t i = 0; i < set->nlibs; i++) {
		const char *base = strrchr(set->libs[i].src, '/') + 1;
		if (!strncmp(base, prefix, pl))
			return &set->libs[i];
	}
	return NULL;
}

/* The SONAME links, as nvidia-container-cli makes them: an image
 * without ldconfig (distroless, busybox + glibc) or whose ldconfig
 * fails still finds libcuda.so.1 and libnvidia-ml.so.1.  Each beside its
 * library ($LIBDIR/vdpau/libvdpau_nvidia.so.1 too). */
static void add_soname_links(struct plan *p, const struct inj_file *libs, size_t n, const char *why)
{
	int first = 1;
	for (size_t i = 0; i < n; i++) {
		const char *base = strrchr(libs[i].src, '/') + 1, *so = libs[i].soname;
		if (!so || !strcmp(so, base) || strchr(so, '/'))
			continue;
		const char *slash = strrchr(libs[i].dst, '/');
		_cleanup_free_ char *dst = xasprintf("%.*s/%s", (int)(slash - libs[i].dst), libs[i].dst, so);
		struct op *op = plan_symlink(p, base, dst);
		if (first)
			plan_why(op, "%s", why);
		first = 0;
	}
}

static void add_files(struct plan *p, const struct inj_set *set)
{
	for (size_t i = 0; i < set->nbins; i++)
		plan_bind(p, set->bins[i].src, set->bins[i].dst, OPF_DRIVER_FILE);
	for (size_t i = 0; i < set->nlibs; i++)
		plan_bind(p, set->libs[i].src, set->libs[i].dst, OPF_DRIVER_FILE);
	add_soname_links(p, set->libs, set->nlibs, "for images without ldconfig");
	/* compat32: the 32-bit libraries into the image's 32-bit directory. */
	for (size_t i = 0; i < set->nlibs32; i++) {
		struct op *op = plan_bind(p, set->libs32[i].src, set->libs32[i].dst, OPF_DRIVER_FILE);
		if (i == 0)
			plan_why(op, "compat32: the 32-bit driver libraries");
	}
	add_soname_links(p, set->libs32, set->nlibs32, "their SONAME links");
	/* And the three links nvidia-container-cli adds beyond them, which
	 * share a line: its comment names what each of those made is for. */
	const struct inj_file *glx = find_lib(set, "libGLX_nvidia.so.");
	const struct {
		const char *target, *dst, *what;
	} extra[] = {
		{find_lib(set, "libcuda.so.") ? "libcuda.so.1" : NULL, "$LIBDIR/libcuda.so", "-lcuda"},
		{glx ? strrchr(glx->src, '/') + 1 : NULL, "$LIBDIR/libGLX_indirect.so.0", "GLX's indirect rendering"},
		{find_lib(set, "libnvidia-opticalflow.so.") ? "libnvidia-opticalflow.so.1" : NULL,
		 "$LIBDIR/libnvidia-opticalflow.so", "-lnvidia-opticalflow"},
	};
	size_t nextra = 0, k = 0;
	for (size_t i = 0; i < COUNT_OF(extra); i++)
		nextra += !!extra[i].target;
	struct op *first = NULL;
	struct sbuf why = {0};
	for (size_t i = 0; i < COUNT_OF(extra); i++) {
		if (!extra[i].target)
			continue;
		struct op *op = plan_symlink(p, extra[i].target, extra[i].dst);
		first = first ? first : op;
		sbuf_printf(&why, "%s%s", k == 0 ? "for " : k + 1 == nextra ? " and " : ", ", extra[i].what);
		k++;
	}
	if (first)
		plan_why(first, "%s", why.s);
	sbuf_free(&why);
	/* Links loaders look for that no SONAME names (the GBM backend). */
	for (size_t i = 0; i < set->nlinks; i++)
		plan_symlink(p, set->links[i].src, set->links[i].dst);
	for (size_t i = 0; i < set->nfirmware; i++)
		plan_bind(p, set->firmware[i].src, set->firmware[i].dst, OPF_DRIVER_FILE);
	/* Graphics: the loaders (Vulkan, GLVND's EGL) find the driver by these. */
	for (size_t i = 0; i < set->nconfigs; i++) {
		struct op *op = plan_bind(p, set->configs[i].src, set->configs[i].dst, OPF_DRIVER_FILE);
		if (i == 0)
			plan_why(op, "how the Vulkan and EGL loaders find the NVIDIA driver");
	}
	/* IPC sockets and the MPS directory stay writable: they are how the
	 * container talks to host daemons. */
	for (size_t i = 0; i < set->nipcs; i++)
		plan_bind(p, set->ipcs[i].src, set->ipcs[i].dst,
			  OPF_NODEV | OPF_NOSUID | OPF_NOEXEC | (set->ipcs[i].dir ? OPF_DIR : OPF_REPLACE));
}

/* EGL's list of visible GPUs (graphics only): a bitmask of their minors. */
static void add_app_profile(struct plan *p, const struct inj_set *set)
{
	unsigned long long mask = 0;
	for (size_t i = 0; i < set->ngpus; i++)
		if (set->gpus[i]->minor < 64)
			mask |= 1ULL << set->gpus[i]->minor;
	struct op *op = plan_tmpfs(p, APP_PROFILE_DIR, "mode=0555", OPF_NOSUID | OPF_NODEV | OPF_NOEXEC);
	plan_why(op, "EGL sees only the selected GPUs");
	_cleanup_free_ char *json = xasprintf(
		"{\n  \"profiles\": [{\"name\": \"_container_\", \"settings\": [\"EGLVisibleDGPUDevices\", 0x%llx]}],\n"
		"  \"rules\": [{\"pattern\": [], \"profile\": \"_container_\"}]\n}\n",
		mask);
	plan_file(p, APP_PROFILE_DIR "/10-container.conf", json, strlen(json), 0444);
}

static int configure(struct plan *p, const struct gpu_opts *o, const struct gpu_request *rq, const char *what,
		     struct gpu_result *res, struct gerr *err)
{
	unsigned caps;
	struct strv reqs = {0};
	struct gpu_driver drv = {.rootfd = -1};
	struct gpu_selection sel;
	struct inj_set set = {0};
	int r = -1;

	/* Every input error before the first look at the driver. */
	struct sel_extras extras = {container_getenv(o, "NVIDIA_MIG_CONFIG_DEVICES"),
				    container_getenv(o, "NVIDIA_MIG_MONITOR_DEVICES"),
				    container_getenv(o, "NVIDIA_IMEX_CHANNELS")};
	if (pick_caps(o, rq, &caps, err) < 0 || collect_requires(o, &reqs, err) < 0 ||
	    mig_sel_extras_check(&extras, err) < 0)
		goto out;
	const char *root = gpu_default_root(o->driver_root);
	if (gpu_discover(root, &drv, err) < 0)
		goto out;
	if (gpu_select(rq, &drv, what, root, &extras, 0, &sel, err) < 0)
		goto out;
	if (sel.ceiling[0])
		strv_add(&res->host_steps, xasprintf("# GPUs bounded by %s", sel.ceiling));
	unsigned inj = caps_inject_flags(caps);
	/* As root, nothing is bound that someone else could have changed
	 * (docs/design.md, "Modes"): judged before libcuda is loaded for a requirement. */
	if (inj_collect_all(&drv, &sel, inj, &set, err) < 0 || inj_trust(&drv, &set, err) < 0 ||
	    check_requires(&drv, &reqs, &set, err) < 0)
		goto out;
	/* Only a launch that will go ahead may load modules and make nodes;
	 * the driver root is read again after that. */
	int again = nodes_ensure(&drv, root, rq, what, &sel, inj, o->dry_run, o->verbose, &res->host_steps, err);
	if (again < 0)
		goto out;
	if (again) {
		inj_free(&set);
		if (inj_collect_all(&drv, &sel, inj, &set, err) < 0 || inj_trust(&drv, &set, err) < 0)
			goto out;
	}

	add_devices(p, &drv, &set);
	add_procfs(p, &drv, &set);
	add_files(p, &set);
	if ((inj & INJ_GRAPHICS_LIBS) && set.ngpus)
		add_app_profile(p, &set);
	res->ldconfig_dirs = set.nlibs32 ? xstrdup(set.nlibs ? LIBDIR_VAR ":" LIBDIR32_VAR : LIBDIR32_VAR)
			     : set.nlibs ? xstrdup(LIBDIR_VAR)
					 : NULL;
	res->gpu = 1;
	res->caps = caps;
	res->driver_root = root;
	/* Forward compatibility concerns libcuda, so only with compute. */
	if (set.nlibs && find_lib(&set, "libcuda.so."))
		res->compat_driver = xstrdup(drv.version);
	r = 0;
out:
	inj_free(&set);
	strv_free(&reqs);
	gpu_driver_free(&drv);
	return r;
}

int gpu_configure(struct plan *p, const struct gpu_opts *o, struct gpu_result *res, struct gerr *err)
{
	memset(res, 0, sizeof *res);
	const char *spec = o->gpus, *what = "--gpus";
	if (!spec) {
		spec = container_getenv(o, "NVIDIA_VISIBLE_DEVICES");
		what = "NVIDIA_VISIBLE_DEVICES";
		/* A legacy CUDA image (CUDA_VERSION, no NVIDIA_REQUIRE_CUDA)
		 * that does not say which GPUs gets them all, as with the
		 * toolkit; set to "" or void, it gets none. */
		if (!spec && legacy_image(o)) {
			spec = "all";
			what = "NVIDIA_VISIBLE_DEVICES (unset in a legacy CUDA image: all)";
		}
	}
	if (!spec)
		return 0; /* not a GPU container; the driver is never looked at */
	struct gpu_request rq;
	if (gpu_request_parse(spec, what, &rq, err) < 0) {
		gpu_request_free(&rq);
		return -1;
	}
	int r = rq.kind == SEL_VOID ? 0 : configure(p, o, &rq, what, res, err);
	gpu_request_free(&rq);
	return r;
}
