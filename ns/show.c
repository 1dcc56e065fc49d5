/* ns/show.c — the teaching view of a whole launch, as a shell script that
 * runs (`sh plan.sh`, as root or as a user): its head (what no shell tool
 * can do, the scratch directory, the unshare into the new namespaces with
 * the rest as a quoted here-document), the ops (op_describe,
 * base/plan/planshow.c, with the libdirs resolved from the image tree when
 * it is known before the launch), the pivot with a helper outside the new root that detaches
 * the old one, and the command, prepared with the host's setpriv before the
 * pivot and waiting for its go-ahead.  --dry-run prints all of it at once;
 * --verbose prints the same lines, each as its step is done (ns/launch.c,
 * ns/exec.c, ns/init.c call in here), so the two views cannot differ. */
#include "ns.h"
#include "exec.h"

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static void ns_describe_image(const struct run_config *cfg, struct sbuf *b);

/* The image tree as gpurun knows it when the plan is printed: a directory
 * image, or the top cached layer that has the path (whiteouts aside); -1
 * when unknown or missing. */
static int tree_root_with(const struct run_config *cfg, const char *path)
{
	if (cfg->image_is_dir && cfg->image_fd >= 0) {
		_cleanup_fd_ int fd = open_in_root(cfg->image_fd, path, O_PATH);
		return fd < 0 ? -1 : open_in_root(cfg->image_fd, "/", O_PATH | O_DIRECTORY);
	}
	if (!cfg->layered || cfg->import_run)
		return -1;
	for (size_t i = cfg->layered->layers.n; i-- > 0;) {
		int d = open(cfg->layered->layers.v[i], O_PATH | O_DIRECTORY | O_CLOEXEC);
		_cleanup_fd_ int fd = d < 0 ? -1 : open_in_root(d, path, O_PATH);
		if (fd >= 0)
			return d;
		if (d >= 0)
			close(d);
	}
	return -1;
}

static int tree_open(const struct run_config *cfg, const char *path, int flags)
{
	_cleanup_fd_ int root = tree_root_with(cfg, path);
	return root < 0 ? -1 : open_in_root(root, path, flags);
}

static int tree_known(const struct run_config *cfg)
{
	if (cfg->image_is_dir)
		return cfg->image_fd >= 0;
	if (!cfg->layered || cfg->import_run)
		return 0;
	for (size_t i = 0; i < cfg->layered->layers.n; i++)
		if (access(cfg->layered->layers.v[i], F_OK) < 0)
			return 0;
	return 1;
}

void ns_view_upper(const struct run_config *cfg)
{
	struct op *root = cfg->plan->n ? &cfg->plan->v[0] : NULL;
	if (!root || root->kind != OP_ROOTFS || !(root->flags & OPF_DIR) || !cfg->unprivileged || cfg->image_fd < 0)
		return;
	strv_free(&root->upper_dirs);
	rootbuild_upper_mirror_list(cfg->plan, cfg->image_fd, &root->upper_dirs);
}

void ns_view_libdirs(const struct run_config *cfg)
{
	if (!tree_known(cfg)) {
		op_describe_libdirs(NULL, NULL);
		return;
	}
	_cleanup_fd_ int marker = tree_open(cfg, LIBDIR_MARKER, O_PATH);
	_cleanup_fd_ int lib32 = tree_open(cfg, LIBDIR32_OTHER, O_PATH | O_DIRECTORY);
	_cleanup_fd_ int lib = tree_open(cfg, LIBDIR32_PLAIN, O_PATH | O_DIRECTORY);
	_cleanup_fd_ int lib64 = tree_open(cfg, LIBDIR_OTHER, O_PATH | O_DIRECTORY);
	struct stat a, b;
	int same = lib >= 0 && lib64 >= 0 && fstat(lib, &a) == 0 && fstat(lib64, &b) == 0 && a.st_dev == b.st_dev &&
		   a.st_ino == b.st_ino;
	op_describe_libdirs(plan_libdir_for(marker >= 0), plan_libdir32_for(marker >= 0, lib32 >= 0, same));
}

/* Why this launch cannot be printed as a script that runs, or NULL. */
static const char *not_runnable(const struct run_config *cfg)
{
	if (cfg->subids.in_uid || cfg->subids.in_gid)
		return "--userns keep-id with subordinate ranges maps the caller's ids between two pieces of "
		       "its range, three ranges in all, where util-linux's unshare --map-users writes one";
	if (cfg->import_run)
		return "--no-cache unpacks and verifies the image's layers with gpurun's own unpacker; "
		       "launch it once without --no-cache, and print the plan of the cached image";
	if (cfg->layered && !tree_known(cfg))
		return "the image's layers are not in the cache yet; launch it once, "
		       "then print the plan";
	if (tree_known(cfg)) {
		_cleanup_fd_ int sh = tree_open(cfg, "/bin/sh", O_PATH);
		if (sh < 0)
			return "the image has no /bin/sh, which the plan needs after pivot_root to wait for "
			       "its go-ahead and exec the command";
	}
	if (cfg->user_spec && !tree_known(cfg)) {
		const char *c = strchr(cfg->user_spec, ':');
		if (!c || strspn(cfg->user_spec, "0123456789:") != strlen(cfg->user_spec))
			return "--user names a user or group of an image whose files are not known yet";
	}
	return NULL;
}

static void plan_delim(const struct run_config *cfg, char *out, size_t cap)
{
	plan_delimiter("GPURUN_PLAN_END", cfg->plan, out, cap);
}

void ns_describe_head(const struct run_config *cfg, struct sbuf *b)
{
	char delim[64];
	plan_delim(cfg, delim, sizeof delim);
	sbuf_puts(b, "#!/bin/sh\n# gpurun plan: this launch as a shell script.  `sh plan.sh`, as root or as this user, "
		     "builds the same container\n# with util-linux, coreutils and tar, and runs the command in it.\n");
	const char *why = not_runnable(cfg);
	if (why) {
		sbuf_puts(b, "# cannot run as a script: ");
		sbuf_puts(b, why);
		sbuf_puts(b, "\n");
	}
	struct sbuf img = {0};
	ns_describe_image(cfg, &img);
	if (img.len)
		sbuf_printf(b, "%s\n", img.s);
	sbuf_free(&img);
	sbuf_puts(
		b,
		"# What no shell tool does here, and gpurun does: the seccomp filter on the command and on\n"
		"# the image's ldconfig; an init (pid 1) that reaps orphans and relays signals; closing every\n"
		"# fd the caller left open above 2; setsid(2) for the command (or the terminal's foreground group);\n"
		"# the caller's terminal given back as it was (output flow, exclusive flag, flags, modes) at the end.\n");
	if (cfg->fake_ids)
		sbuf_puts(
			b,
			"# With one id mapped, gpurun's filter also answers setgroups, set*id and chown to another id\n"
			"# with success (there is no other id): here they fail as the kernel says.\n");
	sbuf_puts(b, "# Needs util-linux (unshare, setpriv, mount, umount, pivot_root), coreutils, tar, hostname(1)\n"
		     "# for --hostname, ip(8) for --net none's lo, and the image's /bin/sh.\n");
	for (size_t i = 0; cfg->host_steps && i < cfg->host_steps->n; i++)
		sbuf_printf(b, "%s\n", cfg->host_steps->v[i]);
	sbuf_puts(b, "set -eu\n");
	if (why) {
		sbuf_puts(b, "echo 'gpurun plan: cannot run as a script (see its first lines)' >&2; exit 125\n");
	}
	sbuf_puts(b, "S=$(mktemp -d /tmp/gpurun-plan.XXXXXX)   # the scratch: a tmpfs on it, private to the new "
		     "mount namespace, holds the root\ntrap 'rmdir \"$S\"' EXIT\n");
	sbuf_printf(b, "unshare --mount --pid%s%s%s --fork --kill-child --propagation slave%s",
		    cfg->share_ipc ? "" : " --ipc", cfg->hostname ? " --uts" : "", cfg->new_net ? " --net" : "",
		    cfg->unprivileged ? " --map-root-user" : "");
	/* util-linux runs newuidmap and newgidmap for these, as gpurun does. */
	if (cfg->subids.uid_count)
		sbuf_printf(b, " --map-users=%lu,1,%lu --map-groups=%lu,1,%lu", cfg->subids.uid_start,
			    cfg->subids.uid_count, cfg->subids.gid_start, cfg->subids.gid_count);
	sbuf_printf(b, " sh -euc \"$(cat <<'%s'\n", delim);
	sbuf_puts(b, "S=$1; shift\numask 022\nfail() { echo stop >&4; exit 125; }\n");
	/* mount, mkdir, touch and > follow symlinks; gpurun resolves every
	 * path inside the root.  Nothing but this plan writes into the fresh
	 * root, so a path checked here stays what it was when used. */
	sbuf_puts(
		b,
		"# inroot PATH: refuse a PATH that a symlink of the image (absolute, or climbing with ..) "
		"would send out of the new root\n"
		"inroot() {\n"
		"\t_r= _p=$1 _n=0\n"
		"\twhile [ -n \"$_p\" ]; do\n"
		"\t\t_c=${_p%%/*}\n"
		"\t\tif [ \"$_c\" = \"$_p\" ]; then _p=; else _p=${_p#*/}; fi\n"
		"\t\tcase $_c in\n"
		"\t\t''|.) continue ;;\n"
		"\t\t..) [ -n \"$_r\" ] || break; case $_r in */*) _r=${_r%/*} ;; *) _r= ;; esac; continue ;;\n"
		"\t\tesac\n"
		"\t\t_t=${_r:+$_r/}$_c\n"
		"\t\tif [ -L \"$_t\" ]; then\n"
		"\t\t\t_n=$((_n + 1)); _l=$(readlink -- \"$_t\")\n"
		"\t\t\tcase $_l in /*) break ;; esac\n"
		"\t\t\t[ \"$_n\" -le 40 ] || break\n"
		"\t\t\t_p=$_l${_p:+/$_p}\n"
		"\t\telse\n"
		"\t\t\t_r=$_t\n"
		"\t\tfi\n"
		"\tdone\n"
		"\t[ -z \"$_p\" ] || { echo \"gpurun plan: refused: a symlink in the image sends $1 out of the new root\" >&2; exit 125; }\n"
		"}");
}

/* The plan's own lines for the libdirs when the tree is not known at print
 * time: gpurun's rule, as shell tests, once the root is built. */
static void libdir_tests(const struct run_config *cfg, struct sbuf *b)
{
	if (tree_known(cfg))
		return;
	sbuf_printf(b, "\nif [ -e .%s ]; then LIBDIR=%s; else LIBDIR=%s; fi", LIBDIR_MARKER, plan_libdir_for(1),
		    LIBDIR_OTHER);
	sbuf_printf(b,
		    "\nif [ -e .%s ]; then LIBDIR32=%s; elif [ -d .%s ] || [ .%s -ef .%s ]; then LIBDIR32=%s; "
		    "else LIBDIR32=%s; fi",
		    LIBDIR_MARKER, plan_libdir32_for(1, 0, 0), LIBDIR32_OTHER, LIBDIR32_PLAIN, LIBDIR_OTHER,
		    LIBDIR32_OTHER, LIBDIR32_PLAIN);
}

/* " --reuid=U --regid=G --groups=G,...": setpriv's options for the
 * command's ids and groups, as P2 sets them (ns/command.c). */
static void describe_ids(const struct run_config *cfg, uid_t uid, gid_t gid, const gid_t *groups, size_t ngroups,
			 struct sbuf *b)
{
	if (!cfg->fake_ids && (uid || gid))
		sbuf_printf(b, " --reuid=%u --regid=%u", (unsigned)uid, (unsigned)gid);
	if (ns_takes_groups(cfg, uid, gid)) {
		sbuf_printf(b, " --groups=%u", (unsigned)gid);
		for (size_t i = 0; i < ngroups; i++)
			sbuf_printf(b, ",%u", (unsigned)groups[i]);
	}
}

/* The image's ldconfig (exec.c's do_ldconfig), started before the pivot
 * and waiting for its go-ahead on fd 7: in a pid namespace of its own,
 * with the command's ids and groups and no capability, its cache into
 * $LDDIR; nothing at all when $LDDIR could not be made. */
static void describe_ldconfig(const struct run_config *cfg, const struct op *ld, const struct ns_user *u,
			      struct sbuf *b)
{
	uid_t uid;
	gid_t gid;
	ns_ldconfig_ids(cfg, u, &uid, &gid);
	sbuf_puts(b, "unshare --pid --fork -- setpriv --nnp --inh-caps=-all --ambient-caps=-all --bounding-set=-all");
	describe_ids(cfg, uid, gid, u->groups, u->ngroups, b);
	sbuf_puts(b, " -- env -i /bin/sh -c 'echo >&6; exec 6>&-; read -r t; exec </dev/null; "
		     "[ \"$t\" = go ] && [ -n \"$1\" ] || exit 0; LDDIR=$1; shift; ");
	if (ld->data) {
		unsigned long host = strtoul(ld->data, NULL, 10);
		sbuf_printf(b,
			    "c=0; for f in %s/libcuda.so.*.*; do v=${f#%s/libcuda.so.}; v=${v%%%%.*}; "
			    "case $v in \"\"|*[!0-9]*) continue;; esac; [ \"$v\" -le \"$c\" ] || c=$v; done; "
			    "[ \"$c\" -le %lu ] || set -- %s \"$@\"; ",
			    CUDA_COMPAT_DIR, CUDA_COMPAT_DIR, host, CUDA_COMPAT_DIR);
	}
	sbuf_puts(b, "for l in");
	for (size_t k = 0; k < ldconfig_npaths; k++)
		sbuf_printf(b, " %s", ldconfig_paths[k]);
	sbuf_puts(b, "; do if [ -f \"$l\" ] && [ -x \"$l\" ]; then exec \"$l\"");
	for (size_t k = 0; k < ldconfig_nargs; k++)
		sbuf_printf(b, " %s", ldconfig_args[k]);
	sbuf_puts(b, " " LDCONFIG_CACHE_ARG " \"$@\"; fi; done' sh \"$LDDIR\"");
	struct sbuf dirs = {0};
	op_describe(ld, &dirs); /* "ldconfig -f ... -C CACHE DIR..." */
	const char *d = strstr(dirs.s, LDCONFIG_CACHE_ARG);
	d = d ? d + strlen(LDCONFIG_CACHE_ARG) : "";
	if (ld->data && !strncmp(d, " " CUDA_COMPAT_VAR, strlen(CUDA_COMPAT_VAR) + 1))
		d += strlen(CUDA_COMPAT_VAR) + 1;
	const char *hash = strstr(d, "   # ");
	sbuf_add(b, d, hash ? (size_t)(hash - d) : strlen(d));
	sbuf_free(&dirs);
	sbuf_puts(b, " <&7 >/dev/null 2>&1 &   # the image's ldconfig, as the command's user with no capability "
		     "at all, in a pid namespace of its own\n");
}

/* The helper's step for ldconfig (its $1 and $2: $LDDIR and its inode),
 * once ldconfig ran and all it started is gone: as exec.c does it
 * (scratch_ours, cache_in_place, scratch_remove), with the host's tools,
 * whose root is the host's, so that no symlink of the image is followed:
 * $LDDIR still the directory made, its cache a regular file of uid
 * (owner) and of a cache's size, /etc a directory, a file beside the cache
 * renamed over it; then $LDDIR removed, not recursively. */
static void describe_cache_step(uid_t owner, struct sbuf *b)
{
	const char *etc = LDCONFIG_CACHE_DIR + 1, *name = LDCONFIG_CACHE_NAME;
	sbuf_printf(b,
		    "if [ \"$t\" = ld ]; then if [ -n \"$1\" ]; then "
		    "[ -d \"$1\" ] && [ ! -L \"$1\" ] && [ \"$(stat -c %%i \"$1\")\" = \"$2\" ] || exit 1; "
		    "c=$1/%s; if [ -f \"$c\" ] && [ ! -L \"$c\" ] && [ \"$(stat -c %%u \"$c\")\" = %u ] && "
		    "[ \"$(stat -c %%s \"$c\")\" -le %ld ] && [ -d %s ] && [ ! -L %s ]; then "
		    "{ rm -f %s/%s~ && cat \"$c\" >%s/%s~ && mv -fT %s/%s~ %s/%s; } || rm -f %s/%s~ || :; fi; "
		    "rm -f \"$c\" \"$c~\"; rmdir \"$1\"; fi; echo ok >&6; read -r t <&5; fi; ",
		    name, (unsigned)owner, LDCONFIG_CACHE_MAX, etc, etc, etc, name, etc, name, etc, name, etc, name,
		    etc, name);
}

void ns_describe_op(const struct run_config *cfg, size_t i, const struct ns_user *user, struct sbuf *b)
{
	const struct op *op = &cfg->plan->v[i];
	for (size_t j = 0; j < i; j++)
		if (cfg->plan->v[j].kind == OP_PIVOT)
			return; /* printed with the pivot */
	if (op->kind != OP_PIVOT) {
		op_describe(op, b);
		if (op->kind == OP_ROOTFS)
			libdir_tests(cfg, b);
		return;
	}
	const struct op *ld = NULL;
	unsigned ro = 0;
	for (size_t j = i + 1; j < cfg->plan->n; j++) {
		if (cfg->plan->v[j].kind == OP_LDCONFIG)
			ld = &cfg->plan->v[j];
		if (cfg->plan->v[j].kind == OP_REMOUNT)
			ro = cfg->plan->v[j].flags;
	}
	unsigned root_flags = cfg->plan->v[0].flags & OPF_MOUNT_MASK;
	uid_t uid = 0;
	gid_t gid = 0;
	if (ld) {
		ns_ldconfig_ids(cfg, user, &uid, &gid);
		sbuf_printf(b,
			    "LDINO=; LDDIR=$(mktemp -d " LDCONFIG_SCRATCH "XXXXXX) && chown %u:%u \"$LDDIR\" && "
			    "LDINO=$(stat -c %%i \"$LDDIR\") || LDDIR=   # where the image's ldconfig writes its "
			    "cache: a directory of the root made for it, its user's alone\n",
			    (unsigned)uid, (unsigned)gid);
	}
	sbuf_puts(
		b,
		"mkfifo \"$S/ready\" \"$S/go\" \"$S/helper\" \"$S/helped\" \"$S/ldgo\" && exec 3<>\"$S/ready\" 4<>\"$S/go\"\n");
	sbuf_puts(b, "( exec 5<>\"$S/helper\" 6<>\"$S/helped\" 7<>\"$S/ldgo\"\n");
	/* The helper's root is not the old root: pivot_root leaves it where it
	 * is, with the host's tools, and the new root in reach through
	 * /proc/PID/root of its parent. */
	sbuf_puts(b, "chroot \"$S/host\" /bin/sh -euc 'echo >&6; read -r t <&5; read -r _ _ _ p _ </proc/self/stat; "
		     "cd \"/proc/$p/root\"; umount -l .; echo ok >&6; read -r t <&5; ");
	if (ld)
		describe_cache_step(uid, b);
	sbuf_puts(b, "[ \"$t\" = ro ] || exit 0; mount -o remount,bind");
	for (size_t k = 0; k < COUNT_OF(op_flags); k++)
		if ((ro | root_flags) & op_flags[k].flag)
			sbuf_printf(b, ",%s", op_flags[k].name);
	sbuf_printf(b,
		    " .; echo ok >&6'%s || echo fail >&6 &   # outside the new root, so pivot_root does not move it\n",
		    ld ? " sh \"$LDDIR\" \"$LDINO\"" : "");
	if (ld)
		describe_ldconfig(cfg, ld, user, b);
	sbuf_printf(b, "read -r _ <&3 && read -r _ <&6%s || fail\n", ld ? " && read -r _ <&6" : "");
	sbuf_puts(
		b,
		"pivot_root . . || fail   # moves the root and cwd of every process here whose root was the old one\n");
	sbuf_puts(
		b,
		"echo detach >&5 && read -r r <&6 && [ \"$r\" = ok ] || fail   # umount -l the old root: the host is now unreachable\n");
	if (ld) {
		sbuf_puts(b, "echo go >&7 && { wait $! || true; }\n");
		sbuf_puts(b, "echo ld >&5 && read -r r <&6 && [ \"$r\" = ok ] || fail   # the helper puts its cache in "
			     "place as " LDCONFIG_CACHE_DIR "/" LDCONFIG_CACHE_NAME
			     ", root's and 0644, and removes $LDDIR\n");
	}
	if (ro)
		sbuf_puts(b,
			  "echo ro >&5 && read -r r <&6 && [ \"$r\" = ok ] || fail   # --read-only, after ldconfig\n");
	else
		sbuf_puts(b, "echo end >&5\n");
	sbuf_puts(b, "echo go >&4 ) &");
}

/* One --ulimit as sh's ulimit (shell 1) or, where the shells differ, a
 * comment line (shell 0), which comes first.  Soft and hard apart: hard,
 * soft, hard again, so that it works whether the new limits are above or
 * below the old ones (P2 sets both at once); the first may fail (a hard
 * limit below the old soft one), and under set -e that must not end the
 * plan. */
static void describe_ulimit(const struct ulimit *u, int shell, struct sbuf *b)
{
	char v[2][24];
	rlim_t lim[2] = {u->lim.rlim_cur, u->lim.rlim_max}, mask = ((rlim_t)1 << u->shift) - 1;
	int fits = u->letter != 0;
	for (int k = 0; k < 2; k++) {
		fits &= lim[k] == RLIM_INFINITY || !(lim[k] & mask);
		if (lim[k] == RLIM_INFINITY)
			snprintf(v[k], sizeof v[k], "unlimited");
		else
			snprintf(v[k], sizeof v[k], "%llu", (unsigned long long)(lim[k] >> (shell ? u->shift : 0)));
	}
	if (!shell && !fits)
		sbuf_printf(b,
			    "# --ulimit %s=%s:%s: set by setrlimit before the exec (no ulimit every sh "
			    "shares says it)\n",
			    u->name, v[0], v[1]);
	else if (shell && fits && lim[0] == lim[1])
		sbuf_printf(b, "ulimit -%c %s; ", u->letter, v[0]);
	else if (shell && fits)
		sbuf_printf(b, "ulimit -H -%c %s 2>/dev/null || :; ulimit -S -%c %s; ulimit -H -%c %s; ", u->letter,
			    v[1], u->letter, v[0], u->letter, v[1]);
}

void ns_describe_exec(const struct run_config *cfg, uid_t uid, gid_t gid, const gid_t *groups, size_t ngroups,
		      const char *home, struct sbuf *b)
{
	/* --ulimit: set before the capabilities go, as P2 does. */
	for (int shell = 0; shell < 2; shell++)
		for (size_t i = 0; i < cfg->nulimits; i++)
			describe_ulimit(&cfg->ulimits[i], shell, b);
	int nested = cfg->fake_ids && (uid || gid);
	if (nested)
		sbuf_printf(b, "unshare --user --map-user=%u --map-group=%u --keep-caps -- ", (unsigned)uid,
			    (unsigned)gid);
	sbuf_puts(b, "setpriv --nnp --inh-caps=-all --ambient-caps=-all --bounding-set=-all");
	sec_describe_caps(b);
	describe_ids(cfg, uid, gid, groups, ngroups, b);
	sbuf_puts(b, " -- env -i");
	int has_home = 0;
	for (char **e = cfg->env; e && *e; e++) {
		sbuf_puts(b, " ");
		sbuf_shquote(b, *e);
		has_home |= !strncmp(*e, "HOME=", 5);
	}
	if (!has_home) {
		_cleanup_free_ char *h = xasprintf("HOME=%s", home && *home ? home : uid == 0 ? "/root" : "/");
		sbuf_puts(b, " ");
		sbuf_shquote(b, h);
	}
	sbuf_puts(b, " /bin/sh -c 'echo >&3; read -r t <&4; exec 3>&- 4>&-; [ \"$t\" = go ] || exit 125; "
		     "cd \"$1\"; shift; unset PWD OLDPWD; exec \"$@\"' sh ");
	sbuf_shquote(b, cfg->workdir ? cfg->workdir : "/");
	for (char **a = cfg->argv; a && *a; a++) {
		sbuf_puts(b, " ");
		sbuf_shquote(b, *a);
	}
	sbuf_puts(b, "   # the command\n");
	char delim[64];
	plan_delim(cfg, delim, sizeof delim);
	sbuf_printf(b, "%s\n)\" sh \"$S\"", delim);
}

/* Whether the container will have the directory path, as the plan knows
 * it: made or mounted there by an op, under a directory a volume binds
 * (then the host's), or in the image's tree. */
static int dir_in_plan(const void *arg, const char *path)
{
	const struct run_config *cfg = arg;
	for (size_t i = cfg->plan->n; i-- > 0;) {
		const struct op *op = &cfg->plan->v[i];
		if (!op->dst || (op->kind != OP_BIND && op->kind != OP_TMPFS && op->kind != OP_MKDIR))
			continue;
		const char *rest = str_after(path, op->dst);
		if (!rest || (*rest && *rest != '/'))
			continue;
		if (!*rest)
			return op->kind != OP_BIND || (op->flags & OPF_DIR);
		if (op->kind != OP_BIND || !(op->flags & OPF_DIR))
			return 0;
		_cleanup_free_ char *host = xasprintf("%s%s", op->src, rest);
		struct stat st;
		return stat(host, &st) == 0 && S_ISDIR(st.st_mode);
	}
	_cleanup_fd_ int fd = tree_open(cfg, path, O_PATH | O_DIRECTORY);
	return fd >= 0;
}

/* The command's ids and home as the plan knows them when printed. */
static void ns_plan_user(const struct run_config *cfg, uid_t *uid, gid_t *gid, gid_t *groups, size_t *ngroups,
			 char **home)
{
	*uid = 0;
	*gid = 0;
	*ngroups = 0;
	*home = NULL;
	struct gerr err = {0};
	/* The layer that has /etc/passwd (its /etc/group may be in another). */
	_cleanup_fd_ int root = tree_root_with(cfg, "/etc/passwd");
	_cleanup_fd_ int group_root = tree_root_with(cfg, "/etc/group");
	if (cfg->user_spec && (root < 0 || rootfs_lookup_user(root, cfg->user_spec, uid, gid, home, &err) < 0)) {
		const char *c = strchr(cfg->user_spec, ':');
		*uid = (uid_t)strtoul(cfg->user_spec, NULL, 10);
		*gid = c ? (gid_t)strtoul(c + 1, NULL, 10) : *uid;
	}
	if (root >= 0 && group_root >= 0 && ns_takes_groups(cfg, *uid, *gid))
		rootfs_user_groups(root, group_root, cfg->user_spec ? cfg->user_spec : "0", *gid, groups, ngroups,
				   &err);
	const char *keep_home = *home ? NULL : ns_keep_id_home(cfg, dir_in_plan, cfg);
	if (keep_home)
		*home = xstrdup(keep_home);
}

static void describe_list(struct sbuf *b, const char *label, char **v)
{
	sbuf_printf(b, "\n#   %s", label);
	for (; v && *v; v++) {
		sbuf_puts(b, " ");
		sbuf_showquote(b, *v);
	}
}

/* "\n#   LABEL VALUE": a comment line, so the value must not end it. */
static void describe_field(struct sbuf *b, const char *label, const char *v)
{
	sbuf_printf(b, "\n#   %s ", label);
	sbuf_showquote(b, v);
}

static void ns_describe_image(const struct run_config *cfg, struct sbuf *b)
{
	const struct image *img = cfg->layered;
	if (!img)
		return;
	sbuf_puts(b, "# image ");
	sbuf_showquote(b, img->source);
	if (img->ref) {
		sbuf_puts(b, "@");
		sbuf_showquote(b, img->ref);
	}
	sbuf_printf(b, ": %zu layer%s%s", img->layers.n, img->layers.n == 1 ? "" : "s",
		    cfg->import_run ? ", unpacked into this run's tmpfs (--no-cache)"
		    : img->hit      ? ", from the cache"
		    : img->missing  ? ", not in the cache yet (a launch unpacks them)"
				    : ", unpacked into the cache");
	for (size_t i = 0; i < img->layers.n; i++) {
		sbuf_printf(b, "\n#   layer %zu: ", i + 1);
		sbuf_showquote(b, img->layer_ids.v[i]);
	}
	const struct image_config *c = &img->config;
	if (c->env || c->entrypoint || c->cmd || c->workdir || c->user) {
		sbuf_puts(b, "\n# the image's config (the command line overrides it):");
		if (c->env)
			describe_list(b, "Env:", c->env);
		if (c->entrypoint)
			describe_list(b, "Entrypoint:", c->entrypoint);
		if (c->cmd)
			describe_list(b, "Cmd:", c->cmd);
		if (c->workdir)
			describe_field(b, "WorkingDir:", c->workdir);
		if (c->user)
			describe_field(b, "User:", c->user);
	}
}

void ns_trace(const char *text)
{
	struct sbuf b = {0};
	for (const char *line = text; line && *line;) {
		size_t n = strcspn(line, "\n");
		sbuf_puts(&b, "+ ");
		sbuf_add(&b, line, n);
		sbuf_puts(&b, "\n");
		line += n + (line[n] == '\n');
	}
	if (b.s)
		fputs(b.s, stderr);
	sbuf_free(&b);
}

/* -t: what stands in for the terminal (ns/tty.c); no shell command does it. */
static void print_tty(const struct run_config *cfg, FILE *out)
{
	if (cfg->tty)
		fprintf(out,
			"# -t: stdin, stdout and stderr are a new pty of that devpts (/dev/pts/0, the controlling\n"
			"#  terminal); %s\n",
			cfg->interactive ? "gpurun relays it to and from this terminal (-i), which is raw meanwhile"
					 : "gpurun relays its output here, and reads no keystrokes (no -i)");
}

void ns_print_plan(const struct run_config *cfg, FILE *out)
{
	struct sbuf b = {0};
	plan_capture_mounts(cfg->plan);
	ns_view_libdirs(cfg);
	ns_view_upper(cfg);
	ns_describe_head(cfg, &b);
	fprintf(out, "%s\n", b.s);
	struct ns_user user = {0};
	_cleanup_free_ char *home = NULL;
	ns_plan_user(cfg, &user.uid, &user.gid, user.groups, &user.ngroups, &home);
	for (size_t i = 0; i < cfg->plan->n; i++) {
		sbuf_reset(&b);
		ns_describe_op(cfg, i, &user, &b);
		if (b.len)
			fprintf(out, "%s\n", b.s);
	}
	sbuf_reset(&b);
	print_tty(cfg, out);
	ns_describe_exec(cfg, user.uid, user.gid, user.groups, user.ngroups, home, &b);
	fprintf(out, "%s\n", b.s);
	sbuf_free(&b);
}
