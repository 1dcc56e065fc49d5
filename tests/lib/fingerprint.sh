# tests/lib/fingerprint.sh — what a container looks like from inside, as
# one text, so that two ways of making it (gpurun, and the shell plan it
# prints) can be compared line by line (tests/lib/fingerprint.bash, for
# tests/plan_run.bats and tests/slurm.bats).  Run by the image's /bin/sh
# (busybox is enough):  sh -c "$(cat fingerprint.sh)" sh NS...
# where NS... are the caller's "name:[id]" namespace links, so that the
# namespaces are printed as "new" or "shared" rather than as ids.
#
# Left out on purpose: the order of the mounts (gpurun opens its bind
# sources first), mount ids and device numbers of anonymous file
# systems (counters), the path of the plan's scratch directory (mktemp's
# name; normalised to /tmp), Seccomp (the plan's documented difference),
# pids and sessions.
echo "== mounts"
while read -r _id _parent _dev _root target opts rest; do
	fstype=${rest#*- }
	super=${fstype#* }
	super=${super#* }
	fstype=${fstype%% *}
	echo "$target $opts $fstype $super"
done </proc/self/mountinfo | sed 's|/tmp/gpurun-plan\.[A-Za-z0-9]*|/tmp|g' | sort
echo "== dev"
find /dev -exec stat -c '%n %F %t:%T %a' {} + 2>/dev/null | sort
echo "== nvidia"
if [ -d /proc/driver/nvidia ]; then find /proc/driver/nvidia | sort; fi
echo "== files"
while read -r _id _parent _dev _root target _; do
	if [ -f "$target" ] && [ -r "$target" ] && [ "${target#/proc/}" = "$target" ] && [ "${target#/sys/}" = "$target" ]; then
		md5sum "$target"
	fi
done </proc/self/mountinfo
# Files the launch writes into the root, not mounts: apt's settings.
if [ -d /etc/apt/apt.conf.d ]; then md5sum /etc/apt/apt.conf.d/*; fi
echo "== ids"
id -u; id -g; id -G
echo "== limits"
cat /proc/self/limits
echo "== status"
grep -E '^(Cap(Inh|Prm|Eff|Bnd|Amb)|NoNewPrivs):' /proc/self/status
echo "== namespaces"
for n in /proc/self/ns/*; do
	name=${n##*/} link=$(readlink "$n") state=new
	for h in "$@"; do [ "$h" = "$link" ] && state=shared; done
	echo "$name $state"
done
echo "== env"
env | sort
echo "== host"
hostname
pwd
echo "== ldconfig"
if [ -x /sbin/ldconfig ]; then /sbin/ldconfig -p 2>&1 | sort; fi
# The cache the image's ldconfig made, put in place by root; nothing left
# of the directory it was made in.
if [ -f /etc/ld.so.cache ]; then stat -c '%n %u:%g %a' /etc/ld.so.cache; fi
ls -a /
