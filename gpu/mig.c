/* gpu/mig.c — MIG devices and IMEX channels: what the driver's capability
 * files say exists, which of them a container asks for, and the nodes and
 * files that gives it.
 *
 * Without NVML, a MIG device is what nvidia-caps shows under the driver
 * root: for the GPU of minor M in MIG mode,
 *   proc/driver/nvidia/capabilities/gpuM/mig/giG/access        a GPU instance
 *   proc/driver/nvidia/capabilities/gpuM/mig/giG/ciC/access    a compute instance
 * each holding "DeviceFileMinor: N" (its /dev/nvidia-caps/nvidia-capN,
 * major "nvidia-caps" in /proc/devices; proc/driver/nvidia-caps/mig-minors
 * lists the minor of every possible instance and is the fallback).  A
 * MIG device is one compute instance; its index on its GPU (<gpu>:<mig>)
 * is its position by GPU instance id, then compute instance id.  MIG
 * UUIDs (MIG-<uuid>) exist only inside NVML: for that form (only), the
 * driver root's NVML is asked in a chrooted child (gpu/nvmlmig.c) and its
 * answer matched to these devices by parent bus id, GI and CI.
 *
 * What a selected MIG device brings, as nvidia-container-cli does it: its
 * parent GPU (node and gpus/<bus>), the GI and CI access files read-only
 * at their /proc paths, and their nvidia-capN nodes.
 * NVIDIA_MIG_CONFIG_DEVICES / NVIDIA_MIG_MONITOR_DEVICES (only "all", only
 * for a root launch: the toolkit's privileged containers) bring the whole
 * capabilities directory read-only and the whole /dev/nvidia-caps, so that
 * instances created from inside appear there.  NVIDIA_IMEX_CHANNELS brings
 * /dev/nvidia-caps-imex-channels/channelN (major
 * "nvidia-caps-imex-channels"). */
#include "gpu_int.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#define CAPS_DIR "proc/driver/nvidia/capabilities"
#define MIG_MINORS "proc/driver/nvidia-caps/mig-minors"
#define CAPS_DEV "/dev/nvidia-caps"
#define IMEX_DEV "/dev/nvidia-caps-imex-channels"
#define IMEX_CHANNELS_MAX 2048 /* the driver's NVreg_ImexChannelCount default */
#define SMALL_FILE_MAX (1 << 20)

/* The number after "key" at the start of a line of text, or -1. */
static long line_number(const char *text, const char *key)
{
	size_t kl = strlen(key);
	for (const char *l = text; l && *l; l = strchr(l, '\n'), l = l ? l + 1 : NULL) {
		if (strncmp(l, key, kl))
			continue;
		const char *v = l + kl;
		while (*v == ' ' || *v == '\t')
			v++;
		size_t d = strspn(v, "0123456789");
		unsigned long n;
		if (d && d <= 7 && (v[d] == '\n' || v[d] == '\0' || isspace((unsigned char)v[d])) &&
		    parse_decimal(v, d, 1 << 20, &n) == 0)
			return (long)n;
		return -1;
	}
	return -1;
}

/* The nvidia-cap minor of one access file ("gpu0/mig/gi1/ci0/access"),
 * from its DeviceFileMinor line, else from mig-minors ("gpu0/gi1/ci0/access"). */
static long cap_minor(const struct gpu_driver *drv, const char *minors, unsigned gpu_minor, long gi, long ci)
{
	char path[160], key[64];
	struct gerr ignore = {0};
	if (ci < 0) {
		snprintf(path, sizeof path, CAPS_DIR "/gpu%u/mig/gi%ld/access", gpu_minor, gi);
		snprintf(key, sizeof key, "gpu%u/gi%ld/access ", gpu_minor, gi);
	} else {
		snprintf(path, sizeof path, CAPS_DIR "/gpu%u/mig/gi%ld/ci%ld/access", gpu_minor, gi, ci);
		snprintf(key, sizeof key, "gpu%u/gi%ld/ci%ld/access ", gpu_minor, gi, ci);
	}
	_cleanup_free_ char *text = drv_read(drv, path, SMALL_FILE_MAX, NULL, &ignore);
	if (!text)
		return -1; /* no such instance */
	long m = line_number(text, "DeviceFileMinor:");
	return m >= 0 || !minors ? m : line_number(minors, key);
}

/* "gi12" -> 12 (prefix "gi"), or -1. */
static long instance_id(const char *name, const char *prefix)
{
	size_t pl = strlen(prefix), d = strspn(name + pl, "0123456789");
	unsigned long n;
	if (strncmp(name, prefix, pl) || !d || name[pl + d] || parse_decimal(name + pl, d, 63, &n) < 0)
		return -1;
	return (long)n;
}

/* The ids of the entries "<prefix>N" of a directory of the driver root, sorted. */
static size_t list_ids(const struct gpu_driver *drv, const char *dir, const char *prefix, long *ids, size_t cap)
{
	int fd = open_in_root(drv->rootfd, dir, O_RDONLY | O_DIRECTORY);
	if (fd < 0)
		return 0;
	DIR *d = fdopendir(fd);
	if (!d) {
		close(fd);
		return 0;
	}
	size_t n = 0;
	struct dirent *de;
	while ((de = readdir(d)) && n < cap) {
		long id = instance_id(de->d_name, prefix);
		if (id >= 0)
			ids[n++] = id;
	}
	closedir(d);
	for (size_t i = 1; i < n; i++) /* insertion sort: at most 64 ids */
		for (size_t j = i; j > 0 && ids[j - 1] > ids[j]; j--) {
			long t = ids[j];
			ids[j] = ids[j - 1];
			ids[j - 1] = t;
		}
	return n;
}

static int add_gpu_migs(struct gpu_driver *drv, const char *minors, unsigned g, struct gerr *err)
{
	struct gpu_dev *gpu = &drv->gpus[g];
	char dir[160];
	long gis[64], cis[64];
	struct stat st;
	snprintf(dir, sizeof dir, CAPS_DIR "/gpu%u/mig", gpu->minor);
	_cleanup_free_ char *host = drv_resolve(drv, dir, &st, NULL);
	if (!host || !S_ISDIR(st.st_mode))
		return 0;
	gpu->mig_capable = 1;
	size_t ngi = list_ids(drv, dir, "gi", gis, COUNT_OF(gis)), index = 0;
	for (size_t i = 0; i < ngi; i++) {
		long gim = cap_minor(drv, minors, gpu->minor, gis[i], -1);
		if (gim < 0)
			continue;
		char gidir[192];
		snprintf(gidir, sizeof gidir, "%s/gi%ld", dir, gis[i]);
		size_t nci = list_ids(drv, gidir, "ci", cis, COUNT_OF(cis));
		for (size_t c = 0; c < nci; c++) {
			long cim = cap_minor(drv, minors, gpu->minor, gis[i], cis[c]);
			if (cim < 0)
				continue;
			if (drv->nmigs == MIG_MAX)
				return gerr_set(err, 0, "%s/" CAPS_DIR ": more than %d MIG devices", drv->rootpath,
						MIG_MAX);
			drv->migs[drv->nmigs++] = (struct mig_dev){
				g, (unsigned)index++, (unsigned)gis[i], (unsigned)cis[c], (unsigned)gim, (unsigned)cim,
				""};
		}
	}
	return 0;
}

int mig_discover(struct gpu_driver *drv, struct gerr *err)
{
	struct gerr ignore = {0};
	size_t len;
	struct stat st;
	_cleanup_free_ char *devices = drv_read(drv, "proc/devices", SMALL_FILE_MAX, &len, &ignore);
	if (devices) {
		procfs_devices_major(devices, len, "nvidia-caps", &drv->caps_major);
		procfs_devices_major(devices, len, "nvidia-caps-imex-channels", &drv->imex_major);
	}
	/* A driver root without proc/devices: the nodes carry the majors. */
	_cleanup_free_ char *cap1 = drv->caps_major ? NULL : drv_resolve(drv, CAPS_DEV "/nvidia-cap1", &st, NULL);
	if (cap1 && S_ISCHR(st.st_mode))
		drv->caps_major = major(st.st_rdev);
	_cleanup_free_ char *ch0 = drv->imex_major ? NULL : drv_resolve(drv, IMEX_DEV "/channel0", &st, NULL);
	if (ch0 && S_ISCHR(st.st_mode))
		drv->imex_major = major(st.st_rdev);

	_cleanup_free_ char *minors = drv_read(drv, MIG_MINORS, SMALL_FILE_MAX, NULL, &ignore);
	drv->migs = xcalloc(MIG_MAX, sizeof *drv->migs);
	for (size_t g = 0; g < drv->ngpus; g++)
		if (add_gpu_migs(drv, minors, (unsigned)g, err) < 0)
			return -1;
	return 0;
}

/* ---- selection ----------------------------------------------------------- */

/* Split a comma list into trimmed, non-empty items. */
static void split_list(const char *s, struct strv *out)
{
	while (s && *s) {
		size_t n = strcspn(s, ",");
		const char *b = s, *e = s + n;
		while (b < e && isspace((unsigned char)*b))
			b++;
		while (e > b && isspace((unsigned char)e[-1]))
			e--;
		if (e > b)
			strv_add(out, xstrndup(b, (size_t)(e - b)));
		s += n + (s[n] == ',');
	}
}

/* NVIDIA_MIG_{CONFIG,MONITOR}_DEVICES: 1 for "all", 0 unset or empty. */
int mig_parse_all(const char *v, const char *what, int *out, struct gerr *err)
{
	struct strv items = {0};
	int r = 0;
	*out = 0;
	split_list(v, &items);
	for (size_t i = 0; i < items.n && r == 0; i++) {
		if (!strcasecmp(items.v[i], "all"))
			*out = 1;
		else
			/* nvidia-container-cli's words. */
			r = gerr_set(err, 0, "%s: %.64s: only 'all' devices are currently supported", what, items.v[i]);
	}
	strv_free(&items);
	if (r == 0 && *out && geteuid() != 0)
		r = gerr_set(err, 0,
			     "%s: only a launch as root may manage MIG (the toolkit allows it in "
			     "privileged containers only)",
			     what);
	return r;
}

/* NVIDIA_IMEX_CHANNELS: channel numbers; "all" alone, void, none and
 * empty give none (the toolkit ignores "all" from the environment). */
int mig_parse_imex(const char *v, unsigned *ch, size_t *n, struct gerr *err)
{
	struct strv items = {0};
	int r = 0;
	*n = 0;
	split_list(v, &items);
	if (items.n == 1 &&
	    (!strcasecmp(items.v[0], "all") || !strcmp(items.v[0], "void") || !strcmp(items.v[0], "none"))) {
		strv_free(&items);
		return 0;
	}
	for (size_t i = 0; i < items.n && r == 0; i++) {
		unsigned long c;
		size_t d = strspn(items.v[i], "0123456789");
		if (!d || items.v[i][d] || parse_decimal(items.v[i], d, IMEX_CHANNELS_MAX - 1, &c) < 0)
			r = gerr_set(err, 0, "NVIDIA_IMEX_CHANNELS: %.64s: not an IMEX channel number (0-%d)",
				     items.v[i], IMEX_CHANNELS_MAX - 1);
		else if (*n == IMEX_MAX)
			r = gerr_set(err, 0, "NVIDIA_IMEX_CHANNELS: more than %d channels", IMEX_MAX);
		else {
			size_t j = 0;
			while (j < *n && ch[j] != c)
				j++;
			if (j == *n)
				ch[(*n)++] = (unsigned)c;
		}
	}
	strv_free(&items);
	return r;
}

int mig_sel_extras_check(const struct sel_extras *x, struct gerr *err)
{
	int all;
	unsigned ch[IMEX_MAX];
	size_t n;
	if (mig_parse_all(x->mig_config, "NVIDIA_MIG_CONFIG_DEVICES", &all, err) < 0 ||
	    mig_parse_all(x->mig_monitor, "NVIDIA_MIG_MONITOR_DEVICES", &all, err) < 0 ||
	    mig_parse_imex(x->imex, ch, &n, err) < 0)
		return -1;
	return 0;
}

/* The MIG device an item names ("1:0", "MIG-GPU-<uuid>/2/0"), or -1 with err. */
long mig_match(const char *item, struct gpu_driver *drv, const char *what, const char *where, struct gerr *err)
{
	unsigned long g, a, b;
	const char *p;
	size_t d = strspn(item, "0123456789");
	if (d && item[d] == ':') {
		if (parse_decimal(item, d, GPU_MAX, &g) < 0 ||
		    parse_decimal(item + d + 1, strlen(item + d + 1), MIG_MAX, &a) < 0)
			return gerr_set(err, 0, "%s: unknown device %.64s", what, item);
		if (g >= drv->ngpus)
			return gerr_set(err, 0, "%s: unknown device %.64s (%zu GPU%s under %s)", what, item, drv->ngpus,
					drv->ngpus == 1 ? "" : "s", where);
		for (size_t i = 0; i < drv->nmigs; i++)
			if (drv->migs[i].gpu == g && drv->migs[i].index == a)
				return (long)i;
		size_t have = 0;
		for (size_t i = 0; i < drv->nmigs; i++)
			have += drv->migs[i].gpu == g;
		return gerr_set(err, 0, "%s: unknown device %.64s (GPU %lu has %zu MIG device%s under %s)", what, item,
				g, have, have == 1 ? "" : "s", where);
	}
	/* MIG-GPU-<uuid>/<gi>/<ci>: the R450 form, all of it in files. */
	if (!strncasecmp(item, "MIG-GPU-", 8) && (p = strchr(item, '/'))) {
		const char *q = strchr(p + 1, '/');
		size_t ul = (size_t)(p - item) - 4;
		if (!q || parse_decimal(p + 1, (size_t)(q - p - 1), 63, &a) < 0 ||
		    parse_decimal(q + 1, strlen(q + 1), 63, &b) < 0)
			return gerr_set(err, 0, "%s: %.64s: not MIG-GPU-<uuid>/<gi>/<ci>", what, item);
		for (size_t i = 0; i < drv->nmigs; i++) {
			const struct gpu_dev *gpu = &drv->gpus[drv->migs[i].gpu];
			if (strlen(gpu->uuid) == ul && !strncasecmp(gpu->uuid, item + 4, ul) && drv->migs[i].gi == a &&
			    drv->migs[i].ci == b)
				return (long)i;
		}
		return gerr_set(err, 0, "%s: unknown device %.64s (%zu MIG device%s under %s)", what, item, drv->nmigs,
				drv->nmigs == 1 ? "" : "s", where);
	}
	/* MIG-<uuid>: only NVML knows it. */
	if (nvml_mig_uuids(drv, err) < 0) {
		char why[sizeof err->msg];
		snprintf(why, sizeof why, "%s", err->msg);
		return gerr_set(err, 0, "%s: %.64s: cannot ask NVML for MIG UUIDs: %s", what, item, why);
	}
	for (size_t i = 0; i < drv->nmigs; i++)
		if (!strcasecmp(drv->migs[i].uuid, item))
			return (long)i;
	for (size_t i = 0; i < drv->nnvml_migs; i++) {
		const struct nvml_mig *f = &drv->nvml_migs[i];
		if (!strcasecmp(f->uuid, item))
			/* Never a silent mismatch: NVML knows it, the files do not. */
			return gerr_set(err, 0,
					"%s: %.64s: NVML's MIG device (GPU %s, GPU instance %u, "
					"compute instance %u) has no capability files under %s",
					what, item, f->busid, f->gi, f->ci, where);
	}
	return gerr_set(err, 0, "%s: unknown device %.64s (NVML lists %zu MIG device%s under %s)", what, item,
			drv->nnvml_migs, drv->nnvml_migs == 1 ? "" : "s", where);
}

/* ---- what it injects --------------------------------------------------- */

static int have_node(const struct gpu_driver *drv, const char *path, unsigned maj, unsigned min)
{
	struct stat st;
	_cleanup_free_ char *host = drv_resolve(drv, path, &st, NULL);
	return maj && host && S_ISCHR(st.st_mode) && st.st_rdev == makedev(maj, min);
}

static int has_dev(const struct inj_set *s, const char *path)
{
	for (size_t i = 0; i < s->ndevs; i++)
		if (!strcmp(s->devs[i].dst, path))
			return 1;
	return 0;
}

static int has_cap(const struct inj_set *s, const char *path)
{
	for (size_t i = 0; i < s->ncaps; i++)
		if (!strcmp(s->caps[i].dst, path))
			return 1;
	return 0;
}

static const char *where_of(const struct gpu_driver *drv)
{
	return drv->rootpath[0] ? drv->rootpath : "/";
}

/* One access file (read-only at its /proc path) and its nvidia-capN node. */
static int add_access(const struct gpu_driver *drv, struct inj_set *s, const char *proc, unsigned minor,
		      const char *why, struct gerr *err)
{
	if (!has_cap(s, proc)) {
		struct stat st;
		char *host = drv_resolve(drv, proc, &st, NULL);
		if (!host || !S_ISREG(st.st_mode)) {
			free(host);
			return gerr_set(err, ENOENT, "%s%s", drv->rootpath, proc);
		}
		inj_add_file(&s->caps, &s->ncaps, host, xstrdup(proc));
	}
	if (!drv->caps_major)
		return 0; /* R450's proc-only capabilities: no node to give */
	char node[64];
	snprintf(node, sizeof node, CAPS_DEV "/nvidia-cap%u", minor);
	if (has_dev(s, node))
		return 0;
	if (!have_node(drv, node, drv->caps_major, minor))
		return gerr_set(err, 0,
				"missing NVIDIA device node under %s: %s (%s); as root, run "
				"nvidia-modprobe -f %s",
				where_of(drv), node, why, proc);
	inj_add_dev(s, node, drv->caps_major, minor, NULL, why);
	return 0;
}

static int add_whole_dir(const struct gpu_driver *drv, struct inj_set *s, const char *path)
{
	struct stat st;
	char *host = drv_resolve(drv, path, &st, NULL);
	if (!host || !S_ISDIR(st.st_mode)) {
		free(host);
		return -1;
	}
	inj_add_file(&s->caps, &s->ncaps, host, xstrdup(path));
	s->caps[s->ncaps - 1].dir = 1;
	return 0;
}

int mig_collect(const struct gpu_driver *drv, const struct gpu_selection *sel, struct inj_set *s, struct gerr *err)
{
	int whole = 0;
	for (size_t i = 0; i < drv->ngpus && sel->kind == SEL_SOME; i++)
		whole |= sel->mask[i] && drv->gpus[i].mig_capable && (sel->mig_config || sel->mig_monitor);
	for (size_t i = 0; i < drv->nmigs && sel->kind == SEL_SOME && !whole; i++) {
		if (!sel->migmask[i])
			continue;
		const struct mig_dev *m = &drv->migs[i];
		unsigned minor = drv->gpus[m->gpu].minor;
		char proc[128], why[96];
		snprintf(proc, sizeof proc, "/" CAPS_DIR "/gpu%u/mig/gi%u/access", minor, m->gi);
		snprintf(why, sizeof why, "MIG %u:%u: GPU instance %u", m->gpu, m->index, m->gi);
		if (add_access(drv, s, proc, m->gi_minor, why, err) < 0)
			return -1;
		snprintf(proc, sizeof proc, "/" CAPS_DIR "/gpu%u/mig/gi%u/ci%u/access", minor, m->gi, m->ci);
		snprintf(why, sizeof why, "MIG %u:%u: compute instance %u", m->gpu, m->index, m->ci);
		if (add_access(drv, s, proc, m->ci_minor, why, err) < 0)
			return -1;
	}
	if (whole) {
		/* Instances made from inside appear in these directories. */
		if (add_whole_dir(drv, s, "/" CAPS_DIR) < 0)
			return gerr_set(err, ENOENT, "%s/" CAPS_DIR, drv->rootpath);
		if (drv->caps_major && add_whole_dir(drv, s, CAPS_DEV) < 0)
			return gerr_set(err, 0,
					"missing NVIDIA device node under %s: " CAPS_DEV
					" (MIG management); as root, run nvidia-modprobe -f /" CAPS_DIR "/mig/config",
					where_of(drv));
	}
	for (size_t i = 0; i < sel->nimex && sel->kind != SEL_VOID; i++) {
		char node[64], why[32];
		snprintf(node, sizeof node, IMEX_DEV "/channel%u", sel->imex[i]);
		snprintf(why, sizeof why, "IMEX channel %u", sel->imex[i]);
		if (!have_node(drv, node, drv->imex_major, sel->imex[i]))
			return gerr_set(err, 0, "missing NVIDIA device node under %s: %s (%s%s)", where_of(drv), node,
					why, drv->imex_major ? "" : "; the driver has no nvidia-caps-imex-channels");
		inj_add_dev(s, node, drv->imex_major, sel->imex[i], NULL, why);
	}
	return 0;
}
