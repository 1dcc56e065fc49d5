/* gpu/nodes.c — device nodes a launch needs that the host does not have
 * yet, and what the toolkit's `--load-kmods` does about them.
 *
 * Two situations are common on real hosts: after a fresh boot nvidia-uvm is
 * not loaded until something asks for it, so /dev/nvidia-uvm is missing and
 * cuInit() fails inside the container; after a driver reload without
 * nvidia-persistenced, /dev/nvidiactl and /dev/nvidiaN are gone.  The
 * reference (nvidia-container-cli --load-kmods) then runs the driver's
 * nvidia-modprobe, chrooted into the driver root, to load the module and
 * create the nodes.  gpurun does the same when it runs as real root: the
 * driver root's own usr/bin/nvidia-modprobe (never anything from the image),
 * in a child chrooted there, with an empty environment but PATH and stdin on
 * /dev/null, one run per fix, before any namespace exists; then it reads the
 * driver root again.  It never does it as an ordinary user or as root of a
 * smaller user namespace (the reference skips it there too: the nodes and
 * modules are the host's business), and never in a dry run, which prints
 * the commands instead.  Before either, the program, its ELF interpreter
 * and all its dynamic loader reads in the driver root must be root's alone
 * (drv_trust_loader; docs/design.md, "Modes"): chrooted with every capability, a
 * program of someone else's would leave the chroot at once.  Whatever is
 * still missing then is an error that
 * names the node and the command that creates it: a device the requested
 * capabilities need is never silently left out.
 *
 * What is needed: /dev/nvidiactl always; /dev/nvidia<minor> per selected
 * GPU; /dev/nvidia-uvm with the compute libraries (compute, video);
 * /dev/nvidia-modeset with display. */
#include "gpu_int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#define MODPROBE_WHY "   # a node is missing: the toolkit's --load-kmods, before the namespaces"

static const char *const modprobe_paths[] = {"/usr/bin/nvidia-modprobe", "/usr/sbin/nvidia-modprobe",
					     "/bin/nvidia-modprobe", "/sbin/nvidia-modprobe"};

/* A character node of the driver root with these numbers (maj 0: any). */
static int have_node(const struct gpu_driver *drv, const char *path, unsigned maj, unsigned min)
{
	struct stat st;
	_cleanup_free_ char *host = drv_resolve(drv, path, &st, NULL);
	return host && S_ISCHR(st.st_mode) && (!maj || st.st_rdev == makedev(maj, min));
}

struct missing {
	struct strv nodes; /* "/dev/nvidia-uvm (nvidia-uvm is not loaded)" */
	struct strv fixes; /* nvidia-modprobe arguments, one run each: "-u -c=0" */
};

static void add_fix(struct missing *m, char *args)
{
	for (size_t i = 0; i < m->fixes.n; i++)
		if (!strcmp(m->fixes.v[i], args)) {
			free(args);
			return;
		}
	strv_add(&m->fixes, args);
}

static void find_missing(const struct gpu_driver *drv, const struct gpu_selection *sel, unsigned inj, struct missing *m)
{
	int first_minor = -1;
	for (size_t i = 0; i < drv->ngpus && sel->kind == SEL_SOME; i++) {
		if (!sel->mask[i])
			continue;
		const struct gpu_dev *g = &drv->gpus[i];
		char path[32];
		snprintf(path, sizeof path, "/dev/nvidia%u", g->minor);
		if (first_minor < 0)
			first_minor = (int)g->minor;
		if (have_node(drv, path, NV_MAJOR, g->minor))
			continue;
		strv_add(&m->nodes, xasprintf("%s (GPU %u)", path, g->index));
		add_fix(m, xasprintf("-c=%u", g->minor));
	}
	if (!have_node(drv, "/dev/nvidiactl", NV_MAJOR, NV_CTL_MINOR)) {
		/* nvidia-modprobe makes the control node with any GPU's. */
		strv_add(&m->nodes, xstrdup("/dev/nvidiactl"));
		add_fix(m,
			xasprintf("-c=%d", first_minor < 0 ? (drv->ngpus ? (int)drv->gpus[0].minor : 0) : first_minor));
	}
	if ((inj & INJ_COMPUTE_LIBS) && !have_node(drv, "/dev/nvidia-uvm", drv->uvm_major, 0)) {
		strv_add(&m->nodes,
			 xstrdup(drv->uvm_major ? "/dev/nvidia-uvm" : "/dev/nvidia-uvm (nvidia-uvm is not loaded)"));
		add_fix(m, xstrdup("-u -c=0"));
	}
	if ((inj & INJ_DISPLAY) && !have_node(drv, "/dev/nvidia-modeset", NV_MAJOR, NV_MODESET_MINOR)) {
		strv_add(&m->nodes, xstrdup("/dev/nvidia-modeset"));
		add_fix(m, xstrdup("-m"));
	}
}

/* The driver root's nvidia-modprobe, as the path inside it that it
 * resolves to (malloc'ed: what is judged is what runs), or NULL. */
static char *find_modprobe(const struct gpu_driver *drv)
{
	for (size_t i = 0; i < COUNT_OF(modprobe_paths); i++) {
		struct stat st;
		char *inroot = NULL;
		_cleanup_free_ char *host = drv_resolve(drv, modprobe_paths[i], &st, &inroot);
		if (host && S_ISREG(st.st_mode) && (st.st_mode & 0111))
			return inroot;
		free(inroot);
	}
	return NULL;
}

/* The shell form of one run: what --dry-run and --verbose print. */
static char *describe_run(const struct gpu_driver *drv, const char *modprobe, const char *args)
{
	struct sbuf b = {0};
	if (*drv->rootpath) { /* a path from the command line, in a root shell's line */
		sbuf_puts(&b, "chroot ");
		sbuf_shquote(&b, drv->rootpath);
		sbuf_puts(&b, " ");
	}
	sbuf_printf(&b, "%s %s", modprobe, args);
	return b.s;
}

/* Run "modprobe args" chrooted into the driver root; its exit status (or
 * 128+signal), or -1 when it could not be started. */
static int run_modprobe(const struct gpu_driver *drv, const char *modprobe, const char *args)
{
	struct strv argv = {0};
	strv_add(&argv, xstrdup("nvidia-modprobe"));
	_cleanup_free_ char *copy = xstrdup(args);
	for (char *save = NULL, *t = strtok_r(copy, " ", &save); t; t = strtok_r(NULL, " ", &save))
		strv_add(&argv, xstrdup(t));
	_cleanup_fd_ int null = open("/dev/null", O_RDONLY | O_CLOEXEC);
	pid_t pid = null < 0 ? -1 : fork();
	if (pid == 0) {
		/* Nothing of gpurun's caller reaches a setuid-root helper: no
		 * environment but PATH, no stdin, no cwd outside the root, no fd
		 * above stderr; its output goes to stderr, never into the
		 * command's stdout. */
		char *envp[] = {(char *)"PATH=/usr/sbin:/usr/bin:/sbin:/bin", NULL};
		if (dup2(null, 0) < 0 || dup2(2, 1) < 0 || fchdir(drv->rootfd) < 0 || chroot(".") < 0 ||
		    chdir("/") < 0 || close_range(3, ~0U, 0) < 0)
			_exit(126);
		execve(modprobe, argv.v, envp);
		_exit(127);
	}
	strv_free(&argv);
	if (pid < 0)
		return -1;
	int status;
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return -1;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

static int fail_missing(const char *root, const struct missing *m, const char *extra, struct gerr *err)
{
	struct sbuf nodes = {0}, fix = {0};
	for (size_t i = 0; i < m->nodes.n; i++)
		sbuf_printf(&nodes, "%s%s", i ? ", " : "", m->nodes.v[i]);
	for (size_t i = 0; i < m->fixes.n; i++)
		sbuf_printf(&fix, "%snvidia-modprobe %s", i ? "; " : "", m->fixes.v[i]);
	gerr_set(err, 0, "missing NVIDIA device node%s under %s: %s%s; as root, run %s", m->nodes.n == 1 ? "" : "s",
		 root, nodes.s, extra ? extra : "", fix.s);
	sbuf_free(&nodes);
	sbuf_free(&fix);
	return -1;
}

int nodes_ensure(struct gpu_driver *drv, const char *root, const struct gpu_request *rq, const char *what,
		 struct gpu_selection *sel, unsigned inj, int dry_run, int verbose, struct strv *host_steps,
		 struct gerr *err)
{
	struct missing m = {0};
	_cleanup_free_ char *modprobe = NULL;
	int r = -1;
	find_missing(drv, sel, inj, &m);
	if (!m.nodes.n) {
		r = 0;
		goto out;
	}
	if (geteuid() != 0 || !ids_all_mapped()) {
		fail_missing(root, &m, NULL, err);
		goto out;
	}
	modprobe = find_modprobe(drv);
	if (!modprobe) {
		_cleanup_free_ char *why = xasprintf("; %s has no usr/bin/nvidia-modprobe to create %s", root,
						     m.nodes.n == 1 ? "it" : "them");
		fail_missing(root, &m, why, err);
		goto out;
	}
	/* It runs as root with every capability, chrooted, which a program
	 * of someone else's leaves at once; and a dry run's line is meant to
	 * be pasted into a root shell. */
	if (drv_trust_loader(drv, "nvidia-modprobe", modprobe, err) < 0)
		goto out;
	struct sbuf failed = {0};
	for (size_t i = 0; i < m.fixes.n; i++) {
		char *line = describe_run(drv, modprobe, m.fixes.v[i]);
		if (dry_run) {
			strv_add(host_steps, xasprintf("%s" MODPROBE_WHY, line));
			free(line);
			continue;
		}
		if (verbose)
			fprintf(stderr, "+ %s" MODPROBE_WHY "\n", line);
		int st = run_modprobe(drv, modprobe, m.fixes.v[i]);
		if (st < 0)
			sbuf_printf(&failed, "%s%s: %s", failed.len ? "; " : "", line, strerror(errno));
		else if (st > 0)
			sbuf_printf(&failed, "%s%s: exit status %d", failed.len ? "; " : "", line, st);
		free(line);
	}
	if (dry_run) {
		sbuf_free(&failed);
		r = 0;
		goto out;
	}
	/* Read the driver root again: the module may have a major now. */
	gpu_driver_free(drv);
	if (gpu_discover(root, drv, err) < 0 || gpu_select(rq, drv, what, root, NULL, 1, sel, err) < 0) {
		sbuf_free(&failed);
		goto out;
	}
	strv_free(&m.nodes);
	strv_free(&m.fixes);
	find_missing(drv, sel, inj, &m);
	r = 1;
	if (m.nodes.n) {
		r = -1;
		_cleanup_free_ char *why =
			failed.len ? xasprintf("; %s", failed.s)
				   : xasprintf("; nvidia-modprobe did not create %s", m.nodes.n == 1 ? "it" : "them");
		fail_missing(root, &m, why, err);
	}
	sbuf_free(&failed);
out:
	strv_free(&m.nodes);
	strv_free(&m.fixes);
	return r;
}
