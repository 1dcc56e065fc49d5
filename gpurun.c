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
	const char *workdir, *user, *hostname, *net, *gpus, *caps, *driver_root;
	int read_only, dry_run, verbose;
};

static void usage(FILE *out)
{
	fprintf(out,
		"usage: gpurun [run] [OPTIONS] IMAGE [--] [COMMAND [ARG...]]\n"
		"       gpurun info [--csv] [--driver-root DIR]\n"
		"       gpurun list [--gpus SPEC] [--caps LIST] [--driver-root DIR]\n"
		"       gpurun version | help\n"
		"\n"
		"Run COMMAND (default /bin/sh) in IMAGE, a tar archive (plain, gzip, xz, zstd or\n"
		"bzip2) or a directory, in new mount, pid and ipc namespaces (and a user namespace\n"
		"when not root), with the selected NVIDIA GPUs injected.\n"
		"\n"
		"  --gpus SPEC          all, none, void, or indexes, GPU-<uuid>, PCI bus ids\n"
		"                       (comma list); docker's device=0,2 and count=N forms too\n"
		"  --caps LIST          driver capabilities (default utility,compute)\n"
		"  --require EXPR       an NVIDIA_REQUIRE_* style constraint (repeatable)\n"
		"  -e, --env K[=V]      set a variable; K alone copies the host's value\n"
		"  -v, --volume SRC:DST[:ro]  bind a host path\n"
		"  -w, --workdir DIR    working directory inside (created if missing)\n"
		"  -u, --user U[:G]     uid/gid or names from the image's /etc/passwd\n"
		"      --hostname NAME  new UTS namespace with that host name\n"
		"      --net host|none  share the host network (default) or only lo\n"
		"      --read-only      the root file system is read-only\n"
		"      --driver-root DIR  where the host driver lives (GPURUN_DRIVER_ROOT; /)\n"
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
       OPT_REQUIRE, OPT_DRIVER_ROOT };

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
		{"help", no_argument, NULL, 'h'},
		{"version", no_argument, NULL, 'V'},
		{NULL, 0, NULL, 0},
	};
	opterr = 0;
	optind = 1;
	int o;
	/* '+': options end at IMAGE; everything after it is the command. */
	while ((o = getopt_long(argc, argv, "+:e:v:w:u:hV", opts, NULL)) != -1) {
		switch (o) {
		case 'e': parse_env_opt(c, optarg); break;
		case 'v': push(&c->volumes, &c->nvolumes, optarg); break;
		case 'w': c->workdir = optarg; break;
		case 'u': c->user = optarg; break;
		case OPT_HOSTNAME: c->hostname = optarg; break;
		case OPT_NET: c->net = optarg; break;
		case OPT_READ_ONLY: c->read_only = 1; break;
		case OPT_DRY_RUN: c->dry_run = 1; break;
		case OPT_VERBOSE: c->verbose = 1; break;
		case OPT_GPUS: c->gpus = optarg; break;
		case OPT_CAPS: c->caps = optarg; break;
		case OPT_REQUIRE: push(&c->requires, &c->nrequires, optarg); break;
		case OPT_DRIVER_ROOT: c->driver_root = optarg; break;
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

/* The image: a directory (overlaid, never modified) or an archive opened
 * and sniffed here, before any namespace work, so that a bad image fails
 * fast with a plain message. */
static void open_image(struct run_config *cfg, const char *image)
{
	struct stat st;
	struct gerr err = {0};
	if (stat(image, &st) < 0)
		die(GPURUN_EXIT_FAIL, "image %s: %s", image, strerror(errno));
	if (S_ISDIR(st.st_mode)) {
		char *abs = realpath(image, NULL);
		if (!abs)
			die(GPURUN_EXIT_FAIL, "image %s: %s", image, strerror(errno));
		if (access(abs, R_OK | X_OK) < 0)
			die(GPURUN_EXIT_FAIL, "image %s: %s", image, strerror(errno));
		cfg->image = abs;
		cfg->image_is_dir = 1;
		cfg->image_fd = -1;
		return;
	}
	cfg->image = image;
	cfg->image_fd = open(image, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (cfg->image_fd < 0)
		die(GPURUN_EXIT_FAIL, "image %s: %s", image, strerror(errno));
	if (!S_ISREG(st.st_mode))
		die(GPURUN_EXIT_FAIL, "image %s: not a regular file or directory", image);
	if (rootfs_probe(cfg->image_fd, image, &err) < 0)
		gerr_die(&err);
}

static char **container_env(struct cli *c)
{
	char **env = NULL;
	size_t n = 0;
	push(&env, &n, xstrdup("PATH=" NS_DEFAULT_PATH));
	if (isatty(0)) {
		const char *term = getenv("TERM");
		push(&env, &n, xasprintf("TERM=%s", term && *term ? term : "xterm"));
	}
	if (c->hostname)
		push(&env, &n, xasprintf("HOSTNAME=%s", c->hostname));
	for (size_t i = 0; i < c->nenv; i++)
		env_set(&env, &n, c->env[i]);
	return env;
}

static int run_main(int argc, char **argv)
{
	struct cli c = {0};
	struct plan plan = {0};
	struct run_config cfg = {.plan = &plan, .image_fd = -1};
	struct gerr err = {0};

	/* getopt_long has already stepped over a "--" before IMAGE. */
	int i = parse_run_args(&c, argc, argv);
	if (i >= argc)
		die(GPURUN_EXIT_FAIL, "missing IMAGE (try gpurun --help)");
	check_values(&c, &cfg);
	open_image(&cfg, argv[i++]);
	if (i < argc && !strcmp(argv[i], "--"))
		i++;
	static char *default_cmd[] = {(char *)"/bin/sh", NULL};
	cfg.argv = i < argc ? argv + i : default_cmd;
	cfg.host_uid = geteuid();
	cfg.host_gid = getegid();
	cfg.unprivileged = cfg.host_uid != 0;
	cfg.read_only = c.read_only;
	cfg.verbose = c.verbose;
	cfg.user_spec = c.user;
	cfg.workdir = c.workdir;
	cfg.env = container_env(&c);

	layout_base(&plan, &cfg);
	struct gpu_opts go = {
		.driver_root = c.driver_root,
		.gpus = c.gpus,
		.caps = c.caps,
		.requires = c.requires,
		.nrequires = c.nrequires,
		.env = cfg.env,
	};
	for (char **e = cfg.env; *e; e++)
		go.nenv++;
	struct gpu_result gr = {0};
	if (gpu_configure(&plan, &go, &gr, &err) < 0)
		gerr_die(&err);
	for (size_t v = 0; v < c.nvolumes; v++)
		if (layout_volume(&plan, c.volumes[v], &err) < 0)
			gerr_die(&err);
	layout_finish(&plan, &cfg, gr.ldconfig_dirs);
	free(gr.ldconfig_dirs); /* copied into the plan */

	if (c.dry_run) {
		ns_print_plan(&cfg, stdout);
		return 0;
	}
	int code = ns_run(&cfg, &err);
	if (code < 0)
		gerr_die(&err);
	return code;
}

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

static int gpu_verb(int argc, char **argv, int list)
{
	static const char *const usages[] = {"usage: gpurun info [--csv] [--driver-root DIR]\n",
					     "usage: gpurun list [--gpus SPEC] [--caps LIST] [--driver-root DIR]\n"};
	struct gpu_query q = {0};
	struct gerr err = {0};
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			fputs(usages[list], stdout);
			return 0;
		}
		if (opt_value(argc, argv, &i, "--driver-root", &q.driver_root))
			continue;
		if (!list && !strcmp(argv[i], "--csv")) {
			q.csv = 1;
			continue;
		}
		if (list && (opt_value(argc, argv, &i, "--gpus", &q.gpus) ||
			     opt_value(argc, argv, &i, "--caps", &q.caps)))
			continue;
		fprintf(stderr, "gpurun: %s: unknown option %s\n", argv[0], argv[i]);
		fputs(usages[list], stderr);
		return GPURUN_EXIT_FAIL;
	}
	if ((list ? gpu_list(&q, &err) : gpu_info(&q, &err)) < 0)
		gerr_die(&err);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return GPURUN_EXIT_FAIL;
	}
	/* A verb only when the first word is exactly one; an image file called
	 * "info" is given as ./info. */
	const char *verb = argv[1];
	if (!strcmp(verb, "info"))
		return gpu_verb(argc - 1, argv + 1, 0);
	if (!strcmp(verb, "list"))
		return gpu_verb(argc - 1, argv + 1, 1);
	if (!strcmp(verb, "version")) {
		printf("gpurun %s\n", GPURUN_VERSION);
		return 0;
	}
	if (!strcmp(verb, "help")) {
		usage(stdout);
		return 0;
	}
	if (!strcmp(verb, "run"))
		return run_main(argc - 1, argv + 1);
	return run_main(argc, argv);
}
