/* ns/op_net.c — the new UTS and network namespaces' steps: the host name
 * (--hostname) and the loopback interface (--net none), how P1 sets each
 * and the step the plan prints for it. */
#include "ophome.h"

#include <errno.h>
#include <net/if.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

static int run_hostname(struct exec_state *st, struct op *op, const char *dst, struct gerr *err)
{
	(void)st;
	(void)dst;
	if (sethostname(op->src, strlen(op->src)) < 0)
		return gerr_set(err, errno, "sethostname %s", op->src);
	return 0;
}

static void describe_hostname(const struct plan_view *v, const struct op *op, struct sbuf *b)
{
	(void)v;
	/* Not through /proc/sys/kernel/hostname: only the host's root may
	 * write it, the root of a user namespace may not. */
	sbuf_puts(b, "hostname ");
	sbuf_shquote(b, op->src);
}

const struct op_home op_home_hostname = {run_hostname, describe_hostname, 0};

static int lo_up(struct gerr *err)
{
	_cleanup_fd_ int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	struct ifreq ifr = {0};
	if (s < 0)
		return gerr_set(err, errno, "socket for lo");
	snprintf(ifr.ifr_name, sizeof ifr.ifr_name, "lo");
	if (ioctl(s, SIOCGIFFLAGS, &ifr) < 0)
		return gerr_set(err, errno, "get flags of lo");
	ifr.ifr_flags |= IFF_UP | IFF_RUNNING;
	if (ioctl(s, SIOCSIFFLAGS, &ifr) < 0)
		return gerr_set(err, errno, "bring lo up");
	return 0;
}

static int run_loopback(struct exec_state *st, struct op *op, const char *dst, struct gerr *err)
{
	(void)st;
	(void)op;
	(void)dst;
	return lo_up(err);
}

static void describe_loopback(const struct plan_view *v, const struct op *op, struct sbuf *b)
{
	(void)v;
	(void)op;
	sbuf_puts(b, "ip link set lo up");
}

const struct op_home op_home_loopback = {run_loopback, describe_loopback, 0};
