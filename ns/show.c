/* ns/show.c — the teaching view of a whole launch: the namespace and
 * propagation lines that come before the ops, the ops themselves
 * (op_describe, base/plan.c), and the final exec.  --dry-run prints all of
 * it at once; --verbose prints the same lines, each as its step is done
 * (ns/launch.c, ns/exec.c, ns/init.c call in here), so the two views
 * cannot differ. */
#include "ns.h"

#include <string.h>

void ns_describe_unshare(const struct run_config *cfg, struct sbuf *b)
{
	sbuf_puts(b, "unshare --mount --pid");
	if (!cfg->share_ipc)
		sbuf_puts(b, " --ipc");
	if (cfg->unprivileged)
		sbuf_puts(b, " --user --map-root-user");
	/* util-linux runs newuidmap and newgidmap for these, as gpurun does. */
	if (cfg->subids.uid_count)
		sbuf_printf(b, " --map-users=%lu,1,%lu --map-groups=%lu,1,%lu", cfg->subids.uid_start,
			    cfg->subids.uid_count, cfg->subids.gid_start, cfg->subids.gid_count);
	sbuf_printf(b, "%s%s --fork --kill-child", cfg->hostname ? " --uts" : "", cfg->new_net ? " --net" : "");
}

/* One --ulimit as sh's ulimit (shell 1) or, where the shells differ, a
 * comment line (shell 0), which comes first.  Soft and hard apart: hard,
 * soft, hard again, so that it works whether the new limits are above or
 * below the old ones (P2 sets both at once). */
static void describe_ulimit(const struct ulimit *u, int shell, struct sbuf *b)
{
	char v[2][24];
	rlim_t lim[2] = {u->lim.rlim_cur, u->lim.rlim_max}, mask = ((rlim_t)1 << u->shift) - 1;
	int fits = u->letter != 0;
	for (int k = 0; k < 2; k++) {
		fits &= lim[k] == RLIM_INFINITY || !(lim[k] & mask);
		if (lim[k] == RLIM_INFINITY)
			snprintf(v[k], sizeof v[k], "unlimited");
		else
			snprintf(v[k], sizeof v[k], "%llu", (unsigned long long)(lim[k] >> (shell ? u->shift : 0)));
	}
	if (!shell && !fits)
		sbuf_printf(b, "# --ulimit %s=%s:%s: set by setrlimit before the exec (no ulimit every sh "
			       "shares says it)\n", u->name, v[0], v[1]);
	else if (shell && fits && lim[0] == lim[1])
		sbuf_printf(b, "ulimit -%c %s; ", u->letter, v[0]);
	else if (shell && fits)
		sbuf_printf(b, "ulimit -H -%c %s 2>/dev/null; ulimit -S -%c %s; ulimit -H -%c %s; ", u->letter, v[1],
			    u->letter, v[0], u->letter, v[1]);
}

void ns_describe_exec(const struct run_config *cfg, const char *userspec, struct sbuf *b)
{
	for (int shell = 0; shell < 2; shell++)
		for (size_t i = 0; i < cfg->nulimits; i++)
			describe_ulimit(&cfg->ulimits[i], shell, b);
	sbuf_puts(b, "exec chroot --userspec ");
	sbuf_shquote(b, userspec);
	sbuf_puts(b, " / env -i");
	if (cfg->workdir) {
		sbuf_puts(b, " --chdir=");
		sbuf_shquote(b, cfg->workdir);
	}
	for (char **e = cfg->env; e && *e; e++) {
		sbuf_puts(b, " ");
		sbuf_shquote(b, *e);
	}
	for (char **a = cfg->argv; a && *a; a++) {
		sbuf_puts(b, " ");
		sbuf_shquote(b, *a);
	}
}

static void describe_list(struct sbuf *b, const char *label, char **v)
{
	sbuf_printf(b, "\n#   %s", label);
	for (; v && *v; v++) {
		sbuf_puts(b, " ");
		sbuf_showquote(b, *v);
	}
}

/* "\n#   LABEL VALUE": a comment line, so the value must not end it. */
static void describe_field(struct sbuf *b, const char *label, const char *v)
{
	sbuf_printf(b, "\n#   %s ", label);
	sbuf_showquote(b, v);
}

void ns_describe_image(const struct run_config *cfg, struct sbuf *b)
{
	const struct image *img = cfg->layered;
	if (!img)
		return;
	sbuf_puts(b, "# image ");
	sbuf_showquote(b, img->source);
	if (img->ref) {
		sbuf_puts(b, "@");
		sbuf_showquote(b, img->ref);
	}
	sbuf_printf(b, ": %zu layer%s%s", img->layers.n, img->layers.n == 1 ? "" : "s",
		    cfg->import_run ? ", unpacked into this run's tmpfs (--no-cache)"
		    : img->hit	    ? ", from the cache"
		    : img->missing  ? ", not in the cache yet (a launch unpacks them)"
				    : ", unpacked into the cache");
	for (size_t i = 0; i < img->layers.n; i++) {
		sbuf_printf(b, "\n#   layer %zu: ", i + 1);
		sbuf_showquote(b, img->layer_ids.v[i]);
	}
	const struct image_config *c = &img->config;
	if (c->env || c->entrypoint || c->cmd || c->workdir || c->user) {
		sbuf_puts(b, "\n# the image's config (the command line overrides it):");
		if (c->env)
			describe_list(b, "Env:", c->env);
		if (c->entrypoint)
			describe_list(b, "Entrypoint:", c->entrypoint);
		if (c->cmd)
			describe_list(b, "Cmd:", c->cmd);
		if (c->workdir)
			describe_field(b, "WorkingDir:", c->workdir);
		if (c->user)
			describe_field(b, "User:", c->user);
	}
}

void ns_trace(const char *text)
{
	struct sbuf b = {0};
	for (const char *line = text; line && *line;) {
		size_t n = strcspn(line, "\n");
		sbuf_puts(&b, "+ ");
		sbuf_add(&b, line, n);
		sbuf_puts(&b, "\n");
		line += n + (line[n] == '\n');
	}
	if (b.s)
		fputs(b.s, stderr);
	sbuf_free(&b);
}

/* -t: what stands in for the terminal (ns/tty.c); no shell command does it. */
static void print_tty(const struct run_config *cfg, FILE *out)
{
	if (cfg->tty)
		fprintf(out, "# -t: stdin, stdout and stderr are a new pty of that devpts (/dev/pts/0, the controlling\n"
			     "#  terminal); %s\n",
			cfg->interactive ? "gpurun relays it to and from this terminal (-i), which is raw meanwhile"
					 : "gpurun relays its output here, and reads no keystrokes (no -i)");
}

void ns_print_plan(const struct run_config *cfg, FILE *out)
{
	struct sbuf b = {0};
	fprintf(out, "# gpurun plan: the same steps as shell commands (the seed walkthrough's way)\n");
	ns_describe_image(cfg, &b);
	if (b.len)
		fprintf(out, "%s\n", b.s);
	for (size_t i = 0; cfg->host_steps && i < cfg->host_steps->n; i++)
		fprintf(out, "%s\n", cfg->host_steps->v[i]);
	sbuf_reset(&b);
	ns_describe_unshare(cfg, &b);
	fprintf(out, "%s sh   # P1: pid 1 of the new namespaces\n", b.s);
	fprintf(out, "%s\n", NS_RSLAVE_LINE);
	/* Only when compat32 libraries are in the plan, and before LIBDIR=:
	 * the op lines start after that one. */
	for (size_t i = 0; i < cfg->plan->n; i++)
		if (cfg->plan->v[i].dst && !strncmp(cfg->plan->v[i].dst, LIBDIR32_VAR, strlen(LIBDIR32_VAR))) {
			fprintf(out, "LIBDIR32=%s   # without %s: %s if the image has it, else %s\n",
				plan_libdir32_for(1, 0, 0), LIBDIR_MARKER, LIBDIR32_OTHER, LIBDIR32_PLAIN);
			break;
		}
	fprintf(out, "LIBDIR=%s   # %s when the image has no %s\n", plan_libdir_for(1), LIBDIR_OTHER,
		LIBDIR_MARKER);
	for (size_t i = 0; i < cfg->plan->n; i++) {
		sbuf_reset(&b);
		op_describe(&cfg->plan->v[i], &b);
		fprintf(out, "%s\n", b.s);
	}
	sbuf_reset(&b);
	print_tty(cfg, out);
	ns_describe_exec(cfg, cfg->user_spec ? cfg->user_spec : "0:0", &b);
	fprintf(out, "%s\n# (the command runs as pid 2 under gpurun's init, after dropping capabilities,\n"
		     "#  no_new_privs, a seccomp deny-list and closing every fd above 2)\n",
		b.s);
	sbuf_free(&b);
}
