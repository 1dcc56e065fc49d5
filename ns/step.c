/* ns/step.c — --step: the launch stopped after each section of the plan,
 * with what that section added inside the container and a way to look
 * around there, until the caller presses Enter (the blog's `diff before
 * after` of nvidia-container-cli configure, on a real launch).
 *
 * P1 stops between sections (ns/exec.c, ns/init.c call step_at and
 * step_exec): it reads its own mount table and the nodes the section's ops
 * made, compares them with what was there at the last stop, and sends that
 * report to P0 over a socket.  P0 (ns/launch.c) has the caller's terminal:
 * it prints the report with P1's pid and an nsenter(1) command, reads a
 * line from /dev/tty and lets P1 go on, or ends the launch (q, ^C) by
 * killing P1, which takes every process and mount of the container with it.
 * The report is built where the facts are (in the namespaces, with the
 * root's fd and $LIBDIR); what the terminal shows is P0's to say. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <termios.h>
#include <unistd.h>

#include "exec.h"
#include "steps.h"

/* The most one report may hold: one message of the socket. */
#define STEP_REPORT_MAX 60000

/* The namespaces P1 is cloned into, as /proc/PID/ns names them and as
 * nsenter's options enter them (the user namespace first: it gives the
 * rights to enter the others). */
static const struct {
	int flag;
	const char *ns;     /* /proc/self/ns/NAME */
	const char *option; /* nsenter's */
	const char *what;
} namespaces[] = {
	{CLONE_NEWUSER, "user", "--user --preserve-credentials", "user"},
	{CLONE_NEWNS, "mnt", "--mount", "mount"},
	{CLONE_NEWPID, "pid", "--pid", "pid"},
	{CLONE_NEWIPC, "ipc", "--ipc", "ipc"},
	{CLONE_NEWUTS, "uts", "--uts", "uts"},
	{CLONE_NEWNET, "net", "--net", "net"},
};

/* ---- P1: what a section added ------------------------------------------- */

struct mnt {
	int id;
	char dev[32]; /* major:minor */
	char *root;   /* the path of the mount's root in its file system */
	char *point;  /* where it is mounted, seen from P1's root */
	char *fstype;
	unsigned flags; /* OPF_RO... */
};

struct mnt_table {
	struct mnt *v;
	size_t n;
};

/* What one op's target was before its section ran. */
struct seen {
	int known; /* looked at (the root existed) */
	int exists;
	dev_t dev;
	ino_t ino;
	struct timespec mtime;
};

struct step_state {
	struct mnt_table all;  /* every mount seen at a stop, the host's first */
	struct mnt_table last; /* the mount table at the last stop */
	size_t from;           /* the section now running: ops [from, to) */
	size_t to;
	struct seen *before; /* of ops [from, to) */
	int pivoted;
};

static void mnt_free(struct mnt *m)
{
	free(m->root);
	free(m->point);
	free(m->fstype);
}

static void table_free(struct mnt_table *t)
{
	for (size_t i = 0; i < t->n; i++)
		mnt_free(&t->v[i]);
	free(t->v);
	t->v = NULL;
	t->n = 0;
}

/* "ID PARENT MAJ:MIN ROOT POINT OPTS [OPTIONAL...] - FSTYPE SOURCE SUPER" */
static int parse_line(char *line, struct mnt *m)
{
	char *f[6], *save = NULL, *t = strtok_r(line, " \n", &save);
	size_t n = 0;
	for (; t && n < COUNT_OF(f); t = strtok_r(NULL, " \n", &save))
		f[n++] = t;
	while (t && strcmp(t, "-"))
		t = strtok_r(NULL, " \n", &save);
	char *type = t ? strtok_r(NULL, " \n", &save) : NULL;
	if (n < COUNT_OF(f) || !type)
		return -1;
	ns_mountinfo_unescape(f[3]);
	ns_mountinfo_unescape(f[4]);
	m->id = atoi(f[0]);
	snprintf(m->dev, sizeof m->dev, "%s", f[2]);
	m->root = xstrdup(f[3]);
	m->point = xstrdup(f[4]);
	m->fstype = xstrdup(type);
	m->flags = ns_mount_flags_of(f[5]);
	return 0;
}

static int read_table(struct mnt_table *t, struct gerr *err)
{
	FILE *f = fopen("/proc/self/mountinfo", "re");
	if (!f)
		return gerr_set(err, errno, "--step: read /proc/self/mountinfo");
	char *line = NULL;
	size_t cap = 0;
	while (getline(&line, &cap, f) > 0) {
		struct mnt m = {0};
		if (parse_line(line, &m) < 0)
			continue;
		t->v = xrealloc(t->v, (t->n + 1) * sizeof *t->v);
		t->v[t->n++] = m;
	}
	free(line);
	fclose(f);
	return 0;
}

static const struct mnt *find_id(const struct mnt_table *t, int id)
{
	for (size_t i = 0; i < t->n; i++)
		if (t->v[i].id == id)
			return &t->v[i];
	return NULL;
}

static void table_add_copy(struct mnt_table *t, const struct mnt *m)
{
	t->v = xrealloc(t->v, (t->n + 1) * sizeof *t->v);
	t->v[t->n++] = (struct mnt){.id = m->id,
				    .root = xstrdup(m->root),
				    .point = xstrdup(m->point),
				    .fstype = xstrdup(m->fstype),
				    .flags = m->flags};
	snprintf(t->v[t->n - 1].dev, sizeof m->dev, "%s", m->dev);
}

/* Whether root is dir or below it, in the file system's own paths. */
static size_t root_under(const char *root, const char *dir)
{
	size_t n = strlen(dir);
	if (!strcmp(dir, "/"))
		return 1;
	return !strncmp(root, dir, n) && (root[n] == '/' || !root[n]) ? n : 0;
}

/* What a new mount holds: where its file system's root is mounted
 * somewhere seen before it (the host's first, then the container's own
 * earlier mounts), its path there, which is what was bound; NULL for a
 * fresh file system. */
static char *bind_source(const struct step_state *s, const struct mnt_table *cur, size_t k)
{
	const struct mnt *m = &cur->v[k], *best = NULL;
	size_t best_len = 0;
	for (int pass = 0; pass < 2; pass++) {
		const struct mnt_table *t = pass ? cur : &s->all;
		size_t end = pass ? k : t->n;
		for (size_t i = 0; i < end; i++) {
			const struct mnt *c = &t->v[i];
			size_t n;
			if (c->id == m->id || strcmp(c->dev, m->dev) || !(n = root_under(m->root, c->root)))
				continue;
			if (!best || n > best_len) {
				best = c;
				best_len = n;
			}
		}
	}
	if (!best)
		return NULL;
	const char *rest = strcmp(best->root, "/") ? m->root + strlen(best->root) : m->root;
	if (!strcmp(rest, "/"))
		rest = "";
	return xasprintf("%s%s", strcmp(best->point, "/") || !*rest ? best->point : "", rest);
}

static int by_point(const void *a, const void *b, void *table)
{
	const struct mnt_table *t = table;
	const struct mnt *x = &t->v[*(const size_t *)a], *y = &t->v[*(const size_t *)b];
	int c = strcmp(x->point, y->point);
	return c ? c : x->id - y->id;
}

static void flag_words(unsigned flags, struct sbuf *b)
{
	struct sbuf w = {0};
	op_flags_add(&w, flags);
	if (w.len)
		sbuf_printf(b, " (%s)", w.s);
	sbuf_free(&w);
}

/* The mounts made and undone since the last stop; the table becomes the
 * last one. */
static int diff_mounts(struct step_state *s, struct sbuf *b, struct gerr *err)
{
	struct mnt_table cur = {0};
	if (read_table(&cur, err) < 0)
		return -1;
	size_t made = 0, gone = 0;
	for (size_t i = 0; i < cur.n; i++)
		made += !find_id(&s->last, cur.v[i].id);
	for (size_t i = 0; i < s->last.n; i++)
		gone += !find_id(&cur, s->last.v[i].id);
	if (made)
		sbuf_printf(b, "  mounted (%zu):\n", made);
	/* By path, so that a directory's mounts follow it: the table's own
	 * order is the mount tree's, not the order they were made in. */
	size_t *order = xcalloc(cur.n + 1, sizeof *order);
	for (size_t i = 0; i < cur.n; i++)
		order[i] = i;
	qsort_r(order, cur.n, sizeof *order, by_point, &cur);
	for (size_t o = 0; o < cur.n; o++) {
		size_t i = order[o];
		const struct mnt *m = &cur.v[i];
		if (find_id(&s->last, m->id))
			continue;
		_cleanup_free_ char *src = bind_source(s, &cur, i);
		sbuf_puts(b, "    ");
		sbuf_showquote(b, m->point);
		if (src) {
			sbuf_puts(b, "  bind of ");
			sbuf_showquote(b, src);
		} else {
			sbuf_puts(b, "  ");
			sbuf_showquote(b, m->fstype);
		}
		flag_words(m->flags, b);
		sbuf_puts(b, "\n");
	}
	free(order);
	for (size_t i = 0; i < cur.n; i++) {
		const struct mnt *was = find_id(&s->last, cur.v[i].id);
		if (!was || was->flags == cur.v[i].flags)
			continue;
		sbuf_puts(b, "  remounted: ");
		sbuf_showquote(b, cur.v[i].point);
		flag_words(cur.v[i].flags, b);
		sbuf_puts(b, "\n");
	}
	if (gone)
		sbuf_printf(b, "  unmounted: %zu mount%s (the old root's: the host is out of reach)\n", gone,
			    gone == 1 ? "" : "s");
	for (size_t i = 0; i < cur.n; i++)
		if (!find_id(&s->all, cur.v[i].id))
			table_add_copy(&s->all, &cur.v[i]);
	table_free(&s->last);
	s->last = cur;
	return 0;
}

/* Where op writes a node of its own (not a mount), in the root: its
 * target, with $LIBDIR expanded; the image's ldconfig, its cache. */
static const char *op_node(struct exec_state *st, const struct op *op, char *buf, size_t cap)
{
	switch (op->kind) {
	case OP_MKDIR:
	case OP_SYMLINK:
	case OP_FILE: return image_expand_libdir(st, op->dst, buf, cap);
	case OP_LDCONFIG: return LDCONFIG_CACHE_DIR "/" LDCONFIG_CACHE_NAME;
	default: return NULL;
	}
}

/* The node at path in the root, not followed; pfd gets its directory. */
static int look(int rootfd, const char *path, struct stat *st, int *pfd)
{
	_cleanup_free_ char *dir = xstrdup(path);
	char *slash = strrchr(dir, '/');
	if (!slash || !slash[1])
		return -1;
	*slash = '\0';
	struct gerr ignored = {0};
	int d = root_open(rootfd, *dir ? dir : "/", O_PATH | O_DIRECTORY, &ignored);
	if (d < 0)
		return -1;
	if (fstatat(d, path + (slash - dir) + 1, st, AT_SYMLINK_NOFOLLOW) < 0) {
		close(d);
		return -1;
	}
	*pfd = d;
	return 0;
}

static void take_before(struct exec_state *st)
{
	struct step_state *s = st->step;
	const struct plan *p = st->cfg->plan;
	free(s->before);
	s->before = xcalloc(s->to - s->from + 1, sizeof *s->before);
	for (size_t i = s->from; i < s->to && st->rootfd >= 0; i++) {
		char buf[4096];
		const char *path = op_node(st, &p->v[i], buf, sizeof buf);
		struct seen *w = &s->before[i - s->from];
		struct stat sb;
		int d;
		if (!path)
			continue;
		w->known = 1;
		if (look(st->rootfd, path, &sb, &d) < 0)
			continue;
		close(d);
		*w = (struct seen){.known = 1, .exists = 1, .dev = sb.st_dev, .ino = sb.st_ino, .mtime = sb.st_mtim};
	}
}

/* The nodes of the section's ops that appeared (or were written anew). */
static void diff_nodes(struct exec_state *st, struct sbuf *b)
{
	struct step_state *s = st->step;
	const struct plan *p = st->cfg->plan;
	const char *at = s->pivoted ? "" : PLAN_ROOT;
	struct sbuf lines = {0};
	size_t n = 0;
	for (size_t i = s->from; i < s->to && st->rootfd >= 0; i++) {
		char buf[4096];
		const char *path = op_node(st, &p->v[i], buf, sizeof buf);
		const struct seen *w = &s->before[i - s->from];
		struct stat sb;
		int d;
		if (!path || !w->known || look(st->rootfd, path, &sb, &d) < 0)
			continue;
		int made = !w->exists, rewritten = w->exists && (sb.st_dev != w->dev || sb.st_ino != w->ino ||
								 sb.st_mtim.tv_sec != w->mtime.tv_sec ||
								 sb.st_mtim.tv_nsec != w->mtime.tv_nsec);
		if (made || (rewritten && S_ISREG(sb.st_mode))) {
			_cleanup_free_ char *full = xasprintf("%s%s", at, path);
			sbuf_puts(&lines, "    ");
			sbuf_showquote(&lines, full);
			if (S_ISLNK(sb.st_mode)) {
				char target[PATH_MAX];
				const char *base = strrchr(path, '/') + 1;
				ssize_t len = readlinkat(d, base, target, sizeof target - 1);
				target[len > 0 ? len : 0] = '\0';
				sbuf_puts(&lines, " -> ");
				sbuf_showquote(&lines, target);
			} else if (S_ISDIR(sb.st_mode)) {
				sbuf_puts(&lines, "/");
			} else if (!made) {
				sbuf_puts(&lines, "  written anew");
			}
			sbuf_puts(&lines, "\n");
			n++;
		}
		close(d);
	}
	if (n)
		sbuf_printf(b, "  made (%zu):\n%s", n, lines.s);
	sbuf_free(&lines);
}

static void describe_namespaces(const struct run_config *cfg, struct sbuf *b)
{
	int flags = ns_launch(cfg)->clone_flags;
	sbuf_puts(b, "1. New namespaces: the rest of the launch runs in them\n");
	for (size_t i = 0; i < COUNT_OF(namespaces); i++) {
		char path[64], link[128];
		if (!(flags & namespaces[i].flag))
			continue;
		snprintf(path, sizeof path, "/proc/self/ns/%s", namespaces[i].ns);
		ssize_t n = readlink(path, link, sizeof link - 1);
		link[n > 0 ? n : 0] = '\0';
		sbuf_printf(b, "    %-6s %s\n", namespaces[i].what, link);
	}
	sbuf_puts(b, "  the mount namespace starts as a copy of the host's mounts (propagation slave: nothing\n"
		     "  mounted in it reaches the host); nothing of the container is mounted yet\n");
}

/* Send the report, wait for the go-ahead.  P0 prints the pid and the
 * nsenter command: with a user namespace P1 is made dumpable meanwhile, or
 * its caller could not open /proc/PID/ns (P1's memory was created on the
 * host's side of the map).  Nothing of the image runs during a stop (its
 * ldconfig is done and gone, the command waits for its go-ahead): only
 * what the caller enters with. */
static int stop(const struct run_config *cfg, struct sbuf *b, struct gerr *err)
{
	if (b->len > STEP_REPORT_MAX) {
		b->len = STEP_REPORT_MAX;
		while (b->len && b->s[b->len - 1] != '\n')
			b->len--;
		b->s[b->len] = '\0';
		sbuf_puts(b, "    ... (more: too many to show)\n");
	}
	int peek = cfg->unprivileged;
	if (peek && prctl(PR_SET_DUMPABLE, 1) < 0)
		return gerr_set(err, errno, "--step: prctl(PR_SET_DUMPABLE)");
	char go;
	if (send(cfg->step_sock, b->s, b->len, MSG_NOSIGNAL) < 0)
		return gerr_set(err, errno, "--step: send the report");
	ssize_t r;
	while ((r = recv(cfg->step_sock, &go, 1, 0)) < 0 && errno == EINTR)
		;
	if (peek && prctl(PR_SET_DUMPABLE, 0) < 0)
		return gerr_set(err, errno, "--step: prctl(PR_SET_DUMPABLE)");
	if (r != 1)
		return gerr_set(err, r < 0 ? errno : 0, "--step: gpurun stopped waiting");
	return 0;
}

/* The index of P1's last op before i (not the launch's own steps), or
 * SIZE_MAX when there is none. */
static size_t own_before(const struct plan *p, size_t i)
{
	while (i-- > 0)
		if (p->v[i].kind != OP_LAUNCH)
			return i;
	return SIZE_MAX;
}

int step_at(struct exec_state *st, size_t i, struct gerr *err)
{
	const struct run_config *cfg = st->cfg;
	const struct plan *p = cfg->plan;
	size_t prev = own_before(p, i);
	if (!cfg->step || (prev != SIZE_MAX && i < p->n && p->v[i].section == p->v[prev].section))
		return 0;
	if (!st->step)
		st->step = xcalloc(1, sizeof *st->step);
	struct step_state *s = st->step;
	struct sbuf b = {0};
	int r = 0;
	if (prev == SIZE_MAX) {
		describe_namespaces(cfg, &b);
		r = read_table(&s->last, err);
		for (size_t k = 0; r == 0 && k < s->last.n; k++)
			table_add_copy(&s->all, &s->last.v[k]);
	} else {
		const char *h = ns_section_heading(p, p->v[prev].section);
		sbuf_printf(&b, "%s\n", str_after(h, "# ") ? str_after(h, "# ") : h);
		size_t head = b.len;
		for (size_t k = s->from; k < s->to; k++)
			s->pivoted |= p->v[k].kind == OP_PIVOT;
		r = diff_mounts(s, &b, err);
		if (r == 0)
			diff_nodes(st, &b);
		if (r == 0 && b.len == head)
			sbuf_puts(&b, "  (nothing new)\n");
	}
	if (r == 0 && !s->pivoted && st->rootfd >= 0)
		sbuf_puts(&b, "  in that mount namespace the new root is " PLAN_ROOT "\n");
	else if (r == 0 && s->pivoted)
		sbuf_puts(&b, "  the container's / is its root now: pivot_root is done\n");
	if (r == 0)
		r = stop(cfg, &b, err);
	sbuf_free(&b);
	if (r < 0)
		return -1;
	s->from = i;
	for (s->to = i; s->to < p->n && p->v[s->to].section == p->v[i].section; s->to++)
		;
	take_before(st);
	return 0;
}

int step_exec(struct exec_state *st, struct gerr *err)
{
	const struct run_config *cfg = st->cfg;
	if (!cfg->step)
		return 0;
	/* The command's steps as the plan decided them (ns/steps.c). */
	const struct launch *l = ns_launch(cfg);
	struct sbuf b = {0};
	sbuf_puts(&b, "6. Drop to the user and exec: after Enter, the command runs\n    ");
	for (char **a = l->argv; a && *a; a++) {
		sbuf_shquote(&b, *a);
		sbuf_puts(&b, a[1] ? " " : "\n");
	}
	sbuf_printf(&b, "  as uid %u, gid %u", (unsigned)l->user.uid, (unsigned)l->user.gid);
	if (l->takes_groups) {
		sbuf_printf(&b, ", groups %u", (unsigned)l->user.gid);
		for (size_t i = 0; i < l->user.ngroups && i < USER_GROUPS_MAX; i++)
			sbuf_printf(&b, ",%u", (unsigned)l->user.groups[i]);
	}
	sbuf_puts(&b, ", in ");
	sbuf_showquote(&b, l->workdir ? l->workdir : "/");
	sbuf_puts(&b, "\n");
	int r = stop(cfg, &b, err);
	sbuf_free(&b);
	if (st->step) {
		table_free(&st->step->all);
		table_free(&st->step->last);
		free(st->step->before);
		free(st->step);
		st->step = NULL;
	}
	close(cfg->step_sock);
	return r;
}

/* ---- P0: the caller's side ---------------------------------------------- */

struct stepper {
	int sock; /* P0's end; -1 once P1 let it go (the command runs) */
	int tty;  /* /dev/tty, the caller's */
	pid_t pid;
	int flags;    /* the namespaces (the plan's, ns/steps.c) */
	int paused;   /* a report is shown, and its answer awaited */
	char *where;  /* the heading of the last stop, for the last line */
	char *report; /* the receive buffer */
};

struct stepper *step_new(struct run_config *cfg, struct gerr *err)
{
	int sv[2];
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0) {
		gerr_set(err, errno, "--step: socketpair");
		return NULL;
	}
	struct stepper *s = xcalloc(1, sizeof *s);
	s->sock = sv[0];
	s->tty = cfg->step_tty;
	s->flags = ns_launch(cfg)->clone_flags;
	s->report = xmalloc(STEP_REPORT_MAX + 256);
	cfg->step_sock = sv[1];
	return s;
}

void step_started(struct stepper *s, const struct run_config *cfg, pid_t pid)
{
	if (!s)
		return;
	close(cfg->step_sock);
	s->pid = pid;
}

size_t step_pollfds(const struct stepper *s, struct pollfd *p)
{
	if (!s)
		return 0;
	p[0] = (struct pollfd){.fd = s->paused ? -1 : s->sock, .events = POLLIN};
	p[1] = (struct pollfd){.fd = s->paused ? s->tty : -1, .events = POLLIN};
	return STEP_NFDS;
}

/* The report as P1 sent it, line by line (each through the last guard of
 * a terminal), then where to look from and what to press. */
static void show(struct stepper *s, size_t n)
{
	s->report[n] = '\0';
	free(s->where);
	s->where = xstrndup(s->report, strcspn(s->report, "\n"));
	/* Enter typed ahead must not skip a stop the caller has not seen. */
	tcflush(s->tty, TCIFLUSH);
	struct sbuf b = {0};
	sbuf_puts(&b, "\n--step: ");
	for (const char *l = s->report; *l;) {
		size_t k = strcspn(l, "\n");
		_cleanup_free_ char *line = xstrndup(l, k);
		sbuf_add_visible(&b, line);
		sbuf_puts(&b, "\n");
		l += k + (l[k] == '\n');
	}
	sbuf_printf(&b,
		    "  the container's pid 1 is pid %d on the host; to look inside from another terminal:\n"
		    "    nsenter --target %d",
		    (int)s->pid, (int)s->pid);
	for (size_t i = 0; i < COUNT_OF(namespaces); i++)
		if (s->flags & namespaces[i].flag)
			sbuf_printf(&b, " %s", namespaces[i].option);
	sbuf_puts(&b, "\n--step: Enter goes on, q ends the launch: ");
	(void)write_all(s->tty, b.s, b.len);
	sbuf_free(&b);
}

int step_poll(struct stepper *s, const struct pollfd *p, struct gerr *err)
{
	if (!s)
		return 0;
	if (!s->paused && (p[0].revents & (POLLIN | POLLHUP | POLLERR))) {
		ssize_t n = recv(s->sock, s->report, STEP_REPORT_MAX + 255, 0);
		if (n < 0 && errno == EINTR)
			return 0;
		if (n <= 0) { /* P1 let go: the command runs (or the setup failed, which P1 says) */
			close(s->sock);
			s->sock = -1;
			return 0;
		}
		show(s, (size_t)n);
		s->paused = 1;
		return 0;
	}
	if (s->paused && (p[1].revents & (POLLIN | POLLHUP | POLLERR))) {
		char line[256];
		ssize_t n = read(s->tty, line, sizeof line);
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			return 0;
		if (n <= 0 || line[0] == 'q' || line[0] == 'Q')
			return STEP_ENDED;
		/* The rest of a long line is not an answer to the next stop. */
		tcflush(s->tty, TCIFLUSH);
		s->paused = 0;
		if (send(s->sock, "g", 1, MSG_NOSIGNAL) < 0)
			return gerr_set(err, errno, "--step: let the container go on");
	}
	return 0;
}

int step_ends_on(const struct stepper *s, int signo)
{
	return s && s->sock >= 0 && (signo == SIGINT || signo == SIGTERM || signo == SIGHUP);
}

int step_ended(const struct stepper *s, int signo)
{
	if (signo)
		(void)write_all(s->tty, "\n", 1); /* after the ^C the terminal echoed */
	errorx_("--step: the launch is ended (%s) %s %s: its processes and mounts are gone",
		signo == SIGINT ? "^C"
		: signo         ? strsignal(signo)
				: "q",
		!s->where   ? "before"
		: s->paused ? "at the stop after"
			    : "after the stop at",
		s->where ? s->where : "the first stop");
	return 128 + (signo ? signo : SIGINT);
}

void step_end(struct stepper **sp)
{
	struct stepper *s = *sp;
	if (!s)
		return;
	if (s->sock >= 0)
		close(s->sock);
	free(s->where);
	free(s->report);
	free(s);
	*sp = NULL;
}
