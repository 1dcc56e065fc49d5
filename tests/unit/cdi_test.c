/* tests/unit/cdi_test.c — the CDI spec parser (gpu/cdi/cdiparse.c),
 * table-driven: spec texts in YAML and JSON with what they parse to (cdi
 * versions, kind and device names, containerEdits' env, deviceNodes,
 * mounts and hooks) or the exact "line N: WHERE: problem" they are refused
 * with, the caps on size and shape, and fully-qualified device names.
 * tests/fuzz/fuzz_cdi.c fuzzes the same parser; tests/cdi.bats applies
 * specs in launches.
 *
 *   cdi_test --list     the names of the cases
 *   cdi_test CASE       run one case: exit 0, or 1 with what was wrong
 *
 * tests/unit.bats runs every case; `make unit` builds this under ASan and
 * UBSan. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../gpu/cdi/cdi.h"
#include "unit.h"

static void put_strv(struct sbuf *b, const char *sep, const struct strv *v)
{
	for (size_t i = 0; i < v->n; i++)
		sbuf_printf(b, "%s%s", i ? sep : "", v->v[i]);
}

/* An edit list as one line: "env:K=V node(PATH HOST TYPE MAJ:MIN PERM)
 * mount(HOST>CONTAINER TYPE OPT;OPT) hook(NAME PATH ARG;ARG ENV;ENV)",
 * "-" for what is not given. */
static void put_edits(struct sbuf *b, const struct cdi_edits *e)
{
	for (size_t i = 0; i < e->env.n; i++)
		sbuf_printf(b, " env:%s", e->env.v[i]);
	for (size_t i = 0; i < e->nnodes; i++) {
		const struct cdi_node *n = &e->nodes[i];
		sbuf_printf(b, " node(%s %s %c %ld:%ld %s)", n->path, n->host_path ? n->host_path : "-",
			    n->type ? n->type : '-', n->major, n->minor, n->permissions ? n->permissions : "-");
	}
	for (size_t i = 0; i < e->nmounts; i++) {
		const struct cdi_mount *m = &e->mounts[i];
		sbuf_printf(b, " mount(%s>%s %s ", m->host_path, m->container_path, m->type ? m->type : "-");
		put_strv(b, ";", &m->options);
		sbuf_puts(b, ")");
	}
	for (size_t i = 0; i < e->nhooks; i++) {
		const struct cdi_hook *h = &e->hooks[i];
		sbuf_printf(b, " hook(%s %s ", h->hook_name, h->path);
		put_strv(b, ";", &h->args);
		sbuf_puts(b, " ");
		put_strv(b, ";", &h->env);
		sbuf_puts(b, ")");
	}
}

/* "VERSION KIND | NAME:EDITS | ... | *:EDITS" (the spec-wide edits last). */
static char *describe(const struct cdi_spec *s)
{
	struct sbuf b = {0};
	sbuf_printf(&b, "%s %s", s->version, s->kind);
	for (size_t i = 0; i < s->ndevs; i++) {
		sbuf_printf(&b, " | %s:", s->devs[i].name);
		put_edits(&b, &s->devs[i].edits);
	}
	sbuf_puts(&b, " | *:");
	put_edits(&b, &s->edits);
	return b.s;
}

struct spec_case {
	const char *text;
	const char *want; /* describe()'s line, or NULL when refused */
	const char *err;  /* the exact message when refused */
};

static void run_spec_cases(const struct spec_case *cases, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		struct cdi_spec s;
		struct gerr err = {0};
		int r = cdi_parse(cases[i].text, strlen(cases[i].text), &s, &err);
		if (cases[i].want) {
			CHECK(r == 0, "case %zu: refused: %s", i, err.msg);
			if (r == 0) {
				char *got = describe(&s);
				CHECK(!strcmp(got, cases[i].want), "case %zu: got \"%s\", want \"%s\"", i, got,
				      cases[i].want);
				free(got);
			}
		} else {
			CHECK(r < 0, "case %zu: accepted", i);
			CHECK(!strcmp(err.msg, cases[i].err), "case %zu: message \"%s\", want \"%s\"", i, err.msg,
			      cases[i].err);
			CHECK(s.ndevs == 0 && !s.kind && !s.version, "case %zu: a refused spec is not empty", i);
		}
		cdi_spec_free(&s);
	}
}

#define HEAD "cdiVersion: 0.6.0\nkind: nvidia.com/gpu\n"
#define DEV0 "devices:\n- name: \"0\"\n"
/* A spec whose device 0 has the edits E (indented under containerEdits). */
#define EDITS(E) HEAD DEV0 "  containerEdits:\n" E

/* What nvidia-ctk writes, in YAML and in JSON, and every field of every
 * edit: each kept as written, "-" where not given. */
static void case_accepted(void)
{
	static const struct spec_case cases[] = {
		{HEAD DEV0 "  containerEdits:\n    deviceNodes:\n    - path: /dev/nvidia0\n",
		 "0.6.0 nvidia.com/gpu | 0: node(/dev/nvidia0 - - -1:-1 -) | *:", NULL},
		/* nvidia-ctk's JSON (the legacy form `--format json` writes). */
		{"{\"cdiVersion\":\"0.5.0\",\"kind\":\"nvidia.com/gpu\",\"devices\":[{\"name\":\"all\","
		 "\"containerEdits\":{\"deviceNodes\":[{\"path\":\"/dev/nvidia0\"},{\"path\":\"/dev/nvidia1\"}]}}],"
		 "\"containerEdits\":{\"env\":[\"NVIDIA_VISIBLE_DEVICES=void\"],\"deviceNodes\":[{\"path\":"
		 "\"/dev/nvidiactl\",\"hostPath\":\"/drv/dev/nvidiactl\"}],\"mounts\":[{\"hostPath\":\"/drv/lib/"
		 "libcuda.so.550\",\"containerPath\":\"/usr/lib/libcuda.so.550\",\"options\":[\"ro\",\"nosuid\","
		 "\"nodev\",\"rbind\",\"rprivate\"]}],\"hooks\":[{\"hookName\":\"createContainer\",\"path\":\"/usr/"
		 "bin/nvidia-cdi-hook\",\"args\":[\"nvidia-cdi-hook\",\"update-ldcache\",\"--folder\",\"/usr/lib\"],"
		 "\"env\":[\"NVIDIA_CTK_DEBUG=false\"]}]}}",
		 "0.5.0 nvidia.com/gpu | all: node(/dev/nvidia0 - - -1:-1 -) node(/dev/nvidia1 - - -1:-1 -) | *: "
		 "env:NVIDIA_VISIBLE_DEVICES=void node(/dev/nvidiactl /drv/dev/nvidiactl - -1:-1 -) "
		 "mount(/drv/lib/libcuda.so.550>/usr/lib/libcuda.so.550 - ro;nosuid;nodev;rbind;rprivate) "
		 "hook(createContainer /usr/bin/nvidia-cdi-hook nvidia-cdi-hook;update-ldcache;--folder;/usr/lib "
		 "NVIDIA_CTK_DEBUG=false)",
		 NULL},
		/* A leading "---", keys in any order, annotations at both levels. */
		{"---\nkind: nvidia.com/gpu\nannotations:\n  a: b\ndevices:\n- annotations: {x: y}\n  name: gpu0\n"
		 "cdiVersion: 1.1.0\n",
		 "1.1.0 nvidia.com/gpu | gpu0: | *:", NULL},
		{EDITS("    deviceNodes:\n    - path: /dev/nvidia0\n      hostPath: /dev/nvidia2\n      type: c\n"
		       "      major: 195\n      minor: 2\n      permissions: rw\n      fileMode: 438\n      uid: 0\n"
		       "      gid: 44\n"),
		 "0.6.0 nvidia.com/gpu | 0: node(/dev/nvidia0 /dev/nvidia2 c 195:2 rw) | *:", NULL},
		{EDITS("    deviceNodes:\n    - {path: /dev/b, type: b, major: 4095, minor: 1048575, permissions: m}\n"
		       "    - {path: /dev/u, type: u}\n    - {path: /dev/p, type: p, major: 0, minor: 0}\n"),
		 "0.6.0 nvidia.com/gpu | 0: node(/dev/b - b 4095:1048575 m) node(/dev/u - u -1:-1 -) "
		 "node(/dev/p - p 0:0 -) | *:",
		 NULL},
		{EDITS("    mounts:\n    - hostPath: /a\n      containerPath: /b\n      type: bind\n"
		       "      options: []\n"),
		 "0.6.0 nvidia.com/gpu | 0: mount(/a>/b bind ) | *:", NULL},
		{EDITS("    hooks:\n    - hookName: prestart\n      path: /bin/h\n      timeout: 5\n"
		       "    - {hookName: poststop, path: /bin/h, args: [h, x], env: [A=1]}\n"),
		 "0.6.0 nvidia.com/gpu | 0: hook(prestart /bin/h  ) hook(poststop /bin/h h;x A=1) | *:", NULL},
		{EDITS("    env: [A=1, B=, C=x=y, 'D= spaced ']\n"),
		 "0.6.0 nvidia.com/gpu | 0: env:A=1 env:B= env:C=x=y env:D= spaced  | *:", NULL},
		{HEAD DEV0 "  containerEdits: {}\ncontainerEdits: {env: []}\n", "0.6.0 nvidia.com/gpu | 0: | *:", NULL},
		/* Device names: a digit first since 0.5.0, "-_.:" inside. */
		{HEAD "devices:\n- name: \"0\"\n- name: \"0:1\"\n- name: all\n- name: GPU-1d2e3f40\n"
		      "- name: mig.1g_5gb-0\n",
		 "0.6.0 nvidia.com/gpu | 0: | 0:1: | all: | GPU-1d2e3f40: | mig.1g_5gb-0: | *:", NULL},
		/* Kinds: vendor with '.', '-', '_'; class with '-' and '_'. */
		{"cdiVersion: 0.3.0\nkind: vendor-x_y.example.com/class-a_b\ndevices: [{name: d}]\n",
		 "0.3.0 vendor-x_y.example.com/class-a_b | d: | *:", NULL},
		{"cdiVersion: 0.4.0\nkind: a/b\ndevices: [{name: d}]\n", "0.4.0 a/b | d: | *:", NULL},
	};
	run_spec_cases(cases, COUNT_OF(cases));

	/* Every version gpurun knows. */
	static const char *const versions[] = {"0.3.0", "0.4.0", "0.5.0", "0.6.0", "0.7.0", "0.8.0", "1.0.0", "1.1.0"};
	for (size_t i = 0; i < COUNT_OF(versions); i++) {
		char text[128], want[128];
		snprintf(text, sizeof text, "cdiVersion: %s\nkind: a/b\ndevices: [{name: d}]\n", versions[i]);
		snprintf(want, sizeof want, "%s a/b | d: | *:", versions[i]);
		struct spec_case c[] = {{text, want, NULL}};
		run_spec_cases(c, 1);
	}
}

/* The spec's own fields: a known cdiVersion, a vendor.com/class kind, a
 * non-empty list of uniquely named devices, nothing unknown or repeated. */
static void case_spec_refused(void)
{
	static const struct spec_case cases[] = {
		{"", NULL, "empty file"},
		{"# only a comment\n", NULL, "empty file"},
		{"- a\n", NULL, "line 1: the spec: expected a mapping, found a list"},
		{"just text\n", NULL, "line 1: the spec: expected a mapping, found a scalar"},
		{"kind: a/b\ndevices: [{name: d}]\n", NULL, "line 1: the spec: cdiVersion is missing"},
		{"cdiVersion: 0.6.0\ndevices: [{name: d}]\n", NULL, "line 1: the spec: kind is missing"},
		{HEAD, NULL, "line 1: the spec: devices is missing"},
		{"cdiVersion: 0.2.0\nkind: a/b\ndevices: [{name: d}]\n", NULL,
		 "line 1: cdiVersion: version '0.2.0' is not one gpurun knows (0.3.0 to 1.1.0)"},
		{"cdiVersion: 1.2.0\nkind: a/b\ndevices: [{name: d}]\n", NULL,
		 "line 1: cdiVersion: version '1.2.0' is not one gpurun knows (0.3.0 to 1.1.0)"},
		{"cdiVersion: 0.6\nkind: a/b\ndevices: [{name: d}]\n", NULL,
		 "line 1: cdiVersion: version '0.6' is not one gpurun knows (0.3.0 to 1.1.0)"},
		{"cdiVersion: [0.6.0]\nkind: a/b\ndevices: [{name: d}]\n", NULL,
		 "line 1: cdiVersion: expected a scalar, found a list"},
		{"cdiVersion: 0.6.0\nkind: nvidia.com\ndevices: [{name: d}]\n", NULL,
		 "line 2: kind: 'nvidia.com' is not vendor.com/class"},
		{"cdiVersion: 0.6.0\nkind: nvidia.com/gpu/x\ndevices: [{name: d}]\n", NULL,
		 "line 2: kind: 'nvidia.com/gpu/x' is not vendor.com/class"},
		{"cdiVersion: 0.6.0\nkind: nvidia.com/g.pu\ndevices: [{name: d}]\n", NULL,
		 "line 2: kind: 'nvidia.com/g.pu' is not vendor.com/class"},
		{"cdiVersion: 0.6.0\nkind: 1vendor.com/gpu\ndevices: [{name: d}]\n", NULL,
		 "line 2: kind: '1vendor.com/gpu' is not vendor.com/class"},
		{"cdiVersion: 0.6.0\nkind: nvidia.com/\ndevices: [{name: d}]\n", NULL,
		 "line 2: kind: 'nvidia.com/' is not vendor.com/class"},
		{"cdiVersion: 0.6.0\nkind: nvidia.com/gpu-\ndevices: [{name: d}]\n", NULL,
		 "line 2: kind: 'nvidia.com/gpu-' is not vendor.com/class"},
		{HEAD "devices: []\n", NULL, "line 3: devices: no device"},
		{HEAD "devices: gpu0\n", NULL, "line 3: devices: expected a list, found a scalar"},
		{HEAD "devices:\n- containerEdits: {}\n", NULL, "line 4: devices[0]: name is missing"},
		{HEAD "devices:\n- name: -0\n", NULL, "line 4: devices[0]: '-0' is not a valid device name"},
		{HEAD "devices:\n- name: a b\n", NULL, "line 4: devices[0]: 'a b' is not a valid device name"},
		{HEAD "devices:\n- name: a/b\n", NULL, "line 4: devices[0]: 'a/b' is not a valid device name"},
		{HEAD "devices:\n- name: a=b\n", NULL, "line 4: devices[0]: 'a=b' is not a valid device name"},
		{HEAD "devices:\n- name: \"\"\n", NULL, "line 4: devices[0]: '' is not a valid device name"},
		{HEAD "devices:\n- name: {a: b}\n", NULL, "line 4: devices[0]: expected a scalar, found a mapping"},
		{HEAD "devices:\n- name: \"0\"\n- name: \"1\"\n- name: \"0\"\n", NULL,
		 "line 1: devices[2]: device '0' is defined twice"},
		{HEAD "devices:\n- name: d\n  foo: 1\n", NULL, "line 5: devices[0]: unknown field 'foo'"},
		{HEAD "devices:\n- d\n", NULL, "line 4: devices[0]: expected a mapping, found a scalar"},
		{HEAD "kind: a/b\ndevices: [{name: d}]\n", NULL, "line 3: the spec: field 'kind' given twice"},
		{HEAD "devices: [{name: d, name: e}]\n", NULL, "line 3: devices[0]: field 'name' given twice"},
		{HEAD "devices: [{name: d}]\nfoo: bar\n", NULL, "line 4: the spec: unknown field 'foo'"},
		{HEAD "devices: [{name: d}]\nannotations: x\n", NULL,
		 "line 4: annotations: expected a mapping, found a scalar"},
		{HEAD "devices: [{name: d, annotations: [x]}]\n", NULL,
		 "line 3: devices[0]: expected a mapping, found a list"},
		{HEAD "devices: [{name: d}]\n? [a]\n: b\n", NULL, "line 4: the spec: keys must be plain strings"},
	};
	run_spec_cases(cases, COUNT_OF(cases));
}

#define WHERE0 "devices[0].containerEdits"

/* containerEdits: absolute paths, known fields of the right type, valid
 * device types, permissions and numbers, OCI hook names, K=V env; the
 * edits gpurun cannot honour refused by name. */
static void case_edits_refused(void)
{
	static const struct spec_case cases[] = {
		{EDITS("    deviceNodes:\n    - path: dev/nvidia0\n"), NULL,
		 "line 7: " WHERE0 ".deviceNodes[0]: 'dev/nvidia0' is not an absolute path"},
		{EDITS("    deviceNodes:\n    - path: /dev/a\n    - hostPath: /dev/b\n"), NULL,
		 "line 8: " WHERE0 ".deviceNodes[1]: path is missing"},
		{EDITS("    deviceNodes:\n    - {path: /dev/a, hostPath: b}\n"), NULL,
		 "line 7: " WHERE0 ".deviceNodes[0]: 'b' is not an absolute path"},
		{EDITS("    deviceNodes:\n    - {path: /dev/a, type: x}\n"), NULL,
		 "line 7: " WHERE0 ".deviceNodes[0]: type 'x' is not one of c, b, u, p"},
		{EDITS("    deviceNodes:\n    - {path: /dev/a, type: cb}\n"), NULL,
		 "line 7: " WHERE0 ".deviceNodes[0]: type 'cb' is not one of c, b, u, p"},
		{EDITS("    deviceNodes:\n    - {path: /dev/a, permissions: rwx}\n"), NULL,
		 "line 7: " WHERE0 ".deviceNodes[0]: permissions 'rwx' are not made of r, w and m"},
		{EDITS("    deviceNodes:\n    - {path: /dev/a, permissions: \"\"}\n"), NULL,
		 "line 7: " WHERE0 ".deviceNodes[0]: permissions '' are not made of r, w and m"},
		{EDITS("    deviceNodes:\n    - {path: /dev/a, major: 4096}\n"), NULL,
		 "line 7: " WHERE0 ".deviceNodes[0]: '4096' is not a number from 0 to 4095"},
		{EDITS("    deviceNodes:\n    - {path: /dev/a, minor: -1}\n"), NULL,
		 "line 7: " WHERE0 ".deviceNodes[0]: '-1' is not a number from 0 to 1048575"},
		{EDITS("    deviceNodes:\n    - {path: /dev/a, major: 0x10}\n"), NULL,
		 "line 7: " WHERE0 ".deviceNodes[0]: '0x10' is not a number from 0 to 4095"},
		{EDITS("    deviceNodes:\n    - {path: /dev/a, fileMode: 4096}\n"), NULL,
		 "line 7: " WHERE0 ".deviceNodes[0]: '4096' is not a number from 0 to 4095"},
		{EDITS("    deviceNodes:\n    - {path: /dev/a, uid: 4294967296}\n"), NULL,
		 "line 7: " WHERE0 ".deviceNodes[0]: '4294967296' is not a number from 0 to 4294967295"},
		{EDITS("    deviceNodes:\n    - {path: /dev/a, foo: 1}\n"), NULL,
		 "line 7: " WHERE0 ".deviceNodes[0]: unknown field 'foo'"},
		{EDITS("    deviceNodes:\n    - /dev/a\n"), NULL,
		 "line 7: " WHERE0 ".deviceNodes[0]: expected a mapping, found a scalar"},
		{EDITS("    deviceNodes: /dev/a\n"), NULL, "line 6: " WHERE0 ": expected a list, found a scalar"},
		{EDITS("    mounts:\n    - hostPath: /a\n"), NULL,
		 "line 7: " WHERE0 ".mounts[0]: containerPath is missing"},
		{EDITS("    mounts:\n    - containerPath: /a\n"), NULL,
		 "line 7: " WHERE0 ".mounts[0]: hostPath is missing"},
		{EDITS("    mounts:\n    - {hostPath: /a, containerPath: b}\n"), NULL,
		 "line 7: " WHERE0 ".mounts[0]: 'b' is not an absolute path"},
		{EDITS("    mounts:\n    - {hostPath: /a, containerPath: /b, options: ro}\n"), NULL,
		 "line 7: " WHERE0 ".mounts[0]: expected a list, found a scalar"},
		{EDITS("    mounts:\n    - {hostPath: /a, containerPath: /b, options: [[ro]]}\n"), NULL,
		 "line 7: " WHERE0 ".mounts[0]: expected a scalar, found a list"},
		{EDITS("    mounts:\n    - {hostPath: /a, containerPath: /b, uidMappings: []}\n"), NULL,
		 "line 7: " WHERE0 ".mounts[0]: unknown field 'uidMappings'"},
		{EDITS("    hooks:\n    - {hookName: preStart, path: /bin/h}\n"), NULL,
		 "line 7: " WHERE0 ".hooks[0]: hookName 'preStart' is not an OCI hook name"},
		{EDITS("    hooks:\n    - {hookName: prestart}\n"), NULL,
		 "line 7: " WHERE0 ".hooks[0]: path is missing"},
		{EDITS("    hooks:\n    - {path: /bin/h}\n"), NULL, "line 7: " WHERE0 ".hooks[0]: hookName is missing"},
		{EDITS("    hooks:\n    - {hookName: prestart, path: h}\n"), NULL,
		 "line 7: " WHERE0 ".hooks[0]: 'h' is not an absolute path"},
		{EDITS("    hooks:\n    - {hookName: prestart, path: /h, timeout: -1}\n"), NULL,
		 "line 7: " WHERE0 ".hooks[0]: '-1' is not a number from 0 to 2147483647"},
		{EDITS("    env: [NOEQUALS]\n"), NULL, "line 6: " WHERE0 ".env: 'NOEQUALS' is not K=V"},
		{EDITS("    env: [A=1, =x]\n"), NULL, "line 6: " WHERE0 ".env: '=x' is not K=V"},
		{EDITS("    env: A=1\n"), NULL, "line 6: " WHERE0 ".env: expected a list, found a scalar"},
		{EDITS("    additionalGIDs: [44]\n"), NULL,
		 "line 6: " WHERE0 ": additionalGIDs is not supported by gpurun"},
		{EDITS("    intelRdt: {closID: x}\n"), NULL, "line 6: " WHERE0 ": intelRdt is not supported by gpurun"},
		{EDITS("    netDevices: []\n"), NULL, "line 6: " WHERE0 ": netDevices is not supported by gpurun"},
		{EDITS("    devices: []\n"), NULL, "line 6: " WHERE0 ": unknown field 'devices'"},
		{EDITS("    env: []\n    env: []\n"), NULL, "line 7: " WHERE0 ": field 'env' given twice"},
		{HEAD "devices: [{name: d}]\ncontainerEdits:\n  mounts: [{hostPath: /a}]\n", NULL,
		 "line 5: containerEdits.mounts[0]: containerPath is missing"},
	};
	run_spec_cases(cases, COUNT_OF(cases));
}

/* The YAML itself: no aliases, one document, bounded nesting, size and
 * strings, no NUL inside a string; libyaml's own errors keep their line. */
static void case_yaml_refused(void)
{
	static const struct spec_case cases[] = {
		{HEAD "devices:\n- &d {name: d}\n- *d\n", NULL, "line 5: YAML aliases are not allowed in a CDI spec"},
		{HEAD "devices: [{name: d}]\n---\n" HEAD "devices: [{name: e}]\n", NULL,
		 "line 4: more than one YAML document"},
		{HEAD "devices: [{name: d}]\nannotations: {a: [[[[[[[[[[[[[[[[x]]]]]]]]]]]]]]]]}\n", NULL,
		 "line 4: nested too deeply or too many entries"},
		{HEAD "devices: [{name: \"a\\0b\"}]\n", NULL, "line 3: devices[0]: contains a NUL byte"},
	};
	run_spec_cases(cases, COUNT_OF(cases));

	struct cdi_spec s;
	struct gerr err = {0};

	/* libyaml's message, after gpurun's line number. */
	const char *bad = HEAD "devices: [{name: d}\n";
	CHECK(cdi_parse(bad, strlen(bad), &s, &err) < 0 && !strncmp(err.msg, "line 4: ", 8), "unclosed flow: \"%s\"",
	      err.msg);
	cdi_spec_free(&s);

	/* A string of 4096 bytes is one, of 4097 is refused. */
	struct sbuf t = {0};
	sbuf_printf(&t, EDITS("    env: [A=%4094s]\n"), "x");
	CHECK(cdi_parse(t.s, t.len, &s, &err) == 0, "4096 bytes: %s", err.msg);
	cdi_spec_free(&s);
	t.len = 0;
	sbuf_printf(&t, EDITS("    env: [A=%4095s]\n"), "x");
	CHECK(cdi_parse(t.s, t.len, &s, &err) < 0 && !strcmp(err.msg, "line 6: " WHERE0 ".env: longer than 4096 bytes"),
	      "4097 bytes: \"%s\"", err.msg);
	cdi_spec_free(&s);

	/* A CDI object has at most 32 fields: a device node with 33. */
	t.len = 0;
	sbuf_puts(&t, EDITS("    deviceNodes:\n    - path: /dev/a\n"));
	for (int i = 0; i < 32; i++)
		sbuf_printf(&t, "      x%d: 1\n", i);
	CHECK(cdi_parse(t.s, t.len, &s, &err) < 0 &&
		      !strcmp(err.msg, "line 7: " WHERE0 ".deviceNodes[0]: more than 32 fields"),
	      "33 fields: \"%s\"", err.msg);
	cdi_spec_free(&s);

	/* 4096 entries in a list at most: env, and devices (refused before
	 * any is read). */
	t.len = 0;
	sbuf_puts(&t, EDITS("    env: ["));
	for (int i = 0; i < CDI_MAX_ITEMS; i++)
		sbuf_printf(&t, "%sA%d=x", i ? ", " : "", i);
	sbuf_puts(&t, "]\n");
	CHECK(cdi_parse(t.s, t.len, &s, &err) == 0 && s.devs[0].edits.env.n == CDI_MAX_ITEMS, "4096 entries: %s",
	      err.msg);
	cdi_spec_free(&s);
	t.len -= 2;
	sbuf_puts(&t, ", B=x]\n");
	CHECK(cdi_parse(t.s, t.len, &s, &err) < 0 && !strcmp(err.msg, "line 6: " WHERE0 ".env: more than 4096 entries"),
	      "4097 entries: \"%s\"", err.msg);
	cdi_spec_free(&s);
	t.len = 0;
	sbuf_puts(&t, HEAD "devices:\n");
	for (int i = 0; i <= CDI_MAX_ITEMS; i++)
		sbuf_printf(&t, "- {name: d%d}\n", i);
	CHECK(cdi_parse(t.s, t.len, &s, &err) < 0 && !strcmp(err.msg, "line 4: devices: more than 4096 entries"),
	      "4097 devices: \"%s\"", err.msg);
	cdi_spec_free(&s);
	sbuf_free(&t);

	/* 1 MiB at most, whatever it holds. */
	size_t big = CDI_MAX_FILE + 1;
	char *huge = malloc(big);
	CHECK(huge != NULL, "malloc");
	if (huge) {
		memset(huge, '#', big);
		CHECK(cdi_parse(huge, big, &s, &err) < 0 && !strcmp(err.msg, "larger than 1048576 bytes"),
		      "1 MiB + 1: \"%s\"", err.msg);
		cdi_spec_free(&s);
		free(huge);
	}
}

/* --device's vendor.com/class=name, checked as the spec's kind and
 * device names are. */
static void case_qualified_names(void)
{
	static const struct {
		const char *in;
		const char *kind, *name; /* NULL: refused */
	} cases[] = {
		{"nvidia.com/gpu=0", "nvidia.com/gpu", "0"},
		{"nvidia.com/gpu=all", "nvidia.com/gpu", "all"},
		{"nvidia.com/gpu=0:1", "nvidia.com/gpu", "0:1"},
		{"nvidia.com/gpu=GPU-1d2e3f40-5162", "nvidia.com/gpu", "GPU-1d2e3f40-5162"},
		{"vendor_x-y.example/class_a-b=d.e", "vendor_x-y.example/class_a-b", "d.e"},
		{"nvidia.com/gpu", NULL, NULL},
		{"=0", NULL, NULL},
		{"nvidia.com/gpu=", NULL, NULL},
		{"nvidia.com/gpu=a=b", NULL, NULL},
		{"nvidia.com/gpu=-0", NULL, NULL},
		{"nvidia.com/gpu=0-", NULL, NULL},
		{"nvidia.com/gpu=a b", NULL, NULL},
		{"nvidia.com=0", NULL, NULL},
		{"nvidia.com/g.pu=0", NULL, NULL},
		{"nvidia.com/gpu/x=0", NULL, NULL},
		{"/gpu=0", NULL, NULL},
		{"-nvidia.com/gpu=0", NULL, NULL},
	};
	for (size_t i = 0; i < COUNT_OF(cases); i++) {
		char kind[64] = "";
		const char *name = NULL;
		int r = cdi_split_name(cases[i].in, kind, sizeof kind, &name);
		if (cases[i].kind)
			CHECK(r == 0 && !strcmp(kind, cases[i].kind) && !strcmp(name, cases[i].name),
			      "%s: r %d, kind \"%s\", name \"%s\"", cases[i].in, r, kind, name ? name : "");
		else
			CHECK(r < 0, "%s: accepted", cases[i].in);
	}
	/* A kind longer than the caller's buffer is refused, not cut. */
	char small[8];
	const char *name;
	CHECK(cdi_split_name("nvidia.com/gpu=0", small, sizeof small, &name) < 0, "a 14-byte kind in 8 bytes");
	CHECK(cdi_split_name("a/b=0", small, sizeof small, &name) == 0 && !strcmp(small, "a/b"), "a/b=0");
}

static const struct unit_case cases[] = {
	{"accepted", case_accepted},
	{"spec-refused", case_spec_refused},
	{"edits-refused", case_edits_refused},
	{"yaml-refused", case_yaml_refused},
	{"qualified-names", case_qualified_names},
};

int main(int argc, char **argv)
{
	return unit_main(argc, argv, cases, COUNT_OF(cases));
}
