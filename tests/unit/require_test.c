/* tests/unit/require_test.c — NVIDIA_REQUIRE_* expressions (gpu/require.c)
 * as nvidia-container-cli reads them, table-driven: their syntax with the
 * exact message for each bad term, their value against a set of facts
 * (alternatives by spaces, terms by commas, unknown facts satisfying), the
 * exact "unsatisfied condition" message, and the version comparison behind
 * them.  tests/fuzz/fuzz_require.c fuzzes the same functions.
 *
 *   require_test --list     the names of the cases
 *   require_test CASE       run one case: exit 0, or 1 with what was wrong
 *
 * tests/unit.bats runs every case; `make unit` builds this under ASan and
 * UBSan. */
#include <stdio.h>
#include <string.h>

#include "../../gpu/gpu_int.h"
#include "unit.h"

#define INVALID "requirement error: invalid expression "
#define UNSAT "requirement error: unsatisfied condition: "
#define UPDATE ", please update your driver to a newer version, or use an earlier cuda container"

/* Keys in any case, = != < <= > >= on versions, = and != on brands;
 * anything else names the first bad term (cut at 64 bytes) and the whole
 * expression (cut at 200). */
static void case_syntax(void)
{
	static const struct {
		const char *expr;
		const char *err; /* NULL: valid */
	} cases[] = {
		{"", NULL},
		{"   ", NULL},
		{"cuda>=12.4", NULL},
		{"CUDA>=12.4", NULL},
		{"Driver<550", NULL},
		{"cuda>=12.4 brand=tesla,driver>=470", NULL},
		{"  cuda>=12   driver>=470 ", NULL},
		{"cuda>=12.4,,driver>=470,", NULL},
		{",", NULL},
		{"arch=9.0 arch!=7.5 arch<10 arch<=9 arch>8 arch>=8.0", NULL},
		{"brand=tesla brand!=geforce brand=Quadro_RTX", NULL},
		{"driver=550.54.14", NULL},
		{"cuda>=012.04", NULL},
		{"cuda", INVALID "\"cuda\" in \"cuda\""},
		{"cuda>=", INVALID "\"cuda>=\" in \"cuda>=\""},
		{">=12", INVALID "\">=12\" in \">=12\""},
		{"cuda=>12", INVALID "\"cuda=>12\" in \"cuda=>12\""},
		{"cuda==12", INVALID "\"cuda==12\" in \"cuda==12\""},
		{"cuda<>12", INVALID "\"cuda<>12\" in \"cuda<>12\""},
		{"cuda!12", INVALID "\"cuda!12\" in \"cuda!12\""},
		{"cuda>=12.x", INVALID "\"cuda>=12.x\" in \"cuda>=12.x\""},
		{"cuda>=-1", INVALID "\"cuda>=-1\" in \"cuda>=-1\""},
		{"cuda>=v12", INVALID "\"cuda>=v12\" in \"cuda>=v12\""},
		{"cuda >=12", INVALID "\"cuda\" in \"cuda >=12\""},
		{"cudaa>=12", INVALID "\"cudaa>=12\" in \"cudaa>=12\""},
		{"vram>=16", INVALID "\"vram>=16\" in \"vram>=16\""},
		{"brand>tesla", INVALID "\"brand>tesla\" in \"brand>tesla\""},
		{"brand>=tesla", INVALID "\"brand>=tesla\" in \"brand>=tesla\""},
		{"brand=", INVALID "\"brand=\" in \"brand=\""},
		{"brand=tes\x01la", INVALID "\"brand=tes\x01la\" in \"brand=tes\x01la\""},
		{"driver>=470,bad", INVALID "\"bad\" in \"driver>=470,bad\""},
		/* Every alternative is checked, not only up to one that holds. */
		{"cuda>=12 cuda>=x", INVALID "\"cuda>=x\" in \"cuda>=12 cuda>=x\""},
		/* Only a space separates alternatives, as in the reference. */
		{"cuda>=12\tdriver>=470", INVALID "\"cuda>=12\tdriver>=470\" in \"cuda>=12\tdriver>=470\""},
	};
	for (size_t i = 0; i < COUNT_OF(cases); i++) {
		struct gerr err = {0};
		int r = require_validate(cases[i].expr, &err);
		if (!cases[i].err)
			CHECK(r == 0, "\"%s\": refused: %s", cases[i].expr, err.msg);
		else
			CHECK(r < 0 && !strcmp(err.msg, cases[i].err), "\"%s\": r %d, message \"%s\"", cases[i].expr, r,
			      err.msg);
	}

	/* A value of 127 bytes is one, of 128 is refused: the term is cut at
	 * 64 bytes in the message, the whole expression at 200. */
	char expr[400], want[600];
	struct gerr err = {0};
	memcpy(expr, "driver>=", 8);
	memset(expr + 8, '1', 127);
	expr[8 + 127] = '\0';
	CHECK(require_validate(expr, &err) == 0, "a 127-byte value: %s", err.msg);
	memset(expr + 8, '1', 128);
	expr[8 + 128] = '\0';
	snprintf(want, sizeof want, INVALID "\"%.64s\" in \"%s\"", expr, expr);
	CHECK(require_validate(expr, &err) < 0 && !strcmp(err.msg, want), "a 128-byte value: \"%s\"", err.msg);
	memset(expr, ' ', 300);
	memcpy(expr + 300, "cuda>=x", 8);
	snprintf(want, sizeof want, INVALID "\"cuda>=x\" in \"%.200s\"", expr);
	CHECK(require_validate(expr, &err) < 0 && !strcmp(err.msg, want), "long: \"%s\"", err.msg);
}

/* Against an H100's facts: 1, or 0 with the reference's message naming the
 * first alternative (with the update hint when it is a cuda>= bound). */
static void case_eval(void)
{
	static const struct req_facts h100 = {"12.4", "550.54.14", "9.0", "Tesla", 0};
	static const struct {
		const char *expr;
		int want;
		const char *err; /* the message when 0 or -1 */
	} cases[] = {
		{"", 1, NULL},
		{"   ", 1, NULL},
		{"cuda>=12.4", 1, NULL},
		{"cuda>=12.4.0", 1, NULL},
		{"cuda=12.4.0.0", 1, NULL},
		{"cuda>=12.5", 0, UNSAT "cuda>=12.5" UPDATE},
		{"cuda>=12.10", 0, UNSAT "cuda>=12.10" UPDATE},
		{"cuda>12.4", 0, UNSAT "cuda>12.4"},
		{"CUDA>=13", 0, UNSAT "CUDA>=13"},
		{"cuda<13", 1, NULL},
		{"cuda!=12.4", 0, UNSAT "cuda!=12.4"},
		{"driver>=470", 1, NULL},
		{"driver<=550.54.14", 1, NULL},
		{"driver<550", 0, UNSAT "driver<550"},
		{"driver>550.54", 1, NULL},
		{"driver!=550.54.14", 0, UNSAT "driver!=550.54.14"},
		{"arch>=8.0", 1, NULL},
		{"arch=9", 1, NULL},
		{"arch<9.0", 0, UNSAT "arch<9.0"},
		{"brand=tesla", 1, NULL},
		{"BRAND=TESLA", 1, NULL},
		{"brand!=tesla", 0, UNSAT "brand!=tesla"},
		{"brand=geforce", 0, UNSAT "brand=geforce"},
		{"brand!=geforce", 1, NULL},
		/* AND within an alternative: all terms must hold. */
		{"cuda>=12.0,driver>=470,arch>=8.0,brand=tesla", 1, NULL},
		{"driver>=470,brand=geforce", 0, UNSAT "driver>=470,brand=geforce"},
		{"cuda>=12.0,driver>=560", 0, UNSAT "cuda>=12.0,driver>=560" UPDATE},
		/* OR between alternatives: one is enough; the message names the first. */
		{"cuda>=13 brand=tesla", 1, NULL},
		{"brand=geforce cuda>=12", 1, NULL},
		{"cuda>=13 brand=geforce", 0, UNSAT "cuda>=13" UPDATE},
		{"  driver>=600   cuda>=13 ", 0, UNSAT "driver>=600"},
		{"cuda>=13,brand=tesla brand=geforce", 0, UNSAT "cuda>=13,brand=tesla" UPDATE},
		{"cuda>=x", -1, INVALID "\"cuda>=x\" in \"cuda>=x\""},
		{"cuda>=12 cuda>=x", -1, INVALID "\"cuda>=x\" in \"cuda>=12 cuda>=x\""},
	};
	for (size_t i = 0; i < COUNT_OF(cases); i++) {
		struct gerr err = {0};
		int r = require_eval(cases[i].expr, &h100, &err);
		CHECK(r == cases[i].want, "\"%s\": got %d, want %d (%s)", cases[i].expr, r, cases[i].want, err.msg);
		if (cases[i].err)
			CHECK(!strcmp(err.msg, cases[i].err), "\"%s\": message \"%s\", want \"%s\"", cases[i].expr,
			      err.msg, cases[i].err);
	}
}

/* A fact that is not known (or cannot be read) satisfies every condition
 * on it, except the arch of a selected GPU gpurun cannot name. */
static void case_unknown_facts(void)
{
	static const struct {
		struct req_facts f;
		const char *expr;
		int want;
		const char *err;
	} cases[] = {
		{{NULL, NULL, NULL, NULL, 0}, "cuda>=99", 1, NULL},
		{{NULL, NULL, NULL, NULL, 0}, "driver<1", 1, NULL},
		{{NULL, NULL, NULL, NULL, 0}, "arch=1.0,brand=geforce", 1, NULL},
		{{"12.4", NULL, NULL, NULL, 0}, "cuda>=13 driver>=999", 1, NULL},
		{{"12.4", NULL, NULL, NULL, 0}, "cuda>=13,driver>=999", 0, UNSAT "cuda>=13,driver>=999" UPDATE},
		{{NULL, NULL, NULL, NULL, 1}, "arch>=1", 0, UNSAT "arch>=1"},
		{{NULL, NULL, NULL, NULL, 1}, "arch<1 cuda>=99", 1, NULL},
		{{NULL, NULL, "9.0", NULL, 1}, "arch=9.0", 1, NULL},
		{{"12.x", "r550", "?", NULL, 0}, "cuda>=99,driver>=999,arch=1", 1, NULL},
	};
	for (size_t i = 0; i < COUNT_OF(cases); i++) {
		struct gerr err = {0};
		int r = require_eval(cases[i].expr, &cases[i].f, &err);
		CHECK(r == cases[i].want, "case %zu \"%s\": got %d (%s)", i, cases[i].expr, r, err.msg);
		if (cases[i].err)
			CHECK(!strcmp(err.msg, cases[i].err), "case %zu: message \"%s\"", i, err.msg);
	}
}

/* Dotted versions compared per component as numbers of any length,
 * missing components and extra dots counting as nothing; anything but
 * digits and dots is not a version. */
static void case_versions(void)
{
	static const struct {
		const char *a, *b;
		int r, cmp;
	} cases[] = {
		{"12.4", "12.4", 0, 0},
		{"12.4", "12.4.0", 0, 0},
		{"12.4.0.0", "12.4", 0, 0},
		{"12.10", "12.9", 0, 1},
		{"1.2", "1.10", 0, -1},
		{"012", "12", 0, 0},
		{"550.54.14", "550.54.15", 0, -1},
		{"1", "1.0.0.1", 0, -1},
		{"2", "10", 0, -1},
		{"12..4", "12.4", 0, 0},
		{"99999999999999999999999", "99999999999999999999998", 0, 1},
		{"", "1", -1, 0},
		{"1", "", -1, 0},
		{"1a", "1", -1, 0},
		{"-1", "1", -1, 0},
		{"1 ", "1", -1, 0},
		{"v1", "1", -1, 0},
	};
	for (size_t i = 0; i < COUNT_OF(cases); i++) {
		int c = 99, c2 = 99;
		int r = version_compare(cases[i].a, cases[i].b, &c);
		CHECK(r == cases[i].r, "%s ? %s: returned %d", cases[i].a, cases[i].b, r);
		if (r == 0) {
			CHECK(c == cases[i].cmp, "%s ? %s: %d, want %d", cases[i].a, cases[i].b, c, cases[i].cmp);
			CHECK(version_compare(cases[i].b, cases[i].a, &c2) == 0 && c2 == -c, "%s ? %s: not symmetric",
			      cases[i].b, cases[i].a);
		}
	}
}

/* Which keys an expression uses: cuda costs a fork, arch a table lookup. */
static void case_uses(void)
{
	static const struct {
		const char *expr;
		int cuda, arch;
	} cases[] = {
		{"", 0, 0},
		{"cuda>=12", 1, 0},
		{"CUDA>=12", 1, 0},
		{"driver>=1 arch=8.0", 0, 1},
		{"brand=tesla,cuda<13", 1, 0},
		{"arch>=8 driver>=1,cuda>=12", 1, 1},
		{"driver>=470 brand=tesla", 0, 0},
		{"xcuda>=1", 0, 0},
		{"cuda>=x", 0, 0},
	};
	for (size_t i = 0; i < COUNT_OF(cases); i++) {
		CHECK(require_uses_cuda(cases[i].expr) == cases[i].cuda, "\"%s\": uses cuda %d", cases[i].expr,
		      !cases[i].cuda);
		CHECK(require_uses_arch(cases[i].expr) == cases[i].arch, "\"%s\": uses arch %d", cases[i].expr,
		      !cases[i].arch);
	}
}

static const struct unit_case cases[] = {
	{"syntax", case_syntax},     {"eval", case_eval}, {"unknown-facts", case_unknown_facts},
	{"versions", case_versions}, {"uses", case_uses},
};

int main(int argc, char **argv)
{
	return unit_main(argc, argv, cases, COUNT_OF(cases));
}
