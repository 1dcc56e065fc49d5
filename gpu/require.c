/* gpu/require.c — NVIDIA_REQUIRE_* constraints ("cuda>=12.4 brand=tesla,driver>=470").
 *
 * The grammar is nvidia-container-cli's:
 * alternatives separated by spaces (OR), each a comma-separated list of
 * `key OP value` terms (AND).  Keys, any case: cuda, driver, arch (versions,
 * digits and dots, compared numerically per component with trailing ".0"s
 * ignored) and brand (a string, only = and !=, any case).  OP is one of
 * = != < <= > >=.  A fact that is unknown (no GPU selected for arch/brand,
 * no CUDA version) satisfies every condition on it, except the arch of a
 * selected GPU whose model gpurun's table does not know: that fails every
 * arch condition (NVML, which the reference asks, always knows it).  On failure the message
 * is the reference's: "unsatisfied condition: <first alternative>", with a
 * hint to update the driver when that alternative is a cuda>= bound.
 *
 * One deliberate difference: every alternative is syntax-checked before any
 * is evaluated, so a typo in a later alternative is never hidden. */
#include "gpu_int.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

enum cmp { CMP_EQ, CMP_NE, CMP_LT, CMP_LE, CMP_GT, CMP_GE };

static const struct {
	const char *s;
	enum cmp cmp;
} cmps[] = {{"=", CMP_EQ}, {"!=", CMP_NE}, {"<", CMP_LT}, {"<=", CMP_LE}, {">", CMP_GT}, {">=", CMP_GE}};

enum key { KEY_CUDA, KEY_DRIVER, KEY_ARCH, KEY_BRAND };
static const char *const keys[] = {"cuda", "driver", "arch", "brand"};

struct term {
	enum key key;
	enum cmp cmp;
	char value[128];
};

/* Digit runs of a version, skipping dots: "12.04" -> "12", then "04". */
static const char *next_version_part(const char *s, const char **start, size_t *n)
{
	while (*s == '.')
		s++;
	*start = s;
	while (*s >= '0' && *s <= '9')
		s++;
	*n = (size_t)(s - *start);
	return s;
}

/* Compare two digit strings as numbers of any length. */
static int cmp_number(const char *a, size_t an, const char *b, size_t bn)
{
	while (an && *a == '0') {
		a++;
		an--;
	}
	while (bn && *b == '0') {
		b++;
		bn--;
	}
	if (an != bn)
		return an < bn ? -1 : 1;
	int c = memcmp(a, b, an);
	return (c > 0) - (c < 0);
}

int version_compare(const char *a, const char *b, int *cmp)
{
	if (!*a || !*b || strspn(a, "0123456789.") != strlen(a) || strspn(b, "0123456789.") != strlen(b))
		return -1;
	*cmp = 0;
	/* A missing component counts as 0, so 12.4 == 12.4.0. */
	while ((*a || *b) && *cmp == 0) {
		const char *as, *bs;
		size_t an, bn;
		a = next_version_part(a, &as, &an);
		b = next_version_part(b, &bs, &bn);
		*cmp = cmp_number(as, an, bs, bn);
	}
	return 0;
}

static int parse_term(const char *s, size_t n, struct term *t)
{
	size_t kn = 0;
	while (kn < n && !strchr("<>=!", s[kn]))
		kn++;
	size_t on = 0;
	while (kn + on < n && strchr("<>=!", s[kn + on]))
		on++;
	size_t vn = n - kn - on;
	if (kn == 0 || on == 0 || vn == 0 || vn >= sizeof t->value)
		return -1;
	size_t i;
	for (i = 0; i < COUNT_OF(keys); i++)
		if (strlen(keys[i]) == kn && !strncasecmp(s, keys[i], kn))
			break;
	if (i == COUNT_OF(keys))
		return -1;
	t->key = (enum key)i;
	for (i = 0; i < COUNT_OF(cmps); i++)
		if (strlen(cmps[i].s) == on && !strncmp(s + kn, cmps[i].s, on))
			break;
	if (i == COUNT_OF(cmps))
		return -1;
	t->cmp = cmps[i].cmp;
	memcpy(t->value, s + kn + on, vn);
	t->value[vn] = '\0';
	if (t->key == KEY_BRAND) {
		if (t->cmp != CMP_EQ && t->cmp != CMP_NE)
			return -1;
		for (i = 0; i < vn; i++)
			if (!isgraph((unsigned char)t->value[i]))
				return -1;
		return 0;
	}
	int unused;
	return version_compare(t->value, "0", &unused);
}

static int term_holds(const struct term *t, const struct req_facts *f)
{
	const char *fact[] = {f->cuda, f->driver, f->arch, f->brand};
	const char *have = fact[t->key];
	int c;
	if (!have)
		/* Unknown satisfies, as in nvidia-container-cli, except the
		 * arch of a GPU gpurun cannot name: NVML always knows it, so
		 * the reference never lets such a GPU pass an arch= bound. */
		return !(t->key == KEY_ARCH && f->arch_unknown);
	if (t->key == KEY_BRAND) {
		int eq = !strcasecmp(have, t->value);
		return t->cmp == CMP_EQ ? eq : !eq;
	}
	if (version_compare(have, t->value, &c) < 0)
		return 1; /* a fact we cannot read is an unknown fact */
	switch (t->cmp) {
	case CMP_EQ: return c == 0;
	case CMP_NE: return c != 0;
	case CMP_LT: return c < 0;
	case CMP_LE: return c <= 0;
	case CMP_GT: return c > 0;
	case CMP_GE: return c >= 0;
	}
	return 0;
}

/* Walk the expression: for each alternative, for each term.  With facts,
 * returns 1 as soon as one alternative holds entirely, 0 when none does;
 * without facts (syntax check) returns 1 at the end.  -1 on a bad term,
 * with *bad pointing at it. */
static int walk(const char *expr, const struct req_facts *f, unsigned *uses, const char **bad, size_t *badn)
{
	int any = 0;
	for (const char *alt = expr; *alt;) {
		size_t an = strcspn(alt, " ");
		int holds = 1;
		for (const char *t = alt; t < alt + an;) {
			size_t tn = strcspn(t, ",");
			if (tn > (size_t)(alt + an - t))
				tn = (size_t)(alt + an - t);
			struct term term;
			if (tn) {
				if (parse_term(t, tn, &term) < 0) {
					*bad = t;
					*badn = tn;
					return -1;
				}
				if (uses)
					*uses |= 1u << term.key;
				if (f && holds && !term_holds(&term, f))
					holds = 0;
			}
			t += tn;
			if (*t == ',')
				t++;
		}
		if (an)
			any = 1;
		if (f && an && holds)
			return 1;
		alt += an;
		while (*alt == ' ')
			alt++;
	}
	return f && any ? 0 : 1;
}

int require_validate(const char *expr, struct gerr *err)
{
	const char *bad;
	size_t badn;
	if (walk(expr, NULL, NULL, &bad, &badn) < 0)
		return gerr_set(err, 0, "requirement error: invalid expression \"%.*s\" in \"%.200s\"",
				(int)(badn > 64 ? 64 : badn), bad, expr);
	return 0;
}

static unsigned keys_used(const char *expr)
{
	const char *bad;
	size_t badn;
	unsigned uses = 0;
	walk(expr, NULL, &uses, &bad, &badn);
	return uses;
}

int require_uses_cuda(const char *expr)
{
	return !!(keys_used(expr) & 1u << KEY_CUDA);
}

int require_uses_arch(const char *expr)
{
	return !!(keys_used(expr) & 1u << KEY_ARCH);
}

int require_eval(const char *expr, const struct req_facts *f, struct gerr *err)
{
	const char *bad;
	size_t badn;
	if (require_validate(expr, err) < 0)
		return -1;
	int r = walk(expr, f, NULL, &bad, &badn);
	if (r != 0)
		return 1;
	const char *first = expr + strspn(expr, " ");
	int n = (int)strcspn(first, " ");
	int cuda = n >= 6 && !strncmp(first, "cuda>=", 6);
	gerr_set(err, 0, "requirement error: unsatisfied condition: %.*s%s", n > 300 ? 300 : n, first,
		 cuda ? ", please update your driver to a newer version, or use an earlier cuda container" : "");
	return 0;
}
