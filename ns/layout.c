/* ns/layout.c — the baseline layout of every container, as plan ops: the
 * root, /proc, a private /dev (its /dev/shm sized by --shm-size, or the
 * host's with --ipc host), /sys, /tmp, /run, the host's network files,
 * volumes, --tmpfs and --mount in docker's syntax, the working directory,
 * the closing steps (pivot, ldconfig, read-only root), and the set of new
 * namespaces.  cli/run.c calls these around gpu_configure(); the unit
 * tests (tests/unit/layout_test.c) call them directly and check the ops.
 * Building only: nothing here touches the system, except that a volume's
 * source is resolved (realpath, stat) so the plan says what it binds, and
 * the host's /proc and /sys are looked at to mask only what is there. */
#include "ns.h"

#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#define OVERLAY_DATA "lowerdir=" PLAN_LOWER ",upperdir=" PLAN_UPPER ",workdir=" PLAN_WORK

static void layout_root(struct plan *p, const struct run_config *cfg)
{
	unsigned flags = OPF_NODEV | OPF_NOSUID;
	if (cfg->layered)
		flags |= OPF_LAYERS | (cfg->import_run ? OPF_IMPORT : 0);
	else if (cfg->image_is_dir)
		flags |= OPF_DIR;
	else if (cfg->keep_owner)
		flags |= OPF_KEEP_OWNER; /* the tmpfs is private: owners harm nothing there */
	struct op *root = plan_add(p, OP_ROOTFS, flags, cfg->image, "/");
	/* userxattr: in a user namespace overlayfs keeps its metadata in
	 * user.* xattrs (trusted.* needs real root).  Cached layers always
	 * use it: their whiteouts and opaque markers are made by users too. */
	if (cfg->image_is_dir)
		root->data = xstrdup(cfg->unprivileged ? OVERLAY_DATA ",userxattr" : OVERLAY_DATA);
	if (cfg->layered) {
		struct sbuf d = {0};
		sbuf_puts(&d, "lowerdir=");
		for (size_t i = cfg->layered->layers.n; i-- > 0;) {
			sbuf_printf(&d, PLAN_LAYERS "/%zu", i);
			sbuf_puts(&d, i ? ":" : "");
		}
		/* --name: the writes go to the kept container's directory on
		 * the disk, bound whole, since overlayfs wants the upper and
		 * work directories on one mount. */
		if (cfg->kept_dir)
			sbuf_puts(&d, ",upperdir=" PLAN_KEPT "/upper,workdir=" PLAN_KEPT "/work,userxattr");
		else
			sbuf_puts(&d, ",upperdir=" PLAN_UPPER ",workdir=" PLAN_WORK ",userxattr");
		root->data = d.s;
		if (cfg->kept_dir)
			root->kept = xstrdup(cfg->kept_dir);
		for (size_t i = 0; i < cfg->layered->layers.n; i++)
			strv_add(&root->layers, xstrdup(cfg->layered->layers.v[i]));
		if (cfg->import_sel)
			root->image_sel = xstrdup(cfg->import_sel);
	}
	if (cfg->kept_dir)
		plan_why(root, "the new root: the image's layers under the kept container's layer");
}

static void layout_dev(struct plan *p, const struct run_config *cfg)
{
	static const struct {
		const char *path;
		unsigned maj, min;
	} nodes[] = {{"/dev/null", 1, 3},   {"/dev/zero", 1, 5},    {"/dev/full", 1, 7},
		     {"/dev/random", 1, 8}, {"/dev/urandom", 1, 9}, {"/dev/tty", 5, 0}};
	static const char *const links[][2] = {{"/proc/self/fd", "/dev/fd"},
					       {"/proc/self/fd/0", "/dev/stdin"},
					       {"/proc/self/fd/1", "/dev/stdout"},
					       {"/proc/self/fd/2", "/dev/stderr"},
					       {"pts/ptmx", "/dev/ptmx"}};
	plan_tmpfs(p, "/dev", "mode=0755", OPF_NOSUID | OPF_NOEXEC);
	/* OPF_REPLACE finds no symlink on the fresh tmpfs; with it the host's
	 * nodes are one step (bind_files) as the host's other files are. */
	for (size_t i = 0; i < COUNT_OF(nodes); i++) {
		struct op *op =
			plan_bind(p, nodes[i].path, nodes[i].path, OPF_DEVICE | OPF_NOSUID | OPF_NOEXEC | OPF_REPLACE);
		op->rdev = makedev(nodes[i].maj, nodes[i].min);
	}
	for (size_t i = 0; i < COUNT_OF(links); i++)
		plan_symlink(p, links[i][0], links[i][1]);
	plan_add(p, OP_DEVPTS, OPF_NOSUID | OPF_NOEXEC, NULL, "/dev/pts");
	if (cfg->share_ipc) {
		/* POSIX shared memory (shm_open, sem_open) is files in /dev/shm,
		 * not IPC-namespace objects: sharing the namespace alone would
		 * leave PyTorch's and NCCL's segments apart. */
		plan_why(plan_bind(p, "/dev/shm", "/dev/shm", OPF_DIR | OPF_NOSUID | OPF_NODEV),
			 "--ipc host: the host's /dev/shm, as docker binds it");
	} else if (cfg->shm_size) {
		_cleanup_free_ char *data = xasprintf("mode=1777,size=%llu", cfg->shm_size);
		plan_why(plan_tmpfs(p, "/dev/shm", data, OPF_NOSUID | OPF_NODEV), "--shm-size");
	} else {
		plan_tmpfs(p, "/dev/shm", "mode=1777", OPF_NOSUID | OPF_NODEV); /* no size cap: NCCL uses it */
	}
}

/* /etc/resolv.conf and /etc/hosts are the host's when the network is
 * shared.  Bound read-only rather than copied: binding over an existing file
 * needs no write access to the image's /etc, which a directory image owned
 * by someone else does not give an unprivileged user.  An image symlink
 * there (often dangling: ../run/systemd/resolve/...) is replaced. */
static void layout_host_net_files(struct plan *p)
{
	static const char *const files[] = {"/etc/resolv.conf", "/etc/hosts"};
	for (size_t i = 0; i < COUNT_OF(files); i++) {
		plan_bind(p, files[i], files[i],
			  OPF_OPTIONAL | OPF_REPLACE | OPF_RO | OPF_NOSUID | OPF_NODEV | OPF_NOEXEC);
	}
}

/* docker's masked paths (moby's default spec): the fresh /proc and the
 * host's /sys still show kernel-wide state no container should read - other
 * users' keys (keys), every timer with its owner's pid and function
 * (timer_list), kernel memory (kcore), interrupt counts and power readings
 * (interrupts, powercap: side channels), firmware tables.  A file gets the
 * host's /dev/null bound over it, read-only (opened before the image is
 * touched and checked to be 1:3, so a planted /dev/null cannot redirect it:
 * CVE-2025-31133), a directory an empty read-only tmpfs.  A path this
 * kernel does not have gets no op, so the plan shows only what is done. */
static void layout_masks(struct plan *p)
{
	static const char *const masked[] = {
		"/proc/acpi",
		"/proc/asound",
		"/proc/interrupts",
		"/proc/kcore",
		"/proc/keys",
		"/proc/latency_stats",
		"/proc/sched_debug",
		"/proc/scsi",
		"/proc/timer_list",
		"/proc/timer_stats",
		"/sys/devices/virtual/powercap",
		"/sys/firmware",
	};
	for (size_t i = 0; i < COUNT_OF(masked); i++) {
		struct stat st;
		if (lstat(masked[i], &st) < 0)
			continue;
		/* The printed plan's heading of this block says why. */
		if (S_ISDIR(st.st_mode)) {
			plan_tmpfs(p, masked[i], "mode=0555", OPF_RO | OPF_NOSUID | OPF_NODEV | OPF_NOEXEC);
		} else {
			struct op *op =
				plan_bind(p, "/dev/null", masked[i], OPF_DEVICE | OPF_RO | OPF_NOSUID | OPF_NOEXEC);
			op->rdev = makedev(1, 3);
		}
	}
}

/* With one id mapped, apt's switch to _apt before each download "works"
 * (ns/security.c answers setgroups and set*id with success) but apt then
 * checks that its ids changed, finds they did not, and stops ("Could not
 * switch group").  Told to download as root, apt skips the switch; there
 * is no other user in the container to protect anything from.  Only in an
 * image that has apt's configuration directory. */
static void layout_apt_sandbox(struct plan *p)
{
	static const char conf[] = "APT::Sandbox::User \"root\";\n";
	struct op *op = plan_file(p, "/etc/apt/apt.conf.d/00gpurun-single-id", conf, sizeof conf - 1, 0644);
	op->flags |= OPF_OPTIONAL;
	plan_why(op, "one id mapped: apt downloads as root instead of switching to _apt");
}

void layout_base(struct plan *p, const struct run_config *cfg)
{
	p->section = SEC_ROOT;
	layout_root(p, cfg);
	p->section = SEC_STANDARD;
	if (cfg->hostname)
		plan_add(p, OP_HOSTNAME, 0, cfg->hostname, NULL);
	if (cfg->new_net)
		plan_add(p, OP_LOOPBACK, 0, NULL, NULL);
	plan_add(p, OP_PROC, OPF_NOSUID | OPF_NODEV | OPF_NOEXEC, NULL, "/proc");
	layout_dev(p, cfg);
	if (cfg->new_net)
		plan_add(p, OP_SYSFS, OPF_RO | OPF_NOSUID | OPF_NODEV | OPF_NOEXEC, NULL, "/sys");
	else
		plan_bind(p, "/sys", "/sys",
			  OPF_DIR | OPF_REC | OPF_TOP | OPF_RO | OPF_NOSUID | OPF_NODEV | OPF_NOEXEC);
	plan_tmpfs(p, "/tmp", "mode=1777", OPF_NOSUID | OPF_NODEV);
	plan_tmpfs(p, "/run", "mode=0755", OPF_NOSUID | OPF_NODEV);
	if (!cfg->new_net)
		layout_host_net_files(p);
	if (cfg->fake_ids)
		layout_apt_sandbox(p);
	/* Last, as runc masks after the mounts: a block of the printed plan
	 * that a student can skip. */
	p->section = SEC_HARDEN;
	plan_add(p, OP_PROC_RO, 0, NULL, "/proc");
	/* The mounts below the host's /sys (cgroup v1's tree among them,
	 * CVE-2022-0492) read-only too, as docker has them. */
	if (!cfg->new_net)
		plan_add(p, OP_REMOUNT, OPF_BELOW | OPF_RO | OPF_NOSUID | OPF_NODEV | OPF_NOEXEC, "/sys", "/sys");
	layout_masks(p);
}

/* A destination that a volume, --tmpfs or --mount may have. */
static int check_dst(const char *what, const char *spec, const char *dst, struct gerr *err)
{
	if (dst[0] != '/')
		return gerr_set(err, 0, "%s '%s': destination must be an absolute path", what, spec);
	if (dst[strspn(dst, "/")] == '\0')
		return gerr_set(err, 0, "%s '%s': cannot mount over the container's root", what, spec);
	return 0;
}

static int add_bind(struct plan *p, const char *src, const char *dst, int ro, struct gerr *err)
{
	_cleanup_free_ char *abs = realpath(src, NULL);
	struct stat st;
	if (!abs || stat(abs, &st) < 0) {
		int e = errno;
		/* docker reads a source without a slash as a named volume. */
		if (e == ENOENT && !strchr(src, '/'))
			return gerr_set(err, 0,
					"volume source '%s': no such path here, and gpurun has no named volumes: it "
					"binds host paths only (-v /path/to/dir:%s, or ./%s:%s for one here)",
					src, dst, src, dst);
		return gerr_set(err, e, "volume source %s", src);
	}
	unsigned flags = OPF_REC | OPF_NOSUID | OPF_NODEV | (ro ? OPF_RO : 0);
	if (S_ISDIR(st.st_mode))
		flags |= OPF_DIR;
	plan_bind(p, abs, dst, flags);
	return 0;
}

int layout_volume(struct plan *p, const char *spec, struct gerr *err)
{
	_cleanup_free_ char *copy = xstrdup(spec);
	char *src = copy, *dst = strchr(copy, ':'), *mode = NULL;
	if (!dst)
		return gerr_set(err, 0, "--volume '%s': expected SRC:DST[:ro]", spec);
	*dst++ = '\0';
	mode = strchr(dst, ':');
	if (mode)
		*mode++ = '\0';
	if (!*src || !*dst)
		return gerr_set(err, 0, "--volume '%s': expected SRC:DST[:ro]", spec);
	/* docker's modes, comma-separated.  z and Z relabel for SELinux, which
	 * is not here; cached, delegated and consistent are Docker Desktop's
	 * file sharing: none of them changes a bind here. */
	int ro = -1;
	char *save = NULL;
	for (char *m = mode ? strtok_r(mode, ",", &save) : NULL; m; m = strtok_r(NULL, ",", &save)) {
		if (!strcmp(m, "ro") || !strcmp(m, "rw")) {
			if (ro >= 0)
				return gerr_set(err, 0, "--volume '%s': ro and rw given more than once", spec);
			ro = m[1] == 'o';
		} else if (strcmp(m, "z") && strcmp(m, "Z") && strcmp(m, "cached") && strcmp(m, "delegated") &&
			   strcmp(m, "consistent")) {
			return gerr_set(err, 0,
					"--volume '%s': unknown mode '%s' (expected ro or rw; z, Z, cached, delegated "
					"and consistent are accepted and change nothing here)",
					spec, m);
		}
	}
	if (check_dst("--volume", spec, dst, err) < 0)
		return -1;
	return add_bind(p, src, dst, ro == 1, err);
}

/* A tmpfs as docker makes one: noexec,nosuid,nodev unless "exec"; a size
 * and a mode only as numbers gpurun wrote, so no text from the command
 * line reaches the mount's options. */
struct tmpfs_spec {
	unsigned flags;
	unsigned long long size; /* 0: tmpfs's own default */
	unsigned long mode;
};

static int tmpfs_mode(const char *what, const char *spec, const char *v, unsigned long *mode, struct gerr *err)
{
	char *end;
	errno = 0;
	*mode = strtoul(v, &end, 8);
	if (errno || end == v || *end || *mode > 07777)
		return gerr_set(err, 0, "%s '%s': the mode is an octal number such as 1777", what, spec);
	return 0;
}

static int tmpfs_size(const char *what, const char *spec, const char *v, unsigned long long *size, struct gerr *err)
{
	if (opt_size1024(v, size) < 0)
		return gerr_set(err, 0, "%s '%s': the size is a number with b, k, m or g, such as 64m", what, spec);
	return 0;
}

static void add_tmpfs(struct plan *p, const char *dst, const struct tmpfs_spec *t)
{
	_cleanup_free_ char *data =
		t->size ? xasprintf("mode=%lo,size=%llu", t->mode, t->size) : xasprintf("mode=%lo", t->mode);
	plan_tmpfs(p, dst, data, t->flags);
}

static int layout_tmpfs(struct plan *p, const char *spec, struct gerr *err)
{
	_cleanup_free_ char *copy = xstrdup(spec);
	char *opts = strchr(copy, ':');
	struct tmpfs_spec t = {OPF_NOEXEC | OPF_NOSUID | OPF_NODEV, 0, 01777};
	if (opts)
		*opts++ = '\0';
	if (check_dst("--tmpfs", spec, copy, err) < 0)
		return -1;
	char *save = NULL;
	for (char *o = opts ? strtok_r(opts, ",", &save) : NULL; o; o = strtok_r(NULL, ",", &save)) {
		if (!strcmp(o, "ro") || !strcmp(o, "rw"))
			t.flags = o[1] == 'o' ? t.flags | OPF_RO : t.flags & ~OPF_RO;
		else if (!strcmp(o, "exec") || !strcmp(o, "noexec"))
			t.flags = o[0] == 'e' ? t.flags & ~OPF_NOEXEC : t.flags | OPF_NOEXEC;
		else if (!strcmp(o, "nosuid") || !strcmp(o, "nodev"))
			continue;
		else if (!strncmp(o, "size=", 5) && tmpfs_size("--tmpfs", spec, o + 5, &t.size, err) < 0)
			return -1;
		else if (!strncmp(o, "mode=", 5) && tmpfs_mode("--tmpfs", spec, o + 5, &t.mode, err) < 0)
			return -1;
		else if (strncmp(o, "size=", 5) && strncmp(o, "mode=", 5))
			return gerr_set(err, 0,
					"--tmpfs '%s': option '%s' is not one gpurun takes (ro, rw, exec, "
					"noexec, size=, mode=; nosuid and nodev always)",
					spec, o);
	}
	add_tmpfs(p, copy, &t);
	return 0;
}

/* docker's --mount: comma-separated KEY=VALUE (readonly alone). */
static int layout_mount(struct plan *p, const char *spec, struct gerr *err)
{
	_cleanup_free_ char *copy = xstrdup(spec);
	const char *type = NULL, *src = NULL, *dst = NULL;
	int ro = 0, tmpfs_opt = 0;
	struct tmpfs_spec t = {OPF_NOEXEC | OPF_NOSUID | OPF_NODEV, 0, 01777};
	char *save = NULL;
	for (char *f = strtok_r(copy, ",", &save); f; f = strtok_r(NULL, ",", &save)) {
		char *v = strchr(f, '=');
		if (v)
			*v++ = '\0';
		if (!strcmp(f, "readonly") || !strcmp(f, "ro")) {
			if (v && strcmp(v, "true") && strcmp(v, "1") && strcmp(v, "false") && strcmp(v, "0"))
				return gerr_set(err, 0, "--mount '%s': %s=%s: expected true or false", spec, f, v);
			ro = !v || !strcmp(v, "true") || !strcmp(v, "1");
		} else if (!v) {
			return gerr_set(err, 0, "--mount '%s': '%s' needs a value (KEY=VALUE)", spec, f);
		} else if (!strcmp(f, "type")) {
			type = v;
		} else if (!strcmp(f, "source") || !strcmp(f, "src")) {
			src = v;
		} else if (!strcmp(f, "target") || !strcmp(f, "destination") || !strcmp(f, "dst")) {
			dst = v;
		} else if (!strcmp(f, "tmpfs-size")) {
			if (tmpfs_size("--mount", spec, v, &t.size, err) < 0)
				return -1;
			tmpfs_opt = 1;
		} else if (!strcmp(f, "tmpfs-mode")) {
			if (tmpfs_mode("--mount", spec, v, &t.mode, err) < 0)
				return -1;
			tmpfs_opt = 1;
		} else if (!strcmp(f, "bind-propagation")) {
			return gerr_set(err, 0,
					"--mount '%s': bind-propagation is not supported: every mount of "
					"the container is private to it (nothing propagates to or from the host)",
					spec);
		} else if (strcmp(f, "consistency")) { /* consistency: docker ignores it on Linux too */
			return gerr_set(err, 0,
					"--mount '%s': unknown key '%s' (gpurun takes type, source, "
					"target, readonly, tmpfs-size, tmpfs-mode)",
					spec, f);
		}
	}
	if (!type || (strcmp(type, "bind") && strcmp(type, "tmpfs")))
		return gerr_set(err, 0,
				"--mount '%s': type must be bind or tmpfs (gpurun has no named "
				"volumes: bind a host directory)",
				spec);
	if (!dst)
		return gerr_set(err, 0, "--mount '%s': target is missing", spec);
	if (check_dst("--mount", spec, dst, err) < 0)
		return -1;
	if (!strcmp(type, "tmpfs")) {
		if (src)
			return gerr_set(err, 0, "--mount '%s': a tmpfs has no source", spec);
		t.flags |= ro ? OPF_RO : 0;
		add_tmpfs(p, dst, &t);
		return 0;
	}
	if (tmpfs_opt)
		return gerr_set(err, 0, "--mount '%s': tmpfs-size and tmpfs-mode are for type=tmpfs", spec);
	if (!src || !*src)
		return gerr_set(err, 0, "--mount '%s': source is missing", spec);
	return add_bind(p, src, dst, ro, err);
}

/* docker's permissions of a device: a cgroup rule gpurun has no cgroup
 * for.  Read and write are what the node's own mode then allows; a rule
 * that would take one of them away cannot be kept, so it is refused. */
static int device_perms_ok(const char *s)
{
	return *s && strspn(s, "rwm") == strlen(s) && strchr(s, 'r') && strchr(s, 'w');
}

static int is_device_perms(const char *s)
{
	return *s && strspn(s, "rwm") == strlen(s);
}

int layout_device(struct plan *p, const char *spec, struct gerr *err)
{
	_cleanup_free_ char *copy = xstrdup(spec);
	char *src = copy, *dst = strchr(copy, ':'), *perms = NULL;
	if (dst) {
		*dst++ = '\0';
		perms = strchr(dst, ':');
		if (perms)
			*perms++ = '\0';
		else if (is_device_perms(dst)) /* /dev/X:rwm */
			perms = dst, dst = NULL;
	}
	if (!dst)
		dst = src;
	if (perms && !device_perms_ok(perms))
		return gerr_set(err, 0,
				"--device '%s': permissions '%s': gpurun has no device cgroup to narrow access with; "
				"the node opens as its own mode allows (use rw or rwm, or leave them out)",
				spec, perms);
	if (check_dst("--device", spec, dst, err) < 0)
		return -1;
	_cleanup_free_ char *abs = realpath(src, NULL);
	struct stat st;
	if (!abs || stat(abs, &st) < 0)
		return gerr_set(err, errno, "--device %s", src);
	if (!S_ISCHR(st.st_mode))
		return gerr_set(err, 0,
				"--device %s: not a character device (gpurun binds character devices only, each named)",
				src);
	/* Read-only: the node is the host's own inode, and a chmod or chown
	 * from inside would change it on the host.  Opening it to write is
	 * still what its mode allows (a mount's ro does not apply to devices). */
	struct op *op = plan_bind(p, abs, dst, OPF_DEVICE | OPF_RO | OPF_NOSUID | OPF_NOEXEC | OPF_REPLACE);
	op->rdev = st.st_rdev;
	plan_why(op, "--device %s", src);
	return 0;
}

int layout_mounts(struct plan *p, const struct strv *specs, struct gerr *err)
{
	for (size_t i = 0; i < specs->n; i++) {
		const char *spec = specs->v[i] + 1;
		int r = specs->v[i][0] == 'v'   ? layout_volume(p, spec, err)
			: specs->v[i][0] == 't' ? layout_tmpfs(p, spec, err)
						: layout_mount(p, spec, err);
		if (r < 0)
			return -1;
	}
	return 0;
}

void layout_finish(struct plan *p, const struct run_config *cfg, const char *ldconfig_dirs, const char *compat_driver)
{
	p->section = SEC_MOUNTS;
	if (cfg->workdir)
		plan_mkdir(p, cfg->workdir, 0755);
	p->section = SEC_PIVOT;
	plan_add(p, OP_PIVOT, 0, NULL, NULL);
	if (ldconfig_dirs) {
		struct op *op = plan_add(p, OP_LDCONFIG, 0, ldconfig_dirs, NULL);
		op->data = compat_driver ? xstrdup(compat_driver) : NULL;
		if (compat_driver)
			plan_why(op,
				 "the image's own ldconfig, inside, no capabilities to escape with; " CUDA_COMPAT_VAR
				 "=" CUDA_COMPAT_DIR " (first: CUDA forward compatibility) "
				 "when its libcuda.so.<M>.* has M above the driver's %s, else empty",
				 compat_driver);
		else
			plan_why(op, "the image's own ldconfig, inside, no capabilities to escape with");
	}
	if (cfg->read_only)
		plan_why(plan_add(p, OP_REMOUNT, OPF_RO, NULL, "/"), "--read-only, after ldconfig");
}
