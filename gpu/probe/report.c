/* gpu/probe/report.c — how the smoke probe says what it found: one line
 * per GPU and a summary, or TAP, or one JSON document (docs/json.md).  A
 * verdict's checks each have a stable id and a level; each form says them
 * its way: the text line joins the failures, or else what passed, with
 * "; ", and JSON gives both those lists and the checks themselves. */
#include <stdio.h>
#include <string.h>

#include "smoke.h"

const char *xid_none(int events, int log_read)
{
	return events && log_read ? "no Xid" : events ? "no Xid during the run" : log_read ? "no Xid since boot" : "";
}

static const char *const level_names[] = {"ok", "warn", "fail", "skip"};

/* The length of the UTF-8 sequence at s and its code point, 0 when it is
 * not one (a stray byte, an overlong form, a surrogate). */
static int utf8(const unsigned char *s, unsigned *cp)
{
	int n = s[0] >= 0xf0 && s[0] < 0xf5 ? 4 : s[0] >= 0xe0 ? 3 : s[0] >= 0xc2 && s[0] < 0xe0 ? 2 : 0;
	if (!n)
		return 0;
	unsigned v = s[0] & (0x7f >> n);
	for (int i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		v = v << 6 | (s[i] & 0x3f);
	}
	if ((n == 3 && v < 0x800) || (n == 4 && (v < 0x10000 || v > 0x10ffff)) || (v >= 0xd800 && v < 0xe000))
		return 0;
	*cp = v;
	return n;
}

/* A JSON string, pure ASCII: other characters as \uXXXX, bytes that are
 * not UTF-8 as the text output would show them (\ooo). */
static void json_str(const char *str)
{
	const unsigned char *s = (const unsigned char *)str;
	putchar('"');
	while (*s) {
		unsigned cp;
		int n;
		if (*s == '"' || *s == '\\')
			printf("\\%c", *s++);
		else if (*s < 0x20 || *s == 0x7f)
			printf("\\u%04x", *s++);
		else if (*s < 0x80)
			putchar(*s++);
		else if ((n = utf8(s, &cp))) {
			if (cp >= 0x10000)
				printf("\\u%04x\\u%04x", 0xd800 + ((cp - 0x10000) >> 10),
				       0xdc00 + ((cp - 0x10000) & 0x3ff));
			else
				printf("\\u%04x", cp);
			s += n;
		} else
			printf("\\\\%03o", *s++);
	}
	putchar('"');
}

/* "" is null: a fact the driver did not give. */
static void json_str_null(const char *s)
{
	if (*s)
		json_str(s);
	else
		printf("null");
}

static const char *text_of(const struct verdict *v, int i)
{
	return v->text + v->checks[i].off;
}

/* The failures (fail), or what passed and the warnings (!fail), as a JSON
 * array of strings; a warning's text says it is one. */
static void json_list(const struct verdict *v, int fail)
{
	putchar('[');
	int first = 1;
	for (int i = 0; i < v->nchecks; i++) {
		if ((v->checks[i].level == L_FAIL) != fail)
			continue;
		printf("%s", first ? "" : ",");
		first = 0;
		if (v->checks[i].level == L_WARN) {
			char buf[MAX_SAY + 16];
			snprintf(buf, sizeof buf, "warning: %s", text_of(v, i));
			json_str(buf);
		} else {
			json_str(text_of(v, i));
		}
	}
	putchar(']');
}

static void json_checks(const struct verdict *v)
{
	putchar('[');
	for (int i = 0; i < v->nchecks; i++) {
		printf("%s{\"id\":", i ? "," : "");
		json_str(v->checks[i].id);
		printf(",\"level\":\"%s\",\"text\":", level_names[v->checks[i].level]);
		json_str(text_of(v, i));
		putchar('}');
	}
	putchar(']');
}

static void json_xids(const struct verdict *g)
{
	putchar('[');
	for (int i = 0; i < g->nxids; i++)
		printf("%s{\"xid\":%llu,\"when\":\"%s\",\"count\":%u,\"critical\":%s}", i ? "," : "", g->xids[i].num,
		       g->xids[i].during ? "run" : "boot", g->xids[i].count, g->xids[i].critical ? "true" : "false");
	putchar(']');
}

/* The failures (fail), or else what passed and the warnings, as the text
 * line says them: "; " between them. */
static void print_list(const struct verdict *v, int fail)
{
	int first = 1;
	for (int i = 0; i < v->nchecks; i++) {
		if ((v->checks[i].level == L_FAIL) != fail)
			continue;
		printf("%s%s%s", first ? "" : "; ", v->checks[i].level == L_WARN ? "warning: " : "", text_of(v, i));
		first = 0;
	}
}

/* The warnings, as TAP diagnostics. */
static void tap_warnings(const struct verdict *v)
{
	for (int i = 0; i < v->nchecks; i++)
		if (v->checks[i].level == L_WARN)
			printf("# warning: %s\n", text_of(v, i));
}

static void json_doctor(const struct facts *f, int failed, int warned)
{
	printf("\"doctor\":{\"checks\":[");
	for (int i = 0; i < f->ndoctor; i++) {
		printf("%s{\"id\":", i ? "," : "");
		json_str(f->doctor[i].id);
		printf(",\"name\":");
		json_str(f->doctor[i].name);
		printf(",\"level\":\"%s\",\"text\":", level_names[f->doctor[i].level]);
		json_str(f->doctor[i].text);
		putchar('}');
	}
	printf("],\"failed\":%d,\"warnings\":%d,\"ok\":%s},", failed, warned, failed ? "false" : "true");
}

int report(const struct facts *f, struct verdict *drv, struct verdict *g, int n)
{
	int failed = 0, with_xid = 0, events = 0, doctor_failed = 0, doctor_warned = 0;
	for (int i = 0; i < n; i++) {
		failed += has_level(&g[i], L_FAIL);
		with_xid += g[i].nxids > 0;
		events |= g[i].events;
	}
	for (int i = 0; i < f->ndoctor; i++) {
		doctor_failed += f->doctor[i].level == L_FAIL;
		doctor_warned += f->doctor[i].level == L_WARN;
	}
	int drv_failed = has_level(drv, L_FAIL);
	int ok = !failed && !drv_failed && !doctor_failed;
	if (form == JSON) {
		printf("{\"ok\":%s,", ok ? "true" : "false");
		if (f->ndoctor >= 0)
			json_doctor(f, doctor_failed, doctor_warned);
		printf("\"driver\":{\"kernel_module\":");
		json_str_null(f->kernel);
		printf(",\"libraries\":");
		json_str_null(f->libs);
		printf(",\"nvml\":");
		json_str_null(f->nvml);
		printf(",\"failures\":");
		json_list(drv, 1);
		printf(",\"checks\":");
		json_checks(drv);
		printf(",\"xid_log\":{\"read\":%s,\"note\":", f->log_unread ? "false" : "true");
		json_str_null(f->log_unread ? f->log_unread : "");
		printf("}},\"gpus\":[");
		for (int i = 0; i < n; i++) {
			printf("%s{\"index\":%d,\"name\":", i ? "," : "", i);
			json_str(g[i].name);
			printf(",\"pci_bus_id\":");
			json_str(g[i].bus);
			printf(",\"uuid\":");
			json_str_null(g[i].uuid);
			printf(",\"ok\":%s,\"failures\":", has_level(&g[i], L_FAIL) ? "false" : "true");
			json_list(&g[i], 1);
			printf(",\"notes\":");
			json_list(&g[i], 0);
			printf(",\"checks\":");
			json_checks(&g[i]);
			printf(",\"xid_events\":%s,\"xids\":", g[i].events ? "true" : "false");
			json_xids(&g[i]);
			putchar('}');
		}
		printf("],\"failed\":%d,\"deadline_s\":%g}\n", failed, f->deadline);
		return !ok;
	}
	int t = 0;
	for (int i = 0; i < f->ndoctor; i++) {
		const struct doctor_check *d = &f->doctor[i];
		if (form == TAP)
			printf("%s %d - doctor %s: %s%s\n", d->level == L_FAIL ? "not ok" : "ok", ++t, d->name,
			       d->level == L_WARN ? "warning: " : "", d->text);
		else
			printf("%s  %s: %s\n",
			       d->level == L_OK     ? "ok  "
			       : d->level == L_WARN ? "warn"
						    : "FAIL",
			       d->name, d->text);
	}
	if (f->ndoctor >= 0 && form != TAP)
		printf("doctor: %d failed, %d warning%s\n", doctor_failed, doctor_warned,
		       doctor_warned == 1 ? "" : "s");
	if (drv_failed) {
		if (form == TAP)
			printf("not ok %d - driver: ", ++t);
		else
			printf("driver: FAIL ");
		print_list(drv, 1);
		putchar('\n');
	} else if (form == TAP)
		printf("ok %d - driver %s\n", ++t, f->kernel);
	for (int i = 0; i < n; i++) {
		int bad = has_level(&g[i], L_FAIL);
		if (form == TAP) {
			printf("%s %d - GPU %d (%s, %s%s%s)%s", bad ? "not ok" : "ok", ++t, i, g[i].name, g[i].bus,
			       g[i].uuid[0] ? ", " : "", g[i].uuid, bad ? ": " : "");
			print_list(&g[i], 1);
			putchar('\n');
			tap_warnings(&g[i]);
		} else {
			printf("GPU %d (%s, %s%s%s): %s ", i, g[i].name, g[i].bus, g[i].uuid[0] ? ", " : "", g[i].uuid,
			       bad ? "FAIL" : "ok");
			print_list(&g[i], bad);
			putchar('\n');
		}
	}
	if (form == TAP) {
		if (n && f->log_unread)
			printf("# Xids since boot not checked: %s\n", f->log_unread);
		printf("1..%d\n", t);
	} else if (n) {
		printf("smoke: %d of %d GPU%s ok, driver %s%s", n - failed, n, n == 1 ? "" : "s", f->kernel,
		       drv_failed ? " FAILED" : "");
		if (with_xid)
			printf(", Xids on %d GPU%s", with_xid, with_xid == 1 ? "" : "s");
		else if (*xid_none(events, !f->log_unread))
			printf(", %s", xid_none(events, !f->log_unread));
		if (f->log_unread)
			printf("; Xids since boot not checked: %s", f->log_unread);
		putchar('\n');
	}
	return !ok;
}
