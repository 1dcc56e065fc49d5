/* gpu/cdi/cdistale.c — CDI specs the host has moved away from: a spec written
 * by `gpurun cdi generate` or `nvidia-ctk cdi generate` names the driver's
 * files by version (libcuda.so.550.54.14) and each GPU's node, so a driver
 * upgrade or a GPU gone leaves it naming paths that are no longer there.
 *
 * A launch with `--device` refuses such a spec in one line naming it and
 * the command that writes it again (the toolkit's most common complaint is
 * a bare "no such file" from deep inside the runtime), and `gpurun doctor`
 * fails on each one in the spec directories.  Only what a launch would
 * bind is checked: device nodes and mount sources; hooks are never run. */
#include "cdi_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* The host paths of e that do not exist: counted in *n, the first kept. */
static void missing_in(const struct cdi_edits *e, size_t *n, const char **first)
{
	struct stat st;
	for (size_t i = 0; i < e->nnodes; i++) {
		const char *host = e->nodes[i].host_path ? e->nodes[i].host_path : e->nodes[i].path;
		if (stat(host, &st) < 0 && errno == ENOENT && !(*n)++)
			*first = host;
	}
	for (size_t i = 0; i < e->nmounts; i++)
		if (stat(e->mounts[i].host_path, &st) < 0 && errno == ENOENT && !(*n)++)
			*first = e->mounts[i].host_path;
}

/* "CDI spec FILE is stale: ..." for the first missing path of n. */
static char *say_stale(const char *file, const char *first, size_t n)
{
	struct sbuf cmd = {0}, more = {0};
	sbuf_shquote(&cmd, file);
	if (n > 1)
		sbuf_printf(&more, " and %zu other path%s", n - 1, n == 2 ? "" : "s");
	char *msg = xasprintf("CDI spec %s is stale: it names %s%s, which this host no longer has (the driver "
			      "was upgraded or a GPU is gone since it was written); regenerate it: gpurun cdi "
			      "generate --output %s",
			      file, first, more.len ? more.s : "", cmd.s);
	sbuf_free(&cmd);
	sbuf_free(&more);
	return msg;
}

int cdi_check_stale(const struct loaded *l, const struct cdi_device *d, struct gerr *err)
{
	size_t n = 0;
	const char *first = NULL;
	missing_in(&l->spec.edits, &n, &first);
	missing_in(&d->edits, &n, &first);
	if (!n)
		return 0;
	_cleanup_free_ char *msg = say_stale(l->file, first, n);
	return gerr_set(err, 0, "%s", msg);
}

void cdi_doctor(struct checks *ck)
{
	struct strv dirs = {0};
	struct specs ss = {0};
	struct gerr e = {0};
	cdi_spec_dirs(NULL, 0, &dirs);
	struct sbuf where = {0};
	for (size_t i = 0; i < dirs.n; i++)
		sbuf_printf(&where, "%s%s", i ? ":" : "", dirs.v[i]);
	if (cdi_load_dirs(&dirs, &ss, &e) < 0) {
		check_say(ck, CHECK_FAIL, "CDI specs", "%s", e.msg);
		goto out;
	}
	size_t stale = 0, devices = 0;
	for (size_t i = 0; i < ss.n; i++) {
		const struct loaded *l = &ss.v[i];
		if (!l->ok) {
			check_say(ck, CHECK_WARN, "CDI specs", "%s cannot be used: %s", l->file, l->err.msg);
			continue;
		}
		size_t n = 0;
		const char *first = NULL;
		missing_in(&l->spec.edits, &n, &first);
		for (size_t j = 0; j < l->spec.ndevs; j++)
			missing_in(&l->spec.devs[j].edits, &n, &first);
		devices += l->spec.ndevs;
		if (n) {
			stale++;
			_cleanup_free_ char *msg = say_stale(l->file, first, n);
			check_say(ck, CHECK_FAIL, "CDI specs", "%s", msg);
		}
	}
	if (!ss.n)
		check_say(ck, CHECK_OK, "CDI specs", "none in %s", where.s ? where.s : "");
	else if (!stale)
		check_say(ck, CHECK_OK, "CDI specs",
			  "%zu spec%s in %s, %zu device%s, every node and file they "
			  "name is here",
			  ss.n, ss.n == 1 ? "" : "s", where.s, devices, devices == 1 ? "" : "s");
out:
	sbuf_free(&where);
	cdi_specs_free(&ss);
	strv_free(&dirs);
}
