/* gpu/slurm.c — the Slurm step's GPU allocation as the ceiling of every GPU
 * selection on this node (docs/slurm.md, "The job's GPUs are the ceiling"): which GPUs the step was given,
 * read from Slurm's own variables and the node's gres.conf, matched to the
 * GPU table by device minor.
 *
 * SLURM_STEP_GPUS (else SLURM_JOB_GPUS) counts the node's gres device
 * files in the order gres.conf lists them, and those follow whatever the
 * administrator wrote (usually the minor), never gpurun's PCI order: so
 * each allocated file is stat()ed and its minor names the GPU.  Within the
 * allocation, indexes count in PCI order from 0, as the step's CUDA
 * programs count them under ConstrainDevices with CUDA_DEVICE_ORDER=
 * PCI_BUS_ID.  Only when SLURMD_NODENAME is this host and gres.conf
 * declares gpu for it; anything gres.conf says that cannot be mapped
 * (AutoDetect, Count without File, MultipleFiles, Include) stops the
 * launch rather than guess.  Consistency, not enforcement: the variables
 * are the user's, Slurm's ConstrainDevices is the boundary.
 *
 * The parsers (index lists, hostlists, gres.conf text) are pure, for the
 * unit tests and fuzz_gres; slurm_ceiling_read() is where the environment
 * and the file system come in. */
#include "gpu_int.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/utsname.h>

#define GRES_CONF_MAX (1 << 20)
#define GRES_FILES_MAX 1024
#define HOSTLIST_MAX 65536 /* names in a gres.conf NodeName= list */

int slurm_parse_indexes(const char *list, unsigned *out, size_t cap, size_t *n)
{
	*n = 0;
	const char *p = list;
	if (!*p)
		return 0;
	for (;;) {
		unsigned long lo, hi;
		size_t d = strspn(p, "0123456789");
		if (!d || d > 6 || parse_decimal(p, d, 999999, &lo) < 0)
			return -1;
		p += d;
		hi = lo;
		if (*p == '-') {
			d = strspn(++p, "0123456789");
			if (!d || d > 6 || parse_decimal(p, d, 999999, &hi) < 0 || hi < lo)
				return -1;
			p += d;
		}
		for (unsigned long v = lo; v <= hi; v++) {
			if (*n >= cap)
				return -1;
			out[(*n)++] = (unsigned)v;
		}
		if (!*p)
			return 0;
		if (*p++ != ',')
			return -1;
	}
}

/* One bracket of a hostlist, "[0-3,7]" at p (after the '['): calls back
 * each number as written with its zero padding, in order.  Returns the
 * character after ']', or NULL when malformed or more than max values. */
typedef int (*range_fn)(const char *num, void *arg);
static const char *each_in_bracket(const char *p, size_t max, range_fn fn, void *arg, int *stop)
{
	size_t count = 0;
	for (;;) {
		unsigned long lo, hi;
		size_t d = strspn(p, "0123456789"), width = d;
		if (!d || d > 9 || parse_decimal(p, d, 999999999, &lo) < 0)
			return NULL;
		p += d;
		hi = lo;
		if (*p == '-') {
			d = strspn(++p, "0123456789");
			if (!d || d > 9 || parse_decimal(p, d, 999999999, &hi) < 0 || hi < lo)
				return NULL;
			p += d;
		}
		for (unsigned long v = lo; v <= hi && !*stop; v++) {
			char num[16];
			if (++count > max)
				return NULL;
			snprintf(num, sizeof num, "%0*lu", (int)width, v);
			*stop = fn(num, arg);
		}
		if (*p == ']')
			return p + 1;
		if (*p++ != ',')
			return NULL;
	}
}

/* Expand one hostlist element (no top-level commas): "pre[0-3]mid[1,2]post".
 * Every expansion goes to fn in order; fn returning nonzero stops. */
struct expand {
	range_fn fn;
	void *arg;
	const char *rest; /* what follows the bracket being expanded */
	struct sbuf *head;
	size_t max; /* names in all, a bound on the work too */
	size_t total;
	int stop;
	int bad;
};

static void expand_from(struct expand *e, const char *p);

static int expand_one(const char *num, void *arg)
{
	struct expand *e = arg;
	size_t keep = e->head->len;
	const char *rest = e->rest;
	sbuf_puts(e->head, num);
	expand_from(e, rest);
	e->head->len = keep;
	e->head->s[keep] = '\0';
	e->rest = rest;
	return e->stop || e->bad;
}

static void expand_from(struct expand *e, const char *p)
{
	size_t n = strcspn(p, "[");
	size_t keep = e->head->len;
	sbuf_add(e->head, p, n);
	if (!p[n]) {
		if (++e->total > e->max)
			e->bad = 1;
		else if (!e->stop)
			e->stop = e->fn(e->head->s, e->arg);
	} else {
		/* The bracket's end is found first, so that expand_one knows
		 * what follows each number. */
		const char *close = strchr(p + n, ']');
		if (!close) {
			e->bad = 1;
		} else {
			e->rest = close + 1;
			int stop = 0;
			if (!each_in_bracket(p + n + 1, e->max, expand_one, e, &stop) && !e->stop)
				e->bad = 1;
		}
	}
	e->head->len = keep;
	e->head->s[keep] = '\0';
}

/* Each name of a Slurm hostlist ("n[01-04],gpu7", "/dev/nvidia[0-3]"), in
 * order, to fn.  Returns 0, or -1 when malformed or past max names. */
static int hostlist_each(const char *list, size_t max, range_fn fn, void *arg)
{
	struct sbuf head = {0};
	int r = 0;
	size_t total = 0;
	sbuf_puts(&head, "");
	for (const char *p = list; *p && r == 0;) {
		/* A top-level comma ends an element; those inside brackets do not. */
		size_t n = 0;
		for (int depth = 0; p[n] && (depth || p[n] != ','); n++)
			depth += p[n] == '[' ? 1 : p[n] == ']' && depth ? -1 : 0;
		_cleanup_free_ char *elem = xstrndup(p, n);
		struct expand e = {.fn = fn, .arg = arg, .head = &head, .max = max, .total = total};
		if (!*elem || strchr(elem, ' ')) {
			r = -1;
		} else {
			expand_from(&e, elem);
			total = e.total;
			if (e.bad)
				r = -1;
			if (e.stop)
				break;
		}
		p += n + (p[n] == ',');
	}
	sbuf_free(&head);
	return r;
}

struct match_ctx {
	const char *host;
	int found;
};

static int match_found(const char *name, void *arg)
{
	struct match_ctx *m = arg;
	m->found = !strcmp(name, m->host);
	return m->found;
}

int slurm_hostlist_match(const char *list, const char *host)
{
	struct match_ctx m = {host, 0};
	if (hostlist_each(list, HOSTLIST_MAX, match_found, &m) < 0)
		return -1;
	return m.found;
}

static int add_file(const char *name, void *arg)
{
	struct strv *v = arg;
	strv_add(v, xstrdup(name));
	return 0;
}

int slurm_expand_files(const char *value, struct strv *out)
{
	return hostlist_each(value, GRES_FILES_MAX, add_file, out);
}

/* The value of key in one line's words (case-insensitive key), or NULL. */
static const char *word_value(char *const *words, size_t n, const char *key)
{
	size_t kl = strlen(key);
	for (size_t i = 0; i < n; i++)
		if (!strncasecmp(words[i], key, kl) && words[i][kl] == '=')
			return words[i] + kl + 1;
	return NULL;
}

int slurm_gres_parse(const char *text, size_t len, const char *node, struct strv *files, struct gerr *err)
{
	int declared = 0, lineno = 0;
	for (size_t at = 0; at < len;) {
		size_t n = 0;
		while (at + n < len && text[at + n] != '\n')
			n++;
		_cleanup_free_ char *line = xstrndup(text + at, n);
		at += n + 1;
		lineno++;
		if (strlen(line) != n)
			return gerr_set(err, 0, "line %d: a NUL byte", lineno);
		char *hash = strchr(line, '#');
		if (hash)
			*hash = '\0';
		char *words[32];
		size_t nw = 0;
		for (char *save = NULL, *w = strtok_r(line, " \t\r", &save); w; w = strtok_r(NULL, " \t\r", &save)) {
			if (nw == COUNT_OF(words))
				return gerr_set(err, 0, "line %d: too many words", lineno);
			words[nw++] = w;
		}
		if (!nw)
			continue;
		if (!strcasecmp(words[0], "Include"))
			return gerr_set(err, 0, "line %d: Include is not followed by gpurun", lineno);
		const char *nodes = word_value(words, nw, "NodeName");
		if (nodes) {
			int m = slurm_hostlist_match(nodes, node);
			if (m < 0)
				return gerr_set(err, 0, "line %d: NodeName=%.64s: not a host list", lineno, nodes);
			if (!m)
				continue;
		}
		const char *autod = word_value(words, nw, "AutoDetect");
		if (autod && strcasecmp(autod, "off"))
			return gerr_set(err, 0,
					"line %d: AutoDetect=%.32s: the GPUs' device files are not "
					"listed, so the allocation cannot be matched to GPUs",
					lineno, autod);
		const char *name = word_value(words, nw, "Name");
		if (!name || strcasecmp(name, "gpu"))
			continue;
		declared = 1;
		if (word_value(words, nw, "MultipleFiles"))
			return gerr_set(err, 0,
					"line %d: MultipleFiles: one GPU of several device files "
					"cannot be matched to a GPU",
					lineno);
		const char *file = word_value(words, nw, "File");
		if (!file)
			file = word_value(words, nw, "Files");
		if (!file || !*file)
			return gerr_set(err, 0,
					"line %d: Name=gpu without File=: the GPUs' device files "
					"are not listed, so the allocation cannot be matched to GPUs",
					lineno);
		size_t before = files->n;
		if (slurm_expand_files(file, files) < 0 || files->n > GRES_FILES_MAX)
			return gerr_set(err, 0, "line %d: File=%.64s: not a device file list", lineno, file);
		const char *count = word_value(words, nw, "Count");
		unsigned long c;
		if (count && (parse_decimal(count, strlen(count), GRES_FILES_MAX, &c) < 0 || c != files->n - before))
			return gerr_set(err, 0, "line %d: Count=%.32s but File= names %zu device file%s", lineno, count,
					files->n - before, files->n - before == 1 ? "" : "s");
	}
	return declared;
}

int slurm_short_name(const char *name, char *out, size_t cap)
{
	size_t n = strcspn(name, ".");
	if (!n || n >= cap)
		return -1;
	memcpy(out, name, n);
	out[n] = '\0';
	return 0;
}

static int by_index(const void *a, const void *b)
{
	unsigned x = *(const unsigned *)a, y = *(const unsigned *)b;
	return x < y ? -1 : x > y;
}

int slurm_ceiling_read(const struct gpu_driver *drv, struct slurm_ceiling *c, struct gerr *err)
{
	memset(c, 0, sizeof *c);
	const char *nodename = getenv("SLURMD_NODENAME"), *job = getenv("SLURM_JOB_ID");
	struct utsname u;
	char host[256], snode[256];
	if (!nodename || !*nodename || !job || !*job)
		return 0;
	if (uname(&u) < 0)
		return gerr_set(err, errno, "uname");
	/* Another node's variables (an ssh from inside a job, a copied
	 * environment) say nothing about this node's GPUs. */
	if (slurm_short_name(u.nodename, host, sizeof host) < 0 ||
	    slurm_short_name(nodename, snode, sizeof snode) < 0 || strcmp(host, snode))
		return 0;

	const char *conf = getenv("SLURM_CONF");
	_cleanup_free_ char *path = NULL;
	if (conf && *conf && strchr(conf, '/'))
		path = xasprintf("%.*s/gres.conf", (int)(strrchr(conf, '/') - conf), conf);
	else
		path = xstrdup("/etc/slurm/gres.conf");
	size_t len;
	struct gerr why = {0};
	/* Followed if a link (configless Slurm and shared configs link it);
	 * only a regular file is read, so a FIFO cannot hang the launch. */
	_cleanup_fd_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	struct stat fst;
	if (fd < 0 && errno == ENOENT)
		return 0; /* no gres on this node: nothing changes */
	if (fd < 0 || fstat(fd, &fst) < 0)
		return gerr_set(err, errno, "Slurm step on %s: open %s", snode, path);
	if (!S_ISREG(fst.st_mode))
		return gerr_set(err, 0, "Slurm step on %s: %s: not a regular file", snode, path);
	_cleanup_free_ char *text = read_fd_max(fd, path, GRES_CONF_MAX, &len, &why);
	if (!text)
		return gerr_set(err, 0, "Slurm step on %s: %s", snode, why.msg);
	struct strv files = {0};
	int declared = slurm_gres_parse(text, len, nodename, &files, &why);
	if (declared <= 0) {
		strv_free(&files);
		if (declared < 0)
			return gerr_set(err, 0, "Slurm step on %s: %s: %s", snode, path, why.msg);
		return 0;
	}

	const char *var = "SLURM_STEP_GPUS", *list = getenv(var);
	if (!list) {
		var = "SLURM_JOB_GPUS";
		list = getenv(var);
	}
	unsigned idx[GPU_MAX];
	size_t nidx = 0;
	if (list && slurm_parse_indexes(list, idx, COUNT_OF(idx), &nidx) < 0) {
		strv_free(&files);
		return gerr_set(err, 0, "Slurm step on %s: %s=%.64s: not a list of GPU indexes", snode, var, list);
	}
	c->active = 1;
	struct sbuf d = {0};
	sbuf_puts(&d, "Slurm job ");
	sbuf_showquote(&d, job);
	sbuf_puts(&d, " on node ");
	sbuf_showquote(&d, snode);
	if (list) {
		sbuf_printf(&d, ": %s=", var);
		sbuf_showquote(&d, list);
	} else {
		sbuf_puts(&d, ": no GPU allocated (no SLURM_STEP_GPUS or SLURM_JOB_GPUS)");
	}
	sbuf_puts(&d, " of ");
	sbuf_showquote(&d, path);
	int r = 0;
	for (size_t i = 0; i < nidx && r == 0; i++) {
		struct stat st;
		if (idx[i] >= files.n) {
			r = gerr_set(err, 0,
				     "Slurm step on %s: %s=%.64s names GPU %u, but %s lists %zu GPU "
				     "device file%s for this node",
				     snode, var, list, idx[i], path, files.n, files.n == 1 ? "" : "s");
			break;
		}
		const char *f = files.v[idx[i]];
		if (stat(f, &st) < 0) {
			r = gerr_set(err, errno, "Slurm step on %s: gres.conf's device file %s", snode, f);
			break;
		}
		if (!S_ISCHR(st.st_mode) || major(st.st_rdev) != NV_MAJOR) {
			r = gerr_set(err, 0,
				     "Slurm step on %s: gres.conf's device file %s is not an NVIDIA "
				     "GPU node (character device of major %d)",
				     snode, f, NV_MAJOR);
			break;
		}
		size_t g = 0;
		while (g < drv->ngpus && drv->gpus[g].minor != minor(st.st_rdev))
			g++;
		if (g == drv->ngpus) {
			r = gerr_set(err, 0,
				     "Slurm step on %s: gres.conf's device file %s is minor %u, "
				     "which no GPU under %s has",
				     snode, f, minor(st.st_rdev), drv->rootpath[0] ? drv->rootpath : "/");
			break;
		}
		int dup = 0;
		for (size_t k = 0; k < c->n; k++)
			dup |= c->gpu[k] == g;
		if (!dup)
			c->gpu[c->n++] = (unsigned)g;
		sbuf_printf(&d, "%s", i ? ", " : " -> ");
		sbuf_showquote(&d, f);
		sbuf_printf(&d, " = GPU %zu", g);
	}
	strv_free(&files);
	if (r == 0) {
		qsort(c->gpu, c->n, sizeof c->gpu[0], by_index);
		snprintf(c->from, sizeof c->from, "%s", d.s);
		if (d.len >= sizeof c->from)
			memcpy(c->from + sizeof c->from - 4, "...", 4);
	}
	sbuf_free(&d);
	return r;
}

int slurm_ceiling_allows(const struct slurm_ceiling *c, unsigned gpu)
{
	if (!c->active)
		return 1;
	for (size_t k = 0; k < c->n; k++)
		if (c->gpu[k] == gpu)
			return 1;
	return 0;
}

int slurm_ceiling_item(const struct slurm_ceiling *c, const char *item, char *buf, size_t cap)
{
	/* <gpu>:<mig> counts its GPU within the allocation too. */
	size_t digits = strspn(item, "0123456789");
	unsigned long k;
	if (!c->active || !digits || item[digits] != ':' || digits > 4 || parse_decimal(item, digits, 9999, &k) < 0)
		return snprintf(buf, cap, "%s", item) < (int)cap ? 0 : -1;
	if (k >= c->n)
		return -1;
	return snprintf(buf, cap, "%u%s", c->gpu[k], item + digits) < (int)cap ? 0 : -1;
}

int slurm_outside(const struct slurm_ceiling *c, const char *what, const char *item, struct gerr *err)
{
	return gerr_set(err, 0, "%s: device %.64s is outside this Slurm step's %zu GPU%s (%s)", what, item, c->n,
			c->n == 1 ? "" : "s", c->from);
}

int slurm_resolve(const struct gpu_request *rq, const struct gpu_driver *drv, const struct slurm_ceiling *c,
		  const char *what, struct gpu_selection *sel, struct gerr *err)
{
	/* The allocated GPUs as a table of their own, so that indexes, UUIDs
	 * and bus ids resolve against them only. */
	struct gpu_dev *sub = xcalloc(c->n ? c->n : 1, sizeof *sub);
	for (size_t k = 0; k < c->n; k++)
		sub[k] = drv->gpus[c->gpu[k]];
	struct gpu_selection within;
	int r = 0;
	/* An item that names no allocated GPU gets one line saying so, not
	 * "unknown device": it may well be one of the node's other GPUs. */
	for (size_t i = 0; i < rq->items.n && rq->kind == SEL_SOME && !rq->all && r == 0; i++) {
		char *item = rq->items.v[i];
		struct gpu_request one = {.kind = SEL_SOME, .count = -1, .items = {&item, 1}};
		struct gerr ignore = {0};
		if (!gpu_item_is_mig(item) && gpu_request_resolve(&one, sub, c->n, 0, what, "", &within, &ignore) < 0)
			r = slurm_outside(c, what, item, err);
	}
	_cleanup_free_ char *where = xasprintf("this Slurm step's allocation (%s)", c->from);
	if (r == 0)
		r = gpu_request_resolve(rq, sub, c->n, 0, what, where, &within, err);
	free(sub);
	if (r < 0)
		return -1;
	memset(sel, 0, sizeof *sel);
	sel->kind = within.kind;
	for (size_t k = 0; k < c->n; k++)
		sel->mask[c->gpu[k]] = within.mask[k];
	return 0;
}
