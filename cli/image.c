/* cli/image.c — the verbs of the image cache: `gpurun pull REF` (into the
 * cache, from a registry) and `gpurun cache ls|rm|prune`: their options,
 * usage lines, what they print (cache ls's table or docs/json.md's
 * document) and exit status; the work is rootfs/'s. */
#include "cli.h"

#include <errno.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../base/json.h"
#include "../rootfs/rootfs.h"

/* clang-format off */
static const struct opt pull_opts[] = {
	{V_PLATFORM, "platform", NULL, 0, OPT_VALUE, "OS/ARCH[/VARIANT]", "the image of a multi-platform index"},
	{V_TLS_VERIFY, "tls-verify", NULL, 0, OPT_OPTIONAL, "false", "plain HTTP or an unverified certificate"},
	{V_QUIET, "quiet", NULL, 0, OPT_FLAG, NULL, "no progress display"},
	{V_VERBOSE, "verbose", NULL, 0, OPT_FLAG, NULL, "say what is in the cache"}, HELP_OPT, {0}};
static const struct opt cache_ls_opts[] = {JSON_OPT, HELP_OPT, {0}};
static const struct opt cache_rm_opts[] = {HELP_OPT, {0}};
static const struct opt cache_prune_opts[] = {
	{V_MAX_SIZE, "max-size", NULL, 0, OPT_VALUE, "SIZE", "keep at most SIZE, least recently used go first"},
	HELP_OPT, {0}};
static const struct opt_use pull_uses[] = {{"pull", NULL, pull_opts, " REF", 0, 0}};
/* cache's subcommands share one line. */
static const struct opt_use cache_uses[] = {
	{"cache", "ls", cache_ls_opts, "", 0, 0},
	{"cache", "rm", cache_rm_opts, " DIGEST|IMAGE", 0, 0},
	{"cache", "prune", cache_prune_opts, "", 0, 0},
};
/* clang-format on */

/* The map an area's trees were unpacked under, as `cache ls` shows it. */
static void map_words(const struct subids *m, char *buf, size_t cap)
{
	if (!m->uid_count)
		snprintf(buf, cap, "%s", geteuid() == 0 ? "root" : "one id");
	else if (m->uid_start == m->gid_start && m->uid_count == m->gid_count)
		snprintf(buf, cap, "%lu+%lu", m->uid_start, m->uid_count);
	else
		snprintf(buf, cap, "%lu+%lu/%lu+%lu", m->uid_start, m->uid_count, m->gid_start, m->gid_count);
}

static int same(const char *a, const char *b)
{
	return a && b ? !strcmp(a, b) : a == b;
}

/* The sources of an image other than its latest (source@ref), newest
 * first: the continuation lines of `cache ls`, indented past the other
 * columns (indent: the IDS column's width, or 0 when it is not shown). */
static void print_other_sources(const struct cache_listed *e, int indent)
{
	for (size_t k = e->nsources; k-- > 0;) {
		const struct cache_source *x = &e->sources[k];
		if (!x->source || (e->source && !strcmp(x->source, e->source) && same(x->ref, e->ref)))
			continue;
		_cleanup_free_ char *source = xvisible(x->source);
		_cleanup_free_ char *shown = xvisible(x->ref ? x->ref : "");
		printf("%-14s %-9s %-16s %*s%s%s%s\n", "", "", "", indent, "", source, *shown ? "@" : "", shown);
	}
}

static json_t *listed_json(const struct cache_listed *e)
{
	json_t *o = json_object();
	json_object_set_new(o, "id", json_string(e->hex));
	json_object_set_new(o, "bytes", json_integer((json_int_t)e->bytes));
	json_object_set_new(o, "last_use", json_integer((json_int_t)e->used.tv_sec));
	json_put_text(o, "source", e->source);
	json_put_text(o, "ref", e->ref);
	json_t *list = json_array();
	for (size_t k = 0; k < e->nsources; k++) {
		json_t *x = json_object();
		json_put_text(x, "source", e->sources[k].source);
		json_put_text(x, "ref", e->sources[k].ref);
		json_array_append_new(list, x);
	}
	json_object_set_new(o, "sources", list);
	json_t *layers = json_array();
	for (size_t l = 0; l < e->layer_ids.n; l++)
		json_array_append_new(layers, json_string(e->layer_ids.v[l]));
	json_object_set_new(o, "layers", layers);
	const struct subids *m = &e->map;
	json_object_set_new(o, "id_map",
			    m->uid_count ? json_pack("{s:I, s:I, s:I, s:I}", "uid_start", (json_int_t)m->uid_start,
						     "uid_count", (json_int_t)m->uid_count, "gid_start",
						     (json_int_t)m->gid_start, "gid_count", (json_int_t)m->gid_count)
					 : json_null());
	return o;
}

#define IDS_WIDTH 14

/* `gpurun cache ls`: a table, the most recently used first, or --json
 * (docs/json.md).  Sources and ref names come from images: shown, never
 * acted on. */
static int print_list(const struct cache_listed *v, size_t n, int json, struct gerr *err)
{
	if (json) {
		json_t *doc = json_object(), *images = json_array();
		for (size_t i = 0; i < n; i++)
			json_array_append_new(images, listed_json(&v[i]));
		json_object_set_new(doc, "images", images);
		return json_print(doc, err);
	}
	/* The IDS column only when some image was unpacked under a
	 * subordinate map: else every tree is the caller's own. */
	int ids = 0;
	for (size_t i = 0; i < n; i++)
		ids |= v[i].map.uid_count != 0;
	if (ids)
		printf("%-14s %-9s %-16s %-*s %s\n", "IMAGE ID", "SIZE", "LAST USE", IDS_WIDTH, "IDS", "SOURCE");
	else
		printf("%-14s %-9s %-16s %s\n", "IMAGE ID", "SIZE", "LAST USE", "SOURCE");
	for (size_t i = 0; i < n; i++) {
		char size[32], when[32], map[64];
		struct tm tm;
		size_human(size, sizeof size, v[i].bytes);
		strftime(when, sizeof when, "%Y-%m-%d %H:%M", localtime_r(&v[i].used.tv_sec, &tm));
		map_words(&v[i].map, map, sizeof map);
		_cleanup_free_ char *source = xvisible(v[i].source ? v[i].source : "?");
		_cleanup_free_ char *ref = xvisible(v[i].ref ? v[i].ref : "");
		if (ids)
			printf("%-14.12s %-9s %-16s %-*s %s%s%s\n", v[i].hex, size, when, IDS_WIDTH, map, source,
			       *ref ? "@" : "", ref);
		else
			printf("%-14.12s %-9s %-16s %s%s%s\n", v[i].hex, size, when, source, *ref ? "@" : "", ref);
		print_other_sources(&v[i], ids ? IDS_WIDTH + 1 : 0);
	}
	return fflush(stdout) == 0 ? 0 : gerr_set(err, errno, "write the list");
}

/* `gpurun pull REF`: into the cache, always asking the registry. */
static int pull_verb(const struct verb *v, int argc, char **argv, const char *driver_root)
{
	(void)driver_root;
	struct pull_opts po = {.always = 1};
	unsigned flags = 0;
	const char *ref = NULL, *val;
	const struct opt *o;
	struct cache cache;
	struct image img = {0};
	struct gerr err = {0};
	struct opt_state s = OPT_STATE(argc, argv);
	for (int r; (r = verb_next(&s, v, pull_opts, &o, &val));) {
		if (r == 2 && ref)
			return usage_fail(v, "pull: unexpected argument %s", val);
		if (r == 2) {
			ref = val;
			continue;
		}
		switch (o->id) {
		case V_PLATFORM: po.platform = val; break;
		case V_TLS_VERIFY:
			if (opt_tls_verify(val, &po.insecure, &po.tls_verify, &err) < 0)
				gerr_die(&err);
			break;
		case V_QUIET: flags |= IMAGE_QUIET; break;
		case V_VERBOSE: po.verbose = 1; break;
		}
	}
	if (!ref)
		return usage_fail(v, "pull: missing REF");
	if (rootfs_max_image_size_from(NULL, &err) < 0)
		gerr_die(&err);
	/* "gpurun pull ubuntu" as docker pull does: the prefix is optional. */
	_cleanup_free_ char *full = strncmp(ref, REGISTRY_PREFIX, strlen(REGISTRY_PREFIX))
					    ? xasprintf(REGISTRY_PREFIX "%s", ref)
					    : xstrdup(ref);
	if (cache_open(&cache, 1, &err) < 0 || registry_prepare(full, &po, &cache, flags, &img, &err) < 0)
		gerr_die(&err);
	if (po.verbose) {
		_cleanup_free_ char *shown = xvisible(img.source);
		fprintf(stderr, "gpurun: %s: %zu layer%s in the cache\n", shown, img.layers.n,
			img.layers.n == 1 ? "" : "s");
	}
	image_free(&img);
	cache_close(&cache);
	return 0;
}

/* `gpurun cache ls|rm|prune`; argv[0] is the subcommand. */
static int cache_verb(const struct verb *v, int argc, char **argv, const char *driver_root)
{
	(void)driver_root;
	argc--; /* "cache SUB": argv[0] is now the subcommand */
	argv++;
	struct cache c;
	struct gerr err = {0};
	const char *sub = argc ? argv[0] : "";
	size_t u = 0;
	while (u < COUNT_OF(cache_uses) && strcmp(cache_uses[u].sub, sub))
		u++;
	if (!strcmp(sub, "-h") || !strcmp(sub, "--help")) {
		verb_print_uses(stdout, v, "usage: ");
		return 0;
	}
	if (!argc)
		return usage_fail(v, "cache: missing command (ls, rm or prune)");
	if (u == COUNT_OF(cache_uses))
		return usage_fail(v, "cache: unknown or incomplete command '%s'", sub);
	unsigned long long max = ~0ULL;
	int json = 0;
	const char *digest = NULL, *val;
	const struct opt *o;
	struct opt_state s = OPT_STATE(argc, argv);
	for (int r; (r = verb_next(&s, v, cache_uses[u].tab, &o, &val));) {
		if (r == 2 && !strcmp(sub, "rm") && !digest)
			digest = val;
		else if (r == 2)
			return usage_fail(v, "cache %s: unexpected argument %s", sub, val);
		else if (o->id == V_JSON)
			json = 1;
		else if (o->id == V_MAX_SIZE && opt_size1000(val, &max) < 0)
			die(GPURUN_EXIT_FAIL, "cache prune: --max-size '%s': expected a size such as 500M or 10G", val);
	}
	if (!strcmp(sub, "rm") && !digest)
		return usage_fail(v, "cache: unknown or incomplete command '%s'", sub);
	if (cache_open(&c, 0, &err) < 0) {
		if (err.errnum == ENOENT && !strcmp(sub, "ls")) {
			if (json)
				puts("{\"images\":[]}");
			return 0; /* nothing cached yet */
		}
		gerr_die(&err);
	}
	int r;
	if (!strcmp(sub, "ls")) {
		struct cache_listed *images;
		size_t n;
		r = cache_list(&c, &images, &n, &err);
		if (r == 0) {
			r = print_list(images, n, json, &err);
			cache_list_free(images, n);
		}
	} else if (!strcmp(sub, "rm")) {
		char hex[64 + 1];
		r = cache_remove(&c, digest, hex, &err);
		if (r == 0)
			printf("removed %.12s\n", hex);
	} else {
		size_t pruned = 0;
		r = cache_prune(&c, max, &pruned, &err);
		if (r == 0)
			printf("pruned %zu image%s\n", pruned, pruned == 1 ? "" : "s");
	}
	if (r < 0)
		gerr_die(&err);
	cache_close(&c);
	return 0;
}

const struct verb verb_pull = {"pull", pull_verb, pull_uses, COUNT_OF(pull_uses), 0};
const struct verb verb_cache = {"cache", cache_verb, cache_uses, COUNT_OF(cache_uses), 0};
