/* tests/unit/gpuspec_test.c — the device spec of --gpus and
 * NVIDIA_VISIBLE_DEVICES (gpu/select.c) and driver capability lists
 * (gpu/caps.c), table-driven: each input with the request it parses to or
 * the exact message it is refused with, then its resolution against the
 * four-GPU table of tests/fuzz/fuzz_gpuspec.c, which fuzzes the same code.
 *
 *   gpuspec_test --list     the names of the cases
 *   gpuspec_test CASE       run one case: exit 0, or 1 with what was wrong
 *
 * tests/unit.bats runs every case; `make unit` builds this under ASan and
 * UBSan. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../gpu/gpu_int.h"
#include "unit.h"

static const struct gpu_dev table[] = {
	{.index = 0, .minor = 2, .busid = "00000000:3b:00.0", .uuid = "GPU-0c9c1a44-3f53-4a35-9c7e-7e0d6c1a3b3b"},
	{.index = 1, .minor = 0, .busid = "00000000:5e:00.0", .uuid = "GPU-1d2e3f40-5162-4738-89ab-cdef01234567"},
	{.index = 2, .minor = 3, .busid = "00000000:86:00.0", .uuid = "GPU-8f7e6d5c-4b3a-4291-8071-605f4e3d2c1b"},
	{.index = 3, .minor = 1, .busid = "00000000:af:00.0", .uuid = "GPU-a0b1c2d3-e4f5-4061-9728-394a5b6c7d8e"},
};

static const char *kind_name(enum sel_kind k)
{
	return k == SEL_VOID ? "void" : k == SEL_NONE ? "none" : "some";
}

/* A request as one line: "KIND all=A count=N items=I,J caps=C". */
static void describe(const struct gpu_request *rq, char *out, size_t cap)
{
	int n = snprintf(out, cap, "%s all=%d count=%ld items=", kind_name(rq->kind), rq->all, rq->count);
	for (size_t i = 0; i < rq->items.n && n >= 0 && (size_t)n < cap; i++)
		n += snprintf(out + n, cap - (size_t)n, "%s%s", i ? "," : "", rq->items.v[i]);
	if (n >= 0 && (size_t)n < cap)
		snprintf(out + n, cap - (size_t)n, " caps=%s", rq->caps);
}

struct parse_case {
	const char *spec;
	const char *want; /* describe()'s line, or NULL when refused */
	const char *err;  /* the exact message when refused */
};

static void run_parse_cases(const struct parse_case *cases, size_t n, const char *what)
{
	for (size_t i = 0; i < n; i++) {
		struct gpu_request rq;
		struct gerr err = {0};
		char got[512];
		int r = gpu_request_parse(cases[i].spec, what, &rq, &err);
		if (cases[i].want) {
			describe(&rq, got, sizeof got);
			CHECK(r == 0, "\"%s\": refused: %s", cases[i].spec, err.msg);
			CHECK(r < 0 || !strcmp(got, cases[i].want), "\"%s\": got \"%s\", want \"%s\"", cases[i].spec,
			      got, cases[i].want);
		} else {
			CHECK(r < 0, "\"%s\": accepted", cases[i].spec);
			CHECK(!strcmp(err.msg, cases[i].err), "\"%s\": message \"%s\", want \"%s\"", cases[i].spec,
			      err.msg, cases[i].err);
		}
		gpu_request_free(&rq);
	}
}

#define NOT_A_DEVICE ": not a GPU index, GPU-<uuid>, PCI bus id or MIG device"

/* The toolkit's keywords: void over none over all, anywhere in the list;
 * void and none in lower case only, all in any case. */
static void case_keywords(void)
{
	static const struct parse_case cases[] = {
		{"", "void all=0 count=-1 items= caps=", NULL},
		{" \t ", "void all=0 count=-1 items= caps=", NULL},
		{",", "void all=0 count=-1 items= caps=", NULL},
		{"void", "void all=0 count=-1 items=void caps=", NULL},
		{"none", "none all=0 count=-1 items=none caps=", NULL},
		{"all", "some all=1 count=-1 items=all caps=", NULL},
		{"ALL", "some all=1 count=-1 items=ALL caps=", NULL},
		{" all ", "some all=1 count=-1 items=all caps=", NULL},
		{"none,0", "none all=0 count=-1 items=none,0 caps=", NULL},
		{"0,none", "none all=0 count=-1 items=0,none caps=", NULL},
		{"all,none", "none all=1 count=-1 items=all,none caps=", NULL},
		{"0,void", "void all=0 count=-1 items=0,void caps=", NULL},
		{"none,void,all", "void all=0 count=-1 items=none,void,all caps=", NULL},
		{"all,0", "some all=1 count=-1 items=all,0 caps=", NULL},
		/* none and void skip the item check; all does not. */
		{"none,bogus", "none all=0 count=-1 items=none,bogus caps=", NULL},
		{"all,bogus", NULL, "--gpus: bogus" NOT_A_DEVICE},
		{"NONE", NULL, "--gpus: NONE" NOT_A_DEVICE},
		{"Void", NULL, "--gpus: Void" NOT_A_DEVICE},
	};
	run_parse_cases(cases, COUNT_OF(cases), "--gpus");

	struct gpu_request rq;
	struct gerr err = {0};
	CHECK(gpu_request_parse(NULL, "--gpus", &rq, &err) == 0 && rq.kind == SEL_VOID, "NULL is not void");
	gpu_request_free(&rq);
}

/* Device ids by their syntax: an index of at most four digits, GPU-<uuid>,
 * a PCI bus id, <gpu>:<mig>, MIG-...; anything else refused, named in the
 * message (cut at 64 bytes) with the source that gave it. */
static void case_items(void)
{
	static const struct parse_case cases[] = {
		{"0", "some all=0 count=-1 items=0 caps=", NULL},
		{"0,2", "some all=0 count=-1 items=0,2 caps=", NULL},
		{" 0 , 2 ", "some all=0 count=-1 items=0,2 caps=", NULL},
		{"0,,2,", "some all=0 count=-1 items=0,2 caps=", NULL},
		{"2,0,2", "some all=0 count=-1 items=2,0,2 caps=", NULL},
		{"9999", "some all=0 count=-1 items=9999 caps=", NULL},
		{"0007", "some all=0 count=-1 items=0007 caps=", NULL},
		{"GPU-0c9c1a44-3f53-4a35-9c7e-7e0d6c1a3b3b",
		 "some all=0 count=-1 items=GPU-0c9c1a44-3f53-4a35-9c7e-7e0d6c1a3b3b caps=", NULL},
		{"gpu-x", "some all=0 count=-1 items=gpu-x caps=", NULL},
		{"3b:00.0", "some all=0 count=-1 items=3b:00.0 caps=", NULL},
		{"0000:3B:00.0", "some all=0 count=-1 items=0000:3B:00.0 caps=", NULL},
		{"00000000:af:00.0", "some all=0 count=-1 items=00000000:af:00.0 caps=", NULL},
		{"0:1", "some all=0 count=-1 items=0:1 caps=", NULL},
		{"MIG-GPU-0c9c1a44-3f53-4a35-9c7e-7e0d6c1a3b3b/1/0",
		 "some all=0 count=-1 items=MIG-GPU-0c9c1a44-3f53-4a35-9c7e-7e0d6c1a3b3b/1/0 caps=", NULL},
		{"mig-5c6e9e0a", "some all=0 count=-1 items=mig-5c6e9e0a caps=", NULL},
		{"12345", NULL, "--gpus: 12345" NOT_A_DEVICE},
		{"-1", NULL, "--gpus: -1" NOT_A_DEVICE},
		{"0x1", NULL, "--gpus: 0x1" NOT_A_DEVICE},
		{"1.5", NULL, "--gpus: 1.5" NOT_A_DEVICE},
		{"0 1", NULL, "--gpus: 0 1" NOT_A_DEVICE},
		{"GPU-", NULL, "--gpus: GPU-" NOT_A_DEVICE},
		{"MIG-", NULL, "--gpus: MIG-" NOT_A_DEVICE},
		{"0:", NULL, "--gpus: 0:" NOT_A_DEVICE},
		{"0:a", NULL, "--gpus: 0:a" NOT_A_DEVICE},
		{":1", NULL, "--gpus: :1" NOT_A_DEVICE},
		{"3b:00", NULL, "--gpus: 3b:00" NOT_A_DEVICE},
		{"3b:20.0", NULL, "--gpus: 3b:20.0" NOT_A_DEVICE},
		{"0,2,x", NULL, "--gpus: x" NOT_A_DEVICE},
		/* The first bad item is named; an overlong one is cut at 64 bytes. */
		{"a,b", NULL, "--gpus: a" NOT_A_DEVICE},
		{"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdefTAIL", NULL,
		 "--gpus: 0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef" NOT_A_DEVICE},
	};
	run_parse_cases(cases, COUNT_OF(cases), "--gpus");

	static const struct parse_case env[] = {
		{"0,x", NULL, "NVIDIA_VISIBLE_DEVICES: x" NOT_A_DEVICE},
	};
	run_parse_cases(env, COUNT_OF(env), "NVIDIA_VISIBLE_DEVICES");

	static const struct {
		const char *item;
		int mig;
	} migs[] = {
		{"0:1", 1},   {"12:0", 1},    {"MIG-x", 1}, {"mig-GPU-x/1/0", 1}, {"0", 0},
		{"GPU-x", 0}, {"3b:00.0", 0}, {"0:", 0},    {"MIG-", 0},          {"a:1", 0},
	};
	for (size_t i = 0; i < COUNT_OF(migs); i++)
		CHECK(gpu_item_is_mig(migs[i].item) == migs[i].mig, "%s: MIG %d", migs[i].item, !migs[i].mig);
}

/* PCI bus ids in NVML's form: short or with a domain of up to 8 digits,
 * any case; device at most 0x1f, function at most 7. */
static void case_busids(void)
{
	static const struct {
		const char *in;
		const char *want; /* NULL: not a bus id */
	} cases[] = {
		{"3b:00.0", "00000000:3b:00.0"},
		{"3B:00.0", "00000000:3b:00.0"},
		{"0000:3b:00.0", "00000000:3b:00.0"},
		{"00000000:af:1f.7", "00000000:af:1f.7"},
		{"1:2:3.4", "00000001:02:03.4"},
		{"ffffffff:ff:1f.7", "ffffffff:ff:1f.7"},
		{"b:0.0", "00000000:0b:00.0"},
		{"", NULL},
		{"3b:00", NULL},
		{"3b:00.8", NULL},
		{"3b:20.0", NULL},
		{"3b:00.00", NULL},
		{"100:00.0", NULL},
		{"123456789:00:00.0", NULL},
		{"0000:3b:00:0", NULL},
		{"3b::00.0", NULL},
		{":00.0", NULL},
		{"3b:00.0 ", NULL},
		{" 3b:00.0", NULL},
		{"3g:00.0", NULL},
		{"0000:100:00.0", NULL},
	};
	for (size_t i = 0; i < COUNT_OF(cases); i++) {
		char out[32] = "";
		int r = busid_normalize(cases[i].in, out, sizeof out);
		if (cases[i].want)
			CHECK(r == 0 && !strcmp(out, cases[i].want), "\"%s\": r %d, \"%s\", want \"%s\"", cases[i].in,
			      r, out, cases[i].want);
		else
			CHECK(r < 0, "\"%s\": accepted as \"%s\"", cases[i].in, out);
	}
	char small[16];
	CHECK(busid_normalize("3b:00.0", small, sizeof small) < 0, "a 16-byte buffer took 17 bytes");
}

/* docker's --gpus CSV: count=N|all, device=ID[,ID...] quoted or not,
 * capabilities= (only NVIDIA driver capabilities kept), driver=nvidia,
 * options=; neither count nor device means one GPU, count=0 none. */
static void case_docker(void)
{
	static const struct parse_case cases[] = {
		{"count=2", "some all=0 count=2 items= caps=", NULL},
		{"count=all", "some all=1 count=-1 items= caps=", NULL},
		{"count=ALL", "some all=1 count=-1 items= caps=", NULL},
		{"count=0", "void all=0 count=0 items= caps=", NULL},
		{"count=256", "some all=0 count=256 items= caps=", NULL},
		{"device=0", "some all=0 count=-1 items=0 caps=", NULL},
		{"device=0,2", "some all=0 count=-1 items=0,2 caps=", NULL},
		{"\"device=0,2\"", "some all=0 count=-1 items=0,2 caps=", NULL},
		{"device=GPU-x,3b:00.0,1:0", "some all=0 count=-1 items=GPU-x,3b:00.0,1:0 caps=", NULL},
		{"device=0,2,capabilities=utility", "some all=0 count=-1 items=0,2 caps=utility", NULL},
		{"\"device=0,2\",\"capabilities=compute,utility\"",
		 "some all=0 count=-1 items=0,2 caps=compute,utility", NULL},
		{"capabilities=utility,compute", "some all=0 count=1 items= caps=utility,compute", NULL},
		{"capabilities=gpu", "some all=0 count=1 items= caps=", NULL},
		{"capabilities=gpu,video", "some all=0 count=1 items= caps=video", NULL},
		{"count=1,capabilities=gpu,bogus", "some all=0 count=1 items= caps=", NULL},
		{"driver=nvidia,count=1", "some all=0 count=1 items= caps=", NULL},
		{"driver=", "some all=0 count=1 items= caps=", NULL},
		{"options=foo", "some all=0 count=1 items= caps=", NULL},
		{"all,capabilities=utility", "some all=1 count=-1 items= caps=utility", NULL},
		{" count=2 , capabilities=utility ", "some all=0 count=2 items= caps=utility", NULL},
		{"count=257", NULL, "--gpus: invalid count=257"},
		{"count=-1", NULL, "--gpus: invalid count=-1"},
		{"count=", NULL, "--gpus: invalid count="},
		{"count=2x", NULL, "--gpus: invalid count=2x"},
		{"count=99999999999999999999", NULL, "--gpus: invalid count=99999999999999999999"},
		{"count=1,2", NULL, "--gpus: unexpected field \"2\""},
		{"\"0\"", NULL, "--gpus: unexpected field \"0\""},
		{"Count=2", NULL, "--gpus: unknown field \"Count\""},
		{"foo=bar", NULL, "--gpus: unknown field \"foo\""},
		{"driver=amd", NULL, "--gpus: unsupported driver \"amd\" (only nvidia)"},
		{"count=2,device=0", NULL, "--gpus: cannot set both count and device"},
		{"device=0,count=2", NULL, "--gpus: cannot set both count and device"},
		{"all,device=0", NULL, "--gpus: cannot set both count and device"},
		{"device=0,bad", NULL, "--gpus: bad" NOT_A_DEVICE},
		/* The daemon hands device IDs on as NVIDIA_VISIBLE_DEVICES, where
		 * the keywords keep their meaning. */
		{"device=all", "some all=1 count=-1 items=all caps=", NULL},
		{"\"device=0,all\"", "some all=1 count=-1 items=0,all caps=", NULL},
		{"device=none", "none all=0 count=-1 items=none caps=", NULL},
		{"device=0,none,bogus", "none all=0 count=-1 items=0,none,bogus caps=", NULL},
		{"device=void", "void all=0 count=-1 items=void caps=", NULL},
		{"device=VOID", NULL, "--gpus: VOID" NOT_A_DEVICE},
		{"count=2,device=all", NULL, "--gpus: cannot set both count and device"},
	};
	run_parse_cases(cases, COUNT_OF(cases), "--gpus");
}

static void mask_of(const struct gpu_selection *sel, char out[5])
{
	for (int k = 0; k < 4; k++)
		out[k] = sel->mask[k] ? '1' : '0';
	out[4] = '\0';
}

/* Against the table: the GPUs selected (a mask in index order), or the
 * exact message and hint naming the device, the count and the root. */
static void case_resolve(void)
{
	static const struct {
		const char *spec;
		const char *want; /* "KIND MASK", or NULL */
		const char *err;
	} cases[] = {
		{"all", "some 1111", NULL},
		{"none", "none 0000", NULL},
		{"void", "void 0000", NULL},
		{"", "void 0000", NULL},
		{"2,0", "some 1010", NULL},
		{"0,0", "some 1000", NULL},
		{"0007", NULL, "--gpus: unknown device 0007 (4 GPUs under /drv)"},
		{"GPU-1d2e3f40-5162-4738-89ab-cdef01234567", "some 0100", NULL},
		{"gpu-A0B1C2D3-E4F5-4061-9728-394A5B6C7D8E", "some 0001", NULL},
		{"86:00.0", "some 0010", NULL},
		{"0000:AF:00.0", "some 0001", NULL},
		{"3b:00.0,GPU-8f7e6d5c-4b3a-4291-8071-605f4e3d2c1b", "some 1010", NULL},
		{"count=3", "some 1110", NULL},
		{"count=4", "some 1111", NULL},
		{"count=0", "void 0000", NULL},
		{"device=3,1", "some 0101", NULL},
		{"device=all", "some 1111", NULL},
		{"device=1,all", "some 1111", NULL},
		{"device=none", "none 0000", NULL},
		{"device=void", "void 0000", NULL},
		{"capabilities=utility", "some 1000", NULL},
		{"0:1", "some 0000", NULL}, /* MIG items are gpu_select()'s */
		{"4", NULL, "--gpus: unknown device 4 (4 GPUs under /drv)"},
		{"GPU-1d2e3f40", NULL, "--gpus: unknown device GPU-1d2e3f40 (4 GPUs under /drv)"},
		{"3b:00.1", NULL, "--gpus: unknown device 3b:00.1 (4 GPUs under /drv)"},
		{"0,5", NULL, "--gpus: unknown device 5 (4 GPUs under /drv)"},
		{"count=5", NULL, "--gpus: count=5 but there are 4 GPUs under /drv"},
	};
	for (size_t i = 0; i < COUNT_OF(cases); i++) {
		struct gpu_request rq;
		struct gpu_selection sel;
		struct gerr err = {0};
		CHECK(gpu_request_parse(cases[i].spec, "--gpus", &rq, &err) == 0, "%s: %s", cases[i].spec, err.msg);
		int r = gpu_request_resolve(&rq, table, 4, 0, "--gpus", "/drv", &sel, &err);
		if (cases[i].want) {
			char got[16], mask[5];
			mask_of(&sel, mask);
			snprintf(got, sizeof got, "%s %s", kind_name(sel.kind), mask);
			CHECK(r == 0 && !strcmp(got, cases[i].want), "%s: r %d, \"%s\", want \"%s\" (%s)",
			      cases[i].spec, r, got, cases[i].want, err.msg);
		} else {
			CHECK(r < 0, "%s: accepted", cases[i].spec);
			CHECK(!strcmp(err.msg, cases[i].err), "%s: message \"%s\"", cases[i].spec, err.msg);
			CHECK(!err.hint[0], "%s: hint \"%s\"", cases[i].spec, err.hint);
		}
		gpu_request_free(&rq);
	}
}

/* One GPU, with no UUID yet, and GPUs the driver excludes: the messages
 * agree in number, and the hints say why a device may exist all the same. */
static void case_resolve_hints(void)
{
	struct gpu_dev one[2] = {table[0], table[1]};
	one[1].uuid[0] = '\0';
	static const struct {
		size_t ngpus, nexcluded;
		const char *spec;
		const char *err, *hint;
	} cases[] = {
		{1, 0, "count=2", "NVIDIA_VISIBLE_DEVICES: count=2 but there is 1 GPU under /drv", ""},
		{1, 0, "1", "NVIDIA_VISIBLE_DEVICES: unknown device 1 (1 GPU under /drv)", ""},
		{1, 1, "1", "NVIDIA_VISIBLE_DEVICES: unknown device 1 (1 GPU under /drv)",
		 "1 GPU excluded by the driver (GPU Excluded: Yes) has no index"},
		{1, 2, "GPU-x", "NVIDIA_VISIBLE_DEVICES: unknown device GPU-x (1 GPU under /drv)",
		 "2 GPUs excluded by the driver (GPU Excluded: Yes) have no index"},
		{2, 0, "GPU-x", "NVIDIA_VISIBLE_DEVICES: unknown device GPU-x (2 GPUs under /drv)",
		 "GPU 1 (00000000:5e:00.0) has no UUID yet (written when the GPU is initialised: run "
		 "nvidia-persistenced); select it by index or bus id"},
		{2, 3, "GPU-x", "NVIDIA_VISIBLE_DEVICES: unknown device GPU-x (2 GPUs under /drv)",
		 "GPU 1 (00000000:5e:00.0) has no UUID yet (written when the GPU is initialised: run "
		 "nvidia-persistenced); select it by index or bus id; 3 GPUs excluded by the driver (GPU Excluded: "
		 "Yes) have no index"},
		/* An index is not a UUID: no word of missing UUIDs. */
		{2, 0, "2", "NVIDIA_VISIBLE_DEVICES: unknown device 2 (2 GPUs under /drv)", ""},
		{0, 0, "count=1", "NVIDIA_VISIBLE_DEVICES: count=1 but there are 0 GPUs under /drv", ""},
	};
	for (size_t i = 0; i < COUNT_OF(cases); i++) {
		struct gpu_request rq;
		struct gpu_selection sel;
		struct gerr err = {0};
		CHECK(gpu_request_parse(cases[i].spec, "NVIDIA_VISIBLE_DEVICES", &rq, &err) == 0, "%s", err.msg);
		int r = gpu_request_resolve(&rq, one, cases[i].ngpus, cases[i].nexcluded, "NVIDIA_VISIBLE_DEVICES",
					    "/drv", &sel, &err);
		CHECK(r < 0, "case %zu: accepted", i);
		CHECK(!strcmp(err.msg, cases[i].err), "case %zu: message \"%s\"", i, err.msg);
		CHECK(!strcmp(err.hint, cases[i].hint), "case %zu: hint \"%s\"", i, err.hint);
		gpu_request_free(&rq);
	}
	/* A GPU without a UUID is never matched by an empty one. */
	struct gpu_request rq;
	struct gpu_selection sel;
	struct gerr err = {0};
	gpu_request_parse("GPU-0c9c1a44-3f53-4a35-9c7e-7e0d6c1a3b3b", "--gpus", &rq, &err);
	char mask[5];
	CHECK(gpu_request_resolve(&rq, one, 2, 0, "--gpus", "/", &sel, &err) == 0, "%s", err.msg);
	mask_of(&sel, mask);
	CHECK(!strcmp(mask, "1000"), "mask %s", mask);
	gpu_request_free(&rq);
}

#define CAPS_KNOWN " (known: utility, compute, video, graphics, display, compat32, ngx, all)"

/* NVIDIA_DRIVER_CAPABILITIES / --caps: names in lower case, spaces and
 * empty items ignored; the INJ_ flags each brings. */
static void case_caps(void)
{
	static const struct {
		const char *in;
		int ok;
		unsigned want;
		const char *err;
	} cases[] = {
		{"", 1, 0, NULL},
		{",,", 1, 0, NULL},
		{"utility,compute", 1, DRVCAP_UTILITY | DRVCAP_COMPUTE, NULL},
		{"all", 1, DRVCAP_ALL, NULL},
		{"video,all", 1, DRVCAP_ALL, NULL},
		{" utility , video ", 1, DRVCAP_UTILITY | DRVCAP_VIDEO, NULL},
		{"\tngx\t", 1, DRVCAP_NGX, NULL},
		{"graphics,display,compat32", 1, DRVCAP_GRAPHICS | DRVCAP_DISPLAY | DRVCAP_COMPAT32, NULL},
		{"video,video", 1, DRVCAP_VIDEO, NULL},
		{"ALL", 0, 0, "unknown driver capability \"ALL\"" CAPS_KNOWN},
		{"Compute", 0, 0, "unknown driver capability \"Compute\"" CAPS_KNOWN},
		{"utility,gpu", 0, 0, "unknown driver capability \"gpu\"" CAPS_KNOWN},
		{"compute2", 0, 0, "unknown driver capability \"compute2\"" CAPS_KNOWN},
		{"util ity", 0, 0, "unknown driver capability \"util ity\"" CAPS_KNOWN},
		{"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdefTAIL", 0, 0,
		 "unknown driver capability \"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef\"" CAPS_KNOWN},
	};
	for (size_t i = 0; i < COUNT_OF(cases); i++) {
		unsigned c = 0xdead;
		struct gerr err = {0};
		int r = caps_parse(cases[i].in, &c, &err);
		if (cases[i].ok)
			CHECK(r == 0 && c == cases[i].want, "\"%s\": r %d, 0x%x, want 0x%x (%s)", cases[i].in, r, c,
			      cases[i].want, err.msg);
		else
			CHECK(r < 0 && !strcmp(err.msg, cases[i].err), "\"%s\": r %d, message \"%s\"", cases[i].in, r,
			      err.msg);
	}
	unsigned c = 0xdead;
	CHECK(caps_parse(NULL, &c, NULL) == 0 && c == 0, "NULL: 0x%x", c);

	static const struct {
		unsigned caps, inj;
	} flags[] = {
		{0, 0},
		{DRVCAP_UTILITY, INJ_UTILITY_BINS | INJ_UTILITY_LIBS},
		{DRVCAP_COMPUTE, INJ_COMPUTE_BINS | INJ_COMPUTE_LIBS},
		{DRVCAP_VIDEO, INJ_VIDEO_LIBS | INJ_COMPUTE_LIBS},
		{DRVCAP_GRAPHICS, INJ_GRAPHICS_LIBS},
		{DRVCAP_DISPLAY, INJ_DISPLAY | INJ_GRAPHICS_LIBS},
		{DRVCAP_COMPAT32, INJ_COMPAT32},
		{DRVCAP_NGX, INJ_NGX_LIBS},
		{DRVCAP_ALL, 0x1ff},
	};
	for (size_t i = 0; i < COUNT_OF(flags); i++)
		CHECK(caps_inject_flags(flags[i].caps) == flags[i].inj, "caps 0x%x: 0x%x, want 0x%x", flags[i].caps,
		      caps_inject_flags(flags[i].caps), flags[i].inj);
}

static const struct unit_case cases[] = {
	{"keywords", case_keywords}, {"items", case_items},     {"busids", case_busids},
	{"docker", case_docker},     {"resolve", case_resolve}, {"resolve-hints", case_resolve_hints},
	{"caps", case_caps},
};

int main(int argc, char **argv)
{
	return unit_main(argc, argv, cases, COUNT_OF(cases));
}
