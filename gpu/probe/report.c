/* gpu/probe/report.c — how the smoke probe says what it found: one line
 * per GPU and a summary, or TAP, or one JSON document (docs/json.md).
 * Reasons are kept one a line in a verdict; each form joins them its way. */
#include <stdio.h>
#include <string.h>

#include "smoke.h"

/* What the Xid checks that ran found nothing in: "" when none ran. */
const char *xid_none(int events, int log_read)
{
	return events && log_read ? "no Xid" : events ? "no Xid during the run" : log_read ? "no Xid since boot" : "";
}

static void json_str(const char *s)
{
	putchar('"');
	for (; *s; s++)
		if (*s == '"' || *s == '\\')
			printf("\\%c", *s);
		else if ((unsigned char)*s < 0x20)
			printf("\\u%04x", *s);
		else
			putchar(*s);
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

/* The reasons as a JSON array. */
static void json_list(const char *s)
{
	static char buf[MAX_SAY];
	snprintf(buf, sizeof buf, "%s", s);
	putchar('[');
	int first = 1;
	for (char *save = NULL, *t = strtok_r(buf, "\n", &save); t; t = strtok_r(NULL, "\n", &save)) {
		printf("%s", first ? "" : ",");
		json_str(t);
		first = 0;
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

/* Reasons as the text line says them: "; " between them. */
static void print_list(const char *s)
{
	for (; *s; s++)
		if (*s == '\n')
			fputs("; ", stdout);
		else
			putchar(*s);
}

/* The notes that are warnings, as TAP diagnostics. */
static void tap_warnings(const char *s)
{
	static char buf[MAX_SAY];
	snprintf(buf, sizeof buf, "%s", s);
	for (char *save = NULL, *t = strtok_r(buf, "\n", &save); t; t = strtok_r(NULL, "\n", &save))
		if (!strncmp(t, "warning: ", 9))
			printf("# %s\n", t);
}

int report(const char *kernel, const char *libs, const char *nvml, struct verdict *drv, struct verdict *g, int n,
	   const char *log_unread)
{
	int failed = 0, with_xid = 0, events = 0;
	for (int i = 0; i < n; i++) {
		failed += g[i].fail[0] != '\0';
		with_xid += g[i].nxids > 0;
		events |= g[i].events;
	}
	int ok = !failed && !drv->fail[0];
	if (form == JSON) {
		printf("{\"ok\":%s,\"driver\":{\"kernel_module\":", ok ? "true" : "false");
		json_str_null(kernel);
		printf(",\"libraries\":");
		json_str_null(libs);
		printf(",\"nvml\":");
		json_str_null(nvml);
		printf(",\"failures\":");
		json_list(drv->fail);
		printf(",\"xid_log\":{\"read\":%s,\"note\":", log_unread ? "false" : "true");
		json_str_null(log_unread ? log_unread : "");
		printf("}},\"gpus\":[");
		for (int i = 0; i < n; i++) {
			printf("%s{\"index\":%d,\"name\":", i ? "," : "", i);
			json_str(g[i].name);
			printf(",\"pci_bus_id\":");
			json_str(g[i].bus);
			printf(",\"uuid\":");
			json_str_null(g[i].uuid);
			printf(",\"ok\":%s,\"failures\":", g[i].fail[0] ? "false" : "true");
			json_list(g[i].fail);
			printf(",\"notes\":");
			json_list(g[i].note);
			printf(",\"xid_events\":%s,\"xids\":", g[i].events ? "true" : "false");
			json_xids(&g[i]);
			putchar('}');
		}
		printf("],\"failed\":%d}\n", failed);
		return !ok;
	}
	int t = 0;
	if (drv->fail[0]) {
		if (form == TAP)
			printf("not ok %d - driver: ", ++t);
		else
			printf("driver: FAIL ");
		print_list(drv->fail);
		putchar('\n');
	} else if (form == TAP)
		printf("ok %d - driver %s\n", ++t, kernel);
	for (int i = 0; i < n; i++) {
		if (form == TAP) {
			printf("%s %d - GPU %d (%s, %s%s%s)%s", g[i].fail[0] ? "not ok" : "ok", ++t, i, g[i].name,
			       g[i].bus, g[i].uuid[0] ? ", " : "", g[i].uuid, g[i].fail[0] ? ": " : "");
			print_list(g[i].fail);
			putchar('\n');
			tap_warnings(g[i].note);
		} else {
			printf("GPU %d (%s, %s%s%s): %s ", i, g[i].name, g[i].bus, g[i].uuid[0] ? ", " : "", g[i].uuid,
			       g[i].fail[0] ? "FAIL" : "ok");
			print_list(g[i].fail[0] ? g[i].fail : g[i].note);
			putchar('\n');
		}
	}
	if (form == TAP) {
		if (n && log_unread)
			printf("# Xids since boot not checked: %s\n", log_unread);
		printf("1..%d\n", t);
	} else if (n) {
		printf("smoke: %d of %d GPU%s ok, driver %s%s", n - failed, n, n == 1 ? "" : "s", kernel,
		       drv->fail[0] ? " FAILED" : "");
		if (with_xid)
			printf(", Xids on %d GPU%s", with_xid, with_xid == 1 ? "" : "s");
		else if (*xid_none(events, !log_unread))
			printf(", %s", xid_none(events, !log_unread));
		if (log_unread)
			printf("; Xids since boot not checked: %s", log_unread);
		putchar('\n');
	}
	return !ok;
}
