/* ns/opshow.c — each op of the plan as its printed step: its kind's own
 * line (ns/ophome.h), or the one line a run of binds or links of the same
 * form shares (bind_files, bind_each, link_in, driver_text), as the printed
 * plan and --verbose show them. */
#include "ophome.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The longest line of a printed plan a comment at its end may make. */
#define LINE_MAX_WITH_COMMENT 160

void op_describe(const struct plan_view *v, const struct op *op, struct sbuf *b)
{
	const struct op_home *h = op_home(op->kind);
	if (!h)
		return;
	struct sbuf step = {0};
	h->describe(v, op, &step);
	const char *last = step.s ? strrchr(step.s, '\n') : NULL;
	size_t len = step.s ? step.len - (last ? (size_t)(last - step.s) + 1 : 0) : 0;
	/* A step too long for its comment at its end has it on the line above. */
	if (!h->own_comment && op->why && len + 5 + strlen(op->why) > LINE_MAX_WITH_COMMENT) {
		sbuf_puts(b, "# ");
		sbuf_add_visible(b, op->why);
		sbuf_puts(b, "\n");
	} else if (!h->own_comment) {
		plan_comment(&step, op);
	}
	if (step.s)
		sbuf_add(b, step.s, step.len);
	sbuf_free(&step);
}

/* The forms of a step that several ops of a run share, one line. */
enum group_kind {
	G_NONE,
	G_FILES,  /* bind_files OPTS FROM TO NAME...: FROM/NAME on TO/NAME, over an image symlink */
	G_EACH,   /* bind_each OPTS SRC DST...: one source on each */
	G_LINKIN, /* link_in DIR TARGET NAME...: links in one directory */
	G_TEXT,   /* driver_text PATH...: the driver's file copied */
};

/* The directory part of path (up to its last '/'), its length; 0 when
 * there is none or the rest is empty. */
static size_t dir_len(const char *path)
{
	const char *slash = strrchr(path, '/');
	return slash && slash[1] ? (size_t)(slash - path) : 0;
}

/* Whether src and dst end in the same name (a bind of bind_files). */
static int same_name(const char *src, const char *dst)
{
	const char *a = strrchr(src, '/'), *b = strrchr(dst, '/');
	return a && b && a[1] && !strcmp(a, b);
}

static enum group_kind group_kind(const struct plan_view *v, const struct op *op)
{
	if (op->kind == OP_SYMLINK)
		return G_LINKIN;
	if (op->kind == OP_FILE)
		return plan_file_from_driver(v, op) && !(op->flags & OPF_PARAMS) ? G_TEXT : G_NONE;
	if (op->kind != OP_BIND || op->skipped || (op->flags & (OPF_DIR | OPF_REC)))
		return G_NONE;
	if (!(op->flags & OPF_REPLACE))
		return G_EACH;
	return same_name(op->src, op->dst) ? G_FILES : G_NONE;
}

static unsigned bind_flags(const struct op *op)
{
	return (op->flags & OPF_MOUNT_MASK) | op->src_flags;
}

/* The words op adds to its group's line. */
static void group_words(const struct plan_view *v, const struct op *op, enum group_kind k, struct sbuf *b)
{
	if (k == G_LINKIN) {
		sbuf_shquote(b, op->src);
		sbuf_puts(b, " ");
	}
	if (k == G_LINKIN || k == G_FILES)
		sbuf_shquote(b, op->dst + dir_len(op->dst) + 1);
	else
		plan_rel(v, b, op->dst);
}

/* The comment of the group of ops lead..lead+n-1: the one op's of them
 * that has one (the lead's or the last's), or NULL. */
static const char *group_why(const struct plan_view *v, size_t lead, size_t n)
{
	for (size_t j = lead; j < lead + n; j++)
		if (v->plan->v[j].why)
			return v->plan->v[j].why;
	return NULL;
}

/* Whether op j goes on the line of the group led by op i (a line that
 * goes on after a backslash where it grows long).  The line has one
 * comment at most, at its end: an op with one ends the group, unless it
 * leads it or has the lead's (a CDI device's ops each name the device). */
static int group_joins(const struct plan_view *v, size_t i, size_t j)
{
	const struct op *a = &v->plan->v[i], *o = &v->plan->v[j];
	enum group_kind k = group_kind(v, a);
	if (k == G_NONE || group_kind(v, o) != k || a->section != o->section)
		return 0;
	const char *prev = j - 1 > i ? v->plan->v[j - 1].why : NULL;
	if ((o->why && a->why && strcmp(o->why, a->why)) || (prev && (!a->why || strcmp(prev, a->why))))
		return 0;
	if (k != G_LINKIN && k != G_TEXT && bind_flags(a) != bind_flags(o))
		return 0;
	if (k == G_EACH && strcmp(a->src, o->src))
		return 0;
	/* One directory for the whole line. */
	if ((k == G_LINKIN || k == G_FILES) &&
	    (dir_len(a->dst) != dir_len(o->dst) || strncmp(a->dst, o->dst, dir_len(a->dst))))
		return 0;
	if (k == G_FILES && (dir_len(a->src) != dir_len(o->src) || strncmp(a->src, o->src, dir_len(a->src))))
		return 0;
	return 1;
}

/* The line of a group led by op i, up to the ops' words. */
static void group_head(const struct plan_view *v, size_t i, struct sbuf *b)
{
	const struct op *a = &v->plan->v[i];
	enum group_kind k = group_kind(v, a);
	static const char *const names[] = {[G_NONE] = "",
					    [G_FILES] = "bind_files ",
					    [G_EACH] = "bind_each ",
					    [G_LINKIN] = "link_in ",
					    [G_TEXT] = "driver_text"};
	sbuf_puts(b, names[k]);
	if (k != G_LINKIN && k != G_TEXT)
		plan_opts_word(b, bind_flags(a), NULL);
	if (k == G_EACH) {
		sbuf_puts(b, " ");
		sbuf_shquote(b, a->src);
	}
	if (k == G_FILES) {
		_cleanup_free_ char *dir = xstrndup(a->src, dir_len(a->src));
		sbuf_puts(b, " ");
		if (*dir)
			plan_src_word(v, b, dir);
		else
			sbuf_puts(b, "/");
	}
	if (k == G_FILES || k == G_LINKIN) {
		_cleanup_free_ char *dir = xstrndup(a->dst, dir_len(a->dst));
		sbuf_puts(b, k == G_FILES ? " " : "");
		plan_rel(v, b, dir);
	}
}

/* The head and words, going on after a backslash and a tab where a line would
 * grow over max characters, and before word brk in any case; the length
 * of the last line. */
static size_t group_lay(const char *head, const struct strv *words, size_t brk, size_t max, struct sbuf *b)
{
	size_t start = b->len;
	sbuf_puts(b, head);
	for (size_t k = 0; k < words->n; k++) {
		size_t w = strlen(words->v[k]);
		/* Room for the space and backslash that end a line going on. */
		if (k > 0 && (k == brk || b->len - start + 1 + w + 2 > max)) {
			sbuf_puts(b, " \\\n\t");
			start = b->len - 1;
		} else {
			sbuf_puts(b, " ");
		}
		sbuf_puts(b, words->v[k]);
	}
	return b->len - start;
}

/* The group's line, its lines at most 150 characters, the last with room
 * for the line's comment: if it has none, the last words go on a line of
 * their own, as many as fit there. */
static void group_line(const char *comment, const char *head, const struct strv *words, struct sbuf *b)
{
	const size_t max = 150, why = comment ? 5 + strlen(comment) : 0;
	size_t at = b->len;
	if (group_lay(head, words, SIZE_MAX, max, b) + why <= max)
		return;
	b->len = at;
	b->s[at] = '\0';
	size_t brk = words->n, len = 1 + why;
	while (brk > 1 && len + 1 + strlen(words->v[brk - 1]) <= max) {
		len += 1 + strlen(words->v[brk - 1]);
		brk--;
	}
	group_lay(head, words, brk, max, b);
}

/* Op j's words, onto the list. */
static void group_add(const struct plan_view *v, size_t lead, size_t j, struct strv *words)
{
	struct sbuf w = {0};
	group_words(v, &v->plan->v[j], group_kind(v, &v->plan->v[lead]), &w);
	strv_add(words, xstrdup(w.s ? w.s : ""));
	sbuf_free(&w);
}

size_t op_describe_step(const struct plan_view *v, size_t i, struct sbuf *b)
{
	/* The groups fall greedily from the plan's first op: the same for
	 * --dry-run and for --verbose, which asks op by op. */
	size_t lead = 0, j;
	struct strv words = {0};
	for (j = 0; j < v->plan->n; j++) {
		if (j > lead && group_joins(v, lead, j)) {
			if (lead == i)
				group_add(v, lead, j, &words);
			continue;
		}
		if (j > i)
			break;
		lead = j;
		if (lead == i && group_kind(v, &v->plan->v[j]) != G_NONE)
			group_add(v, lead, j, &words);
	}
	size_t n = j - lead;
	const struct op *a = &v->plan->v[i];
	enum group_kind k = group_kind(v, a);
	if (lead != i) {
		n = 0; /* on the line of an op before it */
	} else if (k == G_NONE || (k == G_EACH && n == 1)) {
		op_describe(v, a, b);
	} else {
		struct sbuf head = {0};
		const char *why = group_why(v, i, n);
		group_head(v, i, &head);
		group_line(why, head.s, &words, b);
		sbuf_free(&head);
		if (why) {
			sbuf_puts(b, "   # ");
			sbuf_add_visible(b, why);
		}
	}
	strv_free(&words);
	return n;
}
