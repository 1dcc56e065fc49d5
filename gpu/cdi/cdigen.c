/* gpu/cdi/cdigen.c — `gpurun cdi generate`: a CDI spec for this host's NVIDIA
 * driver, in the shape `nvidia-ctk cdi generate` writes, built from the
 * same discovery GPU injection uses (gpu_discover, inj_collect), so that
 * `--device nvidia.com/gpu=0` with it injects what `--gpus 0 --caps all`
 * injects (the nodes, binaries, libraries, firmware and IPC paths; not
 * the /proc/driver/nvidia mask, which CDI cannot express).
 *
 * The spec: kind nvidia.com/gpu; one device per GPU by index ("0") and by
 * UUID ("GPU-..."), and "all"; the GPU nodes in the devices, everything
 * else in the spec-wide containerEdits: NVIDIA_VISIBLE_DEVICES=void (so a
 * legacy hook does not inject a second time), the control nodes, the
 * nvidia-cdi-hook hooks (create-symlinks for the SONAME and -lcuda links,
 * enable-cuda-compat, update-ldcache over the library directories) and one
 * bind mount per file, hostPath in the driver root, with nvidia-ctk's
 * ro,nosuid,nodev,rbind,rprivate.  containerPath is the path relative to
 * the driver root, but for libraries: there it is the directory the root's
 * loader cache names for them (its SONAME link's, not the file's: on
 * Debian the files are in nvidia/current, which no loader searches), plus
 * what --gpus puts below $LIBDIR (vdpau/), so that libGLX_indirect.so.0,
 * the VDPAU driver and the GBM backend are where their loaders look.
 * The document is built as a jansson tree and written as JSON, or as YAML
 * in nvidia-ctk's block style with every string double-quoted (a JSON
 * string is a valid YAML double-quoted scalar). */
#include "cdi.h"
#include "../gpu_int.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CDI_GEN_VERSION "0.5.0" /* device names starting with a digit need 0.5.0 */
#define HOOK_PATH "/usr/bin/nvidia-cdi-hook"

static json_t *str(const char *s)
{
	return json_string(s);
}

static json_t *node_entry(const struct gpu_driver *drv, const char *path)
{
	json_t *n = json_object();
	json_object_set_new(n, "path", str(path));
	if (drv->rootpath[0]) {
		char *host = xasprintf("%s%s", drv->rootpath, path);
		json_object_set_new(n, "hostPath", str(host));
		free(host);
	}
	return n;
}

static json_t *mount_entry(const char *host, const char *ctr, int ipc)
{
	static const char *const file_opts[] = {"ro", "nosuid", "nodev", "rbind", "rprivate"};
	/* IPC sockets and the MPS directory stay writable, as --gpus binds them. */
	static const char *const ipc_opts[] = {"rw", "nosuid", "nodev", "noexec", "bind", "rprivate"};
	json_t *m = json_object(), *o = json_array();
	json_object_set_new(m, "hostPath", str(host));
	json_object_set_new(m, "containerPath", str(ctr));
	for (size_t i = 0; i < (ipc ? COUNT_OF(ipc_opts) : COUNT_OF(file_opts)); i++)
		json_array_append_new(o, str(ipc ? ipc_opts[i] : file_opts[i]));
	json_object_set_new(m, "options", o);
	return m;
}

static json_t *hook(json_t *args)
{
	json_t *h = json_object();
	json_object_set_new(h, "hookName", str("createContainer"));
	json_object_set_new(h, "path", str(HOOK_PATH));
	json_object_set_new(h, "args", args);
	return h;
}

/* A path inside the driver root, from the host path of something in it. */
static const char *in_root(const struct gpu_driver *drv, const char *host)
{
	size_t n = strlen(drv->rootpath);
	return strncmp(host, drv->rootpath, n) ? host : host + n;
}

static void add_link(json_t *args, const char *target, const char *dir, const char *name)
{
	char *v = xasprintf("%s::%s/%s", target, dir, name);
	json_array_append_new(args, str("--link"));
	json_array_append_new(args, str(v));
	free(v);
}

static const struct inj_file *lib_with(const struct inj_set *s, const char *prefix)
{
	for (size_t i = 0; i < s->nlibs; i++)
		if (!strncmp(strrchr(s->libs[i].src, '/') + 1, prefix, strlen(prefix)))
			return &s->libs[i];
	return NULL;
}

/* Where a library goes in the container (see the top): its dst below
 * $LIBDIR, under the directory the cache names for its SONAME, or under
 * libdir for one the cache does not know. */
static char *lib_ctr_path(const struct gpu_driver *drv, const struct inj_file *f, const char *libdir)
{
	const char *rest = f->dst + strlen(LIBDIR_VAR);
	if (strncmp(f->dst, LIBDIR_VAR "/", strlen(LIBDIR_VAR) + 1))
		return xstrdup(in_root(drv, f->src));
	_cleanup_free_ char *dir = strchr(rest + 1, '/') ? NULL : drv_lib_dir(drv, f->soname, 64);
	return xasprintf("%s%s", dir ? dir : libdir, rest);
}

static char *dir_of(const char *path)
{
	return xstrndup(path, (size_t)(strrchr(path, '/') - path));
}

static json_t *build(const struct gpu_driver *drv, const struct inj_set *s)
{
	json_t *spec = json_object(), *devs = json_array(), *edits = json_object();
	json_object_set_new(spec, "cdiVersion", str(CDI_GEN_VERSION));
	json_object_set_new(spec, "kind", str("nvidia.com/gpu"));

	/* Devices: by index, by UUID, all. */
	json_t *all_nodes = json_array();
	for (int byuuid = 0; byuuid < 2; byuuid++)
		for (size_t g = 0; g < s->ngpus; g++) {
			const struct gpu_dev *gpu = s->gpus[g];
			char name[96], path[32];
			if (byuuid && !gpu->uuid[0])
				continue;
			if (byuuid)
				snprintf(name, sizeof name, "%s", gpu->uuid);
			else
				snprintf(name, sizeof name, "%u", gpu->index);
			snprintf(path, sizeof path, "/dev/nvidia%u", gpu->minor);
			json_t *d = json_object(), *e = json_object(), *nodes = json_array();
			json_array_append_new(nodes, node_entry(drv, path));
			if (!byuuid)
				json_array_append_new(all_nodes, node_entry(drv, path));
			json_object_set_new(e, "deviceNodes", nodes);
			json_object_set_new(d, "name", str(name));
			json_object_set_new(d, "containerEdits", e);
			json_array_append_new(devs, d);
		}
	/* MIG devices, as nvidia-ctk names them: <gpu>:<mig> and, when NVML
	 * gave them, their MIG-<uuid>; the parent's node and the two
	 * nvidia-caps nodes of its GPU and compute instance access files. */
	struct strv in_all = {0}; /* the nvidia-caps nodes "all" has, once each */
	for (int byuuid = 0; byuuid < 2 && drv->caps_major; byuuid++)
		for (size_t m = 0; m < drv->nmigs; m++) {
			const struct mig_dev *mig = &drv->migs[m];
			const struct gpu_dev *gpu = &drv->gpus[mig->gpu];
			char name[112], path[64];
			if (byuuid && !mig->uuid[0])
				continue;
			if (byuuid)
				snprintf(name, sizeof name, "%s", mig->uuid);
			else
				snprintf(name, sizeof name, "%u:%u", gpu->index, mig->index);
			json_t *d = json_object(), *e = json_object(), *nodes = json_array();
			snprintf(path, sizeof path, "/dev/nvidia%u", gpu->minor);
			json_array_append_new(nodes, node_entry(drv, path));
			for (int ci = 0; ci < 2; ci++) {
				snprintf(path, sizeof path, "/dev/nvidia-caps/nvidia-cap%u",
					 ci ? mig->ci_minor : mig->gi_minor);
				json_array_append_new(nodes, node_entry(drv, path));
				size_t k = 0;
				while (k < in_all.n && strcmp(in_all.v[k], path))
					k++;
				if (!byuuid && k == in_all.n) {
					json_array_append_new(all_nodes, node_entry(drv, path));
					strv_add(&in_all, xstrdup(path));
				}
			}
			json_object_set_new(e, "deviceNodes", nodes);
			json_object_set_new(d, "name", str(name));
			json_object_set_new(d, "containerEdits", e);
			json_array_append_new(devs, d);
		}
	strv_free(&in_all);
	json_t *all = json_object(), *all_edits = json_object();
	json_object_set_new(all_edits, "deviceNodes", all_nodes);
	json_object_set_new(all, "name", str("all"));
	json_object_set_new(all, "containerEdits", all_edits);
	json_array_append_new(devs, all);
	json_object_set_new(spec, "devices", devs);

	/* What every device brings. */
	json_t *env = json_array(), *nodes = json_array(), *hooks = json_array(), *mounts = json_array();
	json_array_append_new(env, str("NVIDIA_VISIBLE_DEVICES=void"));
	for (size_t i = 0; i < s->ndevs; i++)
		if (!s->devs[i].gpu)
			json_array_append_new(nodes, node_entry(drv, s->devs[i].dst));

	json_t *links = json_array(), *folders = json_array();
	json_array_append_new(links, str("nvidia-cdi-hook"));
	json_array_append_new(links, str("create-symlinks"));
	struct strv dirs = {0}, ctr = {0};
	_cleanup_free_ char *libdir = s->nlibs ? drv_lib_dir(drv, s->libs[0].soname, 64) : NULL;
	if (!libdir && s->nlibs)
		libdir = dir_of(in_root(drv, s->libs[0].src));
	for (size_t i = 0; i < s->nlibs; i++) {
		strv_add(&ctr, lib_ctr_path(drv, &s->libs[i], libdir));
		const char *base = strrchr(s->libs[i].src, '/') + 1;
		char *dir = dir_of(ctr.v[i]);
		size_t k = 0;
		while (k < dirs.n && strcmp(dirs.v[k], dir))
			k++;
		if (k == dirs.n)
			strv_add(&dirs, xstrdup(dir));
		const char *so = s->libs[i].soname;
		if (so && strcmp(so, base) && !strchr(so, '/'))
			add_link(links, base, dir, so);
		free(dir);
	}
	/* The three links nvidia-container-cli adds beyond the SONAMEs. */
	static const struct {
		const char *prefix, *target, *name;
	} extra[] = {{"libcuda.so.", "libcuda.so.1", "libcuda.so"},
		     {"libGLX_nvidia.so.", NULL, "libGLX_indirect.so.0"},
		     {"libnvidia-opticalflow.so.", "libnvidia-opticalflow.so.1", "libnvidia-opticalflow.so"}};
	for (size_t i = 0; i < COUNT_OF(extra); i++) {
		const struct inj_file *f = lib_with(s, extra[i].prefix);
		if (!f)
			continue;
		char *dir = dir_of(ctr.v[f - s->libs]);
		add_link(links, extra[i].target ? extra[i].target : strrchr(f->src, '/') + 1, dir, extra[i].name);
		free(dir);
	}
	/* And those no SONAME names (the GBM backend), below the same directory. */
	for (size_t i = 0; i < s->nlinks && libdir; i++) {
		const char *rest = s->links[i].dst + strlen(LIBDIR_VAR);
		if (strncmp(s->links[i].dst, LIBDIR_VAR "/", strlen(LIBDIR_VAR) + 1))
			continue;
		char *v = xasprintf("%s::%s%s", s->links[i].src, libdir, rest);
		json_array_append_new(links, str("--link"));
		json_array_append_new(links, str(v));
		free(v);
	}
	if (json_array_size(links) > 2)
		json_array_append_new(hooks, hook(links));
	else
		json_decref(links);
	if (lib_with(s, "libcuda.so.")) {
		char *v = xasprintf("--host-driver-version=%s", drv->version);
		json_t *args = json_array();
		json_array_append_new(args, str("nvidia-cdi-hook"));
		json_array_append_new(args, str("enable-cuda-compat"));
		json_array_append_new(args, str(v));
		json_array_append_new(hooks, hook(args));
		free(v);
	}
	if (dirs.n) {
		json_array_append_new(folders, str("nvidia-cdi-hook"));
		json_array_append_new(folders, str("update-ldcache"));
		for (size_t i = 0; i < dirs.n; i++) {
			json_array_append_new(folders, str("--folder"));
			json_array_append_new(folders, str(dirs.v[i]));
		}
		json_array_append_new(hooks, hook(folders));
	} else
		json_decref(folders);
	strv_free(&dirs);

	for (size_t i = 0; i < s->nlibs; i++)
		json_array_append_new(mounts, mount_entry(s->libs[i].src, ctr.v[i], 0));
	strv_free(&ctr);
	for (size_t i = 0; i < s->nbins; i++)
		json_array_append_new(mounts, mount_entry(s->bins[i].src, s->bins[i].dst, 0));
	for (size_t i = 0; i < s->nfirmware; i++)
		json_array_append_new(mounts, mount_entry(s->firmware[i].src, s->firmware[i].dst, 0));
	for (size_t i = 0; i < s->nipcs; i++)
		json_array_append_new(mounts, mount_entry(s->ipcs[i].src, s->ipcs[i].dst, 1));
	/* Graphics: the Vulkan ICD, EGL vendor and platform files, at their
	 * host paths as nvidia-ctk mounts them. */
	for (size_t i = 0; i < s->nconfigs; i++)
		json_array_append_new(mounts, mount_entry(s->configs[i].src, s->configs[i].dst, 0));

	json_object_set_new(edits, "env", env);
	json_object_set_new(edits, "deviceNodes", nodes);
	json_object_set_new(edits, "hooks", hooks);
	json_object_set_new(edits, "mounts", mounts);
	json_object_set_new(spec, "containerEdits", edits);
	return spec;
}

/* ---- YAML, block style ----------------------------------------------------- */

static void yaml_quoted(struct sbuf *b, json_t *v)
{
	char *q = json_dumps(v, JSON_ENCODE_ANY);
	sbuf_puts(b, q ? q : "\"\"");
	free(q);
}

static void yaml_map(struct sbuf *b, json_t *obj, int indent, int inline_first);

/* key's value after "key:", at indent for its own children. */
static void yaml_value(struct sbuf *b, json_t *v, int indent)
{
	if (json_is_object(v)) {
		sbuf_puts(b, "\n");
		yaml_map(b, v, indent + 2, 0);
	} else if (json_is_array(v)) {
		if (!json_array_size(v)) {
			sbuf_puts(b, " []\n");
			return;
		}
		sbuf_puts(b, "\n");
		size_t i;
		json_t *it;
		json_array_foreach(v, i, it)
		{
			sbuf_printf(b, "%*s- ", indent, "");
			if (json_is_object(it))
				yaml_map(b, it, indent + 2, 1);
			else {
				yaml_quoted(b, it);
				sbuf_puts(b, "\n");
			}
		}
	} else {
		sbuf_puts(b, " ");
		yaml_quoted(b, v);
		sbuf_puts(b, "\n");
	}
}

static void yaml_map(struct sbuf *b, json_t *obj, int indent, int inline_first)
{
	const char *k;
	json_t *v;
	int first = 1;
	json_object_foreach(obj, k, v)
	{
		if (!(first && inline_first))
			sbuf_printf(b, "%*s", indent, "");
		first = 0;
		sbuf_printf(b, "%s:", k);
		yaml_value(b, v, indent);
	}
}

int cdi_generate(const struct cdi_gen_opts *o, struct gerr *err)
{
	const char *fmt = o->format;
	int to_stdout = !o->output || !strcmp(o->output, "-");
	if (!fmt) {
		size_t n = to_stdout ? 0 : strlen(o->output);
		fmt = n > 5 && !strcmp(o->output + n - 5, ".json") ? "json" : "yaml";
	}
	if (strcmp(fmt, "yaml") && strcmp(fmt, "json"))
		return gerr_set(err, 0, "--format: invalid value '%s' (expected yaml or json)", fmt);

	struct gpu_driver drv = {.rootfd = -1};
	struct inj_set set = {0};
	struct gpu_selection sel = {.kind = SEL_SOME};
	int r = -1;
	if (gpu_discover(gpu_default_root(o->driver_root), &drv, err) < 0)
		goto out;
	for (size_t i = 0; i < drv.ngpus && i < GPU_MAX; i++)
		sel.mask[i] = 1;
	if (mig_discover(&drv, err) < 0)
		goto out;
	if (drv.nmigs) {
		/* MIG UUIDs are NVML's only; without them the <gpu>:<mig> names
		 * are still written. */
		struct gerr why = {0};
		if (nvml_mig_uuids(&drv, &why) < 0)
			warnx_("MIG devices written without their UUIDs: %s", why.msg);
	}
	if (inj_collect(&drv, &sel, caps_inject_flags(DRVCAP_ALL), &set, err) < 0)
		goto out;
	json_t *spec = build(&drv, &set);
	struct sbuf b = {0};
	if (!strcmp(fmt, "json")) {
		char *s = json_dumps(spec, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
		sbuf_puts(&b, s ? s : "");
		sbuf_puts(&b, "\n");
		free(s);
	} else {
		sbuf_puts(&b, "---\n");
		yaml_map(&b, spec, 0, 0);
	}
	json_decref(spec);
	if (to_stdout) {
		r = write_all(STDOUT_FILENO, b.s, b.len) < 0 ? gerr_set(err, errno, "write the spec") : 0;
	} else {
		int fd = open(o->output, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
		if (fd < 0)
			r = gerr_set(err, errno, "create %s", o->output);
		else if (write_all(fd, b.s, b.len) < 0)
			r = gerr_set(err, errno, "write %s", o->output);
		else
			r = 0;
		if (fd >= 0 && close(fd) < 0 && r == 0)
			r = gerr_set(err, errno, "write %s", o->output);
	}
	sbuf_free(&b);
out:
	inj_free(&set);
	gpu_driver_free(&drv);
	return r;
}
