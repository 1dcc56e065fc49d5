/* gpu/cdi/cdi.c — applying CDI devices: resolving `--device vendor.com/class=name`
 * in the specs read from the spec directories (cdidirs.c) and turning the
 * chosen devices' container edits into plan ops (cdi_configure), and
 * merging the spec's environment into the container's (cdi_inject).
 *
 * Nothing in a spec is run or mounted here.  Edits become the same ops GPU
 * injection uses: device nodes are bound from the host after checking they
 * are the character devices the spec says; mounts are binds, read-only
 * unless "rw"; every container path is a plan dst, which the executor
 * resolves inside the root (a symlink in the image cannot lead out).  Of
 * the hooks, only the NVIDIA hook's create-symlinks, update-ldcache and
 * enable-cuda-compat are honoured, as symlink ops and the existing in-root
 * ldconfig step; every other hook is skipped with a warning: a hook binary
 * named by a spec is never executed, on the host or inside. */
#include "cdi_int.h"
#include "../gpu_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

/* ---- applying --------------------------------------------------------------- */

/* What the chosen devices' edits give besides plan ops. */
struct cdi_result {
	struct strv env;     /* "K=V" for the container, in spec order */
	char *ldconfig_dirs; /* ':' list for OP_LDCONFIG (update-ldcache hooks), or NULL */
	char *compat_driver; /* enable-cuda-compat --host-driver-version, or NULL */
};

static void cdi_result_free(struct cdi_result *res);

struct apply {
	struct plan *p;
	struct cdi_result *res;
	struct strv done;   /* "K SRC DST" of the ops added, to add each once */
	struct strv warned; /* hooks already warned about */
	struct strv ldirs;  /* update-ldcache folders */
	const char *file;   /* the spec being applied, for messages */
	const char *dev;    /* the device, for messages */
};

static int once(struct apply *a, char kind, const char *src, const char *dst)
{
	_cleanup_free_ char *key = xasprintf("%c %s %s", kind, src, dst);
	for (size_t i = 0; i < a->done.n; i++)
		if (!strcmp(a->done.v[i], key))
			return 0;
	strv_add(&a->done, xstrdup(key));
	return 1;
}

#define OPF_CDI_NODE (OPF_DEVICE | OPF_RO | OPF_NOSUID | OPF_NOEXEC | OPF_REPLACE)

static int apply_node(struct apply *a, const struct cdi_node *n, struct gerr *err)
{
	const char *host = n->host_path ? n->host_path : n->path;
	struct stat st;
	if (n->type == 'b' || n->type == 'p')
		return gerr_set(err, 0, "CDI spec %s: line %d: %s: %s nodes are not supported (only character devices)",
				a->file, n->line, n->path, n->type == 'b' ? "block device" : "FIFO");
	if (stat(host, &st) < 0)
		return gerr_set(err, errno, "CDI device %s: device node %s", a->dev, host);
	if (!S_ISCHR(st.st_mode))
		return gerr_set(err, 0, "CDI device %s: %s is not a character device", a->dev, host);
	if ((n->major >= 0 && (unsigned long)n->major != major(st.st_rdev)) ||
	    (n->minor >= 0 && (unsigned long)n->minor != minor(st.st_rdev)))
		return gerr_set(err, 0, "CDI device %s: %s is the device %u:%u, the spec (%s line %d) says %ld:%ld",
				a->dev, host, major(st.st_rdev), minor(st.st_rdev), a->file, n->line,
				n->major >= 0 ? n->major : (long)major(st.st_rdev),
				n->minor >= 0 ? n->minor : (long)minor(st.st_rdev));
	if (!once(a, 'n', host, n->path))
		return 0;
	/* As GPU injection binds nodes: no nodev (the device must work),
	 * and the executor checks st_rdev again when it binds. */
	struct op *op = plan_bind(a->p, host, n->path, OPF_CDI_NODE);
	op->rdev = st.st_rdev;
	plan_why(op, "CDI %s", a->dev);
	return 0;
}

static const char *const mount_opts_ok[] = {"ro",    "rw",       "nosuid",  "nodev",  "noexec", "bind",
					    "rbind", "rprivate", "private", "rslave", "slave"};

static int apply_mount(struct apply *a, const struct cdi_mount *m, struct gerr *err)
{
	unsigned flags = OPF_RO | OPF_NOSUID;
	if (m->type && strcmp(m->type, "bind") && strcmp(m->type, "none"))
		return gerr_set(err, 0, "CDI spec %s: line %d: mount %s: type '%s' is not supported (only bind mounts)",
				a->file, m->line, m->container_path, m->type);
	for (size_t i = 0; i < m->options.n; i++) {
		const char *o = m->options.v[i];
		size_t k = 0;
		while (k < COUNT_OF(mount_opts_ok) && strcmp(o, mount_opts_ok[k]))
			k++;
		if (k == COUNT_OF(mount_opts_ok))
			return gerr_set(err, 0,
					"CDI spec %s: line %d: mount %s: option '%s' is not supported (gpurun honours "
					"ro, rw, nosuid, nodev, noexec, bind, rbind, and private or slave propagation)",
					a->file, m->line, m->container_path, o);
		if (!strcmp(o, "rw"))
			flags &= ~(unsigned)OPF_RO;
		else if (!strcmp(o, "ro"))
			flags |= OPF_RO;
		else if (!strcmp(o, "nodev"))
			flags |= OPF_NODEV;
		else if (!strcmp(o, "noexec"))
			flags |= OPF_NOEXEC;
		else if (!strcmp(o, "rbind"))
			flags |= OPF_REC;
	}
	struct stat st;
	if (stat(m->host_path, &st) < 0)
		return gerr_set(err, errno, "CDI device %s: mount source %s", a->dev, m->host_path);
	/* A file replaces an image symlink at its target (as driver files
	 * do); recursion only means something for a directory. */
	if (S_ISDIR(st.st_mode))
		flags |= OPF_DIR;
	else
		flags = (flags | OPF_REPLACE) & ~(unsigned)OPF_REC;
	if (!once(a, 'm', m->host_path, m->container_path))
		return 0;
	plan_bind(a->p, m->host_path, m->container_path, flags);
	return 0;
}

static void hook_warn(struct apply *a, const char *what, const char *why)
{
	for (size_t i = 0; i < a->warned.n; i++)
		if (!strcmp(a->warned.v[i], what))
			return;
	strv_add(&a->warned, xstrdup(what));
	warnx_("CDI hook %s skipped: %s", what, why);
}

/* "--name VALUE" or "--name=VALUE" at args[*i]: 1 with *val, else 0. */
static int flag_value(const struct strv *args, size_t *i, const char *name, const char **val)
{
	size_t n = strlen(name);
	const char *s = args->v[*i];
	if (strncmp(s, name, n))
		return 0;
	if (s[n] == '=') {
		*val = s + n + 1;
		return 1;
	}
	if (s[n] || *i + 1 >= args->n)
		return 0;
	*val = args->v[++*i];
	return 1;
}

static int apply_hook(struct apply *a, const struct cdi_hook *h, struct gerr *err)
{
	const char *base = strrchr(h->path, '/') + 1;
	int ctk = !strcmp(base, "nvidia-ctk");
	if (strcmp(base, "nvidia-cdi-hook") && !ctk) {
		hook_warn(a, h->path, "gpurun never runs hook programs from a spec");
		return 0;
	}
	/* args[0] is the program's name; nvidia-ctk takes "hook" first. */
	size_t i = h->args.n ? 1 : 0;
	if (ctk && i < h->args.n && !strcmp(h->args.v[i], "hook"))
		i++;
	const char *sub = i < h->args.n ? h->args.v[i++] : "";
	if (!strcmp(sub, "create-symlinks")) {
		for (; i < h->args.n; i++) {
			const char *v;
			if (!flag_value(&h->args, &i, "--link", &v)) {
				hook_warn(a, "create-symlinks", "an argument gpurun does not know");
				return 0;
			}
			const char *sep = strstr(v, "::");
			if (!sep || sep == v || sep[2] != '/')
				return gerr_set(
					err, 0,
					"CDI spec %s: line %d: create-symlinks --link '%s' is not TARGET::/ABSOLUTE/LINK",
					a->file, h->line, v);
			_cleanup_free_ char *target = xstrndup(v, (size_t)(sep - v));
			if (once(a, 'l', target, sep + 2))
				plan_symlink(a->p, target, sep + 2);
		}
		return 0;
	}
	if (!strcmp(sub, "update-ldcache")) {
		for (; i < h->args.n; i++) {
			const char *v;
			if (flag_value(&h->args, &i, "--ldconfig-path", &v))
				continue; /* the host's ldconfig: gpurun runs the image's, inside */
			if (!flag_value(&h->args, &i, "--folder", &v) || v[0] != '/' || strchr(v, ':'))
				return gerr_set(err, 0,
						"CDI spec %s: line %d: update-ldcache: unexpected argument '%s'",
						a->file, h->line, h->args.v[i]);
			size_t k = 0;
			while (k < a->ldirs.n && strcmp(a->ldirs.v[k], v))
				k++;
			if (k == a->ldirs.n)
				strv_add(&a->ldirs, xstrdup(v));
		}
		return 0;
	}
	if (!strcmp(sub, "enable-cuda-compat")) {
		for (; i < h->args.n; i++) {
			const char *v;
			if (flag_value(&h->args, &i, "--host-driver-version", &v) && *v &&
			    strspn(v, "0123456789.") == strlen(v) && strlen(v) < 32) {
				free(a->res->compat_driver);
				a->res->compat_driver = xstrdup(v);
			}
		}
		return 0;
	}
	_cleanup_free_ char *what = xasprintf("%s %s", base, sub);
	hook_warn(a, what, "gpurun honours only create-symlinks, update-ldcache and enable-cuda-compat");
	return 0;
}

static int apply_edits(struct apply *a, const struct cdi_edits *e, struct gerr *err)
{
	for (size_t i = 0; i < e->env.n; i++)
		strv_add(&a->res->env, xstrdup(e->env.v[i]));
	for (size_t i = 0; i < e->nnodes; i++)
		if (apply_node(a, &e->nodes[i], err) < 0)
			return -1;
	for (size_t i = 0; i < e->nmounts; i++)
		if (apply_mount(a, &e->mounts[i], err) < 0)
			return -1;
	for (size_t i = 0; i < e->nhooks; i++)
		if (apply_hook(a, &e->hooks[i], err) < 0)
			return -1;
	return 0;
}

/* The spec defining kind=name in the highest-priority directory that has
 * it; two files of that directory defining it is a conflict. */
static int resolve(const struct specs *ss, const char *q, const char *kind, const char *name,
		   const struct loaded **spec, const struct cdi_device **dev, struct gerr *err)
{
	*spec = NULL;
	for (size_t i = 0; i < ss->n; i++) {
		const struct loaded *l = &ss->v[i];
		if (!l->ok || strcmp(l->spec.kind, kind))
			continue;
		for (size_t j = 0; j < l->spec.ndevs; j++) {
			if (strcmp(l->spec.devs[j].name, name))
				continue;
			if (*spec && (*spec)->prio == l->prio)
				return gerr_set(err, 0, "CDI device %s is defined in both %s and %s", q, (*spec)->file,
						l->file);
			*spec = l;
			*dev = &l->spec.devs[j];
		}
	}
	if (*spec)
		return 0;
	/* A broken spec may be where it was meant to be: say so first. */
	for (size_t i = 0; i < ss->n; i++)
		if (!ss->v[i].ok)
			return gerr_set(err, 0, "CDI spec %s: %s", ss->v[i].file, ss->v[i].err.msg);
	struct strv names = {0};
	struct sbuf b = {0};
	cdi_known_names(ss, &names);
	for (size_t i = 0; i < names.n; i++)
		sbuf_printf(&b, "%s%s", i ? ", " : "", names.v[i]);
	gerr_set(err, 0, "unknown CDI device %s (known: %s)", q, names.n ? b.s : "none");
	strv_free(&names);
	sbuf_free(&b);
	return -1;
}

/* Resolve each requested device in the spec dirs and append its edits to
 * the plan: device nodes and mounts as binds from the host, create-symlinks
 * hooks as symlink ops, update-ldcache as ldconfig directories; other hooks
 * are skipped with a warning (never run).  Returns 0, or -1 with err
 * (unknown device, listing the known ones; a broken spec; a node that is
 * not the device the spec says; a mount option gpurun cannot honour; run
 * as root, a spec directory or spec someone else could change). */
static int cdi_configure(struct plan *p, char *const *devices, size_t ndevices, const struct strv *dirs,
			 struct cdi_result *res, struct gerr *err)
{
	struct specs ss = {0};
	struct apply a = {.p = p, .res = res};
	const struct loaded **used = xcalloc(ndevices, sizeof *used);
	size_t nused = 0;
	int r = -1;
	memset(res, 0, sizeof *res);
	/* Names first: a typo is reported before any file is read. */
	for (size_t i = 0; i < ndevices; i++) {
		char kind[512];
		const char *name;
		if (cdi_split_name(devices[i], kind, sizeof kind, &name) < 0) {
			gerr_set(err, 0, "--device %s: not a CDI device name (want vendor.com/class=name)", devices[i]);
			goto out;
		}
	}
	if (cdi_load_dirs(dirs, &ss, err) < 0)
		goto out;
	for (size_t i = 0; i < ndevices; i++) {
		char kind[512];
		const char *name;
		const struct loaded *l = NULL;
		const struct cdi_device *d = NULL;
		(void)cdi_split_name(devices[i], kind, sizeof kind, &name);
		if (resolve(&ss, devices[i], kind, name, &l, &d, err) < 0 || cdi_check_stale(l, d, err) < 0)
			goto out;
		a.file = l->file;
		a.dev = devices[i];
		size_t k = 0;
		while (k < nused && used[k] != l)
			k++;
		/* The spec's own edits once, with its first device. */
		if (k == nused) {
			used[nused++] = l;
			if (apply_edits(&a, &l->spec.edits, err) < 0)
				goto out;
		}
		if (apply_edits(&a, &d->edits, err) < 0)
			goto out;
	}
	for (size_t i = 0; i < ss.n; i++)
		if (!ss.v[i].ok)
			warnx_("CDI spec %s ignored: %s", ss.v[i].file, ss.v[i].err.msg);
	if (a.ldirs.n) {
		struct sbuf b = {0};
		for (size_t i = 0; i < a.ldirs.n; i++)
			sbuf_printf(&b, "%s%s", i ? ":" : "", a.ldirs.v[i]);
		res->ldconfig_dirs = b.s;
	} else {
		free(res->compat_driver); /* compat works through the ldconfig step */
		res->compat_driver = NULL;
	}
	r = 0;
out:
	free(used);
	strv_free(&a.done);
	strv_free(&a.warned);
	strv_free(&a.ldirs);
	cdi_specs_free(&ss);
	if (r < 0)
		cdi_result_free(res);
	return r;
}

static void cdi_result_free(struct cdi_result *res)
{
	strv_free(&res->env);
	free(res->ldconfig_dirs);
	free(res->compat_driver);
	memset(res, 0, sizeof *res);
}

/* ---- merging the environment --------------------------------------------- */

/* Set K=V in the NULL-terminated *env of *n entries, replacing an earlier K. */
static void env_put(char ***env, size_t *n, const char *kv)
{
	size_t kl = strcspn(kv, "=");
	for (size_t i = 0; i < *n; i++)
		if (!strncmp((*env)[i], kv, kl) && (*env)[i][kl] == '=') {
			free((*env)[i]);
			(*env)[i] = xstrdup(kv);
			return;
		}
	*env = xrealloc(*env, (*n + 2) * sizeof **env);
	(*env)[(*n)++] = xstrdup(kv);
	(*env)[*n] = NULL;
}

/* Inside a Slurm step, CDI devices are bounded by the allocation as --gpus
 * is (gpu/slurm.c): every GPU node the specs bind (/dev/nvidiaN, major
 * 195) must be one of the step's GPUs.  A spec describes the whole host, so
 * a device outside the allocation is refused rather than narrowed. */
static int cdi_within_slurm(const struct plan *p, size_t first, const char *driver_root, struct gerr *err)
{
	if (!getenv("SLURM_JOB_ID"))
		return 0;
	struct gpu_driver drv = {.rootfd = -1};
	struct gerr e = {0};
	struct slurm_ceiling c;
	int r = 0;
	if (gpu_discover(gpu_default_root(driver_root), &drv, &e) < 0) {
		gpu_driver_free(&drv); /* no driver: no GPU node of the table to bound */
		return 0;
	}
	if (slurm_ceiling_read(&drv, &c, err) < 0)
		r = -1;
	for (size_t i = first; r == 0 && c.active && i < p->n; i++) {
		const struct op *op = &p->v[i];
		if (op->kind != OP_BIND || !(op->flags & OPF_DEVICE) || major(op->rdev) != 195)
			continue;
		for (size_t g = 0; g < drv.ngpus; g++)
			if (drv.gpus[g].minor == minor(op->rdev) && !slurm_ceiling_allows(&c, (unsigned)g))
				r = slurm_outside(&c, "--device", op->dst, err);
	}
	gpu_driver_free(&drv);
	return r;
}

int cdi_inject(struct plan *p, const struct cdi_request *rq, char ***env, char **ldconfig_dirs, char **compat_driver,
	       struct gerr *err)
{
	size_t first = p->n;
	struct strv dirs = {0};
	struct cdi_result cr;
	cdi_spec_dirs(rq->dirs, rq->ndirs, &dirs);
	int r = cdi_configure(p, rq->devices, rq->ndevices, &dirs, &cr, err);
	strv_free(&dirs);
	if (r == 0 && cdi_within_slurm(p, first, rq->driver_root, err) < 0) {
		cdi_result_free(&cr);
		return -1;
	}
	if (r < 0)
		return -1;
	size_t n = 0;
	while ((*env)[n])
		n++;
	/* The spec's env goes over the image's; -e still wins. */
	for (size_t i = 0; i < cr.env.n; i++) {
		size_t kl = strcspn(cr.env.v[i], "=") + 1, j = 0;
		while (j < rq->nuser_env && strncmp(rq->user_env[j], cr.env.v[i], kl))
			j++;
		if (j == rq->nuser_env)
			env_put(env, &n, cr.env.v[i]);
	}
	*ldconfig_dirs = cr.ldconfig_dirs;
	*compat_driver = cr.compat_driver;
	cr.ldconfig_dirs = cr.compat_driver = NULL;
	cdi_result_free(&cr);
	return 0;
}
