/* tests/unit/layout_test.c — the baseline layout of a container, checked as
 * ops (ns/layout.c), not as printed text; the launch's steps around them
 * (ns/steps.c), each with the process that takes it, in the order taken;
 * and the shared description of the ops (base/plan/plan.c) that the
 * executor and the printer both read.
 *
 *   layout_test --list     the names of the cases
 *   layout_test CASE       run one case: exit 0, or 1 with what was wrong
 *
 * tests/unit.bats runs every case; `make unit` builds this under ASan and
 * UBSan against the same objects as the fuzz targets. */
#include <errno.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "../../ns/ns.h"
#include "../../ns/steps.h"
#include "unit.h"

static const char *kind_name(enum op_kind k)
{
	static const char *const names[] = {
		[OP_ROOTFS] = "rootfs",     [OP_BIND] = "bind",       [OP_TMPFS] = "tmpfs",
		[OP_PROC] = "proc",         [OP_PROC_RO] = "proc_ro", [OP_SYSFS] = "sysfs",
		[OP_DEVPTS] = "devpts",     [OP_MKDIR] = "mkdir",     [OP_SYMLINK] = "symlink",
		[OP_FILE] = "file",         [OP_REMOUNT] = "remount", [OP_HOSTNAME] = "hostname",
		[OP_LOOPBACK] = "loopback", [OP_PIVOT] = "pivot",     [OP_LDCONFIG] = "ldconfig",
		[OP_LAUNCH] = "launch",
	};
	return k < OP_KIND_COUNT ? names[k] : "?";
}

/* The first op of kind with this dst (NULL: any dst), or NULL. */
static const struct op *find(const struct plan *p, enum op_kind kind, const char *dst)
{
	for (size_t i = 0; i < p->n; i++)
		if (p->v[i].kind == kind && (!dst || (p->v[i].dst && !strcmp(p->v[i].dst, dst))))
			return &p->v[i];
	return NULL;
}

static long index_of(const struct plan *p, const struct op *op)
{
	return op ? (long)(op - p->v) : -1;
}

static size_t count(const struct plan *p, enum op_kind kind)
{
	size_t n = 0;
	for (size_t i = 0; i < p->n; i++)
		n += p->v[i].kind == kind;
	return n;
}

static struct run_config config(const char *image, int dir, int unprivileged)
{
	struct run_config c = {.image = image,
			       .image_fd = -1,
			       .image_is_dir = dir,
			       .unprivileged = unprivileged,
			       .keep_owner = !unprivileged,
			       .host_uid = unprivileged ? 1000 : 0};
	return c;
}

static void expect_flags(const struct op *op, unsigned want, const char *what)
{
	CHECK(op != NULL, "%s: no such op", what);
	if (op)
		CHECK(op->flags == want, "%s: flags %#x, want %#x", what, op->flags, want);
}

/* ---- cases ------------------------------------------------------------------ */

static void case_archive_root(void)
{
	struct plan p = {0};
	struct run_config c = config("img.tar", 0, 0);
	layout_base(&p, &c);
	CHECK(p.n > 0 && p.v[0].kind == OP_ROOTFS, "the root comes first");
	const struct op *root = find(&p, OP_ROOTFS, "/");
	expect_flags(root, OPF_NODEV | OPF_NOSUID | OPF_KEEP_OWNER, "root of an archive, as root");
	CHECK(root && !strcmp(root->src, "img.tar"), "the root's source is the image");
	CHECK(root && root->data == NULL, "an archive root has no overlay data");
	expect_flags(find(&p, OP_PROC, "/proc"), OPF_NOSUID | OPF_NODEV | OPF_NOEXEC, "/proc");
	expect_flags(find(&p, OP_BIND, "/sys"),
		     OPF_DIR | OPF_REC | OPF_TOP | OPF_RO | OPF_NOSUID | OPF_NODEV | OPF_NOEXEC,
		     "/sys is the host's, read-only");
	/* The mounts below it too, in the hardening block, after the standard mounts. */
	const struct op *below = find(&p, OP_REMOUNT, "/sys");
	expect_flags(below, OPF_BELOW | OPF_RO | OPF_NOSUID | OPF_NODEV | OPF_NOEXEC, "the mounts below /sys");
	CHECK(below && below->section == SEC_HARDEN && index_of(&p, find(&p, OP_BIND, "/sys")) < index_of(&p, below),
	      "the mounts below /sys turn read-only in the hardening block");
	const struct op *proc_ro = find(&p, OP_PROC_RO, "/proc");
	CHECK(proc_ro && proc_ro->section == SEC_HARDEN, "docker's read-only /proc paths are hardening");
	CHECK(!find(&p, OP_SYSFS, NULL), "no fresh sysfs without a new network namespace");
	CHECK(!find(&p, OP_HOSTNAME, NULL) && !find(&p, OP_LOOPBACK, NULL), "no UTS or net ops by default");
	const struct op *tmp = find(&p, OP_TMPFS, "/tmp"), *run = find(&p, OP_TMPFS, "/run");
	CHECK(tmp && !strcmp(tmp->src, "mode=1777"), "/tmp is a sticky tmpfs");
	CHECK(run && !strcmp(run->src, "mode=0755"), "/run is a tmpfs");
	static const char *const netfiles[] = {"/etc/resolv.conf", "/etc/hosts"};
	for (size_t i = 0; i < 2; i++) {
		const struct op *b = find(&p, OP_BIND, netfiles[i]);
		expect_flags(b, OPF_OPTIONAL | OPF_REPLACE | OPF_RO | OPF_NOSUID | OPF_NODEV | OPF_NOEXEC, netfiles[i]);
		CHECK(b && !strcmp(b->src, netfiles[i]), "%s comes from the host's", netfiles[i]);
	}
	plan_free(&p);
}

static void case_archive_user(void)
{
	struct plan p = {0};
	struct run_config c = config("img.tar.gz", 0, 1);
	layout_base(&p, &c);
	expect_flags(find(&p, OP_ROOTFS, "/"), OPF_NODEV | OPF_NOSUID,
		     "unprivileged: owners and setuid bits are not kept");
	plan_free(&p);
}

static void case_directory_root(void)
{
	struct plan p = {0};
	struct run_config c = config("/srv/img", 1, 0);
	layout_base(&p, &c);
	const struct op *root = find(&p, OP_ROOTFS, "/");
	expect_flags(root, OPF_DIR | OPF_NODEV | OPF_NOSUID, "root of a directory");
	CHECK(root && root->data && !strcmp(root->data, "lowerdir=/tmp/lower,upperdir=/tmp/upper,workdir=/tmp/work"),
	      "overlay data as root: %s", root && root->data ? root->data : "(none)");
	plan_free(&p);
}

static void case_directory_user(void)
{
	struct plan p = {0};
	struct run_config c = config("/srv/img", 1, 1);
	layout_base(&p, &c);
	const struct op *root = find(&p, OP_ROOTFS, "/");
	CHECK(root && root->data && strstr(root->data, ",userxattr"),
	      "an unprivileged overlay keeps its metadata in user.* xattrs: %s",
	      root && root->data ? root->data : "(none)");
	struct sbuf line = {0};
	op_describe(&(struct plan_view){0}, root, &line);
	CHECK(strstr(line.s, "userxattr") != NULL, "the printed overlay shows userxattr: %s", line.s);
	sbuf_free(&line);
	plan_free(&p);
}

static void case_dev(void)
{
	static const struct {
		const char *path;
		unsigned maj, min;
	} nodes[] = {{"/dev/null", 1, 3},   {"/dev/zero", 1, 5},    {"/dev/full", 1, 7},
		     {"/dev/random", 1, 8}, {"/dev/urandom", 1, 9}, {"/dev/tty", 5, 0}};
	struct plan p = {0};
	struct run_config c = config("img.tar", 0, 0);
	layout_base(&p, &c);
	const struct op *dev = find(&p, OP_TMPFS, "/dev");
	CHECK(dev && dev->flags == (OPF_NOSUID | OPF_NOEXEC) && !strcmp(dev->src, "mode=0755"),
	      "/dev is a private tmpfs, nosuid,noexec");
	for (size_t i = 0; i < sizeof nodes / sizeof nodes[0]; i++) {
		const struct op *b = find(&p, OP_BIND, nodes[i].path);
		expect_flags(b, OPF_DEVICE | OPF_NOSUID | OPF_NOEXEC | OPF_REPLACE, nodes[i].path);
		CHECK(b && b->rdev == makedev(nodes[i].maj, nodes[i].min), "%s is checked as %u:%u", nodes[i].path,
		      nodes[i].maj, nodes[i].min);
		CHECK(index_of(&p, b) > index_of(&p, dev), "%s is bound after the /dev tmpfs", nodes[i].path);
	}
	size_t masks = 0;
	for (size_t i = 0; i < p.n; i++)
		masks += p.v[i].kind == OP_BIND && strncmp(p.v[i].dst, "/dev/", 5) != 0 &&
			 !strcmp(p.v[i].src, "/dev/null");
	CHECK(count(&p, OP_BIND) == 6 + 1 + 2 + masks,
	      "6 device nodes, /sys, 2 network files and %zu masks are bound, not %zu", masks, count(&p, OP_BIND));
	const struct op *ptmx = find(&p, OP_SYMLINK, "/dev/ptmx");
	CHECK(ptmx && !strcmp(ptmx->src, "pts/ptmx"), "/dev/ptmx -> pts/ptmx");
	const struct op *fd = find(&p, OP_SYMLINK, "/dev/fd");
	CHECK(fd && !strcmp(fd->src, "/proc/self/fd"), "/dev/fd -> /proc/self/fd");
	const struct op *pts = find(&p, OP_DEVPTS, "/dev/pts");
	expect_flags(pts, OPF_NOSUID | OPF_NOEXEC, "/dev/pts");
	const struct op *shm = find(&p, OP_TMPFS, "/dev/shm");
	CHECK(shm && !strcmp(shm->src, "mode=1777") && !strstr(shm->src, "size="), "/dev/shm: sticky, no size cap");
	plan_free(&p);
}

static void case_net_none_hostname(void)
{
	struct plan p = {0};
	struct run_config c = config("img.tar", 0, 0);
	c.hostname = "box";
	c.new_net = 1;
	layout_base(&p, &c);
	const struct op *h = find(&p, OP_HOSTNAME, NULL);
	CHECK(h && !strcmp(h->src, "box"), "--hostname sets the host name");
	CHECK(find(&p, OP_LOOPBACK, NULL) != NULL, "--net none brings lo up");
	expect_flags(find(&p, OP_SYSFS, "/sys"), OPF_RO | OPF_NOSUID | OPF_NODEV | OPF_NOEXEC,
		     "a fresh read-only sysfs for the new net namespace");
	CHECK(!find(&p, OP_BIND, "/sys"), "the host's /sys is not bound");
	CHECK(!find(&p, OP_BIND, "/etc/resolv.conf") && !find(&p, OP_BIND, "/etc/hosts"),
	      "no host network files without the host network");
	plan_free(&p);
}

static void case_volumes(void)
{
	char dir[] = "/tmp/layout-test.XXXXXX";
	CHECK(mkdtemp(dir) != NULL, "mkdtemp: %s", strerror(errno));
	char file[sizeof dir + 8];
	snprintf(file, sizeof file, "%s/f", dir);
	FILE *f = fopen(file, "w");
	CHECK(f != NULL, "create %s", file);
	if (f)
		fclose(f);

	struct plan p = {0};
	struct gerr err = {0};
	char spec[256];
	snprintf(spec, sizeof spec, "%s:/data:ro", dir);
	CHECK(layout_volume(&p, spec, &err) == 0, "%s: %s", spec, err.msg);
	expect_flags(find(&p, OP_BIND, "/data"), OPF_REC | OPF_NOSUID | OPF_NODEV | OPF_RO | OPF_DIR,
		     "a read-only directory volume");
	snprintf(spec, sizeof spec, "%s:/etc/f", file);
	CHECK(layout_volume(&p, spec, &err) == 0, "%s: %s", spec, err.msg);
	expect_flags(find(&p, OP_BIND, "/etc/f"), OPF_REC | OPF_NOSUID | OPF_NODEV, "a writable file volume");
	struct sbuf line = {0};
	op_describe(&(struct plan_view){0}, find(&p, OP_BIND, "/etc/f"), &line);
	CHECK(!strncmp(line.s, "rbind_file nosuid,nodev ", 24) && strstr(line.s, " etc/f"),
	      "a file volume is a file created where missing (rbind_file, ns/plan.sh): %s", line.s);
	sbuf_free(&line);

	static const struct {
		const char *spec, *msg;
	} bad[] = {
		{"/x", "--volume '/x': expected SRC:DST[:ro]"},
		{":/x", "--volume ':/x': expected SRC:DST[:ro]"},
		{"/tmp:/x:rx", "--volume '/tmp:/x:rx': unknown mode 'rx' (expected ro or rw; z, Z, cached, delegated "
			       "and consistent are accepted and change nothing here)"},
		{"/tmp:/x:ro,rw", "--volume '/tmp:/x:ro,rw': ro and rw given more than once"},
		{"myvol:/x", "volume source 'myvol': no such path here, and gpurun has no named volumes: it binds host "
			     "paths only (-v /path/to/dir:/x, or ./myvol:/x for one here)"},
		{"/tmp:x", "--volume '/tmp:x': destination must be an absolute path"},
		{"/tmp://", "--volume '/tmp://': cannot mount over the container's root"},
		{"/nonexistent-gpurun:/x", "volume source /nonexistent-gpurun: No such file or directory"},
	};
	size_t before = p.n;
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		gerr_clear(&err);
		CHECK(layout_volume(&p, bad[i].spec, &err) == -1, "%s is refused", bad[i].spec);
		CHECK(!strcmp(err.msg, bad[i].msg), "%s: message '%s', want '%s'", bad[i].spec, err.msg, bad[i].msg);
	}
	CHECK(err.errnum == ENOENT, "a missing source carries ENOENT in the error, not %d", err.errnum);
	CHECK(p.n == before, "a refused volume adds no op");
	plan_free(&p);
	unlink(file);
	rmdir(dir);
}

static void case_finish(void)
{
	struct plan p = {0};
	struct run_config c = config("img.tar", 0, 0);
	c.workdir = "/work";
	c.read_only = 1;
	layout_base(&p, &c);
	layout_finish(&p, &c, "$LIBDIR:/usr/lib", NULL);
	const struct op *wd = find(&p, OP_MKDIR, "/work"), *pivot = find(&p, OP_PIVOT, NULL),
			*ldc = find(&p, OP_LDCONFIG, NULL), *ro = find(&p, OP_REMOUNT, "/");
	CHECK(wd && wd->mode == 0755, "the workdir is created");
	CHECK(index_of(&p, wd) < index_of(&p, pivot), "the workdir is made before the pivot");
	CHECK(ldc && !strcmp(ldc->src, "$LIBDIR:/usr/lib"), "ldconfig gets the injected directories");
	CHECK(index_of(&p, pivot) < index_of(&p, ldc), "ldconfig runs after the pivot (inside)");
	expect_flags(ro, OPF_RO, "--read-only remounts the root");
	CHECK(index_of(&p, ldc) < index_of(&p, ro), "the root turns read-only after ldconfig");
	CHECK(index_of(&p, ro) == (long)p.n - 1, "the read-only remount is the last op");
	plan_free(&p);

	struct plan q = {0};
	struct run_config d = config("img.tar", 0, 0);
	layout_base(&q, &d);
	layout_finish(&q, &d, NULL, NULL);
	CHECK(!find(&q, OP_LDCONFIG, NULL) && !find(&q, OP_REMOUNT, "/") && !find(&q, OP_MKDIR, NULL),
	      "no ldconfig, remount or workdir unless asked for");
	CHECK(q.v[q.n - 1].kind == OP_PIVOT, "the pivot ends a plain plan");
	plan_free(&q);
}

/* The shared description: the data each kind mounts with is what the
 * printer shows, for every kind that mounts a fresh file system. */
static void case_mount_data_printed(void)
{
	struct plan p = {0};
	struct run_config c = config("/srv/img", 1, 1);
	c.new_net = 1;
	layout_base(&p, &c);
	size_t fresh = 0;
	for (size_t i = 0; i < p.n; i++) {
		const struct op *op = &p.v[i];
		struct sbuf data = {0}, line = {0};
		op_mount_data(op, &data);
		op_describe(&(struct plan_view){0}, op, &line);
		if (op_kinds[op->kind].fstype) {
			fresh++;
			char want[256];
			snprintf(want, sizeof want, "mount -t %s ", op_kinds[op->kind].fstype);
			CHECK(strstr(line.s, want) != NULL, "%s %s: printed '%s'", kind_name(op->kind), op->dst,
			      line.s);
		}
		if (data.s) {
			/* The plan's scratch is "$S", a fresh directory, not /tmp. */
			struct sbuf want = {0};
			for (const char *s = data.s; *s; s++) {
				if (!strncmp(s, PLAN_SCRATCH "/", strlen(PLAN_SCRATCH "/"))) {
					sbuf_puts(&want, "$S/");
					s += strlen(PLAN_SCRATCH);
				} else {
					sbuf_add(&want, s, 1);
				}
			}
			CHECK(strstr(line.s, want.s) != NULL, "%s %s: data '%s' not printed in '%s'",
			      kind_name(op->kind), op->dst, want.s, line.s);
			sbuf_free(&want);
		}
		for (size_t f = 0; f < sizeof op_flags / sizeof op_flags[0]; f++) {
			if (!(op->flags & op_flags[f].flag) || op->kind == OP_ROOTFS)
				continue;
			CHECK(strstr(line.s, op_flags[f].name) != NULL, "%s %s: flag %s not printed in '%s'",
			      kind_name(op->kind), op->dst, op_flags[f].name, line.s);
		}
		sbuf_free(&data);
		sbuf_free(&line);
	}
	CHECK(fresh >= 6, "proc, /dev, devpts, /dev/shm, sysfs, /tmp, /run are fresh mounts (%zu)", fresh);
	struct sbuf d = {0};
	op_mount_data(find(&p, OP_DEVPTS, "/dev/pts"), &d);
	CHECK(d.s && !strcmp(d.s, "newinstance,ptmxmode=0666,mode=0620"), "devpts data: %s", d.s ? d.s : "(none)");
	sbuf_free(&d);
	plan_free(&p);
}

static void case_proc_readonly_printed(void)
{
	struct plan p = {0};
	struct run_config c = config("img.tar", 0, 0);
	layout_base(&p, &c);
	struct sbuf line = {0};
	op_describe(&(struct plan_view){0}, find(&p, OP_PROC_RO, "/proc"), &line);
	/* One line binds each onto itself (rbind_self, ns/plan.sh). */
	const char *self = line.s && !strncmp(line.s, "rbind_self ro,nosuid,nodev,noexec ", 34) ? line.s : NULL;
	CHECK(self != NULL, "no rbind_self line in '%s'", line.s ? line.s : "");
	for (size_t i = 0; self && i < proc_nreadonly; i++) {
		char want[128];
		snprintf(want, sizeof want, " proc/%s", proc_readonly_paths[i]);
		size_t n = strlen(want);
		const char *at = strstr(self, want);
		while (at && at[n] && at[n] != ' ' && at[n] != '\n')
			at = strstr(at + 1, want);
		/* None for what this kernel lacks. */
		CHECK(!at == !proc_path_present(proc_readonly_paths[i]), "'%s' %s '%s'", want, at ? "in" : "not in",
		      line.s);
	}
	sbuf_free(&line);
	plan_free(&p);
}

static void case_libdir(void)
{
	char buf[256];
	CHECK(!strcmp(plan_expand_libdir("$LIBDIR/libcuda.so.1", plan_libdir_for_machine("x86_64", 1), buf, sizeof buf),
		      "/usr/lib/x86_64-linux-gnu/libcuda.so.1"),
	      "Debian images: %s", buf);
	CHECK(!strcmp(plan_expand_libdir("$LIBDIR/libcuda.so.1", plan_libdir_for(0), buf, sizeof buf),
		      "/usr/lib64/libcuda.so.1"),
	      "other images: %s", buf);
	const char *plain = "/usr/bin/nvidia-smi";
	CHECK(plan_expand_libdir(plain, plan_libdir_for(1), buf, sizeof buf) == plain, "no $LIBDIR: unchanged");
	CHECK(op_mount_attrs(OPF_MOUNT_MASK | OPF_REC | OPF_DIR) ==
		      (op_flags[0].attr | op_flags[1].attr | op_flags[2].attr | op_flags[3].attr),
	      "only the four per-mount flags become mount attributes");
}

/* compat32's directory: nvidia-container-cli's rule, and $LIBDIR never
 * swallows $LIBDIR32. */
static void case_libdir32(void)
{
	char buf[256];
	const char *deb = plan_libdir32_debian(HOST_MACHINE);
	if (deb)
		CHECK(!strcmp(plan_libdir32_for(1, 0, 0), deb), "Debian images: %s", plan_libdir32_for(1, 0, 0));
	CHECK(!strcmp(plan_libdir32_debian("x86_64"), "/usr/lib/i386-linux-gnu"), "x86_64's 32-bit kin");
	CHECK(!strcmp(plan_libdir32_for(0, 1, 0), "/usr/lib32"), "an image with /usr/lib32");
	CHECK(!strcmp(plan_libdir32_for(0, 0, 0), "/usr/lib"), "an image without: /usr/lib");
	CHECK(!strcmp(plan_libdir32_for(0, 0, 1), "/usr/lib32"), "/usr/lib is /usr/lib64: /usr/lib32");
	const char *p32 = "$LIBDIR32/libcuda.so.1";
	CHECK(plan_expand_libdir(p32, "/usr/lib64", buf, sizeof buf) == p32, "$LIBDIR leaves $LIBDIR32 alone");
	CHECK(!strcmp(plan_expand_libdir32(p32, "/usr/lib32", buf, sizeof buf), "/usr/lib32/libcuda.so.1"),
	      "$LIBDIR32 expands: %s", buf);
	struct plan p = {0};
	struct sbuf line = {0};
	op_describe(&(struct plan_view){0}, plan_symlink(&p, "libcuda.so.550", p32), &line);
	CHECK(!strcmp(line.s, "link_in \".$LIBDIR32\" libcuda.so.550 libcuda.so.1"), "printed: %s", line.s);
	sbuf_free(&line);
	plan_free(&p);
}

/* A run of the driver's library binds is one step: its words go on over
 * lines of at most 150 characters after " \\" and a tab, the lead's
 * comment on the last; a run that fits stays on one line. */
static void case_group_lines(void)
{
	struct plan p = {0};
	struct plan_view v = {.plan = &p, .driver_root = "/drv"};
	for (int i = 0; i < 16; i++) {
		char src[128], dst[128];
		snprintf(src, sizeof src, "/drv/usr/lib/x86_64-linux-gnu/libnvidia-part%02d.so.550.54.14", i);
		snprintf(dst, sizeof dst, "$LIBDIR/libnvidia-part%02d.so.550.54.14", i);
		struct op *op = plan_bind(&p, src, dst, OPF_RO | OPF_NOSUID | OPF_NODEV | OPF_REPLACE);
		if (i == 0)
			plan_why(op, "the driver's libraries");
	}
	struct sbuf b = {0};
	CHECK(op_describe_step(&v, 0, &b) == 16, "one step for all 16 binds");
	const char *head = "bind_files ro,nosuid,nodev \"$D\"/usr/lib/x86_64-linux-gnu \".$LIBDIR\" libnvidia-part00";
	CHECK(!strncmp(b.s, head, strlen(head)), "its helper: %s", b.s);
	const char *why = "   # the driver's libraries";
	size_t lines = 0, words = 0, wl = strlen(why);
	for (const char *l = b.s; *l;) {
		size_t n = strcspn(l, "\n");
		int last = l[n] == '\0';
		CHECK(n <= 150 + (last ? wl : 0), "line %zu: %zu characters", lines, n);
		CHECK(lines == 0 || *l == '\t', "line %zu goes on after a tab", lines);
		if (last)
			CHECK(n >= wl && !strncmp(l + n - wl, why, wl), "the last line ends with the comment");
		else
			CHECK(n >= 2 && !strncmp(l + n - 2, " \\", 2), "line %zu goes on", lines);
		for (const char *w = l; (w = strstr(w, "libnvidia-part")) && w < l + n; w++)
			words++;
		lines++;
		l += n + !last;
	}
	CHECK(lines > 1 && words == 16, "%zu lines, %zu libraries", lines, words);
	plan_free(&p);
	/* Two fit on one line: no continuation. */
	struct plan q = {0};
	v.plan = &q;
	plan_why(plan_bind(&q, "/drv/usr/bin/nvidia-smi", "/usr/bin/nvidia-smi", OPF_RO | OPF_REPLACE), "tools");
	plan_bind(&q, "/drv/usr/bin/nvidia-debugdump", "/usr/bin/nvidia-debugdump", OPF_RO | OPF_REPLACE);
	sbuf_reset(&b);
	CHECK(op_describe_step(&v, 0, &b) == 2, "one step for both");
	CHECK(!strcmp(b.s, "bind_files ro \"$D\"/usr/bin usr/bin nvidia-smi nvidia-debugdump   # tools"),
	      "one line: %s", b.s);
	sbuf_free(&b);
	plan_free(&q);
}

/* ---- the launch's steps (ns/steps.c) ------------------------------------------- */

static const char *step_name(enum step_kind k)
{
	static const char *const names[] = {
		[STEP_NAMESPACES] = "namespaces",
		[STEP_IDMAP] = "idmap",
		[STEP_RLIMITS] = "rlimits",
		[STEP_ENV] = "env",
		[STEP_WORKDIR] = "workdir",
		[STEP_TERMINAL] = "terminal",
		[STEP_USERNS] = "userns",
		[STEP_CAPS] = "caps",
		[STEP_NO_NEW_PRIVS] = "nnp",
		[STEP_FDS] = "fds",
		[STEP_SECCOMP] = "seccomp",
		[STEP_IDS] = "ids",
		[STEP_EXEC] = "exec",
	};
	return k < STEP_KIND_COUNT ? names[k] : "?";
}

static const char actor_letter[] = {[ACT_MONITOR] = 'M',
				    [ACT_CONTAINER] = 'P',
				    [ACT_IDMAP_HELPER] = 'I',
				    [ACT_LDCONFIG_HELPER] = 'L',
				    [ACT_COMMAND] = 'C'};

/* The launch's steps in the plan as "actor:kind" words ('-' before the
 * go-ahead, '+' after it for the command's), e.g. "M:namespaces
 * C-:rlimits C+:exec". */
static void steps_text(const struct plan *p, struct sbuf *b)
{
	for (size_t i = 0; i < p->n; i++) {
		const struct op *s = &p->v[i];
		if (s->kind != OP_LAUNCH)
			continue;
		sbuf_printf(b, "%s%c%s:%s", b->len ? " " : "", actor_letter[s->actor],
			    s->actor != ACT_COMMAND ? ""
			    : s->after_go           ? "+"
						    : "-",
			    step_name(s->step));
	}
}

/* The whole list by who takes each entry, a run of the same actor shown
 * once: "M P L C- C+". */
static void actors_text(const struct plan *p, struct sbuf *b)
{
	char last[3] = "";
	for (size_t i = 0; i < p->n; i++) {
		const struct op *s = &p->v[i];
		char w[3] = {actor_letter[s->actor], s->actor != ACT_COMMAND ? '\0' : s->after_go ? '+' : '-', '\0'};
		if (strcmp(w, last))
			sbuf_printf(b, "%s%s", b->len ? " " : "", w);
		memcpy(last, w, sizeof w);
	}
}

/* A whole launch's plan: every op and every step has the process that
 * takes it; the mounts are P1's, the image's ldconfig its helper's. */
static void case_actors(void)
{
	struct plan p = {0};
	struct run_config c = config("img.tar", 0, 1);
	char *argv[] = {"true", NULL}, *env[] = {"PATH=/bin", NULL};
	c.plan = &p;
	c.argv = argv;
	c.env = env;
	layout_base(&p, &c);
	layout_finish(&p, &c, "$LIBDIR", NULL);
	ns_plan_launch(&c);
	for (size_t i = 0; i < p.n; i++)
		CHECK(p.v[i].kind == OP_LAUNCH ||
			      p.v[i].actor == (p.v[i].kind == OP_LDCONFIG ? ACT_LDCONFIG_HELPER : ACT_CONTAINER),
		      "op %zu (%s): actor %d", i, kind_name(p.v[i].kind), (int)p.v[i].actor);
	CHECK(find(&p, OP_LDCONFIG, NULL) != NULL, "the plan has ldconfig");
	struct sbuf b = {0};
	/* One list for the whole launch, in the order it is taken: P0's
	 * namespaces and id maps, P1's mounts, ldconfig's helper, then the
	 * command's steps before and after the go-ahead. */
	actors_text(&p, &b);
	CHECK(!strcmp(b.s, "M P L C- C+"), "the launch's list by actor: %s", b.s);
	sbuf_reset(&b);
	steps_text(&p, &b);
	const char *want = "M:namespaces M:idmap C-:rlimits C-:caps C-:nnp C-:fds C-:seccomp C+:env C+:workdir "
			   "C+:terminal C+:ids C+:exec";
	CHECK(!strcmp(b.s, want), "unprivileged launch's steps: %s", b.s);
	CHECK(p.launch->clone_flags & CLONE_NEWUSER, "a user namespace");
	sbuf_reset(&b);
	/* Root, ranges of subordinate ids: newuidmap writes the maps. */
	struct plan q = {0};
	struct run_config r = config("img.tar", 0, 0);
	r.plan = &q;
	r.argv = argv;
	ns_plan_launch(&r);
	steps_text(&q, &b);
	CHECK(!strncmp(b.s, "M:namespaces C-:rlimits", 23) && !(q.launch->clone_flags & CLONE_NEWUSER),
	      "as root: no user namespace, no maps: %s", b.s);
	sbuf_reset(&b);
	struct plan s = {0};
	struct run_config u = config("img.tar", 0, 1);
	u.subids.uid_count = u.subids.gid_count = 65536;
	u.plan = &s;
	u.argv = argv;
	ns_plan_launch(&u);
	steps_text(&s, &b);
	CHECK(!strncmp(b.s, "M:namespaces I:idmap ", 21), "ranges: newuidmap's maps: %s", b.s);
	sbuf_free(&b);
	launch_free(p.launch);
	launch_free(q.launch);
	launch_free(s.launch);
	free(p.launch);
	free(q.launch);
	free(s.launch);
	plan_free(&p);
	plan_free(&q);
	plan_free(&s);
}

/* One id mapped with --user: the command sheds its privileges only after
 * the go-ahead, its nested user namespace first, and after its working
 * directory and terminal, as it takes them. */
static void case_steps_late(void)
{
	struct plan p = {0};
	struct run_config c = config("img.tar", 0, 1);
	char *argv[] = {"id", NULL};
	c.fake_ids = 1;
	c.user_spec = "1000";
	c.plan = &p;
	c.argv = argv;
	ns_plan_launch(&c);
	struct sbuf b = {0};
	steps_text(&p, &b);
	const char *want = "M:namespaces M:idmap C-:rlimits C+:env C+:workdir C+:terminal C+:userns C+:caps C+:nnp "
			   "C+:fds C+:seccomp C+:ids C+:exec";
	CHECK(!strcmp(b.s, want), "--user with one id mapped: %s", b.s);
	sbuf_free(&b);
	launch_free(p.launch);
	free(p.launch);
	plan_free(&p);
}

/* HOME is decided once, with --user's credentials: the image's home for
 * the user, or / (/root for root), and nothing when -e gives one. */
static void case_home_once(void)
{
	struct plan p = {0};
	struct run_config c = config("img.tar", 0, 0);
	char *argv[] = {"env", NULL}, *env[] = {"PATH=/bin", NULL}, *env_home[] = {"HOME=/mine", NULL};
	c.plan = &p;
	c.argv = argv;
	c.env = env;
	ns_plan_launch(&c);
	struct ns_user u = {.uid = 1000, .gid = 1000};
	launch_set_user(p.launch, &c, &u, "/home/alice");
	CHECK(p.launch->home_entry && !strcmp(p.launch->home_entry, "HOME=/home/alice"), "the image's home: %s",
	      p.launch->home_entry ? p.launch->home_entry : "(none)");
	struct step_print pr = {0};
	struct sbuf b = {0};
	launch_describe(&p, ACT_COMMAND, &b, &pr);
	CHECK(pr.words.n == 2 && !strcmp(pr.words.v[1], "HOME=/home/alice"), "the printed environment has it");
	strv_free(&pr.words);
	sbuf_free(&pr.lines);
	sbuf_free(&pr.ids);
	sbuf_free(&pr.map);
	launch_set_user(p.launch, &c, &u, NULL);
	CHECK(!strcmp(p.launch->home_entry, "HOME=/"), "no home for a user: /");
	u.uid = 0;
	launch_set_user(p.launch, &c, &u, "");
	CHECK(!strcmp(p.launch->home_entry, "HOME=/root"), "no home for root: /root");
	c.env = env_home;
	launch_set_user(p.launch, &c, &u, "/home/alice");
	CHECK(p.launch->home_entry == NULL, "-e HOME wins: no entry added");
	sbuf_free(&b);
	launch_free(p.launch);
	free(p.launch);
	plan_free(&p);
}

/* The read-only remounts of the host's mounts below /sys: a mount with
 * mounts below it names its directory once (-C, "." for itself), mounts
 * that head none share their common directory, and flags split lines. */
static void case_remount_below(void)
{
	static const struct {
		const char *subs[6];
		unsigned flags[6];
		const char *want;
	} rows[] = {
		{{"fs/cgroup", "fs/cgroup/cpu", "fs/cgroup/memory"}, {0}, "remount ro -C sys/fs/cgroup . cpu memory"},
		{{"kernel/tracing", "fs/fuse/connections"},
		 {0},
		 "remount ro -C sys kernel/tracing fs/fuse/connections"},
		{{"fs/cgroup"}, {0}, "remount ro sys/fs/cgroup"},
		{{"fs/cgroup", "fs/cgroup/cpu", "kernel/tracing"},
		 {0},
		 "remount ro -C sys/fs/cgroup . cpu\nremount ro sys/kernel/tracing"},
		{{"fs/cgroup", "fs/cgroup/cpu", "kernel/config"},
		 {0, 0, OPF_NOEXEC},
		 "remount ro -C sys/fs/cgroup . cpu\nremount ro,noexec sys/kernel/config"},
		{{"kernel/my dir", "kernel/x"}, {0}, "remount ro -C sys/kernel 'my dir' x"},
	};
	for (size_t r = 0; r < COUNT_OF(rows); r++) {
		struct plan p = {0};
		struct op *op = plan_add(&p, OP_REMOUNT, OPF_RO | OPF_BELOW, NULL, "/sys");
		size_t n = 0;
		while (n < COUNT_OF(rows[r].subs) && rows[r].subs[n])
			n++;
		op->sub_flags = xcalloc(n, sizeof *op->sub_flags);
		for (size_t i = 0; i < n; i++) {
			strv_add(&op->subs, xstrdup(rows[r].subs[i]));
			op->sub_flags[i] = rows[r].flags[i];
		}
		struct sbuf line = {0};
		op_describe(&(struct plan_view){.plan = &p}, op, &line);
		CHECK(line.s && !strcmp(line.s, rows[r].want), "row %zu: '%s', want '%s'", r, line.s ? line.s : "",
		      rows[r].want);
		sbuf_free(&line);
		plan_free(&p);
	}
}

static const struct unit_case cases[] = {
	{"archive-root", case_archive_root},
	{"archive-user", case_archive_user},
	{"directory-root", case_directory_root},
	{"directory-user", case_directory_user},
	{"dev", case_dev},
	{"net-none-hostname", case_net_none_hostname},
	{"volumes", case_volumes},
	{"finish", case_finish},
	{"mount-data-printed", case_mount_data_printed},
	{"proc-readonly-printed", case_proc_readonly_printed},
	{"libdir", case_libdir},
	{"libdir-compat", case_libdir32},
	{"group-lines", case_group_lines},
	{"remount-below", case_remount_below},
	{"actors", case_actors},
	{"steps-late", case_steps_late},
	{"home-once", case_home_once},
};

int main(int argc, char **argv)
{
	return unit_main(argc, argv, cases, sizeof cases / sizeof cases[0]);
}
