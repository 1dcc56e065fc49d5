/* base/json.c — the JSON strings and documents of the verbs with --json
 * (base/json.h): text from outside always becomes a valid, escaped JSON
 * string, and what reaches stdout is pure ASCII. */
#include "json.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

json_t *json_text(const char *s)
{
	if (!s)
		return json_null();
	json_t *v = json_string(s);
	if (v)
		return v;
	/* Not UTF-8 (a file name, a driver root's file): shown as messages
	 * show it, so the document stays valid and says what it could. */
	_cleanup_free_ char *shown = xvisible(s);
	v = json_string(shown);
	return v ? v : json_string("");
}

void json_put_text(json_t *obj, const char *key, const char *s)
{
	json_object_set_new(obj, key, json_text(s));
}

int json_print(json_t *doc, struct gerr *err)
{
	char *text = json_dumps(doc, JSON_ENSURE_ASCII | JSON_PRESERVE_ORDER | JSON_COMPACT);
	json_decref(doc);
	if (!text)
		return gerr_set(err, ENOMEM, "write the JSON document");
	int r = puts(text) == EOF || fflush(stdout) != 0 ? gerr_set(err, errno, "write the JSON document") : 0;
	free(text);
	return r;
}
