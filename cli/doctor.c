/* cli/doctor.c — `gpurun doctor`: one verdict per thing users hit most,
 * each saying what to change, from the checks of ns/, gpu/ and rootfs/
 * (collected through base/check.c); printed as they come, "ok    NAME:
 * text", "warn  NAME: text" or "FAIL  NAME: text", then the tally, or as one
 * JSON document (--json, docs/json.md).  Exit status 1 when any check
 * failed (gpurun itself did not). */
#include "cli.h"

#include "../base/json.h"
#include "../gpu/gpu.h"
#include "../ns/ns.h"
#include "../rootfs/rootfs.h"

/* clang-format off */
static const struct opt doctor_opts[] = {
	{V_GPUS, "gpus", NULL, 0, OPT_VALUE, "SPEC", "also check these GPUs end to end, as run's --gpus"}, JSON_OPT,
	DRIVER_ROOT_OPT, HELP_OPT, {0}};
static const struct opt_use doctor_uses[] = {{"doctor", NULL, doctor_opts, "", 1, 0}};
/* clang-format on */

/* One verdict as it comes; its text names driver files, CDI specs and
 * cached images, shown, never sent raw to the terminal. */
static void say_line(const struct check_item *it)
{
	static const char *const tags[] = {"ok  ", "warn", "FAIL"};
	struct sbuf line = {0};
	sbuf_printf(&line, "%s  %s: ", tags[it->level], it->name);
	sbuf_add_visible(&line, it->text);
	puts(line.s);
	sbuf_free(&line);
	fflush(stdout);
}

/* --json: the verdicts collected and the tally, as docs/json.md says. */
static int print_json(const struct checks *ck, struct gerr *err)
{
	static const char *const levels[] = {"ok", "warn", "fail"};
	json_t *doc = json_object(), *list = json_array();
	for (size_t i = 0; i < ck->nitems; i++) {
		json_t *c = json_object();
		json_object_set_new(c, "id", json_string(check_id(ck->items[i].name)));
		json_put_text(c, "name", ck->items[i].name);
		json_object_set_new(c, "level", json_string(levels[ck->items[i].level]));
		json_put_text(c, "text", ck->items[i].text);
		json_array_append_new(list, c);
	}
	json_object_set_new(doc, "checks", list);
	json_object_set_new(doc, "failed", json_integer(ck->failed));
	json_object_set_new(doc, "warnings", json_integer(ck->warned));
	json_object_set_new(doc, "ok", json_boolean(!ck->failed));
	return json_print(doc, err);
}

static int doctor_verb(const struct verb *v, int argc, char **argv, const char *driver_root)
{
	const char *gpus = NULL, *val;
	const struct opt *o;
	struct checks ck = {.say = say_line};
	int json = 0;
	struct opt_state s = OPT_STATE(argc, argv);
	for (int r; (r = verb_next(&s, v, doctor_opts, &o, &val));) {
		if (r == 2)
			return usage_fail(v, "doctor: unexpected argument %s", val);
		switch (o->id) {
		case V_DRIVER_ROOT: driver_root = val; break;
		case V_GPUS: gpus = val; break;
		case V_JSON: json = 1; break;
		}
	}
	if (json)
		ck.say = NULL;
	struct gerr err = {0};
	_cleanup_free_ char *cache = cache_doctor(&ck);
	if (ns_doctor(&ck, cache, &err) < 0)
		gerr_die(&err);
	gpu_doctor(&ck, driver_root, gpus);
	if (json && print_json(&ck, &err) < 0)
		gerr_die(&err);
	if (!json)
		printf("%u failed, %u warning%s\n", ck.failed, ck.warned, ck.warned == 1 ? "" : "s");
	int failed = ck.failed != 0;
	checks_free(&ck);
	return failed;
}

const struct verb verb_doctor = {"doctor", doctor_verb, doctor_uses, COUNT_OF(doctor_uses), 1};
