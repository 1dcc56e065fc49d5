/* rootfs/image/user.c — resolving --user against the image's own /etc/passwd and
 * /etc/group, with docker's rules: a number is a uid (an entry is optional),
 * a name must exist, the gid is the named or numeric group, else the user's
 * passwd gid, else 0; without a group, the groups whose member list names
 * the user are its supplementary groups (runc's rule).
 *
 * The two files are image content.  /etc is resolved inside the root (an
 * image whose /etc is a symlink to "/etc" or "../../etc" stays inside), the
 * file itself is never followed, must be a regular file (a FIFO planted there
 * would hang the launcher) and is size-capped.  The parsers take text with a
 * length, NULs included, and are fuzzed (tests/fuzz/fuzz_passwd.c). */
#include "../unpack/unpack.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define ID_FILE_MAX (4 * 1024 * 1024)
#define MAX_FIELDS 7
#define NAME_MAX_LEN 255

struct field {
	const char *p;
	size_t n;
};

/* A uid or gid in decimal: digits only, and it must fit in the 32-bit id
 * types without being (uid_t)-1, which the kernel reads as "unchanged". */
/* uid_t values: -1 (UINT32_MAX) means "no change" to setresuid, never an id. */
static int parse_id(const char *s, size_t n, unsigned long *out)
{
	return parse_decimal(s, n, UINT32_MAX - 1, out);
}

static int all_digits(const char *s)
{
	return *s && strspn(s, "0123456789") == strlen(s);
}

/* Split one line at ':' into at most max fields; returns how many.  The
 * fields past those are cleared: f is reused from line to line. */
static size_t split_fields(const char *line, size_t len, struct field *f, size_t max)
{
	size_t nf = 0, start = 0;
	memset(f, 0, max * sizeof *f);
	for (size_t i = 0; i <= len && nf < max; i++) {
		if (i == len || line[i] == ':') {
			f[nf].p = line + start;
			f[nf].n = i - start;
			nf++;
			start = i + 1;
		}
	}
	return nf;
}

/* Find the first line of text, in the passwd/group layout, whose name
 * (field 0) is key, or, when key is a number, whose field id_field is that
 * number.  Lines with fewer than min_fields fields, an invalid id in any of
 * the id fields (id_field and the one after it, when checked), or a name
 * longer than NAME_MAX_LEN are skipped, as are comments.  Returns 1 with
 * f filled, 0, or -1 for a key that no line could ever match. */
static int find_line(const char *text, size_t len, const char *key, size_t id_field, size_t n_ids, size_t min_fields,
		     struct field *f)
{
	unsigned long want = 0, v;
	size_t klen = strlen(key);
	int numeric = all_digits(key);
	if (klen == 0 || klen > NAME_MAX_LEN || strpbrk(key, ":\n"))
		return -1;
	if (numeric && parse_id(key, klen, &want) < 0)
		return -1;
	for (size_t pos = 0; pos < len;) {
		const char *line = text + pos, *nl = memchr(line, '\n', len - pos);
		size_t n = nl ? (size_t)(nl - line) : len - pos;
		pos += n + 1;
		if (n == 0 || line[0] == '#')
			continue;
		if (split_fields(line, n, f, MAX_FIELDS) < min_fields || f[0].n == 0 || f[0].n > NAME_MAX_LEN)
			continue;
		int ids_ok = 1;
		for (size_t i = id_field; i < id_field + n_ids; i++)
			ids_ok = ids_ok && parse_id(f[i].p, f[i].n, &v) == 0;
		if (!ids_ok)
			continue;
		if (numeric) {
			parse_id(f[id_field].p, f[id_field].n, &v);
			if (v == want)
				return 1;
		} else if (f[0].n == klen && !memcmp(f[0].p, key, klen)) {
			return 1;
		}
	}
	return 0;
}

int passwd_find(const char *text, size_t len, const char *key, struct pw_entry *out)
{
	/* name:password:uid:gid:gecos:home:shell; the last three optional. */
	struct field f[MAX_FIELDS];
	int r = find_line(text, len, key, 2, 2, 4, f);
	if (r != 1)
		return r;
	memcpy(out->name, f[0].p, f[0].n);
	out->name[f[0].n] = '\0';
	parse_id(f[2].p, f[2].n, &out->uid);
	parse_id(f[3].p, f[3].n, &out->gid);
	/* A home that does not fit is left empty rather than cut short. */
	out->home[0] = '\0';
	if (f[5].p && f[5].n < sizeof out->home) {
		memcpy(out->home, f[5].p, f[5].n);
		out->home[f[5].n] = '\0';
	}
	return 1;
}

int group_find(const char *text, size_t len, const char *key, unsigned long *gid)
{
	/* name:password:gid:members */
	struct field f[MAX_FIELDS];
	int r = find_line(text, len, key, 2, 1, 3, f);
	if (r == 1)
		parse_id(f[2].p, f[2].n, gid);
	return r;
}

size_t group_memberships(const char *text, size_t len, const char *name, unsigned long skip, unsigned long *gids,
			 size_t cap)
{
	struct field f[MAX_FIELDS];
	size_t klen = strlen(name), n = 0;
	unsigned long gid;
	for (size_t pos = 0; klen && pos < len;) {
		const char *line = text + pos, *nl = memchr(line, '\n', len - pos);
		size_t ln = nl ? (size_t)(nl - line) : len - pos;
		pos += ln + 1;
		if (ln == 0 || line[0] == '#' || split_fields(line, ln, f, MAX_FIELDS) < 4 ||
		    parse_id(f[2].p, f[2].n, &gid) < 0 || gid == skip)
			continue;
		int member = 0;
		for (size_t i = 0, start = 0; i <= f[3].n && !member; i++)
			if (i == f[3].n || f[3].p[i] == ',') {
				member = i - start == klen && !memcmp(f[3].p + start, name, klen);
				start = i + 1;
			}
		int seen = 0;
		for (size_t i = 0; i < n && i < cap && member; i++)
			seen |= gids[i] == gid;
		if (!member || seen)
			continue;
		if (n < cap)
			gids[n] = gid;
		n++;
	}
	return n;
}

/* Read /etc/<file> of the image.  NULL with *missing set when the image has
 * no such file (or no /etc): for a numeric uid that is fine. */
static char *read_etc_file(int rootfd, const char *file, size_t *len, int *missing, struct gerr *err)
{
	*missing = 0;
	_cleanup_fd_ int etc = open_in_root(rootfd, "etc", O_PATH | O_DIRECTORY);
	if (etc < 0) {
		if (errno == ENOENT || errno == ENOTDIR) {
			*missing = 1;
			return NULL;
		}
		gerr_set(err, errno, "open /etc in the image");
		return NULL;
	}
	/* read_small_file_at opens with O_NOFOLLOW|O_NONBLOCK and wants a
	 * regular file. */
	char *text = read_small_file_at(etc, file, ID_FILE_MAX, len, err);
	if (!text && err->errnum == ENOENT) {
		*missing = 1;
		gerr_clear(err);
		return NULL;
	}
	if (!text)
		gerr_prefix(err, "read the image's /etc");
	return text;
}

static int lookup_group(int rootfd, const char *group, gid_t *gid, struct gerr *err)
{
	char q[QUOTED_NAME_MAX];
	unsigned long v;
	size_t len;
	int missing;
	quote_name(q, sizeof q, group);
	if (all_digits(group)) {
		if (parse_id(group, strlen(group), &v) < 0)
			return gerr_set(err, 0, "group '%s': not a valid gid (0 to %u)", q, UINT32_MAX - 1);
		*gid = (gid_t)v;
		return 0;
	}
	_cleanup_free_ char *text = read_etc_file(rootfd, "group", &len, &missing, err);
	if (!text && !missing)
		return gerr_prefix(err, "group '%s'", q);
	if (!text || group_find(text, len, group, &v) != 1)
		return gerr_set(err, 0, "group '%s': no such group in the image's /etc/group", q);
	*gid = (gid_t)v;
	return 0;
}

int rootfs_lookup_user(int rootfd, const char *spec, uid_t *uid, gid_t *gid, char **home, struct gerr *err)
{
	const char *colon = strchr(spec, ':');
	_cleanup_free_ char *user = colon ? xstrndup(spec, (size_t)(colon - spec)) : xstrdup(spec);
	const char *group = colon ? colon + 1 : NULL;
	struct pw_entry pw;
	char q[QUOTED_NAME_MAX];
	unsigned long v = 0;
	size_t len;
	int missing, found = 0;

	*home = NULL;
	if (!*user || (group && !*group)) {
		quote_name(q, sizeof q, spec);
		return gerr_set(err, 0, "user '%s': expected uid, name, uid:gid or name:group", q);
	}
	quote_name(q, sizeof q, user);
	int numeric = all_digits(user);
	if (numeric && parse_id(user, strlen(user), &v) < 0)
		return gerr_set(err, 0, "user '%s': not a valid uid (0 to %u)", q, UINT32_MAX - 1);

	/* A number is a uid with or without a readable entry; a name must be
	 * found, so an unreadable file (a symlink, a FIFO) is an error. */
	struct gerr read_err = {0};
	_cleanup_free_ char *text = read_etc_file(rootfd, "passwd", &len, &missing, &read_err);
	if (!text && !missing && !numeric) {
		*err = read_err;
		return gerr_prefix(err, "user '%s'", q);
	}
	if (text)
		found = passwd_find(text, len, user, &pw) == 1;
	if (!found && !numeric) {
		gerr_set(err, 0, "user '%s': no such user in the image's /etc/passwd", q);
		if (missing)
			gerr_hint(err, "the image has no /etc/passwd; give a numeric uid");
		return -1;
	}
	*uid = found ? (uid_t)pw.uid : (uid_t)v;
	/* docker: without a group, the user's own, or 0 for an unknown uid. */
	*gid = found ? (gid_t)pw.gid : 0;
	if (group && lookup_group(rootfd, group, gid, err) < 0)
		return -1;
	if (found && pw.home[0])
		*home = xstrdup(pw.home);
	return 0;
}

int rootfs_user_groups(int rootfd, int group_rootfd, const char *spec, gid_t primary, gid_t *groups, size_t *n,
		       struct gerr *err)
{
	*n = 0;
	if (strchr(spec, ':')) /* a group given: that one alone, as docker does */
		return 0;
	struct pw_entry pw;
	size_t len;
	int missing;
	struct gerr ignored = {0};
	_cleanup_free_ char *pass = read_etc_file(rootfd, "passwd", &len, &missing, &ignored);
	if (!pass || passwd_find(pass, len, spec, &pw) != 1)
		return 0;
	_cleanup_free_ char *text = read_etc_file(group_rootfd, "group", &len, &missing, &ignored);
	if (!text)
		return 0;
	unsigned long gids[USER_GROUPS_MAX];
	size_t count = group_memberships(text, len, pw.name, primary, gids, USER_GROUPS_MAX);
	if (count > USER_GROUPS_MAX) {
		char q[QUOTED_NAME_MAX];
		quote_name(q, sizeof q, pw.name);
		return gerr_set(err, 0, "user '%s': a member of %zu groups in the image's /etc/group, more than %d", q,
				count, USER_GROUPS_MAX);
	}
	for (size_t i = 0; i < count; i++)
		groups[i] = (gid_t)gids[i];
	*n = count;
	return 0;
}
