/* tests/unit/user_test.c — the supplementary groups of a --user, table-driven:
 * group_memberships() on /etc/group text (members split at commas, exact
 * names, malformed lines skipped, duplicates and the primary gid left out,
 * the count past the cap), and rootfs_user_groups() on a small image tree
 * (runc's rule: only without a group in the spec, only for a user with a
 * passwd entry, found by name or by uid).
 *
 *   user_test --list     the names of the cases
 *   user_test CASE       run one case: exit 0, or 1 with what was wrong
 *
 * tests/unit.bats runs every case; `make unit` builds this under ASan and
 * UBSan. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../rootfs/rootfs.h"
#include "unit.h"

static void case_memberships(void)
{
	static const struct {
		const char *text, *name;
		unsigned long skip;
		const char *want; /* the gids, comma-joined */
		size_t count;
	} cases[] = {
		{"video:x:44:alice\n", "alice", 1000, "44", 1},
		{"video:x:44:bob,alice,carol\n", "alice", 1000, "44", 1},
		{"video:x:44:alicex,xalice\n", "alice", 1000, "", 0},
		{"video:x:44:Alice\n", "alice", 1000, "", 0},
		{"a:x:10:alice\nb:x:20:bob\nc:x:30:alice\n", "alice", 1000, "10,30", 2},
		{"alice:x:1000:alice\nvideo:x:44:alice\n", "alice", 1000, "44", 1}, /* the primary */
		{"video:x:44:alice\nvideo2:x:44:alice\n", "alice", 1000, "44", 1},  /* one gid once */
		{"video:x:44:\n", "alice", 1000, "", 0},
		{"video:x:44\n", "alice", 1000, "", 0},                      /* no member field */
		{"#video:x:44:alice\n", "alice", 1000, "", 0},               /* a comment */
		{"video:x:4x:alice\nok:x:5:alice\n", "alice", 1000, "5", 1}, /* a bad gid */
		{"video:x:4294967295:alice\n", "alice", 1000, "", 0},        /* (gid_t)-1 */
		{"video:x:44:alice", "alice", 1000, "44", 1},                /* no final newline */
		{"video:x:44:alice,\n", "alice", 1000, "44", 1},
		{"video:x:44:,alice\n", "alice", 1000, "44", 1},
		{"video:x:44:alice:extra\n", "alice", 1000, "44", 1},
		{"video:x:44:alice\n", "", 1000, "", 0},
		{"", "alice", 1000, "", 0},
		{"a:x:1:r\nb:x:2:r\nc:x:3:r\nd:x:4:r\ne:x:5:r\n", "r", 0, "1,2,3", 5}, /* the cap is 3 below */
	};
	for (size_t i = 0; i < COUNT_OF(cases); i++) {
		unsigned long gids[3];
		size_t n = group_memberships(cases[i].text, strlen(cases[i].text), cases[i].name, cases[i].skip, gids,
					     COUNT_OF(gids));
		char got[64] = "";
		for (size_t k = 0; k < n && k < COUNT_OF(gids); k++)
			snprintf(got + strlen(got), sizeof got - strlen(got), "%s%lu", k ? "," : "", gids[k]);
		CHECK(n == cases[i].count, "case %zu: count %zu, want %zu", i, n, cases[i].count);
		CHECK(!strcmp(got, cases[i].want), "case %zu: got \"%s\", want \"%s\"", i, got, cases[i].want);
	}
}

static void put(int dirfd, const char *name, const char *text)
{
	int fd = openat(dirfd, name, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0 || write(fd, text, strlen(text)) != (ssize_t)strlen(text) || close(fd) < 0) {
		perror(name);
		exit(2);
	}
}

static void case_lookup(void)
{
	char dir[] = "/tmp/user_test.XXXXXX";
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		exit(2);
	}
	char etc[64];
	snprintf(etc, sizeof etc, "%s/etc", dir);
	if (mkdir(etc, 0755) < 0) {
		perror(etc);
		exit(2);
	}
	int root = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC), etcfd = open(etc, O_PATH | O_DIRECTORY | O_CLOEXEC);
	put(etcfd, "passwd", "root:x:0:0:root:/root:/bin/sh\nalice:x:1000:1000::/home/alice:/bin/sh\n");
	put(etcfd, "group", "root:x:0:\nwheel:x:10:root\nvideo:x:44:alice\nalice:x:1000:\nstaff:x:50:alice,root\n");
	static const struct {
		const char *spec;
		gid_t primary;
		const char *want;
	} cases[] = {
		{"alice", 1000, "44,50"},  {"1000", 1000, "44,50"}, /* a uid with an entry: its name's groups */
		{"alice:alice", 1000, ""}, {"alice:44", 44, ""},    /* a group given: that one alone */
		{"4242", 0, ""},                                    /* no entry: no name to look for */
		{"0", 0, "10,50"},                                  /* root without --user */
		{"nobody", 0, ""},
	};
	for (size_t i = 0; i < COUNT_OF(cases); i++) {
		gid_t groups[USER_GROUPS_MAX];
		size_t n = 99;
		struct gerr err = {0};
		CHECK(rootfs_user_groups(root, root, cases[i].spec, cases[i].primary, groups, &n, &err) == 0, "%s: %s",
		      cases[i].spec, err.msg);
		char got[64] = "";
		for (size_t k = 0; k < n; k++)
			snprintf(got + strlen(got), sizeof got - strlen(got), "%s%u", k ? "," : "",
				 (unsigned)groups[k]);
		CHECK(!strcmp(got, cases[i].want), "%s: got \"%s\", want \"%s\"", cases[i].spec, got, cases[i].want);
	}

	/* More groups than the cap: one line naming the user. */
	char *big = malloc(64 * (USER_GROUPS_MAX + 2));
	size_t len = 0;
	for (int g = 0; g <= USER_GROUPS_MAX; g++)
		len += (size_t)sprintf(big + len, "g%d:x:%d:alice\n", g, 2000 + g);
	put(etcfd, "group", big);
	free(big);
	gid_t groups[USER_GROUPS_MAX];
	size_t n;
	struct gerr err = {0};
	CHECK(rootfs_user_groups(root, root, "alice", 1000, groups, &n, &err) < 0, "%d groups accepted",
	      USER_GROUPS_MAX + 1);
	CHECK(strstr(err.msg, "user 'alice': a member of 257 groups in the image's /etc/group, more than 256") != NULL,
	      "message: %s", err.msg);

	/* No /etc/group: none, and no error. */
	unlinkat(etcfd, "group", 0);
	CHECK(rootfs_user_groups(root, root, "alice", 1000, groups, &n, &err) == 0 && n == 0, "without /etc/group");
	unlinkat(etcfd, "passwd", 0);
	close(etcfd);
	close(root);
	rmdir(etc);
	rmdir(dir);
}

static const struct unit_case cases[] = {
	{"memberships", case_memberships},
	{"lookup", case_lookup},
};

int main(int argc, char **argv)
{
	return unit_main(argc, argv, cases, COUNT_OF(cases));
}
