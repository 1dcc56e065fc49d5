/* gpurun.c — the command line.  It reads options, the image and the GPU
 * request, and turns them into a plan (base/plan.h): an ordered list of setup
 * steps that ns/ carries out inside fresh namespaces, or prints for
 * --dry-run.  It is the only place that decides to exit.  run_main() reads
 * as the story of a launch:
 *
 *   image -> the baseline layout (ns/layout.c: root, /proc, /dev, /sys,
 *   /tmp, /run, host network files), GPU injection (gpu/), volumes, workdir,
 *   pivot, ldconfig, read-only root -> run (or print). */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "gpu/cdi.h"
#include "gpu/gpu.h"
#include "ns/ns.h"
#include "rootfs/rootfs.h"

struct cli {
	char **env;
	size_t nenv;
	char **volumes;
	size_t nvolumes;
	char **requires;
	size_t nrequires;
	char **devices; /* --device vendor.com/class=name (CDI) */
	size_t ndevices;
	char **cdi_dirs; /* --cdi-spec-dir */
	size_t ncdi_dirs;
	const char *workdir, *user, *hostname, *net, *gpus, *caps, *driver_root, *platform;
	int read_only, dry_run, verbose, no_cache, quiet, insecure, tty, interactive;
	const char *max_image_size; /* --max-image-size */
};

/* `gpurun --driver-root DIR VERB`: the global option, the default of the
 * verb's own. */
static const char *global_driver_root;

static void usage(FILE *out)
{
	fprintf(out,
		"usage: gpurun [run] [OPTIONS] IMAGE[@NAME:TAG] [--] [COMMAND [ARG...]]\n"
		"       gpurun [--driver-root DIR] info [--csv] [--driver-root DIR]\n"
		"       gpurun [--driver-root DIR] list [--gpus SPEC] [--caps LIST] [--driver-root DIR]\n"
		"       gpurun pull [--platform OS/ARCH[/VARIANT]] [--tls-verify=false] [--quiet] [--verbose] REF\n"
		"       gpurun cache ls | rm DIGEST|IMAGE | prune [--max-size SIZE]\n"
		"       gpurun [--driver-root DIR] doctor [--driver-root DIR]\n"
		"       gpurun [--driver-root DIR] cdi generate [--driver-root DIR] [--format yaml|json] [--output FILE]\n"
		"       gpurun cdi list [--cdi-spec-dir DIR]...\n"
		"       gpurun version | help\n"
		"\n"
		"Run COMMAND in IMAGE, in new mount, pid and ipc namespaces (and a user namespace\n"
		"when not root), with the selected NVIDIA GPUs injected.  IMAGE is a root file\n"
		"system directory or tar archive (plain, gzip, xz, zstd or bzip2), a `docker save`\n"
		"archive, or an OCI image layout (a directory, or packed as a tar); @NAME:TAG picks\n"
		"one of several images.  IMAGE may also be docker://[REGISTRY/]REPO[:TAG|@DIGEST],\n"
		"pulled from a registry the first time (`gpurun pull` pulls again).  Images are\n"
		"unpacked once into the cache ($GPURUN_CACHE, else ~/.cache/gpurun, or\n"
		"/var/cache/gpurun for root); every run gets a fresh writable layer on top.\n"
		"Without COMMAND: the image's Entrypoint and Cmd, or /bin/sh.\n"
		"\n"
		"  --gpus SPEC          all, none, void, or indexes, GPU-<uuid>, PCI bus ids\n"
		"                       (comma list); docker's device=0,2 and count=N forms too\n"
		"  --caps LIST          driver capabilities (default utility,compute)\n"
		"  --require EXPR       an NVIDIA_REQUIRE_* style constraint (repeatable)\n"
		"      --device VENDOR/CLASS=NAME  a CDI device, e.g. nvidia.com/gpu=0 (repeatable;\n"
		"                       instead of --gpus, --caps and --require)\n"
		"      --cdi-spec-dir DIR  where CDI specs are (repeatable, later wins; else\n"
		"                       GPURUN_CDI_SPEC_DIRS=DIR:DIR, else /etc/cdi:/var/run/cdi)\n"
		"  -e, --env K[=V]      set a variable; K alone copies the host's value\n"
		"  -v, --volume SRC:DST[:ro]  bind a host path\n"
		"  -w, --workdir DIR    working directory inside (created if missing)\n"
		"  -u, --user U[:G]     uid/gid or names from the image's /etc/passwd\n"
		"  -t, --tty            a pty of the container's own for the command, relayed to\n"
		"                       this terminal (-it: with the keystrokes)\n"
		"  -i, --interactive    with -t, relay stdin to the command (without -t, stdin is\n"
		"                       always passed through)\n"
		"      --hostname NAME  new UTS namespace with that host name\n"
		"      --net host|none  share the host network (default) or only lo\n"
		"      --read-only      the root file system is read-only\n"
		"      --driver-root DIR  where the host driver lives (GPURUN_DRIVER_ROOT; /)\n"
		"      --no-cache       unpack a root file system archive into memory for this run\n"
		"      --max-image-size SIZE  the most an image may unpack to (GPURUN_MAX_IMAGE_SIZE;\n"
		"                       default 64G; 500M, 10G: powers of 1000)\n"
		"      --quiet          no progress display while pulling or unpacking\n"
		"      --platform OS/ARCH[/VARIANT]  the image of a multi-platform index to pull\n"
		"      --tls-verify=false  the registry may be plain HTTP or have an unverified\n"
		"                       certificate (also GPURUN_INSECURE_REGISTRIES=HOST[:PORT],...)\n"
		"                       (a pull's time bounds: GPURUN_PULL_STALL_TIMEOUT, 30 s without\n"
		"                       a byte; GPURUN_PULL_ANSWER_TIMEOUT, 120 s an answer)\n"
		"      --dry-run        print the plan as shell commands; change nothing\n"
		"      --verbose        print each step as it is done\n"
		"  -h, --help           this text;  -V, --version  the version\n"
		"\n"
		"Exit status: the command's; 128+N if it died of signal N; 125 gpurun failed;\n"
		"126 the command cannot be executed; 127 the command was not found.\n");
}

static void push(char ***v, size_t *n, char *s)
{
	*v = xrealloc(*v, (*n + 2) * sizeof **v);
	(*v)[(*n)++] = s;
	(*v)[*n] = NULL;
}

/* Set K=V in env, replacing an earlier K. */
static void env_set(char ***env, size_t *n, const char *kv)
{
	size_t kl = strcspn(kv, "=");
	for (size_t i = 0; i < *n; i++)
		if (!strncmp((*env)[i], kv, kl) && (*env)[i][kl] == '=') {
			free((*env)[i]);
			(*env)[i] = xstrdup(kv);
			return;
		}
	push(env, n, xstrdup(kv));
}

static void parse_env_opt(struct cli *c, const char *arg)
{
	if (!*arg || *arg == '=')
		die(GPURUN_EXIT_FAIL, "--env '%s': expected K=V or K", arg);
	if (strchr(arg, '=')) {
		push(&c->env, &c->nenv, xstrdup(arg));
		return;
	}
	/* -e K copies the host's value, and is dropped when the host has none. */
	const char *v = getenv(arg);
	if (v)
		push(&c->env, &c->nenv, xasprintf("%s=%s", arg, v));
}

enum { OPT_HOSTNAME = 1000, OPT_NET, OPT_READ_ONLY, OPT_DRY_RUN, OPT_VERBOSE, OPT_GPUS, OPT_CAPS,
       OPT_REQUIRE, OPT_DRIVER_ROOT, OPT_NO_CACHE, OPT_QUIET, OPT_PLATFORM, OPT_TLS_VERIFY,
       OPT_DEVICE, OPT_CDI_SPEC_DIR, OPT_MAX_IMAGE_SIZE };

/* podman's --tls-verify[=BOOL] */
static int parse_tls_verify(const char *v)
{
	if (!v || !strcmp(v, "true"))
		return 0;
	if (!strcmp(v, "false"))
		return 1;
	die(GPURUN_EXIT_FAIL, "--tls-verify: invalid value '%s' (expected true or false)", v);
}

static int parse_size(const char *s, unsigned long long *out);

/* --max-image-size, else GPURUN_MAX_IMAGE_SIZE, else rootfs.h's default:
 * the cap on what an image unpacks to, set before anything is read.  The
 * value is not echoed: it is the caller's text, and the option names it. */
static void set_max_image_size(const char *opt)
{
	const char *v = opt, *what = "--max-image-size";
	if (!v) {
		v = getenv("GPURUN_MAX_IMAGE_SIZE");
		what = "GPURUN_MAX_IMAGE_SIZE";
		if (!v || !*v)
			return;
	}
	unsigned long long n;
	if (parse_size(v, &n) < 0 || n == 0)
		die(GPURUN_EXIT_FAIL, "%s: not a size; expected one such as 500M or 10G", what);
	rootfs_set_max_image_size(n);
}

static int parse_run_args(struct cli *c, int argc, char **argv)
{
	static const struct option opts[] = {
		{"env", required_argument, NULL, 'e'},
		{"volume", required_argument, NULL, 'v'},
		{"workdir", required_argument, NULL, 'w'},
		{"user", required_argument, NULL, 'u'},
		{"hostname", required_argument, NULL, OPT_HOSTNAME},
		{"net", required_argument, NULL, OPT_NET},
		{"read-only", no_argument, NULL, OPT_READ_ONLY},
		{"dry-run", no_argument, NULL, OPT_DRY_RUN},
		{"verbose", no_argument, NULL, OPT_VERBOSE},
		{"gpus", required_argument, NULL, OPT_GPUS},
		{"caps", required_argument, NULL, OPT_CAPS},
		{"require", required_argument, NULL, OPT_REQUIRE},
		{"driver-root", required_argument, NULL, OPT_DRIVER_ROOT},
		{"no-cache", no_argument, NULL, OPT_NO_CACHE},
		{"quiet", no_argument, NULL, OPT_QUIET},
		{"platform", required_argument, NULL, OPT_PLATFORM},
		{"tls-verify", optional_argument, NULL, OPT_TLS_VERIFY},
		{"device", required_argument, NULL, OPT_DEVICE},
		{"cdi-spec-dir", required_argument, NULL, OPT_CDI_SPEC_DIR},
		{"max-image-size", required_argument, NULL, OPT_MAX_IMAGE_SIZE},
		{"tty", no_argument, NULL, 't'},
		{"interactive", no_argument, NULL, 'i'},
		{"help", no_argument, NULL, 'h'},
		{"version", no_argument, NULL, 'V'},
		{NULL, 0, NULL, 0},
	};
	opterr = 0;
	optind = 1;
	int o;
	/* '+': options end at IMAGE; everything after it is the command. */
	while ((o = getopt_long(argc, argv, "+:e:v:w:u:ithV", opts, NULL)) != -1) {
		switch (o) {
		case 'e': parse_env_opt(c, optarg); break;
		case 'v': push(&c->volumes, &c->nvolumes, optarg); break;
		case 'w': c->workdir = optarg; break;
		case 'u': c->user = optarg; break;
		case 't': c->tty = 1; break;
		case 'i': c->interactive = 1; break;
		case OPT_HOSTNAME: c->hostname = optarg; break;
		case OPT_NET: c->net = optarg; break;
		case OPT_READ_ONLY: c->read_only = 1; break;
		case OPT_DRY_RUN: c->dry_run = 1; break;
		case OPT_VERBOSE: c->verbose = 1; break;
		case OPT_GPUS: c->gpus = optarg; break;
		case OPT_CAPS: c->caps = optarg; break;
		case OPT_REQUIRE: push(&c->requires, &c->nrequires, optarg); break;
		case OPT_DRIVER_ROOT: c->driver_root = optarg; break;
		case OPT_NO_CACHE: c->no_cache = 1; break;
		case OPT_QUIET: c->quiet = 1; break;
		case OPT_PLATFORM: c->platform = optarg; break;
		case OPT_TLS_VERIFY: c->insecure = parse_tls_verify(optarg); break;
		case OPT_DEVICE: push(&c->devices, &c->ndevices, optarg); break;
		case OPT_CDI_SPEC_DIR: push(&c->cdi_dirs, &c->ncdi_dirs, optarg); break;
		case OPT_MAX_IMAGE_SIZE: c->max_image_size = optarg; break;
		case 'h': usage(stdout); exit(0);
		case 'V': printf("gpurun %s\n", GPURUN_VERSION); exit(0);
		case ':': die(GPURUN_EXIT_FAIL, "option %s needs a value (try gpurun --help)", argv[optind - 1]);
		default:
			die(GPURUN_EXIT_FAIL, "unknown option %s (try gpurun --help)", argv[optind - 1]);
		}
	}
	return optind;
}

static void check_values(const struct cli *c, struct run_config *cfg)
{
	/* CDI devices and --gpus are two ways to say what is injected; both at
	 * once would bind the same driver twice from two descriptions. */
	if (c->ndevices && (c->gpus || c->caps || c->nrequires))
		die(GPURUN_EXIT_FAIL, "--device cannot be combined with %s: the CDI spec says what is injected",
		    c->gpus ? "--gpus" : c->caps ? "--caps" : "--require");
	if (c->net && strcmp(c->net, "host") && strcmp(c->net, "none"))
		die(GPURUN_EXIT_FAIL, "--net: invalid value '%s' (expected host or none)", c->net);
	cfg->new_net = c->net && !strcmp(c->net, "none");
	if (c->hostname) {
		size_t n = strlen(c->hostname);
		if (n == 0 || n > 64 || strchr(c->hostname, '/'))
			die(GPURUN_EXIT_FAIL, "--hostname: invalid host name '%s'", c->hostname);
		cfg->hostname = c->hostname;
	}
	if (c->user && (!*c->user || *c->user == ':' || c->user[strlen(c->user) - 1] == ':'))
		die(GPURUN_EXIT_FAIL, "--user: invalid value '%s' (expected UID[:GID] or NAME[:GROUP])", c->user);
	if (c->workdir && c->workdir[0] != '/')
		die(GPURUN_EXIT_FAIL, "--workdir '%s': must be an absolute path", c->workdir);
}

/* The image, before any namespace work (rootfs/open.c): a bad image fails
 * here, in one line. */
static void open_image(const struct cli *c, struct run_config *cfg, const char *arg, struct cache *cache,
		       struct image *img)
{
	struct gerr err = {0};
	struct image_open_opts o = {.platform = c->platform, .insecure = c->insecure, .verbose = c->verbose,
				    .dry_run = c->dry_run, .quiet = c->quiet, .no_cache = c->no_cache};
	struct opened_image oi;
	if (image_open(arg, &o, cache, img, &oi, &err) < 0)
		gerr_die(&err);
	cfg->image = oi.image;
	cfg->image_fd = oi.fd;
	cfg->image_is_dir = oi.is_dir;
	cfg->layered = oi.layered;
	cfg->import_run = oi.import_run;
	cfg->import_sel = oi.import_sel;
}

/* argv_join(a, b): a then b, as one NULL-terminated list. */
static char **argv_join(char **a, char **b)
{
	size_t n = 0, i = 0;
	for (char **p = a; p && *p; p++)
		n++;
	for (char **p = b; p && *p; p++)
		n++;
	char **v = xcalloc(n + 1, sizeof *v);
	for (char **p = a; p && *p; p++)
		v[i++] = *p;
	for (char **p = b; p && *p; p++)
		v[i++] = *p;
	return v;
}

/* PATH, the image's Env (its PATH wins), TERM on a terminal, HOSTNAME,
 * then -e, which wins over all of them. */
static char **container_env(struct cli *c, const struct image_config *ic)
{
	char **env = NULL;
	size_t n = 0;
	push(&env, &n, xstrdup("PATH=" NS_DEFAULT_PATH));
	for (char **e = ic ? ic->env : NULL; e && *e; e++)
		if (strchr(*e, '=') && **e != '=')
			env_set(&env, &n, *e);
	if (isatty(0) || c->tty) {
		const char *term = getenv("TERM");
		push(&env, &n, xasprintf("TERM=%s", term && *term ? term : "xterm"));
	}
	if (c->hostname)
		push(&env, &n, xasprintf("HOSTNAME=%s", c->hostname));
	for (size_t i = 0; i < c->nenv; i++)
		env_set(&env, &n, c->env[i]);
	return env;
}

static int run_main(int argc, char **argv, const char *driver_root)
{
	struct cli c = {.driver_root = driver_root};
	struct plan plan = {0};
	struct run_config cfg = {.plan = &plan, .image_fd = -1};
	struct gerr err = {0};

	/* getopt_long has already stepped over a "--" before IMAGE. */
	struct cache cache = {.fd = -1, .lockfd = -1};
	struct image img = {0};
	int i = parse_run_args(&c, argc, argv);
	if (i >= argc)
		die(GPURUN_EXIT_FAIL, "missing IMAGE (try gpurun --help)");
	check_values(&c, &cfg);
	set_max_image_size(c.max_image_size);
	open_image(&c, &cfg, argv[i++], &cache, &img);
	if (i < argc && !strcmp(argv[i], "--"))
		i++;
	/* docker's rules: a COMMAND replaces Cmd, Entrypoint stays; -u and
	 * -w replace User and WorkingDir. */
	const struct image_config *ic = cfg.layered ? &cfg.layered->config : NULL;
	static char *default_cmd[] = {(char *)"/bin/sh", NULL};
	cfg.argv = argv_join(ic ? ic->entrypoint : NULL, i < argc ? argv + i : ic ? ic->cmd : NULL);
	if (!cfg.argv[0])
		cfg.argv = default_cmd;
	cfg.host_uid = geteuid();
	cfg.host_gid = getegid();
	cfg.unprivileged = cfg.host_uid != 0;
	/* With ranges and Debian's uidmap, a full map as podman makes it;
	 * else one id mapped: no other id exists to switch to or give files
	 * to, and the calls that would need one are answered (ns/security.c). */
	if (cfg.unprivileged)
		(void)subid_lookup(cfg.host_uid, cfg.host_gid, &cfg.subids);
	cfg.fake_ids = cfg.unprivileged && !cfg.subids.uid_count;
	cfg.keep_owner = !cfg.unprivileged && ids_all_mapped();
	cfg.read_only = c.read_only;
	cfg.verbose = c.verbose;
	cfg.tty = c.tty;
	cfg.interactive = c.interactive;
	cfg.user_spec = c.user ? c.user : ic ? ic->user : NULL;
	cfg.workdir = c.workdir;
	if (!cfg.workdir && ic && ic->workdir)
		cfg.workdir = ic->workdir[0] == '/' ? ic->workdir : xasprintf("/%s", ic->workdir);
	cfg.env = container_env(&c, ic);

	layout_base(&plan, &cfg);
	struct gpu_opts go = {
		.driver_root = c.driver_root,
		.gpus = c.gpus,
		.caps = c.caps,
		.requires = c.requires,
		.nrequires = c.nrequires,
		.env = cfg.env,
		.dry_run = c.dry_run,
		.verbose = c.verbose,
	};
	for (char **e = cfg.env; *e; e++)
		go.nenv++;
	struct gpu_result gr = {0};
	struct cdi_request cq = {c.devices, c.ndevices, c.cdi_dirs, c.ncdi_dirs, c.env, c.nenv};
	if (c.ndevices) { /* instead of gpurun's own injection */
		if (cdi_inject(&plan, &cq, &cfg.env, &gr.ldconfig_dirs, &gr.compat_driver, &err) < 0)
			gerr_die(&err);
	} else if (gpu_configure(&plan, &go, &gr, &err) < 0)
		gerr_die(&err);
	for (size_t v = 0; v < c.nvolumes; v++)
		if (layout_volume(&plan, c.volumes[v], &err) < 0)
			gerr_die(&err);
	layout_finish(&plan, &cfg, gr.ldconfig_dirs, gr.compat_driver);
	free(gr.ldconfig_dirs); /* copied into the plan */
	free(gr.compat_driver);
	cfg.host_steps = &gr.host_steps;

	if (c.dry_run) {
		ns_print_plan(&cfg, stdout);
		return 0;
	}
	int code = ns_run(&cfg, &err);
	if (code < 0)
		gerr_die(&err);
	return code;
}

/* A verb's bad argument: the line (arguments shown, never sent raw to the
 * terminal), then its usage; the status to exit with. */
#define usage_fail(use, ...) (errorx_(__VA_ARGS__), fputs((use), stderr), GPURUN_EXIT_FAIL)

/* The options of `info` and `list`: "--opt VALUE" or "--opt=VALUE". */
static int opt_value(int argc, char **argv, int *i, const char *name, const char **out)
{
	size_t n = strlen(name);
	if (strncmp(argv[*i], name, n) != 0)
		return 0;
	if (argv[*i][n] == '=') {
		*out = argv[*i] + n + 1;
		return 1;
	}
	if (argv[*i][n] || *i + 1 >= argc)
		return 0;
	*out = argv[++*i];
	return 1;
}

/* "10G", "500M", "1.5G", "0": bytes (powers of 1000, as `cache ls` shows). */
static int parse_size(const char *s, unsigned long long *out)
{
	char *end;
	errno = 0;
	double v = strtod(s, &end);
	if (errno || end == s || v < 0)
		return -1;
	static const char units[] = "BKMGT";
	const char *u = *end ? strchr(units, *end & ~0x20) : units;
	if (!u || (*end && end[1] && strcasecmp(end + 1, "B")))
		return -1;
	for (const char *p = units; p < u; p++)
		v *= 1000;
	*out = (unsigned long long)v;
	return 0;
}

static int cache_verb(int argc, char **argv)
{
	static const char use[] = "usage: gpurun cache ls [--json] | rm DIGEST|IMAGE | prune [--max-size SIZE]\n";
	struct cache c;
	struct gerr err = {0};
	if (argc < 2 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
		fputs(use, argc < 2 ? stderr : stdout);
		return argc < 2 ? GPURUN_EXIT_FAIL : 0;
	}
	const char *sub = argv[1];
	unsigned long long max = ~0ULL;
	int json = !strcmp(sub, "ls") && argc == 3 && !strcmp(argv[2], "--json");
	argc -= json;
	if (!strcmp(sub, "prune") && argc == 4 && !strcmp(argv[2], "--max-size")) {
		if (parse_size(argv[3], &max) < 0)
			die(GPURUN_EXIT_FAIL, "cache prune: --max-size '%s': expected a size such as 500M or 10G", argv[3]);
	} else if (!((!strcmp(sub, "ls") && argc == 2) || (!strcmp(sub, "rm") && argc == 3) ||
		     (!strcmp(sub, "prune") && argc == 2))) {
		return usage_fail(use, "cache: unknown or incomplete command '%s'", sub);
	}
	if (cache_open(&c, 0, &err) < 0) {
		if (err.errnum == ENOENT && !strcmp(sub, "ls")) {
			if (json)
				puts("{\"images\":[]}");
			return 0; /* nothing cached yet */
		}
		gerr_die(&err);
	}
	int r = !strcmp(sub, "ls") ? cache_list(&c, json, &err)
		: !strcmp(sub, "rm") ? cache_remove(&c, argv[2], &err)
				     : cache_prune(&c, max, &err);
	if (r < 0)
		gerr_die(&err);
	cache_close(&c);
	return 0;
}

/* `gpurun pull REF`: into the cache, always asking the registry. */
static int pull_verb(int argc, char **argv)
{
	static const char use[] =
		"usage: gpurun pull [--platform OS/ARCH[/VARIANT]] [--tls-verify=false] [--quiet] [--verbose] REF\n";
	struct pull_opts po = {.always = 1};
	unsigned flags = 0;
	const char *ref = NULL;
	struct cache cache;
	struct image img = {0};
	struct gerr err = {0};
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			fputs(use, stdout);
			return 0;
		}
		if (opt_value(argc, argv, &i, "--platform", &po.platform))
			continue;
		if (!strcmp(argv[i], "--tls-verify") || !strncmp(argv[i], "--tls-verify=", 13)) {
			po.insecure = parse_tls_verify(argv[i][12] ? argv[i] + 13 : NULL);
			continue;
		}
		if (!strcmp(argv[i], "--quiet")) {
			flags |= IMAGE_QUIET;
			continue;
		}
		if (!strcmp(argv[i], "--verbose")) {
			po.verbose = 1;
			continue;
		}
		if (argv[i][0] == '-' || ref) {
			return usage_fail(use, "pull: %s %s", argv[i][0] == '-' ? "unknown option" : "unexpected argument",
					  argv[i]);
		}
		ref = argv[i];
	}
	if (!ref) {
		fputs(use, stderr);
		return GPURUN_EXIT_FAIL;
	}
	set_max_image_size(NULL);
	/* "gpurun pull ubuntu" as docker pull does: the prefix is optional. */
	_cleanup_free_ char *full = strncmp(ref, REGISTRY_PREFIX, strlen(REGISTRY_PREFIX))
					    ? xasprintf(REGISTRY_PREFIX "%s", ref) : xstrdup(ref);
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

static int gpu_verb(int argc, char **argv, int list)
{
	static const char *const usages[] = {"usage: gpurun info [--csv|--json] [--driver-root DIR]\n",
					     "usage: gpurun list [--gpus SPEC] [--caps LIST] [--json] [--driver-root DIR]\n"};
	struct gpu_query q = {.driver_root = global_driver_root};
	struct gerr err = {0};
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			fputs(usages[list], stdout);
			return 0;
		}
		if (opt_value(argc, argv, &i, "--driver-root", &q.driver_root))
			continue;
		if ((!list && !strcmp(argv[i], "--csv")) || !strcmp(argv[i], "--json")) {
			*(argv[i][2] == 'c' ? &q.csv : &q.json) = 1;
			continue;
		}
		if (list && (opt_value(argc, argv, &i, "--gpus", &q.gpus) ||
			     opt_value(argc, argv, &i, "--caps", &q.caps)))
			continue;
		return usage_fail(usages[list], "%s: unknown option %s", argv[0], argv[i]);
	}
	if ((list ? gpu_list(&q, &err) : gpu_info(&q, &err)) < 0)
		gerr_die(&err);
	return 0;
}

/* `gpurun cdi generate|list`. */
static int cdi_verb(int argc, char **argv)
{
	static const char usage_text[] =
		"usage: gpurun cdi generate [--driver-root DIR] [--format yaml|json] [--output FILE]\n"
		"       gpurun cdi list [--cdi-spec-dir DIR]...\n";
	struct gerr err = {0};
	if (argc < 2 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
		fputs(usage_text, argc < 2 ? stderr : stdout);
		return argc < 2 ? GPURUN_EXIT_FAIL : 0;
	}
	int gen = !strcmp(argv[1], "generate");
	if (!gen && strcmp(argv[1], "list"))
		die(GPURUN_EXIT_FAIL, "cdi: unknown command '%s' (expected generate or list)", argv[1]);
	struct cdi_gen_opts go = {.driver_root = global_driver_root};
	struct strv given = {0}, dirs = {0};
	for (int i = 2; i < argc; i++) {
		const char *v;
		if (gen && (opt_value(argc, argv, &i, "--driver-root", &go.driver_root) ||
			    opt_value(argc, argv, &i, "--format", &go.format) ||
			    opt_value(argc, argv, &i, "--output", &go.output)))
			continue;
		if (!gen && opt_value(argc, argv, &i, "--cdi-spec-dir", &v)) {
			strv_add(&given, xstrdup(v));
			continue;
		}
		die(GPURUN_EXIT_FAIL, "cdi %s: unknown argument '%s' (try gpurun cdi --help)", argv[1], argv[i]);
	}
	int r;
	if (gen) {
		r = cdi_generate(&go, &err);
	} else {
		cdi_spec_dirs(given.v, given.n, &dirs);
		r = cdi_list(&dirs, &err);
	}
	strv_free(&given);
	strv_free(&dirs);
	if (r < 0)
		gerr_die(&err);
	return 0;
}

/* `gpurun doctor`: one verdict per thing users hit most, each saying what
 * to change; exit 1 when any check failed (gpurun itself did not). */
static int doctor_verb(int argc, char **argv)
{
	static const char use[] = "usage: gpurun doctor [--gpus SPEC] [--json] [--driver-root DIR]\n";
	const char *driver_root = global_driver_root, *gpus = NULL;
	struct checks ck = {0};
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			fputs(use, stdout);
			return 0;
		}
		if (opt_value(argc, argv, &i, "--driver-root", &driver_root) ||
		    opt_value(argc, argv, &i, "--gpus", &gpus))
			continue;
		if (!strcmp(argv[i], "--json")) {
			ck.collect = 1;
			continue;
		}
		return usage_fail(use, "doctor: unknown option %s", argv[i]);
	}
	struct gerr err = {0};
	_cleanup_free_ char *cache = cache_doctor(&ck);
	if (ns_doctor(&ck, cache, &err) < 0)
		gerr_die(&err);
	gpu_doctor(&ck, driver_root, gpus);
	if (ck.collect) {
		if (checks_print_json(&ck, &err) < 0)
			gerr_die(&err);
	} else {
		printf("%u failed, %u warning%s\n", ck.failed, ck.warned, ck.warned == 1 ? "" : "s");
	}
	checks_free(&ck);
	return ck.failed ? 1 : 0;
}

/* Global options before the verb, as nvidia-container-cli takes them
 * (`nvidia-container-cli --root DIR info`): `gpurun --driver-root DIR info`.
 * Only --driver-root is global; it ends where the first other word is.
 * Returns the index of that word; *root gets the last value given. */
static int global_opts(int argc, char **argv, const char **root)
{
	int i = 1;
	while (i < argc && opt_value(argc, argv, &i, "--driver-root", root))
		i++;
	return i;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return GPURUN_EXIT_FAIL;
	}
	/* A verb only when the first word after the global options is exactly
	 * one; an image file called "info" is given as ./info.  The global
	 * --driver-root is the default of the verb's own --driver-root (a
	 * later one wins), and reaches `run` the same way. */
	const char *root = NULL;
	int v = global_opts(argc, argv, &root);
	const char *verb = v < argc ? argv[v] : "";
	if (root) {
		if (strcmp(verb, "info") && strcmp(verb, "list") && strcmp(verb, "doctor") &&
		    strcmp(verb, "run") && strcmp(verb, "cdi"))
			return run_main(argc, argv, NULL); /* `--driver-root DIR IMAGE ...` */
		global_driver_root = root;
	}
	argc -= v - 1;
	argv += v - 1;
	if (!strcmp(verb, "info"))
		return gpu_verb(argc - 1, argv + 1, 0);
	if (!strcmp(verb, "list"))
		return gpu_verb(argc - 1, argv + 1, 1);
	if (!strcmp(verb, "cache"))
		return cache_verb(argc - 1, argv + 1);
	if (!strcmp(verb, "doctor"))
		return doctor_verb(argc - 1, argv + 1);
	if (!strcmp(verb, "cdi"))
		return cdi_verb(argc - 1, argv + 1);
	if (!strcmp(verb, "pull"))
		return pull_verb(argc - 1, argv + 1);
	if (!strcmp(verb, "version")) {
		printf("gpurun %s\n", GPURUN_VERSION);
		return 0;
	}
	if (!strcmp(verb, "help")) {
		usage(stdout);
		return 0;
	}
	if (!strcmp(verb, "run"))
		return run_main(argc - 1, argv + 1, global_driver_root);
	return run_main(argc, argv, NULL);
}
