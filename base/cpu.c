/* base/cpu.c — starting a child process on a CPU its creator is not using.
 *
 * Why: a forked child is queued on its parent's CPU, and can wait there
 * until the parent sleeps or a load balance moves it, with another CPU idle
 * all the while.  P1 forks P2 precisely so that P2 sheds its privileges
 * while P1 builds the root; allowed only on the other CPUs, P2 starts at
 * once.  It takes back its parent's whole mask before it execs, so the
 * command runs with the affinity gpurun was given.
 *
 * Not for the decompressor thread: on another CPU its blocks would change
 * CPU at every handoff, where the extracting thread otherwise picks them up
 * warm; its creator yields to it instead (rootfs/unpack/stream.c). */
#include "base.h"

#include <sched.h>

void cpu_spread_init(struct cpu_spread *s)
{
	s->spread = 0;
	CPU_ZERO(&s->all);
	CPU_ZERO(&s->others);
	int cur = sched_getcpu();
	if (cur < 0 || cur >= CPU_SETSIZE || sched_getaffinity(0, sizeof s->all, &s->all) < 0)
		return;
	s->others = s->all;
	CPU_CLR(cur, &s->others);
	s->spread = CPU_COUNT(&s->others) > 0;
}

void cpu_spread_child(const struct cpu_spread *s, pid_t child)
{
	if (s->spread)
		(void)sched_setaffinity(child, sizeof s->others, &s->others);
}

void cpu_spread_restore(const struct cpu_spread *s)
{
	if (s->spread)
		(void)sched_setaffinity(0, sizeof s->all, &s->all);
}
