/* gpu/caps.c — driver capabilities (NVIDIA_DRIVER_CAPABILITIES, --caps) and
 * the per-capability lists of what gets injected.
 *
 * The lists are nvidia-container-cli's:
 * a library is named by the prefix of its ld.so.cache key up to ".so", so
 * "libnvidia-pkcs11.so" does not also match libnvidia-pkcs11-openssl3.
 * The capability -> list mapping is the reference's too: video brings the
 * compute libraries (NVDEC/NVENC need libcuda), display brings the graphics
 * libraries and /dev/nvidia-modeset, and only compute brings the MPS
 * binaries.  GLVND vendor libraries are used, as on every current distro. */
#include "gpu_int.h"

#include <stdio.h>
#include <string.h>

/* clang-format off */
static const char *const utility_libs[] = {
	"libnvidia-ml.so", "libnvidia-cfg.so", "libnvidia-nscq.so",
};
static const char *const compute_libs[] = {
	"libcuda.so",		     "libcudadebugger.so",	   "libnvidia-opencl.so",
	"libnvidia-gpucomp.so",	     "libnvidia-ptxjitcompiler.so", "libnvidia-fatbinaryloader.so",
	"libnvidia-allocator.so",    "libnvidia-compiler.so",	   "libnvidia-pkcs11.so",
	"libnvidia-pkcs11-openssl3.so", "libnvidia-nvvm.so",	   "libnvidia-tileiras.so",
};
static const char *const video_libs[] = {
	"libvdpau_nvidia.so", "libnvidia-encode.so", "libnvidia-opticalflow.so", "libnvcuvid.so",
};
static const char *const graphics_libs[] = {
	"libnvidia-eglcore.so", "libnvidia-glcore.so", "libnvidia-tls.so", "libnvidia-glsi.so",
	"libnvidia-fbc.so",	"libnvidia-ifr.so",    "libnvidia-rtcore.so", "libnvoptix.so",
	/* GLVND vendor libraries */
	"libGLX_nvidia.so", "libEGL_nvidia.so", "libGLESv2_nvidia.so", "libGLESv1_CM_nvidia.so",
	"libnvidia-glvkspirv.so", "libnvidia-cbl.so",
};
static const char *const ngx_libs[] = {
	"libnvidia-ngx.so",
};
/* clang-format on */

const struct caps_files caps_libs[] = {
	{INJ_UTILITY_LIBS, utility_libs, COUNT_OF(utility_libs)},
	{INJ_COMPUTE_LIBS, compute_libs, COUNT_OF(compute_libs)},
	{INJ_VIDEO_LIBS, video_libs, COUNT_OF(video_libs)},
	{INJ_GRAPHICS_LIBS, graphics_libs, COUNT_OF(graphics_libs)},
	{INJ_NGX_LIBS, ngx_libs, COUNT_OF(ngx_libs)},
};
const size_t caps_nlibs = COUNT_OF(caps_libs);

static const char *const utility_bins[] = {
	"nvidia-smi",
	"nvidia-debugdump",
	"nvidia-persistenced",
	"nv-fabricmanager",
};
static const char *const compute_bins[] = {
	"nvidia-cuda-mps-control",
	"nvidia-cuda-mps-server",
};

const struct caps_files caps_bins[] = {
	{INJ_UTILITY_BINS, utility_bins, COUNT_OF(utility_bins)},
	{INJ_COMPUTE_BINS, compute_bins, COUNT_OF(compute_bins)},
};
const size_t caps_nbins = COUNT_OF(caps_bins);

static const struct {
	const char *name;
	unsigned cap;
	unsigned inj;
} cap_names[] = {
	{"utility", DRVCAP_UTILITY, INJ_UTILITY_BINS | INJ_UTILITY_LIBS},
	{"compute", DRVCAP_COMPUTE, INJ_COMPUTE_BINS | INJ_COMPUTE_LIBS},
	{"video", DRVCAP_VIDEO, INJ_VIDEO_LIBS | INJ_COMPUTE_LIBS},
	{"graphics", DRVCAP_GRAPHICS, INJ_GRAPHICS_LIBS},
	{"display", DRVCAP_DISPLAY, INJ_DISPLAY | INJ_GRAPHICS_LIBS},
	{"compat32", DRVCAP_COMPAT32, INJ_COMPAT32},
	{"ngx", DRVCAP_NGX, INJ_NGX_LIBS},
};

const char *gpu_caps_bringing(const char *cmd, unsigned caps)
{
	const char *base = strrchr(cmd, '/');
	base = base ? base + 1 : cmd;
	for (size_t i = 0; i < caps_nbins; i++)
		for (size_t k = 0; k < caps_bins[i].n; k++) {
			if (strcmp(base, caps_bins[i].names[k]) != 0 || (caps_inject_flags(caps) & caps_bins[i].flag))
				continue;
			for (size_t c = 0; c < COUNT_OF(cap_names); c++)
				if (cap_names[c].inj & caps_bins[i].flag)
					return cap_names[c].name;
		}
	return NULL;
}

int caps_parse(const char *list, unsigned *caps, struct gerr *err)
{
	*caps = 0;
	for (const char *p = list ? list : ""; *p;) {
		size_t n = strcspn(p, ",");
		const char *item = p;
		p += n + (p[n] == ',');
		while (n && (*item == ' ' || *item == '\t')) {
			item++;
			n--;
		}
		while (n && (item[n - 1] == ' ' || item[n - 1] == '\t'))
			n--;
		if (n == 0)
			continue;
		if (n == 3 && !strncmp(item, "all", 3)) {
			*caps |= DRVCAP_ALL;
			continue;
		}
		size_t i;
		for (i = 0; i < COUNT_OF(cap_names); i++)
			if (strlen(cap_names[i].name) == n && !strncmp(item, cap_names[i].name, n))
				break;
		if (i == COUNT_OF(cap_names))
			return gerr_set(err, 0,
					"unknown driver capability \"%.*s\" (known: utility, compute, "
					"video, graphics, display, compat32, ngx, all)",
					(int)(n > 64 ? 64 : n), item);
		*caps |= cap_names[i].cap;
	}
	return 0;
}

unsigned caps_inject_flags(unsigned caps)
{
	unsigned inj = 0;
	for (size_t i = 0; i < COUNT_OF(cap_names); i++)
		if (caps & cap_names[i].cap)
			inj |= cap_names[i].inj;
	return inj;
}
