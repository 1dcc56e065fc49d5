/* ns/exec.h — private to ns/: state shared by the plan executor
 * (ns/exec.c) and the container init (ns/init.c). */
#ifndef GPURUN_EXEC_H
#define GPURUN_EXEC_H

#include "ns.h"

struct exec_state {
	const struct run_config *cfg;
	int rootfd;         /* O_PATH fd of the container root mount */
	const char *libdir; /* $LIBDIR once known */
	const char *libdir32; /* $LIBDIR32 once known */
	struct unpack_job *unpack; /* a tar image's unpack, started ahead */
	struct dir_cache dirs;     /* of the file binds in a row (a GPU's libraries) */
};

/* Run the whole plan (rootfs, mounts, pivot, ldconfig, final remounts). */
int plan_execute(struct exec_state *st, struct gerr *err);

/* P1: everything after clone() — wait for the id maps, run the plan, fork
 * the command, reap.  Never returns. */
__attribute__((noreturn)) void init_main(const struct run_config *cfg, int sync_fd,
					 int err_fd, int status_fd);

#endif
