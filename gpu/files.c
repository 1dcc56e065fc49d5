/* gpu/files.c — the exact set of host objects one launch injects: device
 * nodes, binaries, libraries, firmware and IPC sockets, with where each
 * lands in the container.  Computed once, then turned into plan ops by
 * inject.c or printed by `gpurun list` (info.c), so the two cannot disagree.
 *
 * What and where follow nvidia-container-cli:
 *   /dev/nvidiactl always; nvidia-uvm(-tools) with the compute libraries;
 *   nvidia-modeset with display; /dev/nvidia<minor> per selected GPU;
 *   binaries found on a fixed PATH inside the driver root -> /usr/bin;
 *   libraries from the driver root's ld.so.cache -> $LIBDIR (the image's
 *   distro lib dir, decided when the op runs), 32-bit ones (compat32) ->
 *   $LIBDIR32;
 *   with graphics, the Vulkan ICD and EGL vendor/platform JSON files, the
 *   OptiX data file and the driver's application profiles -> the same path,
 *   and the EGL platform libraries the toolkit adds (versioned on their
 *   own) -> $LIBDIR;
 *   what loaders look for outside ld.so.cache (a Debian host keeps it in
 *   nvidia/current, reached only through /etc/alternatives): the VDPAU
 *   driver -> $LIBDIR/vdpau, libnvidia-vulkan-producer, and the GBM backend
 *   $LIBDIR/gbm/nvidia-drm_gbm.so -> ../libnvidia-allocator.so.1;
 *   MIG capability nodes and files, IMEX channels: see mig.c;
 *   lib/firmware/nvidia/<version>/gsp*.bin and the persistenced,
 *   fabricmanager and MPS paths -> the same path as in the driver root.
 * The caller's PATH and CUDA_MPS_PIPE_DIRECTORY are not consulted: the
 * host environment does not steer what goes into a container.  Run as
 * root, inj_trust refuses a set with a file or node someone else could
 * have changed (docs/design.md, "Modes"). */
#include "gpu_int.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

static const char *const bin_dirs[] = {"/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin"};

struct ipc {
	unsigned flag;              /* INJ_* that brings it */
	int dir;                    /* a directory rather than a socket */
	const char *const paths[2]; /* candidates, first found wins */
};

static const struct ipc ipcs[] = {
	{INJ_UTILITY_LIBS, 0, {"/run/nvidia-persistenced/socket", "/var/run/nvidia-persistenced/socket"}},
	{INJ_UTILITY_LIBS, 0, {"/run/nvidia-fabricmanager/socket", "/var/run/nvidia-fabricmanager/socket"}},
	{INJ_COMPUTE_LIBS, 1, {"/tmp/nvidia-mps", NULL}},
};

void inj_add_dev(struct inj_set *s, const char *path, unsigned maj, unsigned min, const struct gpu_dev *gpu,
		 const char *why)
{
	s->devs = xrealloc(s->devs, (s->ndevs + 1) * sizeof *s->devs);
	s->devs[s->ndevs++] = (struct inj_dev){xstrdup(path), makedev(maj, min), gpu, why ? xstrdup(why) : NULL};
}

void inj_add_file(struct inj_file **v, size_t *n, char *src, char *dst)
{
	*v = xrealloc(*v, (*n + 1) * sizeof **v);
	(*v)[(*n)++] = (struct inj_file){.src = src, .dst = dst};
}

/* A character device node of the driver root, with the expected number. */
static int have_chr(const struct gpu_driver *drv, const char *path, unsigned maj, unsigned min)
{
	struct stat st;
	_cleanup_free_ char *host = drv_resolve(drv, path, &st, NULL);
	return host && S_ISCHR(st.st_mode) && st.st_rdev == makedev(maj, min);
}

static void collect_devices(const struct gpu_driver *drv, unsigned inj, struct inj_set *s)
{
	inj_add_dev(s, "/dev/nvidiactl", NV_MAJOR, NV_CTL_MINOR, NULL, NULL);
	if ((inj & INJ_COMPUTE_LIBS) && drv->uvm_major) {
		if (have_chr(drv, "/dev/nvidia-uvm", drv->uvm_major, 0))
			inj_add_dev(s, "/dev/nvidia-uvm", drv->uvm_major, 0, NULL, NULL);
		if (have_chr(drv, "/dev/nvidia-uvm-tools", drv->uvm_major, 1))
			inj_add_dev(s, "/dev/nvidia-uvm-tools", drv->uvm_major, 1, NULL, NULL);
	}
	if ((inj & INJ_DISPLAY) && have_chr(drv, "/dev/nvidia-modeset", NV_MAJOR, NV_MODESET_MINOR))
		inj_add_dev(s, "/dev/nvidia-modeset", NV_MAJOR, NV_MODESET_MINOR, NULL, NULL);
	for (size_t i = 0; i < s->ngpus; i++) {
		char path[32];
		snprintf(path, sizeof path, "/dev/nvidia%u", s->gpus[i]->minor);
		inj_add_dev(s, path, NV_MAJOR, s->gpus[i]->minor, s->gpus[i], NULL);
	}
}

static void collect_bins(const struct gpu_driver *drv, unsigned inj, struct inj_set *s)
{
	for (size_t g = 0; g < caps_nbins; g++) {
		if (!(inj & caps_bins[g].flag))
			continue;
		for (size_t b = 0; b < caps_bins[g].n; b++) {
			for (size_t d = 0; d < COUNT_OF(bin_dirs); d++) {
				char path[256];
				struct stat st;
				snprintf(path, sizeof path, "%s/%s", bin_dirs[d], caps_bins[g].names[b]);
				char *host = drv_resolve(drv, path, &st, NULL);
				if (host && S_ISREG(st.st_mode) && (st.st_mode & 0111)) {
					inj_add_file(&s->bins, &s->nbins, host,
						     xasprintf("/usr/bin/%s", caps_bins[g].names[b]));
					break;
				}
				free(host);
			}
		}
	}
}

static const char *const egl_platform_libs[] = {
	"libnvidia-egl-gbm.so", "libnvidia-egl-wayland.so", "libnvidia-egl-wayland2.so",
	"libnvidia-egl-xcb.so", "libnvidia-egl-xlib.so",
};

static int collect_libs(struct gpu_driver *drv, unsigned inj, int bits, struct inj_file **v, size_t *n,
			struct gerr *err)
{
	const char **prefixes = NULL;
	size_t np = 0;
	for (size_t g = 0; g < caps_nlibs; g++) {
		if (!(inj & caps_libs[g].flag))
			continue;
		prefixes = xrealloc(prefixes, (np + caps_libs[g].n) * sizeof *prefixes);
		for (size_t i = 0; i < caps_libs[g].n; i++)
			prefixes[np++] = caps_libs[g].names[i];
	}
	struct strv found = {0}, sonames = {0};
	int r = np ? drv_find_libs(drv, prefixes, np, bits, &found, &sonames, err) : 0;
	free(prefixes);
	/* The EGL external platform libraries nvidia-ctk adds with graphics
	 * (its libnvidia-egl-{gbm,wayland,wayland2,xcb,xlib}.so.*.*): their
	 * own versions, not the driver's; their JSON files are
	 * collect_configs'.  64-bit only, as the toolkit. */
	if (r == 0 && bits == 64 && (inj & INJ_GRAPHICS_LIBS))
		r = drv_find_platform_libs(drv, egl_platform_libs, COUNT_OF(egl_platform_libs), bits, &found, &sonames,
					   err);
	for (size_t i = 0; i < found.n; i++) {
		const char *base = strrchr(found.v[i], '/') + 1;
		/* The image's library directory of that word size (base/plan/plan.h). */
		inj_add_file(v, n, found.v[i], xasprintf("%s/%s", bits == 64 ? LIBDIR_VAR : LIBDIR32_VAR, base));
		(*v)[*n - 1].soname = sonames.v[i];
	}
	free(found.v);
	free(sonames.v);
	return r;
}

char *drv_lib_dir(const struct gpu_driver *drv, const char *soname, int bits)
{
	for (size_t i = 0; soname && i < drv->cache.n; i++) {
		const struct ldcache_entry *e = &drv->cache.v[i];
		const char *slash = strrchr(e->value, '/');
		if (ldcache_entry_is(e->flags, bits) && !strcmp(e->key, soname) && slash && slash != e->value)
			return xstrndup(e->value, (size_t)(slash - e->value));
	}
	return NULL;
}

static int has_lib(const struct inj_file *v, size_t n, const char *prefix)
{
	for (size_t i = 0; i < n; i++)
		if (!strncmp(strrchr(v[i].src, '/') + 1, prefix, strlen(prefix)))
			return 1;
	return 0;
}

/* dir/name in the driver root, when it leads (through any absolute links,
 * resolved in the root) to a regular file named "<stem>.so.<version>": its
 * host path, else NULL. */
static char *driver_file_in(const struct gpu_driver *drv, const char *dir, const char *name)
{
	struct stat st;
	_cleanup_free_ char *path = xasprintf("%s/%s", dir, name);
	char *host = drv_resolve(drv, path, &st, NULL);
	const char *base = host ? strrchr(host, '/') + 1 : NULL;
	size_t bl = base ? strlen(base) : 0, vl = strlen(drv->version);
	if (host && S_ISREG(st.st_mode) && bl > vl + 4 && !strcmp(base + bl - vl, drv->version) &&
	    !strncmp(base + bl - vl - 4, ".so.", 4))
		return host;
	free(host);
	return NULL;
}

/* What the loaders of video and graphics look for outside ld.so.cache.
 * On a host from NVIDIA's installer these sit next to the other
 * libraries; on Debian the real files are in nvidia/current, and
 * vdpau/libvdpau_nvidia.so.1 and gbm/nvidia-drm_gbm.so are links made by
 * update-alternatives.  Looked for beside the directory the cache names
 * for the driver's libraries (dir) and in the directories their files are
 * really in. */
static int collect_uncached(struct gpu_driver *drv, unsigned inj, int bits, struct inj_file **v, size_t *n,
			    struct inj_set *s, struct gerr *err)
{
	if (!*n)
		return 0;
	const char *libdir = bits == 64 ? LIBDIR_VAR : LIBDIR32_VAR;
	_cleanup_free_ char *dir = drv_lib_dir(drv, (*v)[0].soname, bits);
	if (!dir)
		return 0;
	char name[128];
	/* libvdpau opens $LIBDIR/vdpau/libvdpau_nvidia.so.1 (VDPAU_DRIVER). */
	if ((inj & INJ_VIDEO_LIBS) && !has_lib(*v, *n, "libvdpau_nvidia.so.")) {
		_cleanup_free_ char *vdpau = xasprintf("%s/vdpau", dir);
		snprintf(name, sizeof name, "libvdpau_nvidia.so.%s", drv->version);
		char *host = driver_file_in(drv, vdpau, name);
		if (!host)
			host = driver_file_in(drv, vdpau, "libvdpau_nvidia.so.1");
		if (host) {
			inj_add_file(v, n, host, xasprintf("%s/vdpau/%s", libdir, strrchr(host, '/') + 1));
			(*v)[*n - 1].soname = xstrdup("libvdpau_nvidia.so.1");
		}
	}
	if (!(inj & INJ_GRAPHICS_LIBS))
		return 0;
	/* Loaded by its file name (it has no SONAME): the Vulkan WSI layer of
	 * the driver; the toolkit adds its .so link too. */
	snprintf(name, sizeof name, "libnvidia-vulkan-producer.so.%s", drv->version);
	char *host = driver_file_in(drv, dir, name);
	for (size_t i = 0; !host && i < *n; i++) {
		_cleanup_free_ char *real = xstrndup((*v)[i].src, (size_t)(strrchr((*v)[i].src, '/') - (*v)[i].src));
		host = driver_file_in(drv, real + strlen(drv->rootpath), name);
	}
	if (host && !has_lib(*v, *n, "libnvidia-vulkan-producer.so.")) {
		inj_add_file(v, n, host, xasprintf("%s/%s", libdir, name));
		(*v)[*n - 1].soname = xstrdup("libnvidia-vulkan-producer.so");
	} else {
		free(host);
	}
	/* libgbm loads the backend $LIBDIR/gbm/<driver>_gbm.so; NVIDIA's is
	 * libnvidia-allocator, a compute library of the reference, needed
	 * here with graphics alone too. */
	_cleanup_free_ char *gbm = xasprintf("%s/gbm", dir);
	_cleanup_free_ char *backend = driver_file_in(drv, gbm, "nvidia-drm_gbm.so");
	if (!backend)
		return 0;
	if (!has_lib(*v, *n, "libnvidia-allocator.so.")) {
		static const char *const allocator[] = {"libnvidia-allocator.so"};
		struct strv found = {0}, sonames = {0};
		if (drv_find_libs(drv, allocator, 1, bits, &found, &sonames, err) < 0)
			return -1;
		for (size_t i = 0; i < found.n; i++) {
			inj_add_file(v, n, found.v[i], xasprintf("%s/%s", libdir, strrchr(found.v[i], '/') + 1));
			(*v)[*n - 1].soname = sonames.v[i];
		}
		free(found.v);
		free(sonames.v);
	}
	if (has_lib(*v, *n, "libnvidia-allocator.so."))
		inj_add_file(&s->links, &s->nlinks, xstrdup("../libnvidia-allocator.so.1"),
			     xasprintf("%s/gbm/nvidia-drm_gbm.so", libdir));
	return 0;
}

/* Graphics configuration files the toolkit adds (nvidia-ctk's graphics
 * mounts; nvidia-container-cli adds none): the Vulkan ICD and layers, the
 * GLVND EGL vendor file, EGL's external platforms and OptiX's nvoptix.bin;
 * and the driver's own application profiles, which its GL and EGL
 * libraries read by their versioned names.  Each is looked for
 * where the toolkit looks (/etc, then the XDG data dirs /usr/local/share
 * and /usr/share, fixed: the caller's XDG_DATA_DIRS does not steer what
 * goes in) and lands at the same path. */
static const char *const config_names[] = {
	"vulkan/icd.d/nvidia_icd.json",
	"vulkan/icd.d/nvidia_icd." HOST_MACHINE ".json",
	"vulkan/icd.d/nvidia_layers.json",
	"vulkan/implicit_layer.d/nvidia_layers.json",
	"glvnd/egl_vendor.d/10_nvidia.json",
	"egl/egl_external_platform.d/15_nvidia_gbm.json",
	"egl/egl_external_platform.d/10_nvidia_wayland.json",
	"egl/egl_external_platform.d/09_nvidia_wayland2.json",
	"egl/egl_external_platform.d/20_nvidia_xcb.json",
	"egl/egl_external_platform.d/20_nvidia_xlib.json",
	"nvidia/nvoptix.bin", /* libnvoptix's data, read from /usr/share/nvidia */
};
static const char *const config_dirs[] = {"/etc", "/usr/local/share", "/usr/share"};

static void collect_configs(const struct gpu_driver *drv, unsigned inj, struct inj_set *s)
{
	if (!(inj & INJ_GRAPHICS_LIBS))
		return;
	for (size_t i = 0; i < COUNT_OF(config_names); i++) {
		for (size_t d = 0; d < COUNT_OF(config_dirs); d++) {
			char path[256];
			struct stat st;
			snprintf(path, sizeof path, "%s/%s", config_dirs[d], config_names[i]);
			char *host = drv_resolve(drv, path, &st, NULL);
			if (host && S_ISREG(st.st_mode)) {
				inj_add_file(&s->configs, &s->nconfigs, host, xstrdup(path));
				break;
			}
			free(host);
		}
	}
	static const char *const profiles[] = {"rc", "key-documentation"};
	for (size_t i = 0; i < COUNT_OF(profiles); i++) {
		struct stat st;
		char *path =
			xasprintf("/usr/share/nvidia/nvidia-application-profiles-%s-%s", drv->version, profiles[i]);
		char *host = drv_resolve(drv, path, &st, NULL);
		if (host && S_ISREG(st.st_mode)) {
			inj_add_file(&s->configs, &s->nconfigs, host, path);
		} else {
			free(host);
			free(path);
		}
	}
}

static int by_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* lib/firmware/nvidia/<version>/gsp*.bin: GSP-RM firmware NVML needs. */
static void collect_firmware(const struct gpu_driver *drv, struct inj_set *s)
{
	char dir[128];
	snprintf(dir, sizeof dir, "/lib/firmware/nvidia/%s", drv->version);
	struct stat st;
	_cleanup_free_ char *host_dir = drv_resolve(drv, dir, &st, NULL);
	if (!host_dir || !S_ISDIR(st.st_mode))
		return;
	DIR *d = opendir(host_dir);
	if (!d)
		return;
	struct strv names = {0};
	struct dirent *de;
	while ((de = readdir(d)))
		if (!fnmatch("gsp*.bin", de->d_name, FNM_PERIOD))
			strv_add(&names, xstrdup(de->d_name));
	closedir(d);
	qsort(names.v, names.n, sizeof *names.v, by_name);
	for (size_t i = 0; i < names.n; i++) {
		char *dst = xasprintf("%s/%s", dir, names.v[i]);
		char *host = drv_resolve(drv, dst, &st, NULL);
		if (host && S_ISREG(st.st_mode)) {
			inj_add_file(&s->firmware, &s->nfirmware, host, dst);
		} else {
			free(host);
			free(dst);
		}
	}
	strv_free(&names);
}

static void collect_ipcs(const struct gpu_driver *drv, unsigned inj, struct inj_set *s)
{
	for (size_t i = 0; i < COUNT_OF(ipcs); i++) {
		if (!(inj & ipcs[i].flag))
			continue;
		for (size_t c = 0; c < 2 && ipcs[i].paths[c]; c++) {
			struct stat st;
			char *inroot = NULL;
			char *host = drv_resolve(drv, ipcs[i].paths[c], &st, &inroot);
			if (host && (ipcs[i].dir ? S_ISDIR(st.st_mode) : S_ISSOCK(st.st_mode))) {
				inj_add_file(&s->ipcs, &s->nipcs, host, inroot);
				s->ipcs[s->nipcs - 1].dir = ipcs[i].dir;
				break;
			}
			free(host);
			free(inroot);
		}
	}
}

int inj_collect(struct gpu_driver *drv, const struct gpu_selection *sel, unsigned inj, struct inj_set *s,
		struct gerr *err)
{
	memset(s, 0, sizeof *s);
	s->gpus = xcalloc(drv->ngpus ? drv->ngpus : 1, sizeof *s->gpus);
	for (size_t i = 0; i < drv->ngpus && sel->kind == SEL_SOME; i++)
		if (sel->mask[i])
			s->gpus[s->ngpus++] = &drv->gpus[i];
	collect_devices(drv, inj, s);
	collect_bins(drv, inj, s);
	if (collect_libs(drv, inj, 64, &s->libs, &s->nlibs, err) < 0 ||
	    collect_uncached(drv, inj, 64, &s->libs, &s->nlibs, s, err) < 0)
		return -1;
	if ((inj & INJ_COMPAT32) && (collect_libs(drv, inj, 32, &s->libs32, &s->nlibs32, err) < 0 ||
				     collect_uncached(drv, inj, 32, &s->libs32, &s->nlibs32, s, err) < 0))
		return -1;
	collect_ipcs(drv, inj, s);
	collect_firmware(drv, s);
	collect_configs(drv, inj, s);
	return 0;
}

static int trust_files(const struct gpu_driver *drv, const char *what, const struct inj_file *v, size_t n,
		       struct gerr *err)
{
	for (size_t i = 0; i < n; i++)
		if (drv_trust(drv, what, v[i].src, err) < 0)
			return -1;
	return 0;
}

int inj_trust(const struct gpu_driver *drv, const struct inj_set *s, struct gerr *err)
{
	if (!trust_applies())
		return 0;
	/* A node not there yet is nodes.c's business; this runs again once
	 * nvidia-modprobe made it. */
	for (size_t i = 0; i < s->ndevs; i++) {
		struct stat st;
		_cleanup_free_ char *host = drv_resolve(drv, s->devs[i].dst, &st, NULL);
		if (host && drv_trust(drv, "driver device node", host, err) < 0)
			return -1;
	}
	for (size_t i = 0; i < s->ngpus; i++) {
		_cleanup_free_ char *host =
			xasprintf("%s/proc/driver/nvidia/gpus/%s", drv->rootpath, s->gpus[i]->procdir);
		if (drv_trust(drv, "driver file", host, err) < 0)
			return -1;
	}
	/* Not the IPC sockets and the MPS directory: they are where host
	 * daemons listen, which may run as users of their own
	 * (nvidia-persistenced --user), and no code comes from them. */
	return trust_files(drv, "driver program", s->bins, s->nbins, err) < 0 ||
			       trust_files(drv, "driver library", s->libs, s->nlibs, err) < 0 ||
			       trust_files(drv, "driver library", s->libs32, s->nlibs32, err) < 0 ||
			       trust_files(drv, "driver firmware", s->firmware, s->nfirmware, err) < 0 ||
			       trust_files(drv, "driver file", s->caps, s->ncaps, err) < 0 ||
			       trust_files(drv, "driver file", s->configs, s->nconfigs, err) < 0
		       ? -1
		       : 0;
}

static void free_files(struct inj_file *v, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(v[i].src);
		free(v[i].dst);
		free(v[i].soname);
	}
	free(v);
}

void inj_free(struct inj_set *s)
{
	for (size_t i = 0; i < s->ndevs; i++) {
		free(s->devs[i].dst);
		free(s->devs[i].why);
	}
	free(s->devs);
	free_files(s->bins, s->nbins);
	free_files(s->libs, s->nlibs);
	free_files(s->libs32, s->nlibs32);
	free_files(s->firmware, s->nfirmware);
	free_files(s->ipcs, s->nipcs);
	free_files(s->caps, s->ncaps);
	free_files(s->configs, s->nconfigs);
	free_files(s->links, s->nlinks);
	free(s->gpus);
	memset(s, 0, sizeof *s);
}
