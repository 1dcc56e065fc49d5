/* ns/subid.c — who runs gpurun and the user namespace that follows from
 * it: the caller's ids, the caller's subordinate id ranges (/etc/subuid, /etc/subgid)
 * and the full id maps written with Debian's setuid helpers newuidmap and
 * newgidmap, as podman makes them: the caller is root inside, and ids 1..N
 * are the caller's range.
 *
 * Why: with one id mapped, no other user exists in the container, so
 * package managers that switch to a service user (apt's _apt) or chown to
 * one cannot work for real (ns/security.c then answers those calls with a
 * harmless success).  A range makes them real.  gpurun itself stays free
 * of setuid bits: the helpers belong to Debian's uidmap package, check the
 * ranges against the same files, and are used only when both are installed
 * and the caller has both ranges. */
#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "exec.h"

#define NEWUIDMAP "/usr/bin/newuidmap"
#define NEWGIDMAP "/usr/bin/newgidmap"

/* The first range of FILE for the user NAME or the numeric ID, as
 * shadow's helpers read it ("name-or-id:start:count", one a line). */
int subid_range_parse(const char *text, const char *name, unsigned long id, unsigned long *start, unsigned long *count)
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

/* Root runs without a user namespace.  Unprivileged, with ranges and
 * Debian's uidmap, the full map podman makes; else one id mapped: no other
 * id exists to switch to or give files to, and the calls that would need
 * one are answered (ns/security.c). */
void ns_caller(struct run_config *cfg)
{
	cfg->host_uid = geteuid();
	cfg->host_gid = getegid();
	cfg->unprivileged = cfg->host_uid != 0;
	if (cfg->unprivileged)
		(void)subid_lookup(cfg->host_uid, cfg->host_gid, &cfg->subids);
	cfg->fake_ids = cfg->unprivileged && !cfg->subids.uid_count;
	cfg->keep_owner = !cfg->unprivileged && ids_all_mapped();
}

int subid_lookup(uid_t uid, gid_t gid, struct subids *out)
{
	memset(out, 0, sizeof *out);
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
	return 0;
}

/* HELPER PID 0 ID 1 1 START COUNT, waited for; its own complaint goes to
 * our stderr, and ours names it. */
static int run_helper(const char *helper, pid_t pid, unsigned long id, unsigned long start, unsigned long count,
		      struct gerr *err)
{
	char a_pid[32], a_id[32], a_start[32], a_count[32];
	snprintf(a_pid, sizeof a_pid, "%d", (int)pid);
	snprintf(a_id, sizeof a_id, "%lu", id);
	snprintf(a_start, sizeof a_start, "%lu", start);
	snprintf(a_count, sizeof a_count, "%lu", count);
	char *const argv[] = {(char *)helper, a_pid,   (char *)"0", a_id, (char *)"1",
			      (char *)"1",    a_start, a_count,     NULL};
	char *const envp[] = {(char *)"PATH=/usr/sbin:/usr/bin:/sbin:/bin", NULL};
	pid_t child = fork();
	if (child < 0)
		return gerr_set(err, errno, "fork for %s", helper);
	if (child == 0) {
		execve(helper, argv, envp);
		_exit(127);
	}
	int status;
	while (waitpid(child, &status, 0) < 0)
		if (errno != EINTR)
			return gerr_set(err, errno, "wait for %s", helper);
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		gerr_set(err, 0, "%s %s 0 %s 1 1 %s %s failed (%s %d)", helper, a_pid, a_id, a_start, a_count,
			 WIFEXITED(status) ? "exit status" : "signal",
			 WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
		gerr_hint(err, "check the caller's ranges in /etc/subuid and /etc/subgid");
		return -1;
	}
	return 0;
}

int subid_write_maps(const struct subids *s, pid_t pid, struct gerr *err)
{
	if (run_helper(NEWUIDMAP, pid, s->uid, s->uid_start, s->uid_count, err) < 0)
		return -1;
	return run_helper(NEWGIDMAP, pid, s->gid, s->gid_start, s->gid_count, err);
}
