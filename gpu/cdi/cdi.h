/* gpu/cdi/cdi.h — the Container Device Interface (CDI) as gpurun offers it:
 * spec files (the format docker 25+, podman and Kubernetes read from
 * /etc/cdi and /var/run/cdi) parsed, found, applied as plan ops, and
 * written for this host's NVIDIA driver.  By the file that defines it:
 *   cdiparse.c  the spec as parsed (struct cdi_spec, cdi_device,
 *               cdi_edits, cdi_node, cdi_mount, cdi_hook), cdi_parse,
 *               cdi_spec_free, cdi_split_name; the caps it enforces
 *               (CDI_MAX_FILE, CDI_MAX_ITEMS, CDI_MAX_STRING)
 *   cdidirs.c   cdi_spec_dirs (CDI_DEFAULT_DIRS) and cdi_list (CDI_MAX_FILES)
 *   cdi.c       cdi_inject: resolving `--device vendor.com/class=name`,
 *               turning the chosen devices' container edits into plan
 *               ops, and merging the spec's environment into the
 *               container's (struct cdi_request)
 *   cdigen.c    cdi_generate: a spec the way `nvidia-ctk cdi generate`
 *               writes it (struct cdi_gen_opts)
 *   cdistale.c  cdi_doctor: `gpurun doctor`'s verdict on the specs that
 *               name nodes or files the host no longer has
 *
 * Kept apart from gpu/gpu.h so that GPU injection by --gpus and CDI stay
 * two separate ways in: a launch uses one or the other (gpurun.c refuses
 * both at once). */
#ifndef GPURUN_CDI_H
#define GPURUN_CDI_H

#include <stddef.h>

#include "../../base/base.h"
#include "../../base/plan/plan.h"

/* Caps on what a spec may hold: the parser refuses more rather than
 * spend unbounded memory or time on a hostile file. */
#define CDI_MAX_FILE (1u << 20) /* bytes of one spec file */
#define CDI_MAX_ITEMS 4096      /* devices, and entries of each edit list */
#define CDI_MAX_STRING 4096     /* bytes of one string */
#define CDI_MAX_FILES 256       /* spec files read per directory */
#define CDI_DEFAULT_DIRS "/etc/cdi:/var/run/cdi"

/* ---- cdiparse.c ------------------------------------------------------------ */

struct cdi_node {
	char *path;        /* in the container */
	char *host_path;   /* NULL: the same as path */
	char type;         /* 'c', 'b', 'u', 'p', or 0 when not given */
	long major, minor; /* -1 when not given */
	char *permissions; /* cgroup access "rwm"; not enforceable by a bind, kept for listing */
	int line;          /* where it was written, for messages */
};

struct cdi_mount {
	char *host_path, *container_path, *type; /* type NULL when not given */
	struct strv options;
	int line;
};

struct cdi_hook {
	char *hook_name, *path;
	struct strv args, env;
	int line;
};

struct cdi_edits {
	struct strv env; /* "K=V" */
	struct cdi_node *nodes;
	size_t nnodes;
	struct cdi_mount *mounts;
	size_t nmounts;
	struct cdi_hook *hooks;
	size_t nhooks;
};

struct cdi_device {
	char *name;
	struct cdi_edits edits;
};

struct cdi_spec {
	char *version; /* cdiVersion */
	char *kind;    /* "vendor.com/class" */
	struct cdi_device *devs;
	size_t ndevs;
	struct cdi_edits edits; /* apply when any device of the spec is used */
};

/* Parse one spec (YAML, or JSON, which libyaml reads as YAML) from a
 * buffer.  Strict like the reference: unknown fields, a missing cdiVersion,
 * kind or device list, bad names and relative paths are refused, as are
 * YAML aliases and more than CDI_MAX_* of anything.  Returns 0, or -1 with
 * err ("line N: WHERE: problem"); spec is then empty (free it anyway). */
int cdi_parse(const char *buf, size_t len, struct cdi_spec *spec, struct gerr *err);
void cdi_spec_free(struct cdi_spec *spec);

/* "vendor.com/class=name" -> 0 with the two parts checked, else -1. */
int cdi_split_name(const char *qualified, char *kind, size_t kcap, const char **name);

/* ---- cdidirs.c ------------------------------------------------------------- */

/* The spec directories, lowest priority first: dirs given (--cdi-spec-dir),
 * else GPURUN_CDI_SPEC_DIRS (':' list), else CDI_DEFAULT_DIRS. */
void cdi_spec_dirs(char *const *given, size_t ngiven, struct strv *out);

/* `gpurun cdi list`: every fully-qualified device name in the spec dirs, one
 * a line, with a warning per broken spec; -1 with err when, run as root, a
 * spec directory or spec is not root's alone. */
int cdi_list(const struct strv *dirs, struct gerr *err);

/* ---- cdi.c ----------------------------------------------------------------- */

/* --device as a launch uses it: the spec dirs (dirs given, as
 * cdi_spec_dirs takes them), the devices resolved in them and their edits
 * appended to the plan (device nodes and mounts as binds from the host,
 * create-symlinks hooks as symlink ops, update-ldcache as ldconfig
 * directories; other hooks are skipped with a warning, never run), then the
 * spec's env set over *env (the image's; NULL-terminated, malloc'ed, grown
 * here) except for a key that user_env (-e K=V) sets, since -e wins.  *ldconfig_dirs and
 * *compat_driver get the hooks' (the caller frees them).  The image's
 * NVIDIA_VISIBLE_DEVICES is not read, as with docker's CDI injection. */
struct cdi_request {
	char *const *devices;
	size_t ndevices;
	char *const *dirs;
	size_t ndirs;
	char *const *user_env;
	size_t nuser_env;
	const char *driver_root; /* --driver-root, for the Slurm ceiling's GPU table */
};
int cdi_inject(struct plan *p, const struct cdi_request *rq, char ***env, char **ldconfig_dirs, char **compat_driver,
	       struct gerr *err);

/* ---- cdigen.c -------------------------------------------------------------- */

/* `gpurun cdi generate`: a spec for the NVIDIA driver under driver_root
 * (NULL: GPURUN_DRIVER_ROOT, else "/"), written as YAML or JSON to output
 * (NULL or "-": stdout). */
struct cdi_gen_opts {
	const char *driver_root;
	const char *format; /* "yaml", "json", or NULL: from output's extension, else yaml */
	const char *output;
};
int cdi_generate(const struct cdi_gen_opts *o, struct gerr *err);

/* ---- cdistale.c ------------------------------------------------------------ */

/* `gpurun doctor`: every spec of the default spec directories (see
 * cdi_spec_dirs) whose device nodes or mount sources are gone fails. */
void cdi_doctor(struct checks *ck);

#endif
