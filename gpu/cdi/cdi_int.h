/* gpu/cdi/cdi_int.h — what the CDI files share and no other file: the specs
 * read from the spec directories, defined by cdidirs.c (struct loaded,
 * struct specs, cdi_load_dirs, cdi_specs_free, cdi_known_names) and used by cdi.c to
 * resolve and apply devices, and by cdistale.c (cdi_check_stale, for
 * cdi.c) to find the specs the host has moved away from.  The parser (cdiparse.c) needs nothing from
 * here: cdi.h declares it, for the fuzz target too.  Calls go one way:
 * cdi.c uses cdidirs.c, which uses cdiparse.c. */
#ifndef GPURUN_CDI_INT_H
#define GPURUN_CDI_INT_H

#include <stddef.h>

#include "../../base/base.h"
#include "cdi.h"

/* ---- cdidirs.c ------------------------------------------------------------- */

/* One spec file as read from a directory. */
struct loaded {
	char *file;  /* DIR/NAME */
	size_t prio; /* index of its directory: a higher one wins */
	int ok;
	struct cdi_spec spec;
	struct gerr err;
};

struct specs {
	struct loaded *v;
	size_t n;
};

/* Read every spec of dirs into ss (see cdidirs.c); -1 with err when, run as
 * root, a spec directory or spec is not root's alone. */
int cdi_load_dirs(const struct strv *dirs, struct specs *ss, struct gerr *err);
void cdi_specs_free(struct specs *ss);
/* "vendor.com/class=name" of every device, sorted, deduplicated. */
void cdi_known_names(const struct specs *ss, struct strv *out);

/* ---- cdistale.c ------------------------------------------------------------ */

/* 0 when every device node and mount source that device d of spec l (and
 * the spec's own edits) names is on this host; else -1 with err: one line
 * naming the stale spec and the command that writes it again. */
int cdi_check_stale(const struct loaded *l, const struct cdi_device *d, struct gerr *err);

#endif
