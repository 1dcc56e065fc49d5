/* gpurun.c — the command line.  It reads options, the image and the GPU
 * request, and turns them into a plan (base/plan/plan.h): an ordered list of setup
 * steps that ns/ carries out inside fresh namespaces, or prints for
 * --dry-run.  It is the only place that decides to exit.  run_main() reads
 * as the story of a launch:
 *
 *   image -> the baseline layout (ns/layout.c: root, /proc, /dev, /sys,
 *   /tmp, /run, host network files), GPU injection (gpu/), volumes, --tmpfs
 *   and --mount, workdir, pivot, ldconfig, read-only root -> run (or print).
 * Every verb's options are a table of base/opt.h, which parses them and
 * writes the usage. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/opt.h"
#include "gpu/cdi/cdi.h"
#include "gpu/gpu.h"
#include "gpu/smoke.h"
#include "ns/ns.h"
#include "rootfs/rootfs.h"

struct cli {
	struct strv env, file_env, requires;
	struct strv mounts;   /* 'v', 't' or 'm' then -v's, --tmpfs's or --mount's value, in order */
	struct strv devices;  /* --device vendor.com/class=name (CDI) */
	struct strv cdi_dirs; /* --cdi-spec-dir */
	const char *workdir, *user, *hostname, *net, *gpus, *caps, *driver_root, *platform;
	int read_only, dry_run, verbose, no_cache, quiet, insecure, tty, interactive;
	const char *max_image_size; /* --max-image-size */
	const char *entrypoint;     /* --entrypoint ("": none), or NULL */
	const char *ipc, *pull;
	unsigned long long shm_size;
	int value_word; /* the word an option took last as its value (to name it when that was IMAGE) */
	char typed[64]; /* that option, as typed */
	struct ulimit *ulimits;
	size_t nulimits;
};

/* `gpurun --driver-root DIR VERB`: the global option, the default of the
 * verb's own. */
static const char *global_driver_root;

/* The option tables are laid out by hand, one option a line. */
/* clang-format off */
/* The options of `run`, the default verb: the table that parses them and
 * writes their help. */
enum {
	R_ENV = 1, R_VOLUME, R_WORKDIR, R_USER, R_HOSTNAME, R_NET, R_READ_ONLY, R_DRY_RUN, R_VERBOSE, R_GPUS,
	R_CAPS, R_REQUIRE, R_DEVICE, R_CDI_SPEC_DIR, R_DRIVER_ROOT, R_NO_CACHE, R_MAX_IMAGE_SIZE, R_QUIET,
	R_PLATFORM, R_TLS_VERIFY, R_HELP, R_VERSION, R_ENV_FILE, R_TMPFS, R_MOUNT, R_SHM_SIZE, R_ULIMIT, R_IPC,
	R_ENTRYPOINT, R_PULL, R_DOCKER_NOOP, R_TTY, R_INTERACTIVE,
};
static const struct opt run_opts[] = {
	{R_GPUS, "gpus", NULL, 0, OPT_VALUE, "SPEC", "all, none, void, or indexes, GPU-<uuid>, PCI bus ids\n"
	 "(comma list).  --gpus 2 is GPU index 2, where docker reads a\n"
	 "count; count=2 is docker's two GPUs, device=0,2 docker's list"},
	{R_CAPS, "caps", NULL, 0, OPT_VALUE, "LIST", "driver capabilities (default utility,compute)"},
	{R_REQUIRE, "require", NULL, 0, OPT_VALUE, "EXPR", "an NVIDIA_REQUIRE_* style constraint (repeatable)"},
	{R_DEVICE, "device", NULL, 0, OPT_VALUE, "VENDOR/CLASS=NAME", "a CDI device, e.g. nvidia.com/gpu=0 (repeatable;\n"
	 "instead of --gpus, --caps and --require)"},
	{R_CDI_SPEC_DIR, "cdi-spec-dir", NULL, 0, OPT_VALUE, "DIR", "where CDI specs are (repeatable, later wins; else\n"
	 "GPURUN_CDI_SPEC_DIRS=DIR:DIR, else /etc/cdi:/var/run/cdi)"},
	{R_ENV, "env", NULL, 'e', OPT_VALUE, "K[=V]", "set a variable; K alone copies the host's value"},
	{R_ENV_FILE, "env-file", NULL, 0, OPT_VALUE, "FILE", "K=V or K lines (# comments), as docker reads them;\n"
	 "-e wins over them"},
	{R_VOLUME, "volume", NULL, 'v', OPT_VALUE, "SRC:DST[:ro]", "bind a host path"},
	{R_MOUNT, "mount", NULL, 0, OPT_VALUE, "type=bind|tmpfs,...", "docker's syntax: source, target, readonly,\n"
	 "tmpfs-size, tmpfs-mode (src, dst, destination, ro too)"},
	{R_TMPFS, "tmpfs", NULL, 0, OPT_VALUE, "DST[:OPTS]", "a tmpfs, noexec,nosuid,nodev unless exec; OPTS:\n"
	 "ro, exec, size=64m, mode=1777 (mounts go in the order given)"},
	{R_SHM_SIZE, "shm-size", NULL, 0, OPT_VALUE, "SIZE", "cap /dev/shm (64m, 1g; default: no cap)"},
	{R_WORKDIR, "workdir", NULL, 'w', OPT_VALUE, "DIR", "working directory inside (created if missing)"},
	{R_USER, "user", NULL, 'u', OPT_VALUE, "U[:G]", "uid/gid or names from the image's /etc/passwd;\n"
	 "without G, also the user's groups in its /etc/group"},
	{R_HOSTNAME, "hostname", NULL, 'h', OPT_VALUE, "NAME", "new UTS namespace with that host name\n"
	 "(-h alone, as the only argument, is the help)"},
	{R_NET, "net", "network", 0, OPT_VALUE, "host|none", "share the host network (default) or only lo"},
	{R_IPC, "ipc", NULL, 0, OPT_CHOICE, "host|private", "share the host's IPC namespace, or a new one (default)"},
	{R_ULIMIT, "ulimit", NULL, 0, OPT_VALUE, "NAME=SOFT[:HARD]", "a resource limit of the command, as docker's\n"
	 "(nofile, nproc, core, memlock, stack, ...; repeatable)"},
	{R_ENTRYPOINT, "entrypoint", NULL, 0, OPT_VALUE, "CMD", "instead of the image's Entrypoint, and its Cmd\n"
	 "unless COMMAND is given; '' for none"},
	{R_READ_ONLY, "read-only", NULL, 0, OPT_FLAG, NULL, "the root file system is read-only"},
	{R_DRIVER_ROOT, "driver-root", NULL, 0, OPT_VALUE, "DIR", "where the host driver lives (GPURUN_DRIVER_ROOT; /)"},
	{R_NO_CACHE, "no-cache", NULL, 0, OPT_FLAG, NULL, "unpack a root file system archive into memory for this run"},
	{R_MAX_IMAGE_SIZE, "max-image-size", NULL, 0, OPT_VALUE, "SIZE", "the most an image may unpack to\n"
	 "(GPURUN_MAX_IMAGE_SIZE; default 64G; 500M, 10G: powers of 1000)"},
	{R_QUIET, "quiet", NULL, 0, OPT_FLAG, NULL, "no progress display while pulling or unpacking"},
	{R_PLATFORM, "platform", NULL, 0, OPT_VALUE, "OS/ARCH[/VARIANT]", "the image of a multi-platform index to pull"},
	{R_PULL, "pull", NULL, 0, OPT_CHOICE, "missing|always|never", "a registry image: from the cache when\n"
	 "there (default), always asked again, or only from the cache"},
	{R_TLS_VERIFY, "tls-verify", NULL, 0, OPT_OPTIONAL, "false", "the registry may be plain HTTP or have an\n"
	 "unverified certificate (also GPURUN_INSECURE_REGISTRIES=HOST[:PORT],...)\n"
	 "(a pull's time bounds: GPURUN_PULL_STALL_TIMEOUT, 30 s without\n"
	 "a byte; GPURUN_PULL_ANSWER_TIMEOUT, 120 s an answer)"},
	{R_DRY_RUN, "dry-run", NULL, 0, OPT_FLAG, NULL, "print the plan as shell commands; change nothing"},
	{R_VERBOSE, "verbose", NULL, 0, OPT_FLAG, NULL, "print each step as it is done"},
	{R_DOCKER_NOOP, "rm", NULL, 0, OPT_FLAG, NULL, "accepted: every run is removed when it ends"},
	{R_DOCKER_NOOP, "init", NULL, 0, OPT_FLAG, NULL, "accepted: gpurun's own init is always pid 1"},
	{R_TTY, "tty", NULL, 't', OPT_FLAG, NULL, "a pty of the container's own for the command, relayed to\n"
	 "this terminal (-it: with the keystrokes)"},
	{R_INTERACTIVE, "interactive", NULL, 'i', OPT_FLAG, NULL, "with -t, relay stdin to the command (without -t,\n"
	 "stdin always reaches the command; docker closes it)"},
	{R_HELP, "help", NULL, 0, OPT_FLAG, NULL, "this text (-h too, alone)"},
	{R_VERSION, "version", NULL, 'V', OPT_FLAG, NULL, "the version"},
	{0},
};

/* The other verbs' options.  A verb's table is its whole interface: its
 * usage line and its parse come from it. */
enum { V_HELP = 1, V_DRIVER_ROOT, V_CSV, V_JSON, V_GPUS, V_CAPS, V_PLATFORM, V_TLS_VERIFY, V_QUIET, V_VERBOSE,
       V_MAX_SIZE, V_FORMAT, V_OUTPUT, V_CDI_SPEC_DIR };
#define HELP_OPT {V_HELP, "help", NULL, 'h', OPT_FLAG, NULL, "this text"}
#define DRIVER_ROOT_OPT {V_DRIVER_ROOT, "driver-root", NULL, 0, OPT_VALUE, "DIR", "where the host driver lives"}
#define JSON_OPT {V_JSON, "json", NULL, 0, OPT_FLAG, NULL, "one JSON document (docs/json.md)"}
static const struct opt info_opts[] = {
	{V_CSV, "csv", NULL, 0, OPT_FLAG, NULL, "comma-separated values"}, JSON_OPT, DRIVER_ROOT_OPT, HELP_OPT, {0}};
static const struct opt list_opts[] = {
	{V_GPUS, "gpus", NULL, 0, OPT_VALUE, "SPEC", "the GPUs, as run's --gpus"},
	{V_CAPS, "caps", NULL, 0, OPT_VALUE, "LIST", "the driver capabilities, as run's --caps"}, JSON_OPT,
	DRIVER_ROOT_OPT, HELP_OPT, {0}};
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
static const struct opt doctor_opts[] = {
	{V_GPUS, "gpus", NULL, 0, OPT_VALUE, "SPEC", "also check these GPUs end to end, as run's --gpus"}, JSON_OPT,
	DRIVER_ROOT_OPT, HELP_OPT, {0}};
static const struct opt cdi_generate_opts[] = {
	DRIVER_ROOT_OPT, {V_FORMAT, "format", NULL, 0, OPT_VALUE, "yaml|json", "the spec's format"},
	{V_OUTPUT, "output", NULL, 0, OPT_VALUE, "FILE", "where to write it (default: stdout)"}, HELP_OPT, {0}};
static const struct opt cdi_list_opts[] = {
	{V_CDI_SPEC_DIR, "cdi-spec-dir", NULL, 0, OPT_VALUE, "DIR", "where CDI specs are (repeatable)"}, HELP_OPT, {0}};
static const struct opt global_opts_tab[] = {DRIVER_ROOT_OPT, {0}};

/* The usage lines; cache's subcommands share one. */
static const struct opt_use uses[] = {
	{"info", NULL, info_opts, "", 1, 0},
	{"list", NULL, list_opts, "", 1, 0},
	{"pull", NULL, pull_opts, " REF", 0, 0},
	{"cache", "ls", cache_ls_opts, "", 0, 0},
	{"cache", "rm", cache_rm_opts, " DIGEST|IMAGE", 0, 0},
	{"cache", "prune", cache_prune_opts, "", 0, 0},
	{"doctor", NULL, doctor_opts, "", 1, 0},
	{"cdi", "generate", cdi_generate_opts, "", 1, 0},
	{"cdi", "list", cdi_list_opts, "...", 0, 1},
};

/* clang-format on */

#define print_uses(out, verb, lead) opt_print_uses((out), uses, COUNT_OF(uses), (verb), (lead))

static void usage(FILE *out)
{
	fputs("usage: gpurun [run] [OPTIONS] IMAGE[@NAME:TAG] [--] [COMMAND [ARG...]]\n", out);
	print_uses(out, NULL, "       ");
	fputs("       gpurun smoke [--gpus SPEC] [--json|--tap] [--driver-root DIR] [IMAGE]\n"
	      "       gpurun version | help\n"
	      "\n"
	      "Run COMMAND in IMAGE (a root file system directory or archive, a `docker save`\n"
	      "archive, an OCI or dir: layout, or docker://REF) in new namespaces, with the\n"
	      "selected NVIDIA GPUs injected; without COMMAND, the image's Entrypoint and Cmd,\n"
	      "or /bin/sh.  Images are unpacked once into a cache.  The reference: gpurun(1).\n"
	      "\n",
	      out);
	opt_help(out, run_opts, NULL);
	opt_help(out, opt_docker_refused,
		 "\ndocker's options that gpurun does not have, each refused with a line\n"
		 "saying what to do instead:\n");
	fputs("\n"
	      "Exit status: the command's; 128+N if it died of signal N; 125 gpurun failed;\n"
	      "126 the command cannot be executed; 127 the command was not found.\n",
	      out);
}

/* A verb's bad argument: the line (arguments shown, never sent raw to the
 * terminal), then its usage; the status to exit with. */
static __attribute__((format(printf, 2, 3))) int usage_fail(const char *verb, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	_cleanup_free_ char *msg = xvasprintf(NULL, fmt, ap);
	va_end(ap);
	errorx_("%s", msg);
	print_uses(stderr, verb, "usage: ");
	return GPURUN_EXIT_FAIL;
}

/* The next word of a verb other than run: 1 an option (*o, *val), 2 an
 * operand (*val), 0 the end.  --help prints the verb's usage and exits; a
 * bad option ends gpurun with its line and the usage. */
static int verb_next(struct opt_state *s, const char *verb, const struct opt *tab, const struct opt **o,
		     const char **val)
{
	struct gerr err = {0};
	int r = opt_next(s, tab, o, val, &err);
	if (r < 0) /* argv[0] is the verb, or the subcommand of cache and cdi */
		exit(usage_fail(verb, "%s%s%s: %s", verb, strcmp(verb, s->argv[0]) ? " " : "",
				strcmp(verb, s->argv[0]) ? s->argv[0] : "", err.msg));
	if (r == 1 && (*o)->id == V_HELP) {
		print_uses(stdout, verb, "usage: ");
		exit(0);
	}
	if (r == 0 && s->i < s->argc) {
		*val = s->argv[s->i++];
		return 2;
	}
	return r;
}

/* docker's rules: an option that takes a value takes the next word.  When
 * that leaves no IMAGE, or IMAGE cannot be opened, the option is named. */
static int parse_run_args(struct cli *c, int argc, char **argv)
{
	struct opt_state s = OPT_STATE(argc, argv);
	const struct opt *o = NULL;
	const char *v;
	struct gerr err = {0};
	int r, bad = 0;
	if (argc == 2 && !strcmp(argv[1], "-h")) { /* docker's: -h alone is the help */
		usage(stdout);
		exit(0);
	}
	s.also = opt_docker_refused;
	while ((r = opt_next(&s, run_opts, &o, &v, &err)) == 1) {
		switch (o->id) {
		case R_ENV: bad = opt_env(v, &c->env, &err); break;
		case R_ENV_FILE: bad = opt_env_file(v, &c->file_env, &err); break;
		case R_VOLUME: strv_add(&c->mounts, xasprintf("v%s", v)); break;
		case R_TMPFS: strv_add(&c->mounts, xasprintf("t%s", v)); break;
		case R_MOUNT: strv_add(&c->mounts, xasprintf("m%s", v)); break;
		case R_SHM_SIZE:
			if (opt_size1024(v, &c->shm_size) < 0)
				die(GPURUN_EXIT_FAIL, "--shm-size '%s': expected a size such as 64m or 1g (b, k, m, g)",
				    v);
			break;
		case R_ULIMIT:
			c->ulimits = xrealloc(c->ulimits, (c->nulimits + 1) * sizeof *c->ulimits);
			bad = opt_ulimit(v, &c->ulimits[c->nulimits++], &err);
			break;
		case R_IPC: c->ipc = v; break;
		case R_ENTRYPOINT: c->entrypoint = v; break;
		case R_PULL: c->pull = v; break;
		case R_WORKDIR: c->workdir = v; break;
		case R_USER: c->user = v; break;
		case R_HOSTNAME:
			if (!strcmp(s.typed, "-h") && *v == '-')
				die(GPURUN_EXIT_FAIL,
				    "-h %s: -h takes a host name here (-h NAME, as docker's); "
				    "for the help, -h must be the only argument",
				    v);
			c->hostname = v;
			break;
		case R_NET: c->net = v; break;
		case R_READ_ONLY: c->read_only = 1; break;
		case R_TTY: c->tty = 1; break;
		case R_INTERACTIVE: c->interactive = 1; break;
		case R_DRY_RUN: c->dry_run = 1; break;
		case R_VERBOSE: c->verbose = 1; break;
		case R_GPUS: c->gpus = v; break;
		case R_CAPS: c->caps = v; break;
		case R_REQUIRE: strv_add(&c->requires, xstrdup(v)); break;
		case R_DRIVER_ROOT: c->driver_root = v; break;
		case R_NO_CACHE: c->no_cache = 1; break;
		case R_QUIET: c->quiet = 1; break;
		case R_PLATFORM: c->platform = v; break;
		case R_TLS_VERIFY: bad = opt_tls_verify(v, &c->insecure, &err); break;
		case R_DEVICE: strv_add(&c->devices, xstrdup(v)); break;
		case R_CDI_SPEC_DIR: strv_add(&c->cdi_dirs, xstrdup(v)); break;
		case R_MAX_IMAGE_SIZE: c->max_image_size = v; break;
		case R_HELP: usage(stdout); exit(0);
		case R_VERSION: printf("gpurun %s\n", GPURUN_VERSION); exit(0);
		}
		if (bad < 0)
			gerr_die(&err);
	}
	if (r < 0) /* a refused option's line says what to do instead */
		die(GPURUN_EXIT_FAIL, "%s%s", err.msg, o && o->arg == OPT_REFUSED ? "" : " (try gpurun --help)");
	if (s.i >= argc && s.value_word == argc - 1 && !s.ended)
		die(GPURUN_EXIT_FAIL, "%s needs a value: it took '%s', and no IMAGE is left", s.typed, argv[argc - 1]);
	/* --env-file first, so that -e wins, whichever came first. */
	for (size_t i = 0; i < c->env.n; i++)
		env_set(&c->file_env, c->env.v[i]);
	strv_free(&c->env);
	c->env = c->file_env;
	c->value_word = s.value_word;
	memcpy(c->typed, s.typed, sizeof c->typed);
	return s.i;
}

static void check_values(const struct cli *c, struct run_config *cfg)
{
	/* CDI devices and --gpus are two ways to say what is injected; both at
	 * once would bind the same driver twice from two descriptions. */
	if (c->devices.n && (c->gpus || c->caps || c->requires.n))
		die(GPURUN_EXIT_FAIL, "--device cannot be combined with %s: the CDI spec says what is injected",
		    c->gpus   ? "--gpus"
		    : c->caps ? "--caps"
			      : "--require");
	if (c->net && strcmp(c->net, "host") && strcmp(c->net, "none"))
		die(GPURUN_EXIT_FAIL,
		    "--net/--network: '%s' is not one gpurun has: host (the default) or none; "
		    "gpurun makes no bridge or user-defined networks",
		    c->net);
	cfg->share_ipc = c->ipc && !strcmp(c->ipc, "host");
	cfg->shm_size = c->shm_size;
	cfg->ulimits = c->ulimits;
	cfg->nulimits = c->nulimits;
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
static void open_image(const struct cli *c, struct run_config *cfg, char **argv, int i, struct cache *cache,
		       struct image *img)
{
	struct gerr err = {0};
	struct image_open_opts o = {.platform = c->platform,
				    .insecure = c->insecure,
				    .verbose = c->verbose,
				    .dry_run = c->dry_run,
				    .quiet = c->quiet,
				    .no_cache = c->no_cache,
				    .pull_always = c->pull && !strcmp(c->pull, "always"),
				    .pull_never = c->pull && !strcmp(c->pull, "never")};
	struct opened_image oi;
	if (image_open(argv[i], &o, cache, img, &oi, &err) < 0) {
		/* `--gpus IMAGE true`: the option took the image. */
		struct stat st;
		if (c->value_word && c->value_word == i - 1 && err.errnum == ENOENT && !err.hint[0] &&
		    stat(argv[i - 1], &st) == 0)
			gerr_hint(&err, "%s took '%s' as its value: was its value left out?", c->typed, argv[i - 1]);
		gerr_die(&err);
	}
	cfg->image = oi.image;
	cfg->image_fd = oi.fd;
	cfg->image_is_dir = oi.is_dir;
	cfg->layered = oi.layered;
	cfg->import_run = oi.import_run;
	cfg->import_sel = oi.import_sel;
}

static int run_main(int argc, char **argv, const char *driver_root)
{
	struct cli c = {.driver_root = driver_root};
	struct plan plan = {0};
	struct run_config cfg = {.plan = &plan, .image_fd = -1};
	struct gerr err = {0};

	/* The parse has already stepped over a "--" before IMAGE. */
	struct cache cache = {.fd = -1, .lockfd = -1};
	struct image img = {0};
	int i = parse_run_args(&c, argc, argv);
	if (i >= argc)
		die(GPURUN_EXIT_FAIL, "missing IMAGE (try gpurun --help)");
	check_values(&c, &cfg);
	if (rootfs_max_image_size_from(c.max_image_size, &err) < 0)
		gerr_die(&err);
	open_image(&c, &cfg, argv, i++, &cache, &img);
	if (i < argc && !strcmp(argv[i], "--"))
		i++;
	/* docker's rules: a COMMAND replaces Cmd, Entrypoint stays; -u and
	 * -w replace User and WorkingDir; --entrypoint replaces Entrypoint
	 * and drops Cmd ('' leaves no Entrypoint). */
	const struct image_config *ic = cfg.layered ? &cfg.layered->config : NULL;
	static char *default_cmd[] = {(char *)"/bin/sh", NULL};
	char *entry[] = {(char *)c.entrypoint, NULL};
	if (c.entrypoint)
		cfg.argv = argv_join(*c.entrypoint ? entry : NULL, i < argc ? argv + i : NULL);
	else
		cfg.argv = argv_join(ic ? ic->entrypoint : NULL, i < argc ? argv + i : ic ? ic->cmd : NULL);
	if (!cfg.argv[0])
		cfg.argv = default_cmd;
	ns_caller(&cfg);
	cfg.read_only = c.read_only;
	cfg.verbose = c.verbose;
	cfg.tty = c.tty;
	cfg.interactive = c.interactive;
	cfg.user_spec = c.user ? c.user : ic ? ic->user : NULL;
	cfg.workdir = c.workdir;
	if (!cfg.workdir && ic && ic->workdir)
		cfg.workdir = ic->workdir[0] == '/' ? ic->workdir : xasprintf("/%s", ic->workdir);
	cfg.env = ns_container_env(ic ? ic->env : NULL, isatty(0) || c.tty, c.hostname, &c.env);

	layout_base(&plan, &cfg);
	struct gpu_opts go = {.driver_root = c.driver_root,
			      .gpus = c.gpus,
			      .caps = c.caps,
			      .requires = c.requires.v,
			      .nrequires = c.requires.n,
			      .env = cfg.env,
			      .dry_run = c.dry_run,
			      .verbose = c.verbose};
	for (char **e = cfg.env; *e; e++)
		go.nenv++;
	struct gpu_result gr = {0};
	struct cdi_request cq = {c.devices.v, c.devices.n, c.cdi_dirs.v, c.cdi_dirs.n, c.env.v, c.env.n, c.driver_root};
	if (c.devices.n) { /* instead of gpurun's own injection */
		if (cdi_inject(&plan, &cq, &cfg.env, &gr.ldconfig_dirs, &gr.compat_driver, &err) < 0)
			gerr_die(&err);
	} else if (gpu_configure(&plan, &go, &gr, &err) < 0)
		gerr_die(&err);
	if (layout_mounts(&plan, &c.mounts, &err) < 0)
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

/* `gpurun cache ls|rm|prune`; argv[0] is the subcommand. */
static int cache_verb(int argc, char **argv)
{
	struct cache c;
	struct gerr err = {0};
	const char *sub = argc ? argv[0] : "";
	size_t u = 0;
	while (u < COUNT_OF(uses) && !(!strcmp(uses[u].verb, "cache") && !strcmp(uses[u].sub, sub)))
		u++;
	if (!strcmp(sub, "-h") || !strcmp(sub, "--help")) {
		print_uses(stdout, "cache", "usage: ");
		return 0;
	}
	if (!argc)
		return usage_fail("cache", "cache: missing command (ls, rm or prune)");
	if (u == COUNT_OF(uses))
		return usage_fail("cache", "cache: unknown or incomplete command '%s'", sub);
	unsigned long long max = ~0ULL;
	int json = 0;
	const char *digest = NULL, *v;
	const struct opt *o;
	struct opt_state s = OPT_STATE(argc, argv);
	for (int r; (r = verb_next(&s, "cache", uses[u].tab, &o, &v));) {
		if (r == 2 && !strcmp(sub, "rm") && !digest)
			digest = v;
		else if (r == 2)
			return usage_fail("cache", "cache %s: unexpected argument %s", sub, v);
		else if (o->id == V_JSON)
			json = 1;
		else if (o->id == V_MAX_SIZE && opt_size1000(v, &max) < 0)
			die(GPURUN_EXIT_FAIL, "cache prune: --max-size '%s': expected a size such as 500M or 10G", v);
	}
	if (!strcmp(sub, "rm") && !digest)
		return usage_fail("cache", "cache: unknown or incomplete command '%s'", sub);
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

/* `gpurun pull REF`: into the cache, always asking the registry. */
static int pull_verb(int argc, char **argv)
{
	struct pull_opts po = {.always = 1};
	unsigned flags = 0;
	const char *ref = NULL, *v;
	const struct opt *o;
	struct cache cache;
	struct image img = {0};
	struct gerr err = {0};
	struct opt_state s = OPT_STATE(argc, argv);
	for (int r; (r = verb_next(&s, "pull", pull_opts, &o, &v));) {
		if (r == 2 && ref)
			return usage_fail("pull", "pull: unexpected argument %s", v);
		if (r == 2) {
			ref = v;
			continue;
		}
		switch (o->id) {
		case V_PLATFORM: po.platform = v; break;
		case V_TLS_VERIFY:
			if (opt_tls_verify(v, &po.insecure, &err) < 0)
				gerr_die(&err);
			break;
		case V_QUIET: flags |= IMAGE_QUIET; break;
		case V_VERBOSE: po.verbose = 1; break;
		}
	}
	if (!ref)
		return usage_fail("pull", "pull: missing REF");
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

/* `gpurun info` and `gpurun list`. */
static int gpu_verb(int argc, char **argv, int list)
{
	struct gpu_query q = {.driver_root = global_driver_root};
	struct gerr err = {0};
	const char *v;
	const struct opt *o;
	struct opt_state s = OPT_STATE(argc, argv);
	for (int r; (r = verb_next(&s, argv[0], list ? list_opts : info_opts, &o, &v));) {
		if (r == 2)
			return usage_fail(argv[0], "%s: unexpected argument %s", argv[0], v);
		switch (o->id) {
		case V_DRIVER_ROOT: q.driver_root = v; break;
		case V_CSV: q.csv = 1; break;
		case V_JSON: q.json = 1; break;
		case V_GPUS: q.gpus = v; break;
		case V_CAPS: q.caps = v; break;
		}
	}
	if ((list ? gpu_list(&q, &err) : gpu_info(&q, &err)) < 0)
		gerr_die(&err);
	return 0;
}

/* `gpurun cdi generate|list`; argv[0] is the subcommand. */
static int cdi_verb(int argc, char **argv)
{
	struct gerr err = {0};
	const char *sub = argc ? argv[0] : "";
	if (!strcmp(sub, "-h") || !strcmp(sub, "--help")) {
		print_uses(stdout, "cdi", "usage: ");
		return 0;
	}
	int gen = !strcmp(sub, "generate");
	if (!gen && strcmp(sub, "list")) {
		if (!argc)
			return usage_fail("cdi", "cdi: missing command (generate or list)");
		die(GPURUN_EXIT_FAIL, "cdi: unknown command '%s' (expected generate or list)", sub);
	}
	struct cdi_gen_opts go = {.driver_root = global_driver_root};
	struct strv given = {0}, dirs = {0};
	const char *v;
	const struct opt *o;
	struct opt_state s = OPT_STATE(argc, argv);
	for (int r; (r = verb_next(&s, "cdi", gen ? cdi_generate_opts : cdi_list_opts, &o, &v));) {
		if (r == 2)
			return usage_fail("cdi", "cdi %s: unexpected argument %s", sub, v);
		switch (o->id) {
		case V_DRIVER_ROOT: go.driver_root = v; break;
		case V_FORMAT: go.format = v; break;
		case V_OUTPUT: go.output = v; break;
		case V_CDI_SPEC_DIR: strv_add(&given, xstrdup(v)); break;
		}
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
	const char *driver_root = global_driver_root, *gpus = NULL, *v;
	const struct opt *o;
	struct checks ck = {0};
	struct opt_state s = OPT_STATE(argc, argv);
	for (int r; (r = verb_next(&s, "doctor", doctor_opts, &o, &v));) {
		if (r == 2)
			return usage_fail("doctor", "doctor: unexpected argument %s", v);
		switch (o->id) {
		case V_DRIVER_ROOT: driver_root = v; break;
		case V_GPUS: gpus = v; break;
		case V_JSON: ck.collect = 1; break;
		}
	}
	struct gerr err = {0};
	_cleanup_free_ char *cache = cache_doctor(&ck);
	if (ns_doctor(&ck, cache, &err) < 0)
		gerr_die(&err);
	gpu_doctor(&ck, driver_root, gpus);
	int status = checks_report(&ck, &err);
	if (status < 0)
		gerr_die(&err);
	return status;
}

/* Global options before the verb, as nvidia-container-cli takes them
 * (`nvidia-container-cli --root DIR info`): `gpurun --driver-root DIR info`.
 * Only --driver-root is global; it ends where the first other word is.
 * Returns the index of that word; *root gets the last value given. */
static int global_opts(int argc, char **argv, const char **root)
{
	struct opt_state s = OPT_STATE(argc, argv);
	const struct opt *o;
	const char *v;
	struct gerr err = {0};
	int at = 1;
	while (opt_next(&s, global_opts_tab, &o, &v, &err) == 1 && !s.cluster) {
		*root = v;
		at = s.i;
	}
	return at;
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
		if (strcmp(verb, "info") && strcmp(verb, "list") && strcmp(verb, "doctor") && strcmp(verb, "run") &&
		    strcmp(verb, "cdi") && strcmp(verb, "smoke"))
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
		return cache_verb(argc - 2, argv + 2);
	if (!strcmp(verb, "doctor"))
		return doctor_verb(argc - 1, argv + 1);
	if (!strcmp(verb, "cdi"))
		return cdi_verb(argc - 2, argv + 2);
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
	if (!strcmp(verb, "smoke")) { /* a run of the probe gpurun ships; v: its argc */
		char **a = smoke_run_argv(argc - 1, argv + 1, global_driver_root, &v);
		return run_main(v, a, NULL);
	}
	return run_main(argc, argv, NULL);
}
