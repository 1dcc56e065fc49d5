/* gpu/smoke.h — `gpurun smoke`: the run that gpu/probe/smoke.c makes. */
#ifndef GPURUN_GPU_SMOKE_H
#define GPURUN_GPU_SMOKE_H

/* argv of `smoke [OPTIONS] [IMAGE]` (argv[0] "smoke") -> the argv of the
 * `run` that executes the probe on those GPUs, starting with "run";
 * *n its length.
 * --help prints the usage and exits 0; a bad argument exits 125. */
char **smoke_run_argv(int argc, char **argv, const char *driver_root, int *n);

#endif
