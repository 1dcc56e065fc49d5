/* gpu/cdi/cdiparse.c — the CDI spec parser: a buffer in, a struct cdi_spec out,
 * with the checks of kind and device names (cdi_split_name too).
 *
 * The format is cncf-tags/container-device-interface's SPEC.md: {cdiVersion,
 * kind, annotations, devices[{name, annotations, containerEdits}],
 * containerEdits}.  JSON is read by the same YAML parser (libyaml): CDI's
 * JSON is valid YAML.  The parser is strict as the reference is (unknown
 * fields fail loading) and bounded (CDI_MAX_*; no YAML aliases, so a small
 * file cannot expand into a large tree).  Nothing here reads a file: the
 * spec directories are cdidirs.c's. */
#include "cdi.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

/* ---- names ---------------------------------------------------------------- */

static int is_alnum(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

static int is_letter(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

/* A vendor ("nvidia.com") or class ("gpu") name: a letter first, an
 * alphanumeric last, the given punctuation inside. */
static int valid_part(const char *s, size_t n, const char *inside)
{
	if (n == 0 || n > 253 || !is_letter(s[0]) || !is_alnum(s[n - 1]))
		return 0;
	for (size_t i = 1; i < n; i++)
		if (!is_alnum(s[i]) && !strchr(inside, s[i]))
			return 0;
	return 1;
}

/* "vendor.com/class" */
static int valid_kind(const char *kind)
{
	const char *slash = strchr(kind, '/');
	return slash && valid_part(kind, (size_t)(slash - kind), "-_.") &&
	       valid_part(slash + 1, strlen(slash + 1), "-_");
}

/* A device name: alphanumeric at both ends (a digit first is fine since
 * 0.5.0: "0"), "-_.:" inside ("0:1" is a MIG device). */
static int valid_device_name(const char *s)
{
	size_t n = strlen(s);
	if (n == 0 || n > 253 || !is_alnum(s[0]) || !is_alnum(s[n - 1]))
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!is_alnum(s[i]) && !strchr("-_.:", s[i]))
			return 0;
	return 1;
}

int cdi_split_name(const char *q, char *kind, size_t kcap, const char **name)
{
	const char *eq = strchr(q, '=');
	if (!eq || (size_t)(eq - q) >= kcap)
		return -1;
	memcpy(kind, q, (size_t)(eq - q));
	kind[eq - q] = '\0';
	*name = eq + 1;
	return valid_kind(kind) && valid_device_name(*name) ? 0 : -1;
}

/* ---- the parser ------------------------------------------------------------ */

static const char *const known_versions[] = {"0.3.0", "0.4.0", "0.5.0", "0.6.0", "0.7.0", "0.8.0", "1.0.0", "1.1.0"};
static const char *const hook_names[] = {"prestart",       "createRuntime", "createContainer",
					 "startContainer", "poststart",     "poststop"};

struct pctx {
	yaml_document_t *doc;
	struct gerr *err;
};

static int perr(struct pctx *c, const yaml_node_t *n, const char *where, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static int perr(struct pctx *c, const yaml_node_t *n, const char *where, const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	return gerr_set(c->err, 0, "line %zu: %s: %s", n ? n->start_mark.line + 1 : 1, where, msg);
}

static yaml_node_t *get(struct pctx *c, int idx)
{
	return yaml_document_get_node(c->doc, idx);
}

static const char *type_name(yaml_node_type_t t)
{
	return t == YAML_SCALAR_NODE ? "a scalar" : t == YAML_SEQUENCE_NODE ? "a list" : "a mapping";
}

static int want_type(struct pctx *c, yaml_node_t *n, yaml_node_type_t t, const char *where)
{
	if (!n)
		return perr(c, NULL, where, "missing node");
	if (n->type != t)
		return perr(c, n, where, "expected %s, found %s", type_name(t), type_name(n->type));
	return 0;
}

/* A mapping of a CDI object: a handful of fields, each at most once (a
 * second "mounts" would otherwise silently replace the first). */
static int check_map(struct pctx *c, yaml_node_t *n, const char *where)
{
	if (want_type(c, n, YAML_MAPPING_NODE, where) < 0)
		return -1;
	yaml_node_pair_t *a = n->data.mapping.pairs.start, *end = n->data.mapping.pairs.top;
	if (end - a > 32)
		return perr(c, n, where, "more than 32 fields");
	for (; a < end; a++)
		for (yaml_node_pair_t *b = a + 1; b < end; b++) {
			yaml_node_t *ka = get(c, a->key), *kb = get(c, b->key);
			if (ka && kb && ka->type == YAML_SCALAR_NODE && kb->type == YAML_SCALAR_NODE &&
			    ka->data.scalar.length == kb->data.scalar.length &&
			    !memcmp(ka->data.scalar.value, kb->data.scalar.value, ka->data.scalar.length))
				return perr(c, kb, where, "field '%.*s' given twice",
					    (int)(kb->data.scalar.length > 64 ? 64 : kb->data.scalar.length),
					    (const char *)kb->data.scalar.value);
		}
	return 0;
}

/* A scalar as a malloc'ed C string: no NUL inside, bounded. */
static int scalar(struct pctx *c, yaml_node_t *n, const char *where, char **out)
{
	if (want_type(c, n, YAML_SCALAR_NODE, where) < 0)
		return -1;
	size_t len = n->data.scalar.length;
	const char *v = (const char *)n->data.scalar.value;
	if (len > CDI_MAX_STRING)
		return perr(c, n, where, "longer than %u bytes", CDI_MAX_STRING);
	if (memchr(v, '\0', len))
		return perr(c, n, where, "contains a NUL byte");
	free(*out);
	*out = xstrndup(v, len);
	return 0;
}

static int abs_path(struct pctx *c, yaml_node_t *n, const char *where, char **out)
{
	if (scalar(c, n, where, out) < 0)
		return -1;
	if ((*out)[0] != '/')
		return perr(c, n, where, "'%.200s' is not an absolute path", *out);
	return 0;
}

/* A non-negative integer no larger than max. */
static int integer(struct pctx *c, yaml_node_t *n, const char *where, unsigned long max, long *out)
{
	_cleanup_free_ char *s = NULL;
	unsigned long v;
	if (scalar(c, n, where, &s) < 0)
		return -1;
	if (parse_decimal(s, strlen(s), max, &v) < 0)
		return perr(c, n, where, "'%.40s' is not a number from 0 to %lu", s, max);
	*out = (long)v;
	return 0;
}

/* A list of strings, appended to out. */
static int strings(struct pctx *c, yaml_node_t *n, const char *where, struct strv *out)
{
	if (want_type(c, n, YAML_SEQUENCE_NODE, where) < 0)
		return -1;
	yaml_node_item_t *it = n->data.sequence.items.start, *end = n->data.sequence.items.top;
	if (end - it > CDI_MAX_ITEMS)
		return perr(c, n, where, "more than %u entries", CDI_MAX_ITEMS);
	for (; it < end; it++) {
		char *s = NULL;
		if (scalar(c, get(c, *it), where, &s) < 0)
			return -1;
		strv_add(out, s);
	}
	return 0;
}

/* The pairs of a mapping, each key checked to be a scalar. */
#define FOR_PAIRS(c, n, where, K, V)                                                                       \
	for (yaml_node_pair_t *p_ = (n)->data.mapping.pairs.start; p_ < (n)->data.mapping.pairs.top; p_++) \
		if (((K) = get(c, p_->key)) == NULL || ((V) = get(c, p_->value)) == NULL ||                \
		    (K)->type != YAML_SCALAR_NODE)                                                         \
			return perr(c, (K), where, "keys must be plain strings");                          \
		else

static int key_is(const yaml_node_t *k, const char *name)
{
	return k->data.scalar.length == strlen(name) && !memcmp(k->data.scalar.value, name, strlen(name));
}

static int unknown_key(struct pctx *c, yaml_node_t *k, const char *where)
{
	static const char *const unsupported[] = {"additionalGIDs", "intelRdt", "netDevices"};
	for (size_t i = 0; i < COUNT_OF(unsupported); i++)
		if (key_is(k, unsupported[i]))
			return perr(c, k, where, "%s is not supported by gpurun", unsupported[i]);
	return perr(c, k, where, "unknown field '%.*s'", (int)(k->data.scalar.length > 64 ? 64 : k->data.scalar.length),
		    (const char *)k->data.scalar.value);
}

/* A list of mappings: its length, checked against the cap. */
static int list_len(struct pctx *c, yaml_node_t *n, const char *where, size_t *len)
{
	if (want_type(c, n, YAML_SEQUENCE_NODE, where) < 0)
		return -1;
	size_t l = (size_t)(n->data.sequence.items.top - n->data.sequence.items.start);
	if (l > CDI_MAX_ITEMS)
		return perr(c, n, where, "more than %u entries", CDI_MAX_ITEMS);
	*len = l;
	return 0;
}

static int parse_node(struct pctx *c, yaml_node_t *n, const char *where, struct cdi_node *d)
{
	yaml_node_t *k, *v;
	d->major = d->minor = -1;
	d->line = (int)n->start_mark.line + 1;
	if (check_map(c, n, where) < 0)
		return -1;
	FOR_PAIRS(c, n, where, k, v)
	{
		long ignore;
		int r;
		if (key_is(k, "path"))
			r = abs_path(c, v, where, &d->path);
		else if (key_is(k, "hostPath"))
			r = abs_path(c, v, where, &d->host_path);
		else if (key_is(k, "type")) {
			_cleanup_free_ char *t = NULL;
			r = scalar(c, v, where, &t);
			if (r == 0 && (strlen(t) != 1 || !strchr("cbup", t[0])))
				return perr(c, v, where, "type '%.20s' is not one of c, b, u, p", t);
			if (r == 0)
				d->type = t[0];
		} else if (key_is(k, "major"))
			r = integer(c, v, where, 0xfff, &d->major);
		else if (key_is(k, "minor"))
			r = integer(c, v, where, 0xfffff, &d->minor);
		else if (key_is(k, "permissions")) {
			r = scalar(c, v, where, &d->permissions);
			if (r == 0 && (!d->permissions[0] || strspn(d->permissions, "rwm") != strlen(d->permissions)))
				return perr(c, v, where, "permissions '%.20s' are not made of r, w and m",
					    d->permissions);
		} else if (key_is(k, "fileMode"))
			r = integer(c, v, where, 07777, &ignore);
		else if (key_is(k, "uid") || key_is(k, "gid"))
			r = integer(c, v, where, 0xffffffffUL, &ignore);
		else
			return unknown_key(c, k, where);
		if (r < 0)
			return -1;
	}
	if (!d->path)
		return perr(c, n, where, "path is missing");
	return 0;
}

static int parse_mount(struct pctx *c, yaml_node_t *n, const char *where, struct cdi_mount *m)
{
	yaml_node_t *k, *v;
	m->line = (int)n->start_mark.line + 1;
	if (check_map(c, n, where) < 0)
		return -1;
	FOR_PAIRS(c, n, where, k, v)
	{
		int r;
		if (key_is(k, "hostPath"))
			r = abs_path(c, v, where, &m->host_path);
		else if (key_is(k, "containerPath"))
			r = abs_path(c, v, where, &m->container_path);
		else if (key_is(k, "type"))
			r = scalar(c, v, where, &m->type);
		else if (key_is(k, "options"))
			r = strings(c, v, where, &m->options);
		else
			return unknown_key(c, k, where);
		if (r < 0)
			return -1;
	}
	if (!m->host_path || !m->container_path)
		return perr(c, n, where, "%s is missing", m->host_path ? "containerPath" : "hostPath");
	return 0;
}

static int parse_hook(struct pctx *c, yaml_node_t *n, const char *where, struct cdi_hook *h)
{
	yaml_node_t *k, *v;
	h->line = (int)n->start_mark.line + 1;
	if (check_map(c, n, where) < 0)
		return -1;
	FOR_PAIRS(c, n, where, k, v)
	{
		long ignore;
		int r;
		if (key_is(k, "hookName")) {
			r = scalar(c, v, where, &h->hook_name);
			size_t i = 0;
			while (r == 0 && i < COUNT_OF(hook_names) && strcmp(h->hook_name, hook_names[i]))
				i++;
			if (r == 0 && i == COUNT_OF(hook_names))
				return perr(c, v, where, "hookName '%.64s' is not an OCI hook name", h->hook_name);
		} else if (key_is(k, "path"))
			r = abs_path(c, v, where, &h->path);
		else if (key_is(k, "args"))
			r = strings(c, v, where, &h->args);
		else if (key_is(k, "env"))
			r = strings(c, v, where, &h->env);
		else if (key_is(k, "timeout"))
			r = integer(c, v, where, 0x7fffffff, &ignore);
		else
			return unknown_key(c, k, where);
		if (r < 0)
			return -1;
	}
	if (!h->hook_name || !h->path)
		return perr(c, n, where, "%s is missing", h->path ? "hookName" : "path");
	return 0;
}

static int parse_edits(struct pctx *c, yaml_node_t *n, const char *where, struct cdi_edits *e)
{
	yaml_node_t *k, *v;
	char sub[160];
	if (check_map(c, n, where) < 0)
		return -1;
	FOR_PAIRS(c, n, where, k, v)
	{
		size_t len;
		if (key_is(k, "env")) {
			snprintf(sub, sizeof sub, "%s.env", where);
			if (strings(c, v, sub, &e->env) < 0)
				return -1;
			for (size_t i = 0; i < e->env.n; i++)
				if (e->env.v[i][0] == '=' || !strchr(e->env.v[i], '='))
					return perr(c, v, sub, "'%.64s' is not K=V", e->env.v[i]);
		} else if (key_is(k, "deviceNodes")) {
			if (list_len(c, v, where, &len) < 0)
				return -1;
			e->nodes = xcalloc(len ? len : 1, sizeof *e->nodes);
			for (; e->nnodes < len; e->nnodes++) {
				snprintf(sub, sizeof sub, "%s.deviceNodes[%zu]", where, e->nnodes);
				if (parse_node(c, get(c, v->data.sequence.items.start[e->nnodes]), sub,
					       &e->nodes[e->nnodes]) < 0) {
					e->nnodes++;
					return -1;
				}
			}
		} else if (key_is(k, "mounts")) {
			if (list_len(c, v, where, &len) < 0)
				return -1;
			e->mounts = xcalloc(len ? len : 1, sizeof *e->mounts);
			for (; e->nmounts < len; e->nmounts++) {
				snprintf(sub, sizeof sub, "%s.mounts[%zu]", where, e->nmounts);
				if (parse_mount(c, get(c, v->data.sequence.items.start[e->nmounts]), sub,
						&e->mounts[e->nmounts]) < 0) {
					e->nmounts++;
					return -1;
				}
			}
		} else if (key_is(k, "hooks")) {
			if (list_len(c, v, where, &len) < 0)
				return -1;
			e->hooks = xcalloc(len ? len : 1, sizeof *e->hooks);
			for (; e->nhooks < len; e->nhooks++) {
				snprintf(sub, sizeof sub, "%s.hooks[%zu]", where, e->nhooks);
				if (parse_hook(c, get(c, v->data.sequence.items.start[e->nhooks]), sub,
					       &e->hooks[e->nhooks]) < 0) {
					e->nhooks++;
					return -1;
				}
			}
		} else
			return unknown_key(c, k, where);
	}
	return 0;
}

static int parse_device(struct pctx *c, yaml_node_t *n, const char *where, struct cdi_device *d)
{
	yaml_node_t *k, *v;
	char sub[96];
	if (check_map(c, n, where) < 0)
		return -1;
	FOR_PAIRS(c, n, where, k, v)
	{
		if (key_is(k, "name")) {
			if (scalar(c, v, where, &d->name) < 0)
				return -1;
			if (!valid_device_name(d->name))
				return perr(c, v, where, "'%.64s' is not a valid device name", d->name);
		} else if (key_is(k, "annotations")) {
			if (want_type(c, v, YAML_MAPPING_NODE, where) < 0)
				return -1;
		} else if (key_is(k, "containerEdits")) {
			snprintf(sub, sizeof sub, "%s.containerEdits", where);
			if (parse_edits(c, v, sub, &d->edits) < 0)
				return -1;
		} else
			return unknown_key(c, k, where);
	}
	if (!d->name)
		return perr(c, n, where, "name is missing");
	return 0;
}

static int parse_spec(struct pctx *c, yaml_node_t *root, struct cdi_spec *s)
{
	yaml_node_t *k, *v, *devices = NULL;
	if (!root)
		return gerr_set(c->err, 0, "empty file");
	if (check_map(c, root, "the spec") < 0)
		return -1;
	FOR_PAIRS(c, root, "the spec", k, v)
	{
		int r = 0;
		if (key_is(k, "cdiVersion")) {
			r = scalar(c, v, "cdiVersion", &s->version);
			size_t i = 0;
			while (r == 0 && i < COUNT_OF(known_versions) && strcmp(s->version, known_versions[i]))
				i++;
			if (r == 0 && i == COUNT_OF(known_versions))
				return perr(c, v, "cdiVersion",
					    "version '%.32s' is not one gpurun knows (0.3.0 to 1.1.0)", s->version);
		} else if (key_is(k, "kind")) {
			r = scalar(c, v, "kind", &s->kind);
			if (r == 0 && !valid_kind(s->kind))
				return perr(c, v, "kind", "'%.64s' is not vendor.com/class", s->kind);
		} else if (key_is(k, "annotations"))
			r = want_type(c, v, YAML_MAPPING_NODE, "annotations");
		else if (key_is(k, "devices"))
			devices = v;
		else if (key_is(k, "containerEdits"))
			r = parse_edits(c, v, "containerEdits", &s->edits);
		else
			return unknown_key(c, k, "the spec");
		if (r < 0)
			return -1;
	}
	if (!s->version)
		return perr(c, root, "the spec", "cdiVersion is missing");
	if (!s->kind)
		return perr(c, root, "the spec", "kind is missing");
	if (!devices)
		return perr(c, root, "the spec", "devices is missing");
	size_t len;
	if (list_len(c, devices, "devices", &len) < 0)
		return -1;
	if (!len)
		return perr(c, devices, "devices", "no device");
	s->devs = xcalloc(len, sizeof *s->devs);
	for (; s->ndevs < len; s->ndevs++) {
		char where[32];
		snprintf(where, sizeof where, "devices[%zu]", s->ndevs);
		struct cdi_device *d = &s->devs[s->ndevs];
		if (parse_device(c, get(c, devices->data.sequence.items.start[s->ndevs]), where, d) < 0) {
			s->ndevs++;
			return -1;
		}
		for (size_t j = 0; j < s->ndevs; j++)
			if (!strcmp(s->devs[j].name, d->name)) {
				s->ndevs++;
				return perr(c, NULL, where, "device '%s' is defined twice", d->name);
			}
	}
	return 0;
}

/* The event stream first: no aliases (a document built from them could
 * be far larger than the file), bounded nesting and size, one document. */
static int precheck(const char *buf, size_t len, struct gerr *err)
{
	yaml_parser_t p;
	yaml_event_t ev;
	size_t events = 0, docs = 0;
	int depth = 0, r = 0;
	if (!yaml_parser_initialize(&p))
		return gerr_set(err, ENOMEM, "YAML parser");
	yaml_parser_set_input_string(&p, (const unsigned char *)buf, len);
	for (;;) {
		if (!yaml_parser_parse(&p, &ev)) {
			r = gerr_set(err, 0, "line %zu: %s%s%s", p.problem_mark.line + 1,
				     p.problem ? p.problem : "invalid YAML", p.context ? " " : "",
				     p.context ? p.context : "");
			break;
		}
		yaml_event_type_t t = ev.type;
		size_t line = ev.start_mark.line + 1;
		yaml_event_delete(&ev);
		if (t == YAML_STREAM_END_EVENT)
			break;
		if (t == YAML_ALIAS_EVENT) {
			r = gerr_set(err, 0, "line %zu: YAML aliases are not allowed in a CDI spec", line);
			break;
		}
		if (t == YAML_DOCUMENT_START_EVENT && ++docs > 1) {
			r = gerr_set(err, 0, "line %zu: more than one YAML document", line);
			break;
		}
		if (t == YAML_SEQUENCE_START_EVENT || t == YAML_MAPPING_START_EVENT)
			depth++;
		if (t == YAML_SEQUENCE_END_EVENT || t == YAML_MAPPING_END_EVENT)
			depth--;
		if (depth > 16 || ++events > 16 * CDI_MAX_ITEMS * 4) {
			r = gerr_set(err, 0, "line %zu: nested too deeply or too many entries", line);
			break;
		}
	}
	yaml_parser_delete(&p);
	return r;
}

int cdi_parse(const char *buf, size_t len, struct cdi_spec *spec, struct gerr *err)
{
	memset(spec, 0, sizeof *spec);
	if (len > CDI_MAX_FILE)
		return gerr_set(err, 0, "larger than %u bytes", CDI_MAX_FILE);
	if (precheck(buf, len, err) < 0)
		return -1;
	yaml_parser_t p;
	yaml_document_t doc;
	if (!yaml_parser_initialize(&p))
		return gerr_set(err, ENOMEM, "YAML parser");
	yaml_parser_set_input_string(&p, (const unsigned char *)buf, len);
	if (!yaml_parser_load(&p, &doc)) {
		gerr_set(err, 0, "line %zu: %s", p.problem_mark.line + 1, p.problem ? p.problem : "invalid YAML");
		yaml_parser_delete(&p);
		return -1;
	}
	struct pctx c = {&doc, err};
	int r = parse_spec(&c, yaml_document_get_root_node(&doc), spec);
	yaml_document_delete(&doc);
	yaml_parser_delete(&p);
	if (r < 0) {
		cdi_spec_free(spec);
		return -1;
	}
	return 0;
}

static void edits_free(struct cdi_edits *e)
{
	strv_free(&e->env);
	for (size_t i = 0; i < e->nnodes; i++) {
		free(e->nodes[i].path);
		free(e->nodes[i].host_path);
		free(e->nodes[i].permissions);
	}
	for (size_t i = 0; i < e->nmounts; i++) {
		free(e->mounts[i].host_path);
		free(e->mounts[i].container_path);
		free(e->mounts[i].type);
		strv_free(&e->mounts[i].options);
	}
	for (size_t i = 0; i < e->nhooks; i++) {
		free(e->hooks[i].hook_name);
		free(e->hooks[i].path);
		strv_free(&e->hooks[i].args);
		strv_free(&e->hooks[i].env);
	}
	free(e->nodes);
	free(e->mounts);
	free(e->hooks);
	memset(e, 0, sizeof *e);
}

void cdi_spec_free(struct cdi_spec *s)
{
	for (size_t i = 0; i < s->ndevs; i++) {
		free(s->devs[i].name);
		edits_free(&s->devs[i].edits);
	}
	free(s->devs);
	free(s->version);
	free(s->kind);
	edits_free(&s->edits);
	memset(s, 0, sizeof *s);
}
