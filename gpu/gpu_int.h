/* gpu/gpu_int.h — what the files of gpu/ share among themselves (and with
 * the fuzz targets and unit tests, which drive the parsers directly),
 * grouped below by the file that defines it.  Nothing here is for the rest
 * of gpurun: that is gpu/gpu.h (and gpu/cdi/cdi.h for CDI).
 *
 * The pieces, in the order a launch uses them, each with its section here:
 *   ldcache.c   the driver root's /etc/ld.so.cache, parsed natively
 *   procfs.c    the text formats of /proc/driver/nvidia and /proc/devices
 *   discover.c  which driver root (--driver-root, GPURUN_DRIVER_ROOT, /),
 *               and driver root -> driver version, GPU table, majors, file
 *               lists (and the types of that table: the GPUs, MIG devices)
 *   models.c    a GPU's brand and architecture, from its model name
 *   caps.c      driver capabilities -> what gets injected
 *   select.c    --gpus / NVIDIA_VISIBLE_DEVICES -> which GPUs
 *   require.c   NVIDIA_REQUIRE_* constraints
 *   helper.c    the confined child processes that load a driver library
 *   cudaver.c   the CUDA driver version, from libcuda in such a child
 *   nvmlmig.c   MIG UUIDs, from the driver root's NVML in a chrooted child
 *   files.c     the set of host objects one launch injects (struct inj_set)
 *   mig.c       MIG devices, IMEX channels, their selection, what they bring
 *   slurm.c     a Slurm step's GPU allocation: the ceiling of the selection
 *   devices.c   GPUs and MIG together: gpu_select(), inj_collect_all()
 *   nodes.c     missing device nodes, made by the driver's nvidia-modprobe
 * Files with nothing here: inject.c (gpu_configure(): all of the above ->
 * plan ops), info.c (the `info` and `list` verbs) and doctor.c (`gpurun
 * doctor`'s driver checks), declared in gpu.h; the CDI
 * files cdiparse.c, cdidirs.c and cdi.c (cdi.h, cdi_int.h), and cdigen.c,
 * which uses discovery, files.c and mig.c from here. */
#ifndef GPURUN_GPU_INT_H
#define GPURUN_GPU_INT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "../base/base.h"
#include "gpu.h"

/* ---- ldcache.c ---------------------------------------------------------- */

/* ld.so.cache entry flags, as glibc writes them: low byte = type, high byte = arch. */
#define LDCACHE_TYPE_MASK 0x00ff
#define LDCACHE_ARCH_MASK 0xff00
#define LDCACHE_ELF 0x0001
#define LDCACHE_ELF_LIBC6 0x0003
#define LDCACHE_ARCH_I386 0x0000 /* also what 32-bit x86 entries carry */
#define LDCACHE_ARCH_X86_64 0x0300
#define LDCACHE_ARCH_PPC64 0x0500
#define LDCACHE_ARCH_ARM_HF 0x0900
#define LDCACHE_ARCH_AARCH64 0x0a00
#define LDCACHE_ARCH_NONE 0xffff /* no such word size on that machine */

struct ldcache_entry {
	uint32_t flags;
	const char *key;   /* "libcuda.so.1": points into the cache buffer */
	const char *value; /* "/usr/lib/aarch64-linux-gnu/libcuda.so.1" */
};

struct ldcache {
	char *data; /* the file, owned */
	size_t len;
	struct ldcache_entry *v;
	size_t n;
};

/* Parse a cache image (old+new "compat" layout or new-only).  Entries point
 * into data, which must outlive them.  Every offset is bounds-checked and
 * every string must end inside the buffer; a bad entry makes the whole
 * cache invalid (err says which).  Never reads outside [data, data+len). */
int ldcache_parse(const char *data, size_t len, struct ldcache_entry **v, size_t *n, struct gerr *err);
/* 1 when an entry with these flags is a library of the wanted word size
 * (64 or 32) for the loader of machine ("x86_64": x86-64 and i386,
 * "aarch64": AArch64 and ARM hard-float, "ppc64le": ppc64 only); 0 for
 * every entry when gpurun does not know the machine. */
int ldcache_entry_is_for(uint32_t flags, int bits, const char *machine);
/* The same for HOST_MACHINE. */
int ldcache_entry_is(uint32_t flags, int bits);
void ldcache_free(struct ldcache *c);

/* ---- procfs.c ----------------------------------------------------------- */

/* One /proc/driver/nvidia/gpus/<bus>/information file. */
struct gpu_information {
	char model[96];
	char uuid[80];
	char bus[32]; /* "Bus Location" as written ("0000:3b:00.0") */
	long minor;   /* "Device Minor", -1 when missing or invalid */
	int excluded; /* "GPU Excluded: Yes": NVreg_ExcludedGpus, invisible to NVML */
};
int procfs_parse_information(const char *text, size_t len, struct gpu_information *out);
/* The NVRM version from /proc/driver/nvidia/version ("550.54.14").
 * Returns 0, or -1 when the first line holds no version. */
int procfs_parse_version(const char *text, size_t len, char *out, size_t cap);
/* A copy of params with ModifyDeviceFiles forced to 0 (appended when the
 * file does not have the key).  Always succeeds; *outlen gets the size. */
char *procfs_params_no_modify(const char *text, size_t len, size_t *outlen);
/* The major of character device `name` in /proc/devices.  1 found, 0 not. */
int procfs_devices_major(const char *text, size_t len, const char *name, unsigned *major);

/* ---- discover.c --------------------------------------------------------- */

#define NV_MAJOR 195 /* /dev/nvidia*, /dev/nvidiactl, /dev/nvidia-modeset */
#define NV_CTL_MINOR 255
#define NV_MODESET_MINOR 254
#define GPU_MAX 256 /* more information files than this: refused */

struct gpu_dev {
	unsigned index;   /* position in PCI bus order: what --gpus N means */
	unsigned minor;   /* N of /dev/nvidiaN */
	char busid[32];   /* NVML's form: 8-digit domain, lowercase ("00000000:3b:00.0") */
	char procdir[64]; /* the gpus/ directory name as the driver wrote it */
	char uuid[80];    /* "" when the information file has none (see discover.c) */
	char model[96];
	const char *brand; /* what nvidia-container-cli prints (constant table) */
	const char *arch;  /* compute capability "9.0", or "n/a" */
	int mig_capable;   /* the driver has capabilities/gpu<minor>/mig for it */
};

/* A MIG device: a compute instance of a GPU instance of a GPU in MIG mode,
 * as the driver's capability files show it (see mig.c). */
struct mig_dev {
	unsigned gpu;      /* the parent's index in the GPU table */
	unsigned index;    /* position among its GPU's MIG devices: <gpu>:<index> */
	unsigned gi, ci;   /* GPU and compute instance ids */
	unsigned gi_minor; /* nvidia-cap minors of their access files */
	unsigned ci_minor;
	char uuid[96]; /* "MIG-..." once NVML was asked (nvmlmig.c), else "" */
};

/* A MIG device as NVML reports it (nvmlmig.c). */
struct nvml_mig {
	char busid[32]; /* the parent's, NVML's form "00000000:17:00.0" */
	unsigned gi, ci;
	char uuid[96];
};
#define MIG_MAX 1024
#define IMEX_MAX 64

struct gpu_driver {
	char *rootpath; /* its canonical host path, "" for "/" (prefix of host paths) */
	int rootfd;     /* O_PATH directory fd: every lookup is resolved inside it */
	char version[32];
	struct gpu_dev *gpus;
	size_t ngpus;
	unsigned uvm_major;   /* 0: nvidia-uvm is not loaded */
	size_t nexcluded;     /* GPUs left out: "GPU Excluded: Yes" */
	struct mig_dev *migs; /* every MIG device, by GPU index, GI, CI */
	size_t nmigs;
	struct nvml_mig *nvml_migs; /* NVML's MIG devices, once asked (nvml_asked) */
	size_t nnvml_migs;
	int nvml_asked;
	unsigned caps_major; /* nvidia-caps: 0 when the MIG caps are proc files only */
	unsigned imex_major; /* nvidia-caps-imex-channels, 0 when absent */
	struct ldcache cache;
	int cache_loaded;
	struct trust_memo *trusted; /* as root: directories below rootfd judged (base/trust.c) */
};

/* Read the driver facts under root.  Fails with "no NVIDIA driver found
 * under ROOT: ..." when there is no readable proc/driver/nvidia/version. */
int gpu_discover(const char *root, struct gpu_driver *drv, struct gerr *err);
/* The driver root: opt (--driver-root), else GPURUN_DRIVER_ROOT, else "/";
 * gpu_root_named() says whether it was one of the first two, which makes a
 * missing driver an error rather than a GPU-less host. */
const char *gpu_default_root(const char *opt);
int gpu_root_named(const char *opt);
void gpu_driver_free(struct gpu_driver *drv);

/* A path inside the driver root, resolved there (symlinks stay inside),
 * as a malloc'ed host path, or NULL when it does not exist.  *st gets
 * its stat; *inroot (optional) the resolved path relative to the root. */
char *drv_resolve(const struct gpu_driver *drv, const char *path, struct stat *st, char **inroot);
/* As root (base/trust.c), 0 when no one but root can change host, a host
 * path (below the driver root, as drv_resolve gives them: walked from the
 * root, as a chroot there resolves it); else -1 with err naming the
 * culprit.  Every file gpu/ binds, executes or has a helper load passes
 * here first. */
int drv_trust(const struct gpu_driver *drv, const char *what, const char *host, struct gerr *err);
/* As root, the same for what the dynamic loader reads when a program or
 * library (path, inside the root) is run chrooted there: its ELF
 * interpreter, etc/ld.so.preload and ld.so.cache, the default library
 * directories and every library the cache names. */
int drv_trust_loader(struct gpu_driver *drv, const char *what, const char *path, struct gerr *err);
/* A whole small file of the driver root (resolved inside it). */
char *drv_read(const struct gpu_driver *drv, const char *path, size_t max, size_t *len, struct gerr *err);

/* The driver libraries whose cache key starts with one of the prefixes
 * ("libcuda.so") and whose file name ends in ".so.<driver version>":
 * first match per prefix, in prefix order, as host paths; sonames (optional)
 * gets each one's cache key, its SONAME ("libcuda.so.1"). */
int drv_find_libs(struct gpu_driver *drv, const char *const *prefixes, size_t nprefixes, int bits, struct strv *out,
		  struct strv *sonames, struct gerr *err);
/* The same for libraries versioned on their own (the EGL platform
 * libraries): the file name has at least two numbers after ".so."
 * ("libnvidia-egl-gbm.so.1.1.1"), whatever the driver version. */
int drv_find_platform_libs(struct gpu_driver *drv, const char *const *prefixes, size_t nprefixes, int bits,
			   struct strv *out, struct strv *sonames, struct gerr *err);
/* The version in the file name of the root's prefix library ("libcuda.so")
 * when its ld.so.cache lists none of the kernel module's version but one of
 * another ("535.261.03": the libraries of a driver upgraded without a
 * reboot), else NULL (malloc'ed); *path (when path) its host path. */
char *drv_other_version(struct gpu_driver *drv, const char *prefix, char **path);

/* ---- models.c ----------------------------------------------------------- */

/* What nvidia-container-cli would print for Brand and Architecture, read
 * off the model name (constant strings; "Unknown" and "n/a" when unsure). */
const char *model_brand(const char *model);
const char *model_arch(const char *model);

/* ---- caps.c ------------------------------------------------------------- */

/* NVIDIA driver capabilities (the NVIDIA_DRIVER_CAPABILITIES names), not Linux
 * capabilities: hence DRVCAP_, never CAP_. */
#define DRVCAP_UTILITY 0x01
#define DRVCAP_COMPUTE 0x02
#define DRVCAP_VIDEO 0x04
#define DRVCAP_GRAPHICS 0x08
#define DRVCAP_DISPLAY 0x10
#define DRVCAP_COMPAT32 0x20
#define DRVCAP_NGX 0x40
#define DRVCAP_ALL 0x7f
#define DRVCAP_DEFAULT (DRVCAP_UTILITY | DRVCAP_COMPUTE)

/* What they turn into (nvidia-container-cli's container options). */
#define INJ_UTILITY_BINS 0x001
#define INJ_UTILITY_LIBS 0x002
#define INJ_COMPUTE_BINS 0x004
#define INJ_COMPUTE_LIBS 0x008
#define INJ_VIDEO_LIBS 0x010
#define INJ_GRAPHICS_LIBS 0x020
#define INJ_DISPLAY 0x040
#define INJ_NGX_LIBS 0x080
#define INJ_COMPAT32 0x100

/* Parse "utility,compute" / "all".  Empty items are ignored; an empty list
 * gives 0 (the caller applies the default).  Unknown name -> -1 + err. */
int caps_parse(const char *list, unsigned *caps, struct gerr *err);
/* Capabilities -> INJ_* flags (video brings compute libs, display brings
 * graphics libs and the modeset node). */
unsigned caps_inject_flags(unsigned caps);

struct caps_files {
	unsigned flag;            /* INJ_* */
	const char *const *names; /* library prefixes or binary names */
	size_t n;
};
/* Library prefix lists, in nvidia-container-cli's order. */
extern const struct caps_files caps_libs[];
extern const size_t caps_nlibs;
/* Binary lists. */
extern const struct caps_files caps_bins[];
extern const size_t caps_nbins;

/* ---- select.c ----------------------------------------------------------- */

enum sel_kind {
	SEL_VOID, /* not a GPU container: inject nothing */
	SEL_NONE, /* driver files and control nodes, no GPU */
	SEL_SOME, /* driver files and the selected GPUs */
};

/* A parsed device spec, before it meets the GPU table. */
struct gpu_request {
	enum sel_kind kind;
	int all;
	long count;        /* docker's count=N, -1 when not given */
	struct strv items; /* device ids, as written */
	char caps[64];     /* docker's capabilities=..., "" when not given */
};

struct gpu_selection {
	enum sel_kind kind;
	unsigned char mask[GPU_MAX];    /* by index */
	unsigned char migmask[MIG_MAX]; /* by position in the driver's MIG table */
	int mig_config, mig_monitor;    /* NVIDIA_MIG_CONFIG/MONITOR_DEVICES=all */
	unsigned imex[IMEX_MAX];        /* NVIDIA_IMEX_CHANNELS */
	size_t nimex;
	char ceiling[320]; /* where a Slurm ceiling came from (slurm.c), "" when none */
};

/* Normalise a PCI bus id ("3b:00.0", "0000:3B:00.0", "00000000:3b:00.0")
 * to NVML's "%08x:%02x:%02x.%x".  Returns 0, or -1 when it is not one. */
int busid_normalize(const char *in, char *out, size_t cap);
/* Syntax of a device spec (see the top of select.c).  `what` names the
 * source in messages ("--gpus", "NVIDIA_VISIBLE_DEVICES"). */
int gpu_request_parse(const char *spec, const char *what, struct gpu_request *rq, struct gerr *err);
/* Match it against the GPU table; an unknown device is an error naming it
 * and `where` (the driver root), with a hint when nexcluded GPUs were left
 * out of the table or a GPU has no UUID yet. */
int gpu_request_resolve(const struct gpu_request *rq, const struct gpu_dev *gpus, size_t ngpus, size_t nexcluded,
			const char *what, const char *where, struct gpu_selection *sel, struct gerr *err);
void gpu_request_free(struct gpu_request *rq);
/* 1 when a device item names a MIG device (<gpu>:<mig>, MIG-...). */
int gpu_item_is_mig(const char *item);

/* ---- require.c ---------------------------------------------------------- */

/* The facts a requirement is checked against; NULL = unknown, which
 * satisfies any condition on it (nvidia-container-cli's rule). */
struct req_facts {
	const char *cuda;   /* "12.4" */
	const char *driver; /* "550.54.14" */
	const char *arch;   /* "9.0" */
	const char *brand;  /* "Tesla" */
	int arch_unknown;   /* a GPU is selected but its arch is not known: arch= fails */
};

/* Check the syntax of an expression: 0, or -1 with err. */
int require_validate(const char *expr, struct gerr *err);
/* 1 when the expression mentions the cuda key (then the CUDA version must
 * be looked up, which costs a fork). */
int require_uses_cuda(const char *expr);
/* 1 when the expression has an arch term. */
int require_uses_arch(const char *expr);
/* 1 satisfied, 0 unsatisfied (err holds the reference message), -1 invalid. */
int require_eval(const char *expr, const struct req_facts *f, struct gerr *err);
/* Compare dotted versions: -1/0/1 in *cmp, trailing ".0"s ignored.
 * Returns -1 when either is not digits and dots. */
int version_compare(const char *a, const char *b, int *cmp);

/* NVML's ABI for the calls the helpers make (nvmlmig.c's MIG UUIDs and
 * doctor.c's --gpus check): nvml.h, shared with the smoke probe. */
#include "nvml.h"

/* ---- helper.c ----------------------------------------------------------- */

/* A child that loads a driver library, confined (see helper.c).  body runs
 * in it and answers on out: helper_ok() then its payload, or
 * helper_fail(). */
struct helper_spec {
	const char *what;       /* the library, for messages */
	struct gpu_driver *drv; /* where lib is */
	const char *lib;        /* its host path (chroot_fd < 0) or its path in the
			   * driver root: as root, judged before the fork */
	long timeout_ms;
	int keep_fd;   /* an fd the child keeps besides out, or -1 */
	int chroot_fd; /* chroot there first (the driver root), or -1 */
	void (*body)(void *arg, int out);
	void *arg;
};
struct helper {
	pid_t pid;
	int fd;
	long deadline;
	const char *what;
};
/* Start it and wait for its status: 0 when the payload follows (read it
 * with helper_read), -1 with err; call helper_end in both cases. */
int helper_start(struct helper *h, const struct helper_spec *sp, struct gerr *err);
int helper_read(struct helper *h, void *buf, size_t n, struct gerr *err);
void helper_end(struct helper *h);
/* helper_start on the driver root's library PREFIX ("libnvidia-ml.so", as
 * its ld.so.cache names it), chrooted in the root so that the library sees
 * the root's /proc and /dev as it will inside a container.  *host gets the
 * library's host path (the caller frees it, after helper_end). */
int helper_start_lib(struct helper *h, struct gpu_driver *drv, const char *prefix, long timeout_ms,
		     void (*body)(void *arg, int out), char **host, struct gerr *err);
/* In the child. */
int helper_write(int out, const void *p, size_t n);
int helper_ok(int out);
__attribute__((noreturn, format(printf, 2, 3))) void helper_fail(int out, const char *fmt, ...);

/* ---- cudaver.c ---------------------------------------------------------- */

/* The CUDA driver API version of the driver's libcuda ("12.4"), from
 * cuDriverGetVersion() in a short-lived child.  -1 with err when there is no
 * libcuda or it fails. */
int cuda_driver_version(struct gpu_driver *drv, char *out, size_t cap, struct gerr *err);

/* ---- nvmlmig.c ---------------------------------------------------------- */

/* Ask the driver root's NVML (in a child chrooted there) for every MIG
 * device, keep the list in drv->nvml_migs and give each file-based MIG
 * device (mig_discover first) its UUID.  Once per driver; -1 with err
 * naming what failed. */
int nvml_mig_uuids(struct gpu_driver *drv, struct gerr *err);

/* ---- files.c ------------------------------------------------------------ */

struct inj_dev {
	char *dst; /* "/dev/nvidia0": the path in the driver root and in the container */
	dev_t rdev;
	const struct gpu_dev *gpu; /* the GPU of /dev/nvidiaN, else NULL */
	char *why;                 /* for the others (owned) */
};

struct inj_file {
	char *soname; /* libraries: the cache's key ("libcuda.so.1"), or NULL */
	char *src;    /* host path */
	char *dst;    /* container path ("$LIBDIR/..." for libraries) */
	int dir;      /* a directory (the MPS pipe directory) */
};

/* Everything one launch injects, computed once and used both by
 * gpu_configure() (as plan ops) and by `gpurun list` (printed). */
struct inj_set {
	struct inj_dev *devs;
	size_t ndevs;
	struct inj_file *bins, *libs, *libs32, *firmware, *ipcs;
	size_t nbins, nlibs, nlibs32, nfirmware, nipcs;
	struct inj_file *caps; /* MIG capability files and directories (/proc, /dev) */
	size_t ncaps;
	struct inj_file *configs; /* graphics: Vulkan ICD, EGL vendor and platform JSON, OptiX, profiles */
	size_t nconfigs;
	struct inj_file *links; /* symlinks to make: src the target, dst the link ("$LIBDIR/...") */
	size_t nlinks;
	const struct gpu_dev **gpus; /* selected, in index order */
	size_t ngpus;
};

int inj_collect(struct gpu_driver *drv, const struct gpu_selection *sel, unsigned inj, struct inj_set *set,
		struct gerr *err);
/* The directory the driver root's loader cache names for soname (its
 * unresolved path there: "/usr/lib/x86_64-linux-gnu" for libcuda.so.1 on
 * Debian, whose file is in nvidia/current), or NULL when the cache has no
 * such entry of that word size.  The cache must be loaded. */
char *drv_lib_dir(const struct gpu_driver *drv, const char *soname, int bits);
/* As root, every device node, directory and file of set that a launch
 * binds from the driver root, judged by drv_trust (the IPC sockets
 * excepted): 0, or -1 with err naming the first one someone else could
 * change.  Not as root: 0. */
int inj_trust(const struct gpu_driver *drv, const struct inj_set *s, struct gerr *err);
/* Append a device node / a file to set (used by mig.c too). */
void inj_add_dev(struct inj_set *s, const char *path, unsigned maj, unsigned min, const struct gpu_dev *gpu,
		 const char *why);
void inj_add_file(struct inj_file **v, size_t *n, char *src, char *dst);
void inj_free(struct inj_set *set);

/* ---- mig.c -------------------------------------------------------------- */

/* The MIG table and the nvidia-caps majors (gpu_select calls it once). */
int mig_discover(struct gpu_driver *drv, struct gerr *err);
/* What selects besides GPUs: the container's NVIDIA_MIG_CONFIG_DEVICES,
 * NVIDIA_MIG_MONITOR_DEVICES and NVIDIA_IMEX_CHANNELS (NULL: unset). */
struct sel_extras {
	const char *mig_config, *mig_monitor, *imex;
};
/* Check their syntax (before the driver is read): 0, or -1 with err. */
int mig_sel_extras_check(const struct sel_extras *x, struct gerr *err);
/* NVIDIA_MIG_CONFIG_DEVICES or NVIDIA_MIG_MONITOR_DEVICES (what names it):
 * *out 1 for "all", 0 unset or empty; -1 with err for anything else, or
 * "all" when not root. */
int mig_parse_all(const char *v, const char *what, int *out, struct gerr *err);
/* NVIDIA_IMEX_CHANNELS: the channel numbers into ch (IMEX_MAX of them),
 * *n of them; 0, or -1 with err. */
int mig_parse_imex(const char *v, unsigned *ch, size_t *n, struct gerr *err);
/* The position in drv->migs of the MIG device an item names ("1:0",
 * "MIG-GPU-<uuid>/2/0", "MIG-<uuid>", which asks NVML), or -1 with err. */
long mig_match(const char *item, struct gpu_driver *drv, const char *what, const char *where, struct gerr *err);
/* The MIG capability nodes and files and the IMEX channels of sel, added
 * to s.  A node the selection needs that is missing is an error naming
 * the fix. */
int mig_collect(const struct gpu_driver *drv, const struct gpu_selection *sel, struct inj_set *s, struct gerr *err);

/* ---- slurm.c ------------------------------------------------------------ */

/* A Slurm step's GPUs on this node, as indexes of the GPU table. */
struct slurm_ceiling {
	int active;            /* in a step on this node, and gres.conf declares gpu here */
	unsigned gpu[GPU_MAX]; /* the allocated GPUs, in index (PCI) order */
	size_t n;
	char from[256]; /* the variables, gres.conf and files it came from (shown) */
};
/* "0,1,3" / "0-2,5" (SLURM_STEP_GPUS) into out[cap], *n of them: 0, or -1
 * when malformed or more than cap. */
int slurm_parse_indexes(const char *list, unsigned *out, size_t cap, size_t *n);
/* 1 when a Slurm host list ("gpu[01-04,07],login") names host, 0 not,
 * -1 malformed. */
int slurm_hostlist_match(const char *list, const char *host);
/* A gres.conf File= value ("/dev/nvidia[0-3]", "/dev/nvidia0,/dev/nvidia2")
 * expanded in order onto out: 0, or -1 when malformed or too long. */
int slurm_expand_files(const char *value, struct strv *out);
/* gres.conf text: the GPU device files it lists for node, in order, onto
 * files.  1 when it declares gpu for node, 0 when not, -1 with err when
 * what it says for node cannot be mapped to device files (AutoDetect,
 * Name=gpu without File=, MultipleFiles, Include, a bad list). */
int slurm_gres_parse(const char *text, size_t len, const char *node, struct strv *files, struct gerr *err);
/* The part of a host name before the first dot: 0, or -1 (empty, too long). */
int slurm_short_name(const char *name, char *out, size_t cap);
/* The ceiling from this process's Slurm variables (SLURMD_NODENAME,
 * SLURM_JOB_ID, SLURM_STEP_GPUS or SLURM_JOB_GPUS, SLURM_CONF) and the
 * node's gres.conf: 0 (c->active 0 outside a step on this node or without
 * gres/gpu), or -1 with err when the allocation cannot be mapped. */
int slurm_ceiling_read(const struct gpu_driver *drv, struct slurm_ceiling *c, struct gerr *err);
/* 1 when GPU (an index of the table) is in the ceiling (always when inactive). */
int slurm_ceiling_allows(const struct slurm_ceiling *c, unsigned gpu);
/* A MIG item "<k>:<mig>" with k counted within the allocation, rewritten
 * with the GPU's table index into buf; other items copied.  -1 when k is
 * outside the allocation or buf too small. */
int slurm_ceiling_item(const struct slurm_ceiling *c, const char *item, char *buf, size_t cap);
/* The one error for a device outside the allocation: -1, err set. */
int slurm_outside(const struct slurm_ceiling *c, const char *what, const char *item, struct gerr *err);
/* gpu_request_resolve against the allocated GPUs only, mapped back to the
 * table; a device outside them is one error naming the allocation. */
int slurm_resolve(const struct gpu_request *rq, const struct gpu_driver *drv, const struct slurm_ceiling *c,
		  const char *what, struct gpu_selection *sel, struct gerr *err);

/* ---- devices.c ---------------------------------------------------------- */

/* gpu_request_resolve (bounded by a Slurm step's allocation, slurm.c),
 * then the MIG items of rq (a MIG device selects its
 * parent GPU too), `all`'s MIG devices, and the extras (x may be NULL:
 * none, or those already in sel when keep is set). */
int gpu_select(const struct gpu_request *rq, struct gpu_driver *drv, const char *what, const char *where,
	       const struct sel_extras *x, int keep, struct gpu_selection *sel, struct gerr *err);
/* inj_collect (files.c), then mig_collect: the MIG capability nodes and
 * files and the IMEX channels of sel (after gpu_select).  A node the
 * selection needs that is missing is an error naming the fix. */
int inj_collect_all(struct gpu_driver *drv, const struct gpu_selection *sel, unsigned inj, struct inj_set *set,
		    struct gerr *err);

/* ---- nodes.c ------------------------------------------------------------ */

/* Make sure every device node the selection and inj need exists under the
 * driver root: as real root, run the driver root's nvidia-modprobe for
 * each missing one (dry_run: append the commands to host_steps instead)
 * and read the driver again (drv and sel are refreshed: returns 1, and
 * what pointed into the old drv is stale); 0 when nothing was missing or
 * in a dry run; else, or when still missing, -1 with an error naming the
 * nodes and the fix. */
int nodes_ensure(struct gpu_driver *drv, const char *root, const struct gpu_request *rq, const char *what,
		 struct gpu_selection *sel, unsigned inj, int dry_run, int verbose, struct strv *host_steps,
		 struct gerr *err);

#endif
