/* gpu/discover.c — which driver root (--driver-root, else GPURUN_DRIVER_ROOT,
 * else /), and what it says about the driver, without NVML.
 *
 * Everything is a file under the driver root:
 *   proc/driver/nvidia/version            the NVRM version ("no driver" if absent)
 *   proc/driver/nvidia/gpus/<bus>/information   one per GPU: minor, UUID, model
 *   proc/devices                          the dynamic major of nvidia-uvm
 *   proc/driver/nvidia/capabilities       MIG instances (mig.c, when selecting)
 *   etc/ld.so.cache                       which file each driver library is
 * GPUs are numbered by PCI bus id, which is what NVML's index order is in
 * practice; the device minor is a different number (index 1 can be
 * /dev/nvidia0), and mixing the two up is the classic isolation bug.
 *
 * The driver root is opened once and every path below it is resolved with
 * openat2(RESOLVE_IN_ROOT): an absolute symlink in a driver container
 * (/run/nvidia/driver/usr/lib/... -> /usr/lib/...) means the file inside
 * that root, never the host's file of the same name.
 *
 * Run as root, the driver root must be root's alone from / down before
 * anything of it is read (base/trust.c), and drv_trust and
 * drv_trust_loader judge each file below it that is bound, run or loaded. */
#include "gpu_int.h"

#include <dirent.h>
#include <ctype.h>
#include <elf.h>
#include <limits.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#define VERSION_FILE "proc/driver/nvidia/version"
#define GPUS_DIR "proc/driver/nvidia/gpus"
#define LDCACHE_FILE "etc/ld.so.cache"
#define SMALL_FILE_MAX (1 << 20)
#define LDCACHE_MAX (64 << 20)

/* The host path an fd refers to ("/tmp/fake/usr/lib/.../libcuda.so.550.54.14"). */
static char *fd_path(int fd)
{
	char link[64], buf[4096];
	snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
	ssize_t n = readlink(link, buf, sizeof buf - 1);
	if (n < 0)
		return NULL;
	if (n == 0 || (size_t)n >= sizeof buf - 1) {
		errno = ENAMETOOLONG;
		return NULL;
	}
	buf[n] = '\0';
	return xstrdup(buf);
}

char *drv_resolve(const struct gpu_driver *drv, const char *path, struct stat *st, char **inroot)
{
	_cleanup_fd_ int fd = open_in_root(drv->rootfd, path, O_PATH);
	if (fd < 0 || fstat(fd, st) < 0)
		return NULL;
	char *host = fd_path(fd);
	if (!host)
		return NULL;
	size_t rl = strlen(drv->rootpath);
	if (strncmp(host, drv->rootpath, rl) != 0 || (host[rl] != '/' && host[rl] != '\0')) {
		/* Not below the root we opened: the root moved under us. */
		free(host);
		return NULL;
	}
	if (inroot)
		*inroot = xstrdup(host[rl] ? host + rl : "/");
	return host;
}

int drv_trust(const struct gpu_driver *drv, const char *what, const char *host, struct gerr *err)
{
	size_t rl = strlen(drv->rootpath);
	/* Below the root, the walk starts at the root, which gpu_discover
	 * judged already, and resolves as a chroot there would. */
	if (strncmp(host, drv->rootpath, rl) || (host[rl] != '/' && host[rl]))
		return trust_path(what, host, err);
	return trust_path_at(drv->rootfd, drv->rootpath, drv->trusted, what, host + rl, err);
}

char *drv_read(const struct gpu_driver *drv, const char *path, size_t max, size_t *len, struct gerr *err)
{
	const char *rel = path + strspn(path, "/");
	_cleanup_fd_ int fd = open_in_root(drv->rootfd, rel, O_RDONLY | O_NONBLOCK | O_NOCTTY);
	struct stat st;
	if (fd < 0) {
		gerr_set(err, errno, "%s/%s", drv->rootpath, rel);
		return NULL;
	}
	if (fstat(fd, &st) < 0) {
		gerr_set(err, errno, "stat %s/%s", drv->rootpath, rel);
		return NULL;
	}
	if (!S_ISREG(st.st_mode)) {
		gerr_set(err, 0, "%s/%s: not a regular file", drv->rootpath, rel);
		return NULL;
	}
	/* procfs files report size 0: read until EOF, in chunks. */
	struct sbuf b = {0};
	char chunk[8192];
	sbuf_add(&b, "", 0);
	for (;;) {
		ssize_t r = read(fd, chunk, sizeof chunk);
		if (r == 0)
			break;
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0 || b.len + (size_t)r > max) {
			gerr_set(err, r < 0 ? errno : EFBIG, "read %s/%s", drv->rootpath, rel);
			sbuf_free(&b);
			return NULL;
		}
		sbuf_add(&b, chunk, (size_t)r);
	}
	if (len)
		*len = b.len;
	return b.s;
}

static int by_busid(const void *a, const void *b)
{
	return strcmp(((const struct gpu_dev *)a)->busid, ((const struct gpu_dev *)b)->busid);
}

/* One gpus/<bus> directory -> a table row; 0 when the GPU is unusable. */
static int read_gpu(struct gpu_driver *drv, const char *name, struct gpu_dev *g)
{
	struct gerr err = {0};
	struct gpu_information info;
	char path[320];
	size_t len, nl = strlen(name);
	if (nl >= sizeof g->procdir)
		return 0;
	snprintf(path, sizeof path, GPUS_DIR "/%s/information", name);
	_cleanup_free_ char *text = drv_read(drv, path, SMALL_FILE_MAX, &len, &err);
	if (!text) {
		warnx_("skipping GPU %s: %s", name, err.msg);
		return 0;
	}
	if (procfs_parse_information(text, len, &info) < 0) {
		warnx_("skipping GPU %s: %s/%s has no valid Device Minor", name, drv->rootpath, path);
		return 0;
	}
	if (info.excluded) {
		/* NVreg_ExcludedGpus: NVML does not enumerate it, so it takes
		 * no index and cannot be selected, as with the reference. */
		drv->nexcluded++;
		return 0;
	}
	memset(g, 0, sizeof *g);
	g->minor = (unsigned)info.minor;
	memcpy(g->procdir, name, nl + 1);
	/* Before the GPU is initialised (no nvidia-persistenced) some drivers
	 * write "GPU-????????-..." or nothing: no UUID then, rather than one
	 * that could never match (selection says why; index and bus id work). */
	if (!strncmp(info.uuid, "GPU-", 4) && info.uuid[4] && !strchr(info.uuid, '?'))
		snprintf(g->uuid, sizeof g->uuid, "%s", info.uuid);
	snprintf(g->model, sizeof g->model, "%s", info.model[0] ? info.model : "Unknown");
	/* The directory name is the bus id too; Bus Location wins when it parses. */
	if (busid_normalize(info.bus, g->busid, sizeof g->busid) < 0 &&
	    busid_normalize(name, g->busid, sizeof g->busid) < 0) {
		warnx_("skipping GPU %s: no PCI bus id", name);
		return 0;
	}
	g->brand = model_brand(g->model);
	g->arch = model_arch(g->model);
	return 1;
}

static int read_gpus(struct gpu_driver *drv, struct gerr *err)
{
	int fd = open_in_root(drv->rootfd, GPUS_DIR, O_RDONLY | O_DIRECTORY);
	if (fd < 0) {
		/* The module is loaded but drives no GPU: a valid, empty table. */
		if (errno == ENOENT)
			return 0;
		return gerr_set(err, errno, "%s/" GPUS_DIR, drv->rootpath);
	}
	DIR *d = fdopendir(fd);
	if (!d) {
		int e = errno;
		close(fd);
		return gerr_set(err, e, "%s/" GPUS_DIR, drv->rootpath);
	}
	drv->gpus = xcalloc(GPU_MAX, sizeof *drv->gpus);
	struct dirent *de;
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		if (drv->ngpus == GPU_MAX) {
			closedir(d);
			return gerr_set(err, 0, "%s/" GPUS_DIR ": more than %d GPUs", drv->rootpath, GPU_MAX);
		}
		drv->ngpus += (size_t)read_gpu(drv, de->d_name, &drv->gpus[drv->ngpus]);
	}
	closedir(d);
	qsort(drv->gpus, drv->ngpus, sizeof *drv->gpus, by_busid);
	for (size_t i = 0; i < drv->ngpus; i++)
		drv->gpus[i].index = (unsigned)i;
	return 0;
}

/* The one reader of GPURUN_DRIVER_ROOT: an empty value is no value. */
static const char *named_root(const char *opt)
{
	if (opt && *opt)
		return opt;
	const char *e = getenv("GPURUN_DRIVER_ROOT");
	return e && *e ? e : NULL;
}

const char *gpu_default_root(const char *opt)
{
	const char *r = named_root(opt);
	return r ? r : "/";
}

int gpu_root_named(const char *opt)
{
	return named_root(opt) != NULL;
}

int gpu_discover(const char *root, struct gpu_driver *drv, struct gerr *err)
{
	memset(drv, 0, sizeof *drv);
	drv->rootfd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (drv->rootfd < 0)
		return gerr_set(err, errno, "no NVIDIA driver found under %s: driver root %s", root, root);
	/* As root, a driver root someone else can change is refused before
	 * anything of it is read, run or bound (docs/design.md, "Modes").  Checked by
	 * name after the open: then the name must still lead to what was
	 * opened, or the fd could be of a tree swapped in before the check. */
	struct stat opened, named;
	if (trust_path("driver root", root, err) < 0)
		return -1;
	if (trust_applies() && (fstat(drv->rootfd, &opened) < 0 || stat(root, &named) < 0 ||
				opened.st_dev != named.st_dev || opened.st_ino != named.st_ino)) {
		struct sbuf q = {0};
		sbuf_shquote(&q, root);
		gerr_set(err, 0, "driver root %s: changed while it was being checked", q.s);
		sbuf_free(&q);
		return -1;
	}
	drv->trusted = xcalloc(1, sizeof *drv->trusted);
	drv->rootpath = fd_path(drv->rootfd);
	if (!drv->rootpath)
		return gerr_set(err, errno, "driver root %s: cannot read its path", root);
	if (!strcmp(drv->rootpath, "/"))
		drv->rootpath[0] = '\0';

	size_t len;
	_cleanup_free_ char *version = drv_read(drv, VERSION_FILE, SMALL_FILE_MAX, &len, err);
	if (!version)
		return gerr_prefix(err, "no NVIDIA driver found under %s", root);
	if (procfs_parse_version(version, len, drv->version, sizeof drv->version) < 0)
		return gerr_set(err, 0,
				"no NVIDIA driver found under %s: %s/" VERSION_FILE
				": no version number on its first line",
				root, drv->rootpath);
	if (read_gpus(drv, err) < 0)
		return -1;

	/* nvidia-uvm has a dynamic major; no entry means the module is not
	 * loaded, and then there are no uvm nodes to give. */
	struct gerr ignore = {0};
	_cleanup_free_ char *devices = drv_read(drv, "proc/devices", SMALL_FILE_MAX, &len, &ignore);
	if (devices)
		procfs_devices_major(devices, len, "nvidia-uvm", &drv->uvm_major);
	/* A GPU Operator driver root (/run/nvidia/driver) has no proc/devices
	 * of its own, but the node: its number is the major. */
	struct stat st;
	_cleanup_free_ char *uvm = drv->uvm_major ? NULL : drv_resolve(drv, "dev/nvidia-uvm", &st, NULL);
	if (uvm && S_ISCHR(st.st_mode) && minor(st.st_rdev) == 0)
		drv->uvm_major = major(st.st_rdev);
	return 0;
}

void gpu_driver_free(struct gpu_driver *drv)
{
	if (drv->rootfd >= 0)
		close(drv->rootfd);
	free(drv->rootpath);
	free(drv->gpus);
	free(drv->migs);
	free(drv->nvml_migs);
	ldcache_free(&drv->cache);
	trust_memo_free(drv->trusted);
	free(drv->trusted);
	memset(drv, 0, sizeof *drv);
	drv->rootfd = -1;
}

static int load_cache(struct gpu_driver *drv, struct gerr *err)
{
	if (drv->cache_loaded)
		return 0;
	drv->cache.data = drv_read(drv, LDCACHE_FILE, LDCACHE_MAX, &drv->cache.len, err);
	if (!drv->cache.data)
		return gerr_prefix(err, "cannot look up the driver libraries");
	if (ldcache_parse(drv->cache.data, drv->cache.len, &drv->cache.v, &drv->cache.n, err) < 0)
		return gerr_prefix(err, "%s/" LDCACHE_FILE, drv->rootpath);
	drv->cache_loaded = 1;
	return 0;
}

/* The ELF interpreter a program asks for (PT_INTERP), as a path in the
 * root, into out; 0 when it names none (a static program, a library). */
static int elf_interp(const struct gpu_driver *drv, const char *path, char *out, size_t cap)
{
	_cleanup_fd_ int fd = open_in_root(drv->rootfd, path, O_RDONLY | O_NONBLOCK | O_NOCTTY);
	Elf64_Ehdr eh;
	out[0] = '\0';
	if (fd < 0 || pread(fd, &eh, sizeof eh, 0) != (ssize_t)sizeof eh || memcmp(eh.e_ident, ELFMAG, SELFMAG))
		return 0;
	int wide = eh.e_ident[EI_CLASS] == ELFCLASS64;
	const Elf32_Ehdr *eh32 = (const Elf32_Ehdr *)&eh;
	uint64_t phoff = wide ? eh.e_phoff : eh32->e_phoff;
	unsigned phnum = wide ? eh.e_phnum : eh32->e_phnum;
	size_t phsize = wide ? sizeof(Elf64_Phdr) : sizeof(Elf32_Phdr);
	for (unsigned i = 0; i < phnum && i < 256; i++) {
		union {
			Elf64_Phdr w;
			Elf32_Phdr n;
		} ph;
		if (pread(fd, &ph, phsize, (off_t)(phoff + i * phsize)) != (ssize_t)phsize)
			return 0;
		if ((wide ? ph.w.p_type : ph.n.p_type) != PT_INTERP)
			continue;
		uint64_t off = wide ? ph.w.p_offset : ph.n.p_offset, sz = wide ? ph.w.p_filesz : ph.n.p_filesz;
		if (!sz || sz >= cap || pread(fd, out, sz, (off_t)off) != (ssize_t)sz)
			return 0;
		out[sz] = '\0';
		return 1;
	}
	return 0;
}

/* path in the root judged when it exists; when it does not, the
 * directory that would hold it, where it could appear. */
static int trust_if_there(const struct gpu_driver *drv, const char *what, const char *path, struct gerr *err)
{
	_cleanup_free_ char *p = xstrdup(path);
	for (int up = 0; up < 2; up++) {
		_cleanup_fd_ int fd = open_in_root(drv->rootfd, p, O_PATH);
		if (fd >= 0)
			return trust_path_at(drv->rootfd, drv->rootpath, drv->trusted, what, p, err);
		char *slash = strrchr(p, '/');
		if (errno != ENOENT || !slash || slash == p)
			return 0;
		*slash = '\0';
	}
	return 0;
}

/* The dynamic loader, run chrooted in the driver root (no environment:
 * no LD_LIBRARY_PATH), reads its preload list and cache and looks in the
 * cache's libraries and its default directories: all of that is code or
 * decides what code runs. */
int drv_trust_loader(struct gpu_driver *drv, const char *what, const char *path, struct gerr *err)
{
	static const char *const loader_files[] = {"/etc/ld.so.preload", "/etc/ld.so.cache", "/lib", "/lib64",
						   "/usr/lib",           "/usr/lib64"};
	if (!trust_applies())
		return 0;
	char interp[PATH_MAX];
	_cleanup_free_ char *of_interp = xasprintf("%s's ELF interpreter", what);
	_cleanup_free_ char *of_loader = xasprintf("a file the dynamic loader reads for %s", what);
	_cleanup_free_ char *of_cache = xasprintf("a library in the ld.so.cache %s may load", what);
	if (trust_path_at(drv->rootfd, drv->rootpath, drv->trusted, what, path, err) < 0 ||
	    (elf_interp(drv, path, interp, sizeof interp) && trust_if_there(drv, of_interp, interp, err) < 0))
		return -1;
	for (size_t i = 0; i < COUNT_OF(loader_files); i++)
		if (trust_if_there(drv, of_loader, loader_files[i], err) < 0)
			return -1;
	struct gerr none = {0};
	if (load_cache(drv, &none) < 0)
		return 0; /* no cache: the loader looks in the default directories only */
	for (size_t i = 0; i < drv->cache.n; i++)
		if (drv->cache.v[i].value[0] == '/' && trust_if_there(drv, of_cache, drv->cache.v[i].value, err) < 0)
			return -1;
	return 0;
}

/* nvidia-container-cli's selector: a driver library is the one whose file
 * name ends in ".so.<NVRM version>", which skips leftovers of an older
 * driver (libnvidia-ml.so.470.57.02 next to .550.54.14). */
static int is_driver_file(const char *host, const char *version)
{
	const char *base = strrchr(host, '/');
	base = base ? base + 1 : host;
	size_t bl = strlen(base), vl = strlen(version);
	return bl > vl + 4 && !strcmp(base + bl - vl, version) && !strncmp(base + bl - vl - 4, ".so.", 4);
}

/* Versioned on their own (libnvidia-egl-gbm.so.1.1.1): a real file, not
 * the SONAME link, i.e. at least two numbers after ".so.". */
static int is_platform_file(const char *host, const char *version)
{
	(void)version;
	const char *base = strrchr(host, '/');
	base = base ? base + 1 : host;
	const char *so = strstr(base, ".so.");
	if (!so)
		return 0;
	const char *v = so + 4;
	size_t d = strspn(v, "0123456789");
	return d && v[d] == '.' && strspn(v + d + 1, "0123456789.") == strlen(v + d + 1) &&
	       isdigit((unsigned char)v[d + 1]);
}

static int find_libs(struct gpu_driver *drv, const char *const *prefixes, size_t nprefixes, int bits,
		     int (*accept)(const char *, const char *), struct strv *out, struct strv *sonames,
		     struct gerr *err)
{
	if (load_cache(drv, err) < 0)
		return -1;
	char **found = xcalloc(nprefixes, sizeof *found);
	const char **keys = xcalloc(nprefixes, sizeof *keys);
	for (size_t i = 0; i < drv->cache.n; i++) {
		const struct ldcache_entry *e = &drv->cache.v[i];
		if (!ldcache_entry_is(e->flags, bits))
			continue;
		for (size_t p = 0; p < nprefixes; p++) {
			if (found[p] || strncmp(e->key, prefixes[p], strlen(prefixes[p])) != 0)
				continue;
			struct stat st;
			char *host = drv_resolve(drv, e->value, &st, NULL);
			if (host && S_ISREG(st.st_mode) && accept(host, drv->version)) {
				found[p] = host;
				keys[p] = e->key;
			} else {
				free(host);
			}
		}
	}
	for (size_t p = 0; p < nprefixes; p++)
		if (found[p]) {
			strv_add(out, found[p]);
			if (sonames)
				strv_add(sonames, xstrdup(keys[p]));
		}
	free(found);
	free(keys);
	return 0;
}

int drv_find_libs(struct gpu_driver *drv, const char *const *prefixes, size_t nprefixes, int bits, struct strv *out,
		  struct strv *sonames, struct gerr *err)
{
	return find_libs(drv, prefixes, nprefixes, bits, is_driver_file, out, sonames, err);
}

int drv_find_platform_libs(struct gpu_driver *drv, const char *const *prefixes, size_t nprefixes, int bits,
			   struct strv *out, struct strv *sonames, struct gerr *err)
{
	return find_libs(drv, prefixes, nprefixes, bits, is_platform_file, out, sonames, err);
}

char *drv_other_version(struct gpu_driver *drv, const char *prefix, char **path)
{
	const char *const prefixes[] = {prefix};
	struct strv same = {0}, other = {0};
	struct gerr err = {0};
	char *v = NULL;
	if (drv_find_libs(drv, prefixes, 1, 64, &same, NULL, &err) == 0 && same.n == 0 &&
	    drv_find_platform_libs(drv, prefixes, 1, 64, &other, NULL, &err) == 0 && other.n) {
		const char *base = strrchr(other.v[0], '/') ? strrchr(other.v[0], '/') + 1 : other.v[0];
		v = xstrdup(strstr(base, ".so.") + 4);
		if (path)
			*path = xstrdup(other.v[0]);
	}
	strv_free(&same);
	strv_free(&other);
	return v;
}
