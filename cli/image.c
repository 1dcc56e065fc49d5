/* cli/image.c — the verbs of the image cache: `gpurun pull REF` (into the
 * cache, from a registry) and `gpurun cache ls|rm|prune`: their options,
 * usage lines and exit status; the work is rootfs/'s. */
#include "cli.h"

#include <errno.h>
#include <string.h>

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
			if (opt_tls_verify(val, &po.insecure, &err) < 0)
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
	int r = !strcmp(sub, "ls")   ? cache_list(&c, json, &err)
		: !strcmp(sub, "rm") ? cache_remove(&c, digest, &err)
				     : cache_prune(&c, max, &err);
	if (r < 0)
		gerr_die(&err);
	cache_close(&c);
	return 0;
}

const struct verb verb_pull = {"pull", pull_verb, pull_uses, COUNT_OF(pull_uses), 0};
const struct verb verb_cache = {"cache", cache_verb, cache_uses, COUNT_OF(cache_uses), 0};
