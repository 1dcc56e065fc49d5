/* ns/userns/idmap.c — the caller's subordinate id ranges (/etc/subuid,
 * /etc/subgid), the full id map made from them with Debian's setuid helpers
 * newuidmap and newgidmap as podman makes it (the caller is root inside, ids
 * 1..N are the caller's range), and running a piece of work in a child that
 * is root in a user namespace with that map.
 *
 * Why on a floor below rootfs/: a launch with the full map must find the
 * image's files owned as the image says, so the cache unpacks them under
 * the same map (rootfs/unpack/unpack.c), and only a process of that map can
 * remove them again (rootfs/cache/cache.c): the caller cannot unlink inside a directory that
 * belongs to one of its subordinate ids.  ns/subid.c decides the launch's
 * map with the same lookup, so the two always agree.  gpurun stays free of
 * setuid bits: the helpers belong to Debian's uidmap package and check the
 * ranges against the same files. */
#include "userns.h"

#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#define NEWUIDMAP "/usr/bin/newuidmap"
#define NEWGIDMAP "/usr/bin/newgidmap"

static int subid_range_parse(const char *text, const char *name, unsigned long id, unsigned long *start,
			     unsigned long *count)
{
	char idstr[32];
	snprintf(idstr, sizeof idstr, "%lu", id);
	for (const char *line = text; line && *line;) {
		const char *end = strchr(line, '\n');
		size_t len = end ? (size_t)(end - line) : strlen(line);
		const char *c1 = memchr(line, ':', len);
		const char *c2 = c1 ? memchr(c1 + 1, ':', len - (size_t)(c1 + 1 - line)) : NULL;
		if (c2) {
			size_t klen = (size_t)(c1 - line);
			int match = (name && strlen(name) == klen && !strncmp(line, name, klen)) ||
				    (strlen(idstr) == klen && !strncmp(line, idstr, klen));
			char num[64];
			size_t nlen = len - (size_t)(c2 + 1 - line);
			unsigned long s = 0, n = 0;
			char *e1 = NULL, *e2 = NULL;
			if (match && (size_t)(c2 - c1 - 1) < sizeof num && nlen < sizeof num) {
				snprintf(num, sizeof num, "%.*s", (int)(c2 - c1 - 1), c1 + 1);
				errno = 0;
				s = strtoul(num, &e1, 10);
				snprintf(num, sizeof num, "%.*s", (int)nlen, c2 + 1);
				n = strtoul(num, &e2, 10);
				if (!errno && e1 && !*e1 && e2 && !*e2 && n > 0 && s > 0) {
					*start = s;
					*count = n;
					return 0;
				}
			}
		}
		line = end ? end + 1 : NULL;
	}
	return -1;
}

static int range_of(const char *file, const char *name, unsigned long id, unsigned long *start, unsigned long *count)
{
	size_t len;
	struct gerr ignored = {0};
	_cleanup_free_ char *text = read_small_file_at(AT_FDCWD, file, 1 << 20, &len, &ignored);
	return text ? subid_range_parse(text, name, id, start, count) : -1;
}

static int keep_caller;

void subid_keep_caller(int on)
{
	keep_caller = on;
}

int subid_lookup(uid_t uid, gid_t gid, struct subids *out)
{
	memset(out, 0, sizeof *out);
	const char *off = getenv("GPURUN_NO_SUBID");
	if (uid == 0 || (off && *off && strcmp(off, "0")))
		return -1;
	if (access(NEWUIDMAP, X_OK) < 0 || access(NEWGIDMAP, X_OK) < 0)
		return -1;
	struct passwd *pw = getpwuid(uid);
	const char *name = pw ? pw->pw_name : NULL;
	if (range_of("/etc/subuid", name, uid, &out->uid_start, &out->uid_count) < 0 ||
	    range_of("/etc/subgid", name, uid, &out->gid_start, &out->gid_count) < 0) {
		memset(out, 0, sizeof *out);
		return -1;
	}
	out->uid = uid;
	out->gid = gid;
	if (keep_caller) {
		/* The range fills ids 0..uid-1 below the caller's: it must reach. */
		if (uid > out->uid_count || gid > out->gid_count) {
			memset(out, 0, sizeof *out);
			return -1;
		}
		out->in_uid = uid;
		out->in_gid = gid;
	}
	return 0;
}

/* One "INSIDE OUTSIDE COUNT" of a helper's command line. */
static void add_range(char a[][32], size_t *n, unsigned long in, unsigned long out, unsigned long count)
{
	snprintf(a[(*n)++], 32, "%lu", in);
	snprintf(a[(*n)++], 32, "%lu", out);
	snprintf(a[(*n)++], 32, "%lu", count);
}

/* HELPER PID INSIDE OUTSIDE COUNT...: the caller's id at in, the range
 * around it (0..in-1, then in+1..count), waited for; its own complaint
 * goes to our stderr, and ours names it. */
static int run_helper(const char *helper, pid_t pid, unsigned long id, unsigned long in, unsigned long start,
		      unsigned long count, struct gerr *err)
{
	char a[10][32];
	char *argv[12];
	size_t n = 0;
	snprintf(a[n++], sizeof a[0], "%d", (int)pid);
	if (in)
		add_range(a, &n, 0, start, in);
	add_range(a, &n, in, id, 1);
	if (count > in)
		add_range(a, &n, in + 1, start + in, count - in);
	argv[0] = (char *)helper;
	struct sbuf line = {0};
	sbuf_puts(&line, helper);
	for (size_t i = 0; i < n; i++) {
		argv[i + 1] = a[i];
		sbuf_printf(&line, " %s", a[i]);
	}
	argv[n + 1] = NULL;
	char *const envp[] = {(char *)"PATH=/usr/sbin:/usr/bin:/sbin:/bin", NULL};
	pid_t child = fork();
	if (child < 0) {
		sbuf_free(&line);
		return gerr_set(err, errno, "fork for %s", helper);
	}
	if (child == 0) {
		execve(helper, argv, envp);
		_exit(127);
	}
	int status, r = 0;
	while (waitpid(child, &status, 0) < 0)
		if (errno != EINTR) {
			r = gerr_set(err, errno, "wait for %s", helper);
			break;
		}
	if (r == 0 && (!WIFEXITED(status) || WEXITSTATUS(status) != 0)) {
		r = gerr_set(err, 0, "%s failed (%s %d)", line.s, WIFEXITED(status) ? "exit status" : "signal",
			     WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
		gerr_hint(err, "check the caller's ranges in /etc/subuid and /etc/subgid");
	}
	sbuf_free(&line);
	return r;
}

int subid_write_maps(const struct subids *s, pid_t pid, struct gerr *err)
{
	if (run_helper(NEWUIDMAP, pid, s->uid, s->in_uid, s->uid_start, s->uid_count, err) < 0)
		return -1;
	return run_helper(NEWGIDMAP, pid, s->gid, s->in_gid, s->gid_start, s->gid_count, err);
}

void idmap_key(const struct subids *m, char *buf, size_t cap)
{
	if (m->in_uid || m->in_gid)
		snprintf(buf, cap, "u%lu-%lu-g%lu-%lu-k%u-%u", m->uid_start, m->uid_count, m->gid_start, m->gid_count,
			 (unsigned)m->in_uid, (unsigned)m->in_gid);
	else
		snprintf(buf, cap, "u%lu-%lu-g%lu-%lu", m->uid_start, m->uid_count, m->gid_start, m->gid_count);
}

int idmap_from_key(const char *key, struct subids *m)
{
	memset(m, 0, sizeof *m);
	char again[IDMAP_KEY_MAX];
	unsigned in_uid = 0, in_gid = 0;
	int n = sscanf(key, "u%lu-%lu-g%lu-%lu-k%u-%u", &m->uid_start, &m->uid_count, &m->gid_start, &m->gid_count,
		       &in_uid, &in_gid);
	if (n != 4 && n != 6)
		return -1;
	m->in_uid = in_uid;
	m->in_gid = in_gid;
	/* Only the form idmap_key writes: a key is a directory name. */
	idmap_key(m, again, sizeof again);
	if (strcmp(again, key) || !m->uid_count || !m->gid_count) {
		memset(m, 0, sizeof *m);
		return -1;
	}
	m->uid = geteuid();
	m->gid = getegid();
	return 0;
}

/* ---- work in a child of the map ------------------------------------------ */

static int read_full(int fd, void *buf, size_t n)
{
	size_t got = 0;
	while (got < n) {
		ssize_t r = read(fd, (char *)buf + got, n - got);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return -1;
		got += (size_t)r;
	}
	return 0;
}

struct child_answer {
	int rc;
	struct gerr err;
};

static void close_pair(int p[2])
{
	for (int i = 0; i < 2; i++)
		if (p[i] >= 0)
			close(p[i]);
}

/* The child: in its own user namespace, waits for P0 to write the map,
 * then is root there over the caller's ids and its range, and nothing
 * else: the host's other ids stay out of reach. */
static void child_main(const struct idmap_work *w, int ready, int go, int answer)
{
	struct child_answer a = {0};
	(void)prctl(PR_SET_PDEATHSIG, SIGKILL);
	char byte = 'r';
	if (unshare(CLONE_NEWUSER) < 0) {
		a.rc = gerr_set(&a.err, errno, "unshare a user namespace for the id map");
	} else if (write(ready, &byte, 1) != 1 || read_full(go, &byte, 1) < 0) {
		_exit(1); /* P0 said why */
	} else if (setresgid(0, 0, 0) < 0 || setresuid(0, 0, 0) < 0) {
		a.rc = gerr_set(&a.err, errno, "become root of the id map's user namespace");
	} else {
		a.rc = w->fn(w->arg, w->result, &a.err);
	}
	if (write_all(answer, &a, sizeof a) < 0 || (w->result_len && write_all(answer, w->result, w->result_len) < 0))
		_exit(1);
	_exit(0);
}

int idmap_run(const struct subids *m, const struct idmap_work *w, struct gerr *err)
{
	int ready[2] = {-1, -1}, go[2] = {-1, -1}, answer[2] = {-1, -1};
	if (pipe2(ready, O_CLOEXEC) < 0 || pipe2(go, O_CLOEXEC) < 0 || pipe2(answer, O_CLOEXEC) < 0) {
		int e = errno;
		close_pair(ready);
		close_pair(go);
		close_pair(answer);
		return gerr_set(err, e, "pipe for the id map's child");
	}
	/* Output buffered now would be written twice, once by the child. */
	fflush(NULL);
	pid_t pid = fork();
	if (pid < 0) {
		int e = errno;
		close_pair(ready);
		close_pair(go);
		close_pair(answer);
		return gerr_set(err, e, "fork the id map's child");
	}
	if (pid == 0) {
		close(ready[0]);
		close(go[1]);
		close(answer[0]);
		child_main(w, ready[1], go[0], answer[1]);
	}
	close(ready[1]);
	close(go[0]);
	close(answer[1]);
	char byte;
	int rc = 0;
	if (read_full(ready[0], &byte, 1) < 0)
		rc = gerr_set(err, 0, "the id map's child ended before its user namespace was made");
	else if (subid_write_maps(m, pid, err) < 0)
		rc = -1;
	else if (write(go[1], "g", 1) != 1)
		rc = gerr_set(err, errno, "start the id map's child");
	close(ready[0]);
	close(go[1]);
	/* The parent's part runs while the child works (rootfs/unpack/unpack.c feeds
	 * it the tar stream); the child's answer comes after both. */
	if (rc == 0 && w->during && w->during(w->during_arg, err) < 0)
		rc = -1;
	if (rc < 0)
		(void)kill(pid, SIGKILL);
	struct child_answer a;
	int got = read_full(answer[0], &a, sizeof a) == 0 &&
		  (!w->result_len || read_full(answer[0], w->result, w->result_len) == 0);
	close(answer[0]);
	int status = 0;
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR) {
			if (rc == 0)
				rc = gerr_set(err, errno, "wait for the id map's child");
			break;
		}
	/* The child's own reason first: an unshare it was refused ends it
	 * before it is ready. */
	if (got && a.rc < 0) {
		*err = a.err;
		return -1;
	}
	if (rc < 0)
		return -1;
	if (!got)
		return gerr_set(err, 0, "the id map's child died (%s %d)",
				WIFSIGNALED(status) ? "signal" : "exit status",
				WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
	return 0;
}
