/* cli/run.c — `gpurun [run] [OPTIONS] IMAGE [COMMAND...]`, the default
 * verb: its option table (which parses the options and writes their help),
 * the checks of their values, and run_main(), which reads as the story of a
 * launch:
 *
 *   image -> the baseline layout (ns/layout.c: root, /proc, /dev, /sys,
 *   /tmp, /run, host network files), GPU injection (gpu/), volumes, --tmpfs
 *   and --mount, workdir, pivot, ldconfig, read-only root -> run (or print).
 *
 * `gpurun smoke` is a run too (cli/smoke.c builds its argv), and `gpurun
 * start NAME` one whose IMAGE is the one NAME's kept container was made
 * from. */
#include "cli.h"

#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../gpu/cdi/cdi.h"
#include "../gpu/gpu.h"
#include "../ns/ns.h"
#include "../ns/userns/userns.h"
#include "../rootfs/rootfs.h"

struct cli {
	struct strv env, file_env, requires;
	struct strv mounts;   /* 'v', 't' or 'm' then -v's, --tmpfs's or --mount's value, in order */
	struct strv devices;  /* --device vendor.com/class=name (CDI) */
	struct strv nodes;    /* --device /dev/X[:/dev/Y][:rwm] (a host device node) */
	struct strv cdi_dirs; /* --cdi-spec-dir */
	const char *workdir, *user, *hostname, *net, *gpus, *caps, *driver_root, *platform;
	int read_only, dry_run, verbose, step, no_cache, quiet, insecure, tls_verify, tty, interactive;
	const char *max_image_size; /* --max-image-size */
	const char *entrypoint;     /* --entrypoint ("": none), or NULL */
	const char *ipc, *pull, *userns;
	const char *name; /* --name */
	unsigned long long shm_size;
	int value_word; /* the word an option took last as its value (to name it when that was IMAGE) */
	char typed[64]; /* that option, as typed */
	struct ulimit *ulimits;
	size_t nulimits;
};

/* The option table is laid out by hand, one option a line. */
/* clang-format off */
/* The options of `run`, the default verb: the table that parses them and
 * writes their help. */
enum {
	R_ENV = 1, R_VOLUME, R_WORKDIR, R_USER, R_HOSTNAME, R_NET, R_READ_ONLY, R_DRY_RUN, R_VERBOSE, R_GPUS,
	R_CAPS, R_REQUIRE, R_DEVICE, R_CDI_SPEC_DIR, R_DRIVER_ROOT, R_NO_CACHE, R_MAX_IMAGE_SIZE, R_QUIET,
	R_PLATFORM, R_TLS_VERIFY, R_HELP, R_VERSION, R_ENV_FILE, R_TMPFS, R_MOUNT, R_SHM_SIZE, R_ULIMIT, R_IPC,
	R_ENTRYPOINT, R_PULL, R_DOCKER_NOOP, R_TTY, R_INTERACTIVE, R_USERNS, R_STEP, R_NAME,
};
static const struct opt run_opts[] = {
	{R_GPUS, "gpus", NULL, 0, OPT_VALUE, "SPEC", "all, none, void, or indexes, GPU-<uuid>, PCI bus ids\n"
	 "(comma list).  --gpus 2 is GPU index 2, where docker reads a\n"
	 "count; count=2 is docker's two GPUs, device=0,2 docker's list"},
	{R_CAPS, "caps", NULL, 0, OPT_VALUE, "LIST", "driver capabilities (default utility,compute)"},
	{R_REQUIRE, "require", NULL, 0, OPT_VALUE, "EXPR", "an NVIDIA_REQUIRE_* style constraint (repeatable)"},
	{R_DEVICE, "device", NULL, 0, OPT_VALUE, "CDI-NAME|/dev/X", "a CDI device, e.g. nvidia.com/gpu=0 (instead of\n"
	 "--gpus, --caps and --require), or docker's /dev/X[:/dev/Y][:rwm],\n"
	 "a host character device bound in (repeatable)"},
	{R_CDI_SPEC_DIR, "cdi-spec-dir", NULL, 0, OPT_VALUE, "DIR", "where CDI specs are (repeatable, later wins; else\n"
	 "GPURUN_CDI_SPEC_DIRS=DIR:DIR, else /etc/cdi:/var/run/cdi)"},
	{R_ENV, "env", NULL, 'e', OPT_VALUE, "K[=V]", "set a variable; K alone copies the host's value"},
	{R_ENV_FILE, "env-file", NULL, 0, OPT_VALUE, "FILE", "K=V or K lines (# comments), as docker reads them;\n"
	 "-e wins over them"},
	{R_VOLUME, "volume", NULL, 'v', OPT_VALUE, "SRC:DST[:OPTS]", "bind a host path; OPTS: ro or rw, and docker's\n"
	 "z, Z, cached, delegated (accepted, change nothing here)"},
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
	{R_IPC, "ipc", NULL, 0, OPT_CHOICE, "host|private", "share the host's IPC namespace and /dev/shm, or\n"
	 "new ones (default)"},
	{R_USERNS, "userns", NULL, 0, OPT_VALUE, "keep-id", "unprivileged: the caller's uid, gid and home inside\n"
	 "instead of root's, so volumes are written as the caller\n"
	 "(podman's); with subordinate ranges, the image's other\n"
	 "owners stay mapped"},
	{R_ULIMIT, "ulimit", NULL, 0, OPT_VALUE, "NAME=SOFT[:HARD]", "a resource limit of the command, as docker's\n"
	 "(nofile, nproc, core, memlock, stack, ...; repeatable)"},
	{R_ENTRYPOINT, "entrypoint", NULL, 0, OPT_VALUE, "CMD", "instead of the image's Entrypoint, and its Cmd\n"
	 "unless COMMAND is given; '' for none"},
	{R_NAME, "name", NULL, 0, OPT_VALUE, "NAME", "keep the container's writable layer under NAME: a later\n"
	 "--name NAME starts from it (gpurun ps, exec, rm; docs/containers.md)"},
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
	 "unverified certificate (also GPURUN_INSECURE_REGISTRIES=HOST[:PORT],...;\n"
	 "a loopback registry may be plain HTTP unless --tls-verify=true)\n"
	 "(a pull's time bounds: GPURUN_PULL_STALL_TIMEOUT, 30 s without\n"
	 "a byte; GPURUN_PULL_ANSWER_TIMEOUT, 120 s an answer)"},
	{R_DRY_RUN, "dry-run", NULL, 0, OPT_FLAG, NULL, "print the plan as shell commands; change nothing"},
	{R_VERBOSE, "verbose", NULL, 0, OPT_FLAG, NULL, "print each step as it is done"},
	{R_STEP, "step", NULL, 0, OPT_FLAG, NULL, "stop after each section of the launch: what it mounted\n"
	 "and made, and an nsenter command to look inside; Enter goes\n"
	 "on, q ends it (needs a terminal, /dev/tty)"},
	{R_DOCKER_NOOP, "rm", NULL, 0, OPT_FLAG, NULL, "accepted: every run without --name is removed when it ends"},
	{R_DOCKER_NOOP, "init", NULL, 0, OPT_FLAG, NULL, "accepted: gpurun's own init is always pid 1"},
	{R_TTY, "tty", NULL, 't', OPT_FLAG, NULL, "a pty of the container's own for the command, relayed to\n"
	 "this terminal (-it: with the keystrokes)"},
	{R_INTERACTIVE, "interactive", NULL, 'i', OPT_FLAG, NULL, "with -t, relay this terminal's keys to the command\n"
	 "(-it needs stdin to be a terminal, as docker's); without\n"
	 "-t, stdin always reaches the command (docker closes it)"},
	{R_HELP, "help", NULL, 0, OPT_FLAG, NULL, "this text (-h too, alone)"},
	{R_VERSION, "version", NULL, 'V', OPT_FLAG, NULL, "the version"},
	{0},
};

/* clang-format on */

void cli_run_help(FILE *out)
{
	opt_help(out, run_opts, NULL);
	opt_help(out, opt_docker_refused,
		 "\ndocker's options that gpurun does not have, each refused with a line\n"
		 "saying what to do instead:\n");
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
	if (argc == 2 && !strcmp(argv[1], "-h")) /* docker's: -h alone is the help */
		return CLI_HELP;
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
		case R_USERNS: c->userns = v; break;
		case R_NAME: c->name = v; break;
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
		case R_STEP: c->step = 1; break;
		case R_GPUS: c->gpus = v; break;
		case R_CAPS: c->caps = v; break;
		case R_REQUIRE: strv_add(&c->requires, xstrdup(v)); break;
		case R_DRIVER_ROOT: c->driver_root = v; break;
		case R_NO_CACHE: c->no_cache = 1; break;
		case R_QUIET: c->quiet = 1; break;
		case R_PLATFORM: c->platform = v; break;
		case R_TLS_VERIFY: bad = opt_tls_verify(v, &c->insecure, &c->tls_verify, &err); break;
		case R_DEVICE: strv_add(v[0] == '/' ? &c->nodes : &c->devices, xstrdup(v)); break;
		case R_CDI_SPEC_DIR: strv_add(&c->cdi_dirs, xstrdup(v)); break;
		case R_MAX_IMAGE_SIZE: c->max_image_size = v; break;
		case R_HELP: return CLI_HELP;
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
	/* docker reads a bare number as a count of GPUs: a command copied
	 * from docker with --gpus 2 would get GPU 2, not two GPUs, so it is
	 * said every time.  Not for 0: nobody asks docker for no GPU that way,
	 * and --gpus 0 is the design card's own launch. */
	if (c->gpus && *c->gpus && strspn(c->gpus, "0123456789") == strlen(c->gpus) && strtoul(c->gpus, NULL, 10))
		warnx_("--gpus %s is the GPU of index %s, not docker's count of %s GPUs (that is --gpus count=%s; "
		       "--gpus device=%s says the index without this line)",
		       c->gpus, c->gpus, c->gpus, c->gpus, c->gpus);
	if (c->net && strcmp(c->net, "host") && strcmp(c->net, "none"))
		die(GPURUN_EXIT_FAIL,
		    "--net/--network: '%s' is not one gpurun has: host (the default) or none; "
		    "gpurun makes no bridge or user-defined networks",
		    c->net);
	if (c->userns && strcmp(c->userns, "keep-id"))
		die(GPURUN_EXIT_FAIL,
		    "--userns %s: gpurun chooses the user namespace itself (unprivileged, one mapping the caller "
		    "to root; as root, none); --userns keep-id keeps the caller's uid and gid inside",
		    c->userns);
	/* The stops are answered on the caller's terminal: without one the
	 * launch would wait for ever, so it is refused before anything (an
	 * image pulled, a namespace made) is done. */
	if (c->step && c->dry_run)
		die(GPURUN_EXIT_FAIL, "--step cannot be combined with --dry-run: the plan is printed, nothing runs to "
				      "stop in");
	if (c->step && (cfg->step_tty = open("/dev/tty", O_RDWR | O_NOCTTY | O_CLOEXEC)) < 0)
		die(GPURUN_EXIT_FAIL, "--step: no terminal to wait on (/dev/tty: %s)", strerror(errno));
	cfg->step = c->step;
	/* Before the image is opened: the cache area of the launch's map. */
	if (c->userns)
		subid_keep_caller(1);
	cfg->share_ipc = c->ipc && !strcmp(c->ipc, "host");
	if (cfg->share_ipc && c->shm_size)
		die(GPURUN_EXIT_FAIL, "--shm-size cannot be combined with --ipc host: /dev/shm is then the host's");
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
	/* docker's rule: -it relays keystrokes from a terminal; from a pipe or
	 * a file the command would wait for keys that never come (an
	 * interactive bash ignores SIGTERM).  The plan reads no input. */
	if (c->tty && c->interactive && !c->dry_run && !isatty(0))
		die(GPURUN_EXIT_FAIL,
		    "-it: the input device is not a TTY (-i alone passes stdin and its end to the command; "
		    "-t alone gives it a terminal without reading stdin)");
}

/* --name NAME[:FLAG], pyxis's --container-name: auto (the default) runs
 * from the kept layer, made when missing, and joins the run that holds it;
 * create refuses a name that is kept already; exec only joins a running
 * one; no_exec never joins (and, since one layer takes one overlay, is
 * refused while a run holds it). */
enum name_flag { NAME_AUTO, NAME_CREATE, NAME_EXEC, NAME_NO_EXEC };

static enum name_flag name_split(const char *arg, char **name)
{
	static const char *const flags[] = {"auto", "create", "exec", "no_exec"};
	const char *colon = strchr(arg, ':');
	*name = colon ? xstrndup(arg, (size_t)(colon - arg)) : xstrdup(arg);
	if (!colon)
		return NAME_AUTO;
	for (size_t i = 0; i < COUNT_OF(flags); i++)
		if (!strcmp(colon + 1, flags[i]))
			return (enum name_flag)i;
	die(GPURUN_EXIT_FAIL, "--name %s: the flag after ':' is auto, create, exec or no_exec (pyxis's)", arg);
}

/* The kept container of that name, made or found, its lock held by this
 * process for the run (rootfs/cache/kept.c); or, when a run holds it and
 * the flag allows, 1: this launch joins it (k open, unlocked).  Only an
 * image the cache holds has a digest to keep changes against. */
static int take_name(const struct cli *c, struct run_config *cfg, struct cache *cache, struct kept *k)
{
	struct gerr err = {0};
	char *name;
	enum name_flag flag = name_split(c->name, &name);
	if (kept_name_check(name, &err) < 0)
		die(GPURUN_EXIT_FAIL, "--name: %s", err.msg);
	if (!cfg->layered || cfg->import_run)
		die(GPURUN_EXIT_FAIL,
		    "--name %s: only an image gpurun caches can be kept (an archive, an OCI or dir: layout, a registry "
		    "image), %s",
		    name,
		    cfg->import_run || c->no_cache ? "not with --no-cache, whose layers are gone with the run"
						   : "not a directory, which has no digest to keep changes against");
	/* One name, one container: one made under another id map (another
	 * --userns, or before a subordinate range was given) has its layer
	 * in that map's area, where this launch's ids could not use it. */
	struct cache other;
	struct kept there;
	struct gerr absent = {0};
	if (cache->fd >= 0 && cache->root && kept_find(cache, name, &other, &there, &absent) == 0) {
		int elsewhere = strcmp(other.root, cache->root) != 0;
		kept_free(&there);
		cache_close(&other);
		if (elsewhere)
			die(GPURUN_EXIT_FAIL,
			    "--name %s: container %s was made with other ids (another --userns, or another subordinate "
			    "range), and its layer is theirs; run it as it was made, or gpurun rm %s",
			    name, name, name);
	}
	cfg->name = name;
	cfg->gpus_shown = c->gpus ? c->gpus : c->devices.n ? c->devices.v[0] : NULL;
	for (;;) {
		struct kept seen;
		struct gerr none = {0};
		int exists = cache->fd >= 0 && kept_open(cache, name, &seen, &none) == 0;
		int running = exists && seen.running;
		if (exists && seen.image && !kept_same_image(&seen, cfg->layered))
			die(GPURUN_EXIT_FAIL,
			    "container %s was made from the image %s (%.19s), not from %s; gpurun rm %s, or give that "
			    "image",
			    name, seen.image, seen.chain, cfg->layered->source, name);
		if (flag == NAME_CREATE && exists && seen.image)
			die(GPURUN_EXIT_FAIL, "--name %s:create: container %s exists already (gpurun rm %s first)",
			    name, name, name);
		if (flag == NAME_EXEC && !running)
			die(GPURUN_EXIT_FAIL, "--name %s:exec: container %s is not running (gpurun ps)", name, name);
		if (running && flag == NAME_NO_EXEC)
			die(GPURUN_EXIT_FAIL,
			    "--name %s:no_exec: container %s is running, and a second run on its layer is refused "
			    "(one overlay per layer); without :no_exec this launch joins it",
			    name, name);
		if (running) {
			int r = ns_join_wait(seen.dirfd, name, kept_dir_running, &err);
			if (r < 0)
				gerr_die(&err);
			if (r == 1) { /* its record is there: join */
				*k = seen;
				return 1;
			}
			kept_free(&seen);
			continue; /* it ended meanwhile: run */
		}
		if (exists)
			kept_free(&seen);
		if (c->dry_run) { /* changes nothing: the directory it would use */
			cfg->kept_dir = xasprintf("%s/containers/%s", cache->root ? cache->root : "$CACHE", name);
			return 0;
		}
		if (kept_take(cache, name, cfg->layered, k, &err) == 0)
			break;
		if (err.errnum != EBUSY)
			gerr_die(&err);
		gerr_clear(&err); /* another launch took it first: look again */
	}
	if (record_clean_stale(k->dirfd, name, &err) < 0)
		gerr_die(&err);
	cfg->kept_dir = k->dir;
	cfg->kept_dirfd = k->dirfd;
	if ((cfg->joined_lockfd = kept_joined_lock(k->dirfd, name, &err)) < 0)
		gerr_die(&err);
	return 0;
}

/* A launch of a running container's name joins it, as the tasks of a
 * pyxis step share theirs: the command runs inside it as `gpurun exec`
 * runs one (ns/enter.c), with this launch's -e, -u, -w, -t and -i; the
 * rest of its options describe a container that is already made. */
static int join(const struct cli *c, const struct run_config *cfg, struct kept *k)
{
	struct gerr err = {0};
	struct exec_request rq = {.name = cfg->name,
				  .argv = cfg->argv,
				  .env = &c->env,
				  .user = c->user,
				  .workdir = c->workdir,
				  .tty = c->tty,
				  .interactive = c->interactive};
	if (c->mounts.n || c->gpus || c->devices.n || c->nodes.n || c->hostname || c->net || c->read_only ||
	    c->nulimits || c->ipc || c->shm_size)
		warnx_("container %s is running: this launch joins it, and its own --gpus, --device, -v, --mount, "
		       "--tmpfs, --ulimit, --hostname, --net, --ipc and --read-only are not applied",
		       cfg->name);
	int code;
	if (c->dry_run) {
		struct sbuf b = {0};
		code = ns_describe_enter(k->dirfd, &rq, &b, &err);
		if (code == 0)
			fputs(b.s, stdout);
		sbuf_free(&b);
	} else {
		/* Held while the command runs: the container's init waits for
		 * every launch that joined it before it ends (ns/init.c), as a
		 * pyxis step's container lives until its last task ends. */
		_cleanup_fd_ int hold = kept_joined_lock(k->dirfd, cfg->name, &err);
		if (hold < 0)
			gerr_die(&err);
		if (flock(hold, LOCK_SH) < 0)
			die(GPURUN_EXIT_FAIL, "container %s: hold its joined lock: %s", cfg->name, strerror(errno));
		code = ns_enter(k->dirfd, &rq, &err);
	}
	if (code < 0)
		gerr_die(&err);
	kept_free(k);
	return code;
}

/* The image, before any namespace work (rootfs/open.c): a bad image fails
 * here, in one line.  took: the word before IMAGE when the last option
 * took it as its value and it names a file (`--gpus IMAGE true`), or NULL;
 * bare_ref: IMAGE may be a registry reference without docker://. */
static void open_image(const struct cli *c, struct run_config *cfg, const char *image, const char *took, int bare_ref,
		       struct cache *cache, struct image *img)
{
	struct gerr err = {0};
	struct image_open_opts o = {.platform = c->platform,
				    .insecure = c->insecure,
				    .tls_verify = c->tls_verify,
				    .verbose = c->verbose,
				    .dry_run = c->dry_run,
				    .quiet = c->quiet,
				    .no_cache = c->no_cache,
				    .pull_always = c->pull && !strcmp(c->pull, "always"),
				    .pull_never = c->pull && !strcmp(c->pull, "never")};
	struct opened_image oi;
	/* `--gpus IMAGE true`: the option took the image, and "true" is the
	 * command, not a reference to pull. */
	o.bare_ref = bare_ref && !took;
	if (image_open(image, &o, cache, img, &oi, &err) < 0) {
		if (took && err.errnum == ENOENT && !err.hint[0])
			gerr_hint(&err, "%s took '%s' as its value: was its value left out?", c->typed, took);
		gerr_die(&err);
	}
	cfg->image = oi.image;
	cfg->image_fd = oi.fd;
	cfg->image_is_dir = oi.is_dir;
	cfg->layered = oi.layered;
	cfg->import_run = oi.import_run;
	cfg->import_sel = oi.import_sel;
}

/* `gpurun start NAME`: the image NAME's container was made from, as its
 * first run was given it (IMAGE@NAME:TAG for one image of a multi-image
 * archive), read from its record in whichever area of the cache holds it
 * (a launch with other ids than its own is then refused by take_name). */
static char *kept_image(const char *arg)
{
	struct gerr err = {0};
	_cleanup_free_ char *name = NULL;
	name_split(arg, &name);
	if (kept_name_check(name, &err) < 0)
		die(GPURUN_EXIT_FAIL, "start: %s", err.msg);
	struct cache cache = {.fd = -1, .lockfd = -1}, area;
	struct kept k = {.dirfd = -1, .lockfd = -1};
	if (cache_open(&cache, 0, &err) < 0 && err.errnum != ENOENT)
		gerr_die(&err);
	gerr_clear(&err);
	int have = kept_find(&cache, name, &area, &k, &err) == 0;
	if (!have && err.errnum != ENOENT)
		gerr_die(&err);
	if (have)
		cache_close(&area);
	if (!have || !k.image)
		die(GPURUN_EXIT_FAIL,
		    "start: no container %s%s (gpurun ps lists them); gpurun run --name %s IMAGE makes one", name,
		    have ? " with a record of its image" : "", name);
	char *image = k.ref ? xasprintf("%s@%s", k.image, k.ref) : xstrdup(k.image);
	kept_free(&k);
	cache_close(&cache);
	return image;
}

/* A launch, its options parsed: IMAGE (argv[i]) is opened, or, for
 * `gpurun start`, NAME[:FLAG] (argv[i]) names the container and its
 * recorded image is, and the rest is the story of run_main. */
static int launch(const struct cli *parsed, int start, int argc, char **argv, int i)
{
	struct cli c = *parsed;
	struct plan plan = {0};
	struct run_config cfg = {
		.plan = &plan, .image_fd = -1, .kept_dirfd = -1, .joined_lockfd = -1, .ready_sock = -1};
	struct kept kept = {.dirfd = -1, .lockfd = -1};
	struct gerr err = {0};
	struct cache cache = {.fd = -1, .lockfd = -1};
	struct image img = {0};

	check_values(&c, &cfg);
	if (rootfs_max_image_size_from(c.max_image_size, &err) < 0)
		gerr_die(&err);
	if (start) {
		c.name = argv[i++];
		_cleanup_free_ char *image = kept_image(c.name);
		open_image(&c, &cfg, image, NULL, 0, &cache, &img); /* a path or docker://REF */
	} else {
		struct stat st;
		const char *took =
			c.value_word && c.value_word == i - 1 && stat(argv[i - 1], &st) == 0 ? argv[i - 1] : NULL;
		open_image(&c, &cfg, argv[i++], took, 1, &cache, &img);
	}
	int joining = c.name && take_name(&c, &cfg, &cache, &kept);
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
	if (joining)
		return join(&c, &cfg, &kept);
	ns_caller(&cfg);
	/* As root there is no user namespace: the ids are the caller's. */
	cfg.keep_id = c.userns && cfg.unprivileged;
	if (cfg.keep_id) {
		const struct passwd *pw = getpwuid(cfg.host_uid);
		cfg.keep_home = pw && pw->pw_dir[0] == '/' ? xstrdup(pw->pw_dir) : getenv("HOME");
	}
	cfg.read_only = c.read_only;
	cfg.verbose = c.verbose;
	cfg.tty = c.tty;
	cfg.interactive = c.interactive;
	cfg.user_spec = c.user ? c.user : ic ? ic->user : NULL;
	if (cfg.keep_id && !c.user)
		cfg.user_spec = xasprintf("%u:%u", (unsigned)cfg.host_uid, (unsigned)cfg.host_gid);
	cfg.workdir = c.workdir;
	if (!cfg.workdir && ic && ic->workdir)
		cfg.workdir = ic->workdir[0] == '/' ? ic->workdir : xasprintf("/%s", ic->workdir);
	cfg.env = ns_container_env(ic ? ic->env : NULL, isatty(0) || c.tty, c.hostname, &c.env);

	layout_base(&plan, &cfg);
	plan.section = SEC_GPU;
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
	plan.section = SEC_MOUNTS;
	for (size_t k = 0; k < c.nodes.n; k++)
		if (layout_device(&plan, c.nodes.v[k], &err) < 0)
			gerr_die(&err);
	if (layout_mounts(&plan, &c.mounts, &err) < 0)
		gerr_die(&err);
	layout_finish(&plan, &cfg, gr.ldconfig_dirs, gr.compat_driver);
	/* Decided with the plan: which capability would bring a command
	 * that turns out not to be in the image (nvidia-smi without utility). */
	const char *cap = gr.gpu && cfg.argv && cfg.argv[0] ? gpu_caps_bringing(cfg.argv[0], gr.caps) : NULL;
	if (cap) { /* named by its last part, which is one of gpu/caps.c's names */
		const char *name = strrchr(cfg.argv[0], '/');
		cfg.notfound_hint = xasprintf("%s comes with the driver capability %s, which this launch leaves out: "
					      "add it to --caps (or NVIDIA_DRIVER_CAPABILITIES)",
					      name ? name + 1 : cfg.argv[0], cap);
	}
	cfg.driver_root = gr.driver_root;
	free(gr.ldconfig_dirs); /* copied into the plan */
	free(gr.compat_driver);
	cfg.host_steps = &gr.host_steps;
	ns_plan_launch(&cfg); /* the steps around the ops, decided once */

	if (c.dry_run) {
		ns_print_plan(&cfg, stdout);
		return 0;
	}
	int code = ns_run(&cfg, &err);
	if (code < 0)
		gerr_die(&err);
	return code;
}

int run_main(int argc, char **argv, const char *driver_root)
{
	struct cli c = {.driver_root = driver_root};
	/* The parse has already stepped over a "--" before IMAGE. */
	int i = parse_run_args(&c, argc, argv);
	if (i == CLI_HELP)
		return CLI_HELP;
	if (i >= argc)
		die(GPURUN_EXIT_FAIL, "missing IMAGE (try gpurun --help)");
	return launch(&c, 0, argc, argv, i);
}

static int run_verb(const struct verb *v, int argc, char **argv, const char *driver_root)
{
	(void)v;
	return run_main(argc, argv, driver_root);
}

const struct verb verb_run = {"run", run_verb, NULL, 0, 1};

/* `gpurun start [RUN OPTIONS] NAME[:FLAG] [COMMAND...]`: docker's and
 * podman's start of a stopped container, with a command as run takes one,
 * and pyxis's --container-name without --container-image: exactly `gpurun
 * run [RUN OPTIONS] --name NAME[:FLAG] IMAGE [COMMAND...]` with the image
 * NAME was made from.  Its options are run's, parsed by run's table. */
static const struct opt start_opts[] = {{0}};
static const struct opt_use start_uses[] = {
	{"start", NULL, start_opts, " [RUN OPTIONS] NAME[:auto|create|exec|no_exec] [--] [COMMAND [ARG...]]", 0, 0}};

static int start_verb(const struct verb *v, int argc, char **argv, const char *driver_root)
{
	struct cli c = {.driver_root = driver_root};
	if (argc < 2)
		return usage_fail(v, "start: missing NAME");
	int i = parse_run_args(&c, argc, argv);
	if (i == CLI_HELP) {
		verb_print_uses(stdout, v, "usage: ");
		fputs("\nRun COMMAND (else the image's Entrypoint and Cmd) in the kept container NAME, from\n"
		      "the image it was made from: gpurun run --name NAME[:FLAG] IMAGE COMMAND.  RUN OPTIONS\n"
		      "are run's:\n\n",
		      stdout);
		cli_run_help(stdout);
		return 0;
	}
	if (i >= argc)
		return usage_fail(v, "start: missing NAME");
	if (c.name)
		return usage_fail(v, "start: the container is NAME, after the options, not --name %s", c.name);
	return launch(&c, 1, argc, argv, i);
}

const struct verb verb_start = {"start", start_verb, start_uses, COUNT_OF(start_uses), 1};
