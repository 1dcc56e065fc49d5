/* gpu/cdi/cdidirs.c — the CDI spec directories: which ones are read
 * (cdi_spec_dirs), reading every spec in them once the directory and the
 * file are trusted, the device names they define, and `gpurun cdi list`.
 *
 * A spec that fails to parse is kept with its error (struct loaded), so
 * that a launch can name it when the device it asks for is not found.  Run
 * as root, a spec decides what root mounts, so a spec directory or spec
 * that anyone but root could change is refused before it is read
 * (base/trust.c). */
#include "cdi_int.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- the spec directories -------------------------------------------------- */

void cdi_spec_dirs(char *const *given, size_t ngiven, struct strv *out)
{
	for (size_t i = 0; i < ngiven; i++)
		strv_add(out, xstrdup(given[i]));
	if (ngiven)
		return;
	const char *env = getenv("GPURUN_CDI_SPEC_DIRS");
	const char *list = env && *env ? env : CDI_DEFAULT_DIRS;
	for (const char *s = list; *s;) {
		size_t n = strcspn(s, ":");
		if (n)
			strv_add(out, xstrndup(s, n));
		s += n + (s[n] == ':');
	}
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int spec_name(const char *name)
{
	size_t n = strlen(name);
	return name[0] != '.' &&
	       ((n > 5 && !strcmp(name + n - 5, ".json")) || (n > 5 && !strcmp(name + n - 5, ".yaml")));
}

static void load_file(struct specs *ss, const char *dir, const char *name, size_t prio)
{
	ss->v = xrealloc(ss->v, (ss->n + 1) * sizeof *ss->v);
	struct loaded *l = &ss->v[ss->n++];
	memset(l, 0, sizeof *l);
	l->file = xasprintf("%s/%s", dir, name);
	l->prio = prio;
	/* O_NONBLOCK: a FIFO named like a spec must not hang the launch. */
	_cleanup_fd_ int fd = open(l->file, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	struct stat st;
	if (fd < 0) {
		gerr_set(&l->err, errno, "open");
		return;
	}
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		gerr_set(&l->err, 0, "not a regular file");
		return;
	}
	size_t len;
	struct gerr e = {0};
	_cleanup_free_ char *buf = read_fd_max(fd, "the file", CDI_MAX_FILE, &len, &e);
	if (!buf) {
		gerr_set(&l->err, e.errnum, "%s", e.msg);
		return;
	}
	l->ok = cdi_parse(buf, len, &l->spec, &l->err) == 0;
}

/* Every *.json and *.yaml of every directory, in name order per directory.
 * A missing directory is no error (hosts without CDI have none).  Run as
 * root, a spec decides what root mounts: a directory or spec someone else
 * could change is refused (docs/design.md, "Modes"), before anything of it is read. */
int cdi_load_dirs(const struct strv *dirs, struct specs *ss, struct gerr *err)
{
	for (size_t d = 0; d < dirs->n; d++) {
		DIR *dp = opendir(dirs->v[d]);
		if (!dp) {
			if (errno != ENOENT)
				warnx_("cannot read the CDI spec directory %s: %s", dirs->v[d], strerror(errno));
			continue;
		}
		if (trust_path("CDI spec directory", dirs->v[d], err) < 0) {
			closedir(dp);
			return -1;
		}
		struct strv names = {0};
		struct dirent *de;
		while ((de = readdir(dp)))
			if (spec_name(de->d_name) && names.n < CDI_MAX_FILES)
				strv_add(&names, xstrdup(de->d_name));
			else if (spec_name(de->d_name)) {
				warnx_("%s: more than %u spec files; the rest are not read", dirs->v[d], CDI_MAX_FILES);
				break;
			}
		closedir(dp);
		if (names.n)
			qsort(names.v, names.n, sizeof *names.v, cmp_str);
		for (size_t i = 0; i < names.n; i++) {
			_cleanup_free_ char *file = xasprintf("%s/%s", dirs->v[d], names.v[i]);
			if (trust_path("CDI spec", file, err) < 0) {
				strv_free(&names);
				return -1;
			}
			load_file(ss, dirs->v[d], names.v[i], d);
		}
		strv_free(&names);
	}
	return 0;
}

void cdi_specs_free(struct specs *ss)
{
	for (size_t i = 0; i < ss->n; i++) {
		free(ss->v[i].file);
		cdi_spec_free(&ss->v[i].spec);
	}
	free(ss->v);
}

/* "vendor.com/class=name" of every device, sorted, deduplicated. */
void cdi_known_names(const struct specs *ss, struct strv *out)
{
	for (size_t i = 0; i < ss->n; i++)
		for (size_t j = 0; ss->v[i].ok && j < ss->v[i].spec.ndevs; j++)
			strv_add(out, xasprintf("%s=%s", ss->v[i].spec.kind, ss->v[i].spec.devs[j].name));
	if (out->n)
		qsort(out->v, out->n, sizeof *out->v, cmp_str);
	size_t w = 0;
	for (size_t r = 0; r < out->n; r++) {
		if (w && !strcmp(out->v[w - 1], out->v[r])) {
			free(out->v[r]);
			continue;
		}
		out->v[w++] = out->v[r];
	}
	out->n = w;
	if (out->v)
		out->v[w] = NULL;
}

int cdi_list(const struct strv *dirs, struct gerr *err)
{
	struct specs ss = {0};
	struct strv names = {0};
	if (cdi_load_dirs(dirs, &ss, err) < 0) {
		cdi_specs_free(&ss);
		return -1;
	}
	for (size_t i = 0; i < ss.n; i++)
		if (!ss.v[i].ok)
			warnx_("CDI spec %s: %s", ss.v[i].file, ss.v[i].err.msg);
	cdi_known_names(&ss, &names);
	for (size_t i = 0; i < names.n; i++)
		printf("%s\n", names.v[i]);
	strv_free(&names);
	cdi_specs_free(&ss);
	return 0;
}
