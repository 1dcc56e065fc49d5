/* rootfs/idmap.c — the caller's subordinate id ranges (/etc/subuid,
 * /etc/subgid), the full id map made from them with Debian's setuid helpers
 * newuidmap and newgidmap as podman makes it (the caller is root inside, ids
 * 1..N are the caller's range), and the map the cache's trees are kept
 * under.
 *
 * Why here, below ns/: the cache keeps the trees of each id map apart
 * (rootfs/cache.c), and ns/subid.c decides the launch's map with the same
 * lookup, so the two always agree.  gpurun stays free of
 * setuid bits: the helpers belong to Debian's uidmap package and check the
 * ranges against the same files. */
#include "rootfs_int.h"

#include <fcntl.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define NEWUIDMAP "/usr/bin/newuidmap"
#define NEWGIDMAP "/usr/bin/newgidmap"

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

/* ---- the map of the cache's trees ---------------------------------------- */

/* Set by the process that opened the cache: a process it clones (the
 * launch's P1) is not that process and unpacks as it is. */
static struct subids cache_map;
static pid_t cache_map_pid;

void idmap_use(const struct subids *m)
{
	memset(&cache_map, 0, sizeof cache_map);
	cache_map_pid = 0;
	if (m && m->uid_count) {
		cache_map = *m;
		cache_map_pid = getpid();
	}
}

const struct subids *idmap_current(void)
{
	return cache_map.uid_count && cache_map_pid == getpid() ? &cache_map : NULL;
}

void idmap_key(const struct subids *m, char *buf, size_t cap)
{
	snprintf(buf, cap, "u%lu-%lu-g%lu-%lu", m->uid_start, m->uid_count, m->gid_start, m->gid_count);
}

int idmap_from_key(const char *key, struct subids *m)
{
	memset(m, 0, sizeof *m);
	char again[IDMAP_KEY_MAX];
	if (sscanf(key, "u%lu-%lu-g%lu-%lu", &m->uid_start, &m->uid_count, &m->gid_start, &m->gid_count) != 4)
		return -1;
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
