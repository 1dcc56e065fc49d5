/* base/json.h — what the verbs with --json (info, list, doctor, cache ls)
 * share: a string from outside as a JSON value, and the printing of a
 * document.  The schema is docs/json.md. */
#ifndef GPURUN_BASE_JSON_H
#define GPURUN_BASE_JSON_H

#include <jansson.h>

#include "base.h"

/* s as a JSON string (NULL: null).  A string that is not UTF-8, which
 * jansson refuses, is given as sbuf_add_visible shows it (\ooo for the
 * bytes that are not). */
json_t *json_text(const char *s);
/* Add key: json_text(s) to obj. */
void json_put_text(json_t *obj, const char *key, const char *s);
/* Print doc on stdout as one line of ASCII (every other character, control
 * bytes included, as a \u escape: nothing a terminal acts on), then a
 * newline; the reference to doc is released.  0, or -1 with err. */
int json_print(json_t *doc, struct gerr *err);

#endif
