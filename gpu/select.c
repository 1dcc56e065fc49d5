/* gpu/select.c — which GPUs a container gets: the --gpus and
 * NVIDIA_VISIBLE_DEVICES spec.
 *
 * Two steps.  gpu_request_parse() is syntax only, so that "void" or an
 * empty spec never triggers driver discovery (a GPU-less host runs as
 * before) and typos are reported even without a driver.  gpu_request_resolve()
 * then matches the items against the GPU table.
 *
 * Forms (the README lists them for users):
 *   all | none | void | ID[,ID...]      a keyword anywhere in the list wins:
 *                                       void, else none, else all;
 *                                       ID = index (PCI bus order, not the
 *                                       minor), GPU-<uuid> (any case, full),
 *                                       PCI bus id (short or 8-digit domain),
 *                                       <gpu>:<mig>, MIG-GPU-<uuid>/<gi>/<ci>
 *                                       or MIG-<uuid> (resolved in mig.c)
 *   docker's CSV: count=N|all, "device=ID[,ID...]", capabilities=...,
 *                 driver=nvidia, options=...
 * A bare number means an index here (`gpurun --gpus 0` is GPU 0), not
 * docker's count. */
#include "gpu_int.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* Parse one hex field of at most `max` digits followed by one of the
 * characters in `stops`, or by the end of the string when stops is "". */
static const char *hex_field(const char *s, size_t max, const char *stops, unsigned *out)
{
	size_t n = 0;
	*out = 0;
	while (n < max && isxdigit((unsigned char)s[n])) {
		char c = (char)tolower((unsigned char)s[n]);
		*out = *out * 16 + (unsigned)(c <= '9' ? c - '0' : c - 'a' + 10);
		n++;
	}
	if (n == 0 || (s[n] ? !strchr(stops, s[n]) : *stops != '\0'))
		return NULL;
	return s + n;
}

int busid_normalize(const char *in, char *out, size_t cap)
{
	unsigned a, b, dev, fn, domain = 0, bus;
	const char *p = hex_field(in, 8, ":", &a);
	if (!p)
		return -1;
	/* Either DOMAIN:BUS:DEV.FN or BUS:DEV.FN. */
	const char *q = hex_field(p + 1, 2, ":.", &b);
	if (!q)
		return -1;
	if (*q == ':') {
		domain = a;
		bus = b;
		q = hex_field(q + 1, 2, ".", &dev);
		if (!q)
			return -1;
	} else {
		if (a > 0xff)
			return -1;
		bus = a;
		dev = b;
	}
	if (!hex_field(q + 1, 1, "", &fn) || dev > 0x1f || fn > 7)
		return -1;
	int w = snprintf(out, cap, "%08x:%02x:%02x.%x", domain, bus, dev, fn);
	return w < 0 || (size_t)w >= cap ? -1 : 0;
}

static char *dup_trimmed(const char *s, size_t n)
{
	while (n && isspace((unsigned char)*s)) {
		s++;
		n--;
	}
	while (n && isspace((unsigned char)s[n - 1]))
		n--;
	char *d = xmalloc(n + 1);
	memcpy(d, s, n);
	d[n] = '\0';
	return d;
}

/* Split on commas outside double quotes, dropping the quotes (docker reads
 * --gpus as one CSV record: '"device=0,2",capabilities=utility'). */
static void split_csv(const char *s, struct strv *out)
{
	struct sbuf f = {0};
	int quoted = 0;
	sbuf_add(&f, "", 0);
	for (;; s++) {
		if (*s == '"') {
			quoted = !quoted;
		} else if ((*s == ',' && !quoted) || !*s) {
			strv_add(out, dup_trimmed(f.s, f.len));
			f.len = 0;
			f.s[0] = '\0';
			if (!*s)
				break;
		} else {
			sbuf_add(&f, s, 1);
		}
	}
	sbuf_free(&f);
}

static void add_items(struct gpu_request *rq, const char *list)
{
	struct strv parts = {0};
	split_csv(list, &parts);
	for (size_t i = 0; i < parts.n; i++) {
		if (*parts.v[i]) {
			strv_add(&rq->items, parts.v[i]);
			parts.v[i] = NULL;
		}
	}
	strv_free(&parts);
}

static void add_cap(struct gpu_request *rq, const char *name)
{
	unsigned c;
	struct gerr ignore = {0};
	/* docker always adds "gpu"; only NVIDIA driver capabilities matter. */
	if (!*name || caps_parse(name, &c, &ignore) < 0 || c == 0)
		return;
	size_t used = strlen(rq->caps);
	snprintf(rq->caps + used, sizeof rq->caps - used, "%s%s", used ? "," : "", name);
}

enum item_kind { ITEM_BAD, ITEM_INDEX, ITEM_UUID, ITEM_BUS, ITEM_MIG };

/* What a device item is, by its syntax alone. */
static enum item_kind classify(const char *item, char *bus, size_t cap)
{
	if (!strncasecmp(item, "GPU-", 4) && item[4])
		return ITEM_UUID;
	if (!strncasecmp(item, "MIG-", 4) && item[4])
		return ITEM_MIG;
	if (strchr(item, '.') && busid_normalize(item, bus, cap) == 0)
		return ITEM_BUS;
	size_t digits = strspn(item, "0123456789");
	if (digits && !item[digits])
		return digits <= 4 ? ITEM_INDEX : ITEM_BAD;
	/* <gpu index>:<MIG index> */
	if (digits && item[digits] == ':' && item[digits + 1] &&
	    strspn(item + digits + 1, "0123456789") == strlen(item + digits + 1))
		return ITEM_MIG;
	return ITEM_BAD;
}

int gpu_item_is_mig(const char *item)
{
	char bus[32];
	return classify(item, bus, sizeof bus) == ITEM_MIG;
}

static int check_items(const struct gpu_request *rq, const char *what, struct gerr *err)
{
	char bus[32];
	for (size_t i = 0; i < rq->items.n; i++) {
		const char *item = rq->items.v[i];
		if (!strcasecmp(item, "all") || !strcmp(item, "none"))
			continue;
		if (classify(item, bus, sizeof bus) == ITEM_BAD)
			return gerr_set(err, 0, "%s: %.64s: not a GPU index, GPU-<uuid>, PCI bus id or MIG device",
					what, item);
	}
	return 0;
}

/* The index of the GPU an item names, or -1. */
static long match_item(const char *item, const struct gpu_dev *gpus, size_t ngpus)
{
	char bus[32];
	switch (classify(item, bus, sizeof bus)) {
	case ITEM_INDEX: {
		unsigned long n = strtoul(item, NULL, 10);
		return n < ngpus ? (long)n : -1;
	}
	case ITEM_UUID:
		for (size_t i = 0; i < ngpus; i++)
			if (gpus[i].uuid[0] && !strcasecmp(gpus[i].uuid, item))
				return (long)i;
		return -1;
	case ITEM_BUS:
		for (size_t i = 0; i < ngpus; i++)
			if (!strcmp(gpus[i].busid, bus))
				return (long)i;
		return -1;
	case ITEM_MIG:
	case ITEM_BAD: break;
	}
	return -1;
}

/* The toolkit's rules for a device list: the keywords win over devices,
 * void over none over all ("none,0" is none); void and none only in lower
 * case, all in any case (nvidia-container-cli compares it so).  1 when
 * void or none decided, which leaves no device to check. */
static int apply_keywords(struct gpu_request *rq)
{
	int none = 0;
	for (size_t i = 0; i < rq->items.n; i++) {
		if (!strcmp(rq->items.v[i], "void")) {
			rq->kind = SEL_VOID;
			return 1;
		}
		none |= !strcmp(rq->items.v[i], "none");
		if (!strcasecmp(rq->items.v[i], "all"))
			rq->all = 1;
	}
	if (none)
		rq->kind = SEL_NONE;
	return none;
}

static int parse_count(const char *v, struct gpu_request *rq, const char *what, struct gerr *err)
{
	char *end;
	if (!strcasecmp(v, "all")) {
		rq->all = 1;
		return 0;
	}
	errno = 0;
	long n = strtol(v, &end, 10);
	if (!*v || *end || n < 0 || n > GPU_MAX || errno)
		return gerr_set(err, 0, "%s: invalid count=%.64s", what, v);
	rq->count = n;
	return 0;
}

/* docker's --gpus CSV.  A bare field continues the list of the key before
 * it, so the unquoted `device=0,2` works as users type it. */
static int parse_docker(const char *spec, const char *what, struct gpu_request *rq, struct gerr *err)
{
	enum { CONT_NONE, CONT_DEVICE, CONT_CAPS } cont = CONT_NONE;
	struct strv fields = {0};
	int r = 0, have_device = 0;
	split_csv(spec, &fields);
	for (size_t i = 0; i < fields.n && r == 0; i++) {
		char *f = fields.v[i], *eq = strchr(f, '=');
		if (!*f)
			continue;
		if (!eq) {
			if (cont == CONT_DEVICE)
				strv_add(&rq->items, xstrdup(f));
			else if (cont == CONT_CAPS)
				add_cap(rq, f);
			else if (!strcasecmp(f, "all"))
				rq->all = 1;
			else
				r = gerr_set(err, 0, "%s: unexpected field \"%.64s\"", what, f);
			continue;
		}
		*eq = '\0';
		const char *v = eq + 1;
		cont = CONT_NONE;
		if (!strcmp(f, "count")) {
			r = parse_count(v, rq, what, err);
		} else if (!strcmp(f, "device")) {
			add_items(rq, v);
			have_device = 1;
			cont = CONT_DEVICE;
		} else if (!strcmp(f, "capabilities")) {
			struct strv caps = {0};
			split_csv(v, &caps);
			for (size_t j = 0; j < caps.n; j++)
				add_cap(rq, caps.v[j]);
			strv_free(&caps);
			cont = CONT_CAPS;
		} else if (!strcmp(f, "driver")) {
			if (*v && strcmp(v, "nvidia"))
				r = gerr_set(err, 0, "%s: unsupported driver \"%.64s\" (only nvidia)", what, v);
		} else if (strcmp(f, "options")) {
			r = gerr_set(err, 0, "%s: unknown field \"%.64s\"", what, f);
		}
	}
	strv_free(&fields);
	if (r < 0)
		return -1;
	if (have_device && (rq->count >= 0 || rq->all))
		return gerr_set(err, 0, "%s: cannot set both count and device", what);
	/* The daemon passes device IDs on as NVIDIA_VISIBLE_DEVICES, where
	 * the keywords keep their meaning: device=all is every GPU. */
	if (have_device && apply_keywords(rq))
		return 0;
	if (check_items(rq, what, err) < 0)
		return -1;
	/* docker: neither a count nor devices means one GPU. */
	if (!have_device && !rq->all && rq->count < 0)
		rq->count = 1;
	if (rq->count == 0)
		rq->kind = SEL_VOID;
	return 0;
}

int gpu_request_parse(const char *spec, const char *what, struct gpu_request *rq, struct gerr *err)
{
	memset(rq, 0, sizeof *rq);
	rq->count = -1;
	rq->kind = SEL_SOME;
	_cleanup_free_ char *s = dup_trimmed(spec ? spec : "", spec ? strlen(spec) : 0);
	if (!*s) {
		rq->kind = SEL_VOID;
		return 0;
	}
	if (strchr(s, '=') || *s == '"')
		return parse_docker(s, what, rq, err);

	add_items(rq, s);
	if (rq->items.n == 0)
		rq->kind = SEL_VOID;
	else if (!apply_keywords(rq) && check_items(rq, what, err) < 0)
		return -1;
	return 0;
}

void gpu_request_free(struct gpu_request *rq)
{
	strv_free(&rq->items);
}

int gpu_request_resolve(const struct gpu_request *rq, const struct gpu_dev *gpus, size_t ngpus, size_t nexcluded,
			const char *what, const char *where, struct gpu_selection *sel, struct gerr *err)
{
	memset(sel, 0, sizeof *sel);
	sel->kind = rq->kind;
	if (rq->kind != SEL_SOME)
		return 0;
	if (ngpus > GPU_MAX)
		ngpus = GPU_MAX;
	if (rq->all) {
		memset(sel->mask, 1, ngpus);
		return 0;
	}
	if (rq->count >= 0) {
		if ((size_t)rq->count > ngpus)
			return gerr_set(err, 0, "%s: count=%ld but there %s %zu GPU%s under %s", what, rq->count,
					ngpus == 1 ? "is" : "are", ngpus, ngpus == 1 ? "" : "s", where);
		memset(sel->mask, 1, (size_t)rq->count);
		return 0;
	}
	for (size_t i = 0; i < rq->items.n; i++) {
		char bus[32];
		if (classify(rq->items.v[i], bus, sizeof bus) == ITEM_MIG)
			continue; /* gpu_select() (devices.c) resolves those */
		long g = match_item(rq->items.v[i], gpus, ngpus);
		if (g < 0) {
			gerr_set(err, 0, "%s: unknown device %.64s (%zu GPU%s under %s)", what, rq->items.v[i], ngpus,
				 ngpus == 1 ? "" : "s", where);
			/* Why it may exist all the same: a UUID the driver has not
			 * written yet, or a GPU the driver excludes. */
			struct sbuf why = {0};
			for (size_t j = 0; j < ngpus && classify(rq->items.v[i], bus, sizeof bus) == ITEM_UUID; j++)
				if (!gpus[j].uuid[0]) {
					sbuf_printf(
						&why,
						"GPU %zu (%s) has no UUID yet (written when the GPU is "
						"initialised: run nvidia-persistenced); select it by index or bus id",
						j, gpus[j].busid);
					break;
				}
			if (nexcluded)
				sbuf_printf(&why,
					    "%s%zu GPU%s excluded by the driver (GPU Excluded: Yes) ha%s no index",
					    why.len ? "; " : "", nexcluded, nexcluded == 1 ? "" : "s",
					    nexcluded == 1 ? "s" : "ve");
			if (why.len)
				gerr_hint(err, "%s", why.s);
			sbuf_free(&why);
			return -1;
		}
		sel->mask[g] = 1;
	}
	return 0;
}
