/* tests/unit/slurm_test.c — the pure parts of a Slurm step's GPU ceiling
 * (gpu/slurm.c), table-driven: SLURM_STEP_GPUS lists, Slurm host lists,
 * gres.conf File= lists and lines, and the resolution of --gpus against a
 * ceiling on a four-GPU table whose minors are not in PCI order (the fake
 * driver's `four` topology).  tests/slurm.bats runs the same code in a
 * real Slurm step.
 *
 *   slurm_test --list     the names of the cases
 *   slurm_test CASE       run one case: exit 0, or 1 with what was wrong
 *
 * tests/unit.bats runs every case; `make unit` builds this under ASan and
 * UBSan. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../gpu/gpu_int.h"
#include "unit.h"

static void case_indexes(void)
{
	static const struct {
		const char *in;
		int ok;
		const char *want; /* the values, comma-joined */
	} cases[] = {
		{"0,1", 1, "0,1"}, {"3", 1, "3"},  {"0-2,5", 1, "0,1,2,5"}, {"", 1, ""},      {"1,3,2", 1, "1,3,2"},
		{"0-0", 1, "0"},   {"2-1", 0, ""}, {"0,", 0, ""},           {",0", 0, ""},    {"a", 0, ""},
		{"0 1", 0, ""},    {"-1", 0, ""},  {"1234567", 0, ""},      {"0-300", 0, ""}, /* more than the cap */
	};
	for (size_t i = 0; i < COUNT_OF(cases); i++) {
		unsigned v[256];
		size_t n;
		int r = slurm_parse_indexes(cases[i].in, v, COUNT_OF(v), &n);
		CHECK((r == 0) == cases[i].ok, "\"%s\": returned %d", cases[i].in, r);
		if (r < 0 || !cases[i].ok)
			continue;
		char got[256] = "";
		for (size_t k = 0; k < n; k++)
			snprintf(got + strlen(got), sizeof got - strlen(got), "%s%u", k ? "," : "", v[k]);
		CHECK(!strcmp(got, cases[i].want), "\"%s\": got \"%s\", want \"%s\"", cases[i].in, got, cases[i].want);
	}
}

static void case_hostlist(void)
{
	static const struct {
		const char *list, *host;
		int want;
	} cases[] = {
		{"vm", "vm", 1},
		{"vm", "vm2", 0},
		{"gpu[01-04]", "gpu03", 1},
		{"gpu[01-04]", "gpu3", 0},
		{"gpu[01-04]", "gpu05", 0},
		{"gpu[1,3-4],login", "login", 1},
		{"gpu[1,3-4],login", "gpu2", 0},
		{"gpu[1,3-4],login", "gpu4", 1},
		{"r[1-2]n[1-2]", "r2n1", 1},
		{"r[1-2]n[1-2]", "r3n1", 0},
		{"a,b", "b", 1},
		{"gpu[1-", "gpu1", -1},
		{"gpu[x]", "gpu1", -1},
		{"gpu[3-1]", "gpu1", -1},
		{"a,,b", "b", -1},
		/* The work is bounded: more names than a node list may hold. */
		{"n[0-999][0-999][0-999]", "x", -1},
		{"n[0-99999]", "x", -1},
	};
	for (size_t i = 0; i < COUNT_OF(cases); i++) {
		int r = slurm_hostlist_match(cases[i].list, cases[i].host);
		CHECK(r == cases[i].want, "%s ~ %s: got %d, want %d", cases[i].list, cases[i].host, r, cases[i].want);
	}
}

static void case_files(void)
{
	static const struct {
		const char *in;
		const char *want; /* space-joined, NULL: refused */
	} cases[] = {
		{"/dev/nvidia[0-3]", "/dev/nvidia0 /dev/nvidia1 /dev/nvidia2 /dev/nvidia3"},
		{"/dev/nvidia0,/dev/nvidia2", "/dev/nvidia0 /dev/nvidia2"},
		{"/dev/nvidia[2,0]", "/dev/nvidia2 /dev/nvidia0"},
		{"/dev/nvidia[0-1,3]", "/dev/nvidia0 /dev/nvidia1 /dev/nvidia3"},
		{"/x/d[00-02]", "/x/d00 /x/d01 /x/d02"},
		{"/dev/nvidia[0-3", NULL},
		{"/dev/nvidia[]", NULL},
		{"/dev/nvidia[0-99999]", NULL}, /* more files than gres.conf may list */
	};
	for (size_t i = 0; i < COUNT_OF(cases); i++) {
		struct strv v = {0};
		int r = slurm_expand_files(cases[i].in, &v);
		CHECK((r == 0) == (cases[i].want != NULL), "%s: returned %d", cases[i].in, r);
		if (r == 0 && cases[i].want) {
			struct sbuf got = {0};
			sbuf_puts(&got, "");
			for (size_t k = 0; k < v.n; k++)
				sbuf_printf(&got, "%s%s", k ? " " : "", v.v[k]);
			CHECK(!strcmp(got.s, cases[i].want), "%s: got \"%s\"", cases[i].in, got.s);
			sbuf_free(&got);
		}
		strv_free(&v);
	}
}

static void case_gres(void)
{
	static const struct {
		const char *text;
		int want;          /* 1 declared, 0 not, -1 refused */
		const char *files; /* space-joined */
		const char *err;   /* a fragment of the message */
	} cases[] = {
		{"Name=gpu File=/dev/nvidia[0-1]\n", 1, "/dev/nvidia0 /dev/nvidia1", NULL},
		{"# comment\n\nName=gpu Type=a100 File=/dev/nvidia0 # one\nName=gpu Type=h100 File=/dev/nvidia1\n", 1,
		 "/dev/nvidia0 /dev/nvidia1", NULL},
		{"NodeName=other Name=gpu File=/dev/nvidia[0-3]\n", 0, "", NULL},
		{"NodeName=n[1-2] Name=gpu File=/dev/nvidia[0-1]\nNodeName=other AutoDetect=nvml\n", 1,
		 "/dev/nvidia0 /dev/nvidia1", NULL},
		{"name=GPU file=/dev/nvidia2 count=1\n", 1, "/dev/nvidia2", NULL},
		{"Name=mps Count=100\n", 0, "", NULL},
		{"", 0, "", NULL},
		{"AutoDetect=off\nName=gpu File=/dev/nvidia0\n", 1, "/dev/nvidia0", NULL},
		{"AutoDetect=nvml\n", -1, "", "line 1: AutoDetect=nvml: the GPUs' device files are not listed"},
		{"NodeName=n1 AutoDetect=nvidia\n", -1, "", "AutoDetect=nvidia"},
		{"Name=gpu Count=4\n", -1, "", "line 1: Name=gpu without File="},
		{"Name=gpu MultipleFiles=/dev/nvidia[0-1]\n", -1, "", "MultipleFiles"},
		{"Include /etc/slurm/gres.d/gpu.conf\n", -1, "", "Include"},
		{"Name=gpu File=/dev/nvidia[0-1] Count=3\n", -1, "", "Count=3 but File= names 2 device files"},
		{"Name=gpu File=/dev/nvidia[0-\n", -1, "", "not a device file list"},
		{"NodeName=n[1- Name=gpu File=/dev/nvidia0\n", -1, "", "not a host list"},
	};
	for (size_t i = 0; i < COUNT_OF(cases); i++) {
		struct strv v = {0};
		struct gerr err = {0};
		int r = slurm_gres_parse(cases[i].text, strlen(cases[i].text), "n1", &v, &err);
		CHECK(r == cases[i].want, "case %zu: got %d (%s), want %d", i, r, err.msg, cases[i].want);
		if (r > 0) {
			struct sbuf got = {0};
			sbuf_puts(&got, "");
			for (size_t k = 0; k < v.n; k++)
				sbuf_printf(&got, "%s%s", k ? " " : "", v.v[k]);
			CHECK(!strcmp(got.s, cases[i].files), "case %zu: files \"%s\"", i, got.s);
			sbuf_free(&got);
		}
		if (r < 0 && cases[i].err)
			CHECK(strstr(err.msg, cases[i].err) != NULL, "case %zu: message \"%s\"", i, err.msg);
		strv_free(&v);
	}
	/* A NUL byte inside the text is refused, not read as its end. */
	struct strv v = {0};
	struct gerr err = {0};
	CHECK(slurm_gres_parse("Name=gpu File=/a\0x\n", 19, "n1", &v, &err) < 0, "NUL accepted");
	strv_free(&v);
}

static void case_short_name(void)
{
	char out[16];
	CHECK(slurm_short_name("gpu01.cluster.example", out, sizeof out) == 0 && !strcmp(out, "gpu01"), "%s", out);
	CHECK(slurm_short_name("vm", out, sizeof out) == 0 && !strcmp(out, "vm"), "%s", out);
	CHECK(slurm_short_name(".x", out, sizeof out) < 0, "an empty short name");
	CHECK(slurm_short_name("averyveryverylongname", out, sizeof out) < 0, "too long");
}

/* The `four` table: index (PCI order) -> minor 2, 0, 3, 1. */
static struct gpu_dev four[4];

static void init_four(void)
{
	static const unsigned minors[4] = {2, 0, 3, 1};
	static const char *const buses[4] = {"00000000:3b:00.0", "00000000:5e:00.0", "00000000:86:00.0",
					     "00000000:af:00.0"};
	for (unsigned i = 0; i < 4; i++) {
		memset(&four[i], 0, sizeof four[i]);
		four[i].index = i;
		four[i].minor = minors[i];
		snprintf(four[i].busid, sizeof four[i].busid, "%s", buses[i]);
		snprintf(four[i].uuid, sizeof four[i].uuid, "GPU-%u", i);
	}
}

static void case_resolve(void)
{
	init_four();
	struct gpu_driver drv = {.gpus = four, .ngpus = 4, .rootfd = -1};
	/* SLURM_STEP_GPUS=0,1,2 on gres.conf /dev/nvidia[0-3]: minors 0, 1, 2 =
	 * GPUs 1, 3, 0, kept in PCI order. */
	struct slurm_ceiling c = {.active = 1, .gpu = {0, 1, 3}, .n = 3};
	snprintf(c.from, sizeof c.from, "test");
	static const struct {
		const char *spec;
		const char *want; /* the mask over the table, "" for an error */
		const char *err;
	} cases[] = {
		{"all", "1101", NULL},
		{"0", "1000", NULL},
		{"1", "0100", NULL},
		{"2", "0001", NULL},
		{"2,0", "1001", NULL},
		{"count=2", "1100", NULL},
		{"GPU-3", "0001", NULL},
		{"3b:00.0", "1000", NULL},
		{"none", "0000", NULL},
		{"3", "", "--gpus: device 3 is outside this Slurm step's 3 GPUs (test)"},
		{"GPU-2", "", "--gpus: device GPU-2 is outside this Slurm step's 3 GPUs (test)"},
		{"86:00.0", "", "--gpus: device 86:00.0 is outside"},
		{"count=4", "", "count=4 but there are 3 GPUs under this Slurm step's allocation (test)"},
	};
	for (size_t i = 0; i < COUNT_OF(cases); i++) {
		struct gpu_request rq;
		struct gpu_selection sel;
		struct gerr err = {0};
		CHECK(gpu_request_parse(cases[i].spec, "--gpus", &rq, &err) == 0, "%s: %s", cases[i].spec, err.msg);
		int r = slurm_resolve(&rq, &drv, &c, "--gpus", &sel, &err);
		if (!*cases[i].want) {
			CHECK(r < 0, "%s: accepted", cases[i].spec);
			CHECK(strstr(err.msg, cases[i].err) != NULL, "%s: message \"%s\"", cases[i].spec, err.msg);
		} else {
			char got[5];
			for (int k = 0; k < 4; k++)
				got[k] = sel.mask[k] ? '1' : '0';
			got[4] = '\0';
			CHECK(r == 0 && !strcmp(got, cases[i].want), "%s: r %d, mask %s, want %s (%s)", cases[i].spec,
			      r, got, cases[i].want, err.msg);
		}
		gpu_request_free(&rq);
	}
	/* No GPU allocated: all is nothing, any device is outside. */
	struct slurm_ceiling none = {.active = 1, .n = 0};
	struct gpu_request rq;
	struct gpu_selection sel;
	struct gerr err = {0};
	gpu_request_parse("all", "NVIDIA_VISIBLE_DEVICES", &rq, &err);
	CHECK(slurm_resolve(&rq, &drv, &none, "NVIDIA_VISIBLE_DEVICES", &sel, &err) == 0, "%s", err.msg);
	for (int k = 0; k < 4; k++)
		CHECK(!sel.mask[k], "GPU %d selected without an allocation", k);
	gpu_request_free(&rq);
	gpu_request_parse("0", "--gpus", &rq, &err);
	CHECK(slurm_resolve(&rq, &drv, &none, "--gpus", &sel, &err) < 0, "0 accepted without an allocation");
	gpu_request_free(&rq);
}

static void case_mig_item(void)
{
	struct slurm_ceiling c = {.active = 1, .gpu = {1, 3}, .n = 2}, off = {0};
	char buf[64];
	CHECK(slurm_ceiling_item(&c, "1:0", buf, sizeof buf) == 0 && !strcmp(buf, "3:0"), "%s", buf);
	CHECK(slurm_ceiling_item(&c, "0:2", buf, sizeof buf) == 0 && !strcmp(buf, "1:2"), "%s", buf);
	CHECK(slurm_ceiling_item(&c, "2:0", buf, sizeof buf) < 0, "2:0 is outside");
	CHECK(slurm_ceiling_item(&c, "MIG-abc", buf, sizeof buf) == 0 && !strcmp(buf, "MIG-abc"), "%s", buf);
	CHECK(slurm_ceiling_item(&off, "2:0", buf, sizeof buf) == 0 && !strcmp(buf, "2:0"), "%s", buf);
	CHECK(slurm_ceiling_allows(&c, 3) && !slurm_ceiling_allows(&c, 0) && slurm_ceiling_allows(&off, 0), "allows");
}

static const struct unit_case cases[] = {
	{"indexes", case_indexes},       {"hostlist", case_hostlist}, {"files", case_files},       {"gres", case_gres},
	{"short-name", case_short_name}, {"resolve", case_resolve},   {"mig-item", case_mig_item},
};

int main(int argc, char **argv)
{
	return unit_main(argc, argv, cases, COUNT_OF(cases));
}
