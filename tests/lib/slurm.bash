# tests/lib/slurm.bash — a real one-node Slurm for tests/slurm.bats (load
# after lib/common and lib/gpu) and tests/bench/slurm.sh (sourced, with
# GPURUN set and no bats):
#   slurm_start DRIVER_ROOT   in setup_file: munged, slurmctld and slurmd
#                             with everything private, until sinfo says idle
#   slurm_stop                in teardown_file: every job cancelled, every
#                             daemon stopped by its pid file, the dir removed
#
# Everything lives in one private directory, SLURM_DIR: munged's key,
# socket, pid and log (slurm.conf's AuthInfo=socket= points the daemons and
# clients at it, so the host's /etc/munge and /run/munge are never used),
# slurm.conf, gres.conf, state, spool, pid and log files.  Non-default ports,
# so a site's own Slurm on the machine is not disturbed.  gres.conf names
# the fake driver's four device nodes, /dev/nvidia[0-3] of DRIVER_ROOT, in
# minor order: gres index N is minor N, which is not gpurun's index (PCI
# order) on the `four` topology.  Slurm runs as root (SlurmUser=root),
# with proctrack/linuxproc and task/none: no cgroups, nothing of the host's
# init system.  Reference: /work/shared/reference/slurm.md.

SLURM_CTLD_PORT=${SLURM_CTLD_PORT:-36817}
SLURM_D_PORT=${SLURM_D_PORT:-36818}
# The plugin `make spank` builds, found from this file: outside bats there
# is no TESTS_DIR.  Without a fork: a suite sources this for every test.
SLURM_LIB_DIR=${BASH_SOURCE[0]%/*}
[[ $SLURM_LIB_DIR == "${BASH_SOURCE[0]}" ]] && SLURM_LIB_DIR=$PWD
[[ $SLURM_LIB_DIR == /* ]] || SLURM_LIB_DIR=$PWD/$SLURM_LIB_DIR
SLURM_SPANK=${SLURM_SPANK:-$SLURM_LIB_DIR/../../spank/gpurun.so}

# slurm_wait WHAT SECS CMD...: until CMD succeeds (a state, never a sleep of
# a guessed length); on a timeout, the daemons' logs go to stderr.
slurm_wait() {
	local what=$1 secs=$2 i
	shift 2
	for ((i = 0; i < secs * 10; i++)); do
		"$@" >/dev/null 2>&1 && return 0
		sleep 0.1
	done
	echo "slurm: no $what after ${secs}s" >&2
	tail -n 20 "$SLURM_DIR"/*.log >&2 2>/dev/null
	return 1
}

_slurm_idle() {
	[[ $(sinfo -h -o %T 2>/dev/null) == idle ]]
}

_slurm_no_jobs() {
	[[ -z $(squeue -h -o %i 2>/dev/null) ]]
}

# _pid_alive FILE: the process of a pid file still runs.
_pid_alive() {
	[[ -s $1 ]] && kill -0 "$(cat "$1")" 2>/dev/null
}

# _proc_gone PID: exited (a zombie counts: init reaps it in its own time).
_proc_gone() {
	local state
	state=$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null) || return 0
	[[ -z $state || $state == Z ]]
}

slurm_start() {
	local root=$1 host
	host=$(hostname -s)
	SLURM_DIR=$(mktemp -d /tmp/gpurun-slurm.XXXXXX) || return 1
	export SLURM_DIR
	chmod 0755 "$SLURM_DIR"
	mkdir -p "$SLURM_DIR/munge" "$SLURM_DIR/state" "$SLURM_DIR/spool"
	# munged wants its own user to own its key and socket directory.
	head -c 1024 /dev/urandom >"$SLURM_DIR/munge/munge.key"
	chmod 0400 "$SLURM_DIR/munge/munge.key"
	chown -R munge:munge "$SLURM_DIR/munge"
	chmod 0711 "$SLURM_DIR/munge"
	runuser -u munge -- munged --key-file="$SLURM_DIR/munge/munge.key" \
		--socket="$SLURM_DIR/munge/munge.sock" --pid-file="$SLURM_DIR/munge/munged.pid" \
		--log-file="$SLURM_DIR/munge/munged.log" --seed-file="$SLURM_DIR/munge/munged.seed" ||
		return 1
	slurm_wait "munge credential" 10 \
		bash -c "munge -S '$SLURM_DIR/munge/munge.sock' -n | unmunge -S '$SLURM_DIR/munge/munge.sock'" ||
		return 1

	printf 'Name=gpu File=%s/dev/nvidia[0-3]\n' "$root" >"$SLURM_DIR/gres.conf"
	cat >"$SLURM_DIR/slurm.conf" <<EOF
ClusterName=gpuruntest
SlurmctldHost=$host
SlurmctldPort=$SLURM_CTLD_PORT
SlurmdPort=$SLURM_D_PORT
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$SLURM_DIR/munge/munge.sock
StateSaveLocation=$SLURM_DIR/state
SlurmdSpoolDir=$SLURM_DIR/spool
SlurmctldPidFile=$SLURM_DIR/slurmctld.pid
SlurmdPidFile=$SLURM_DIR/slurmd.pid
SlurmctldLogFile=$SLURM_DIR/slurmctld.log
SlurmdLogFile=$SLURM_DIR/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
GresTypes=gpu
ReturnToService=2
MpiDefault=none
SwitchType=switch/none
JobCompType=jobcomp/none
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
NodeName=$host CPUs=$(nproc) RealMemory=2000 Gres=gpu:4 State=UNKNOWN
PartitionName=p Nodes=ALL Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES
EOF
	# The SPANK plugin, when `make spank` built it: srun --container-image.
	if [[ -f $SLURM_SPANK ]]; then
		printf 'required %s gpurun=%s\n' "$SLURM_SPANK" "$GPURUN" >"$SLURM_DIR/plugstack.conf"
		echo "PlugStackConfig=$SLURM_DIR/plugstack.conf" >>"$SLURM_DIR/slurm.conf"
		chmod 0644 "$SLURM_DIR/plugstack.conf"
	fi
	chmod 0644 "$SLURM_DIR/slurm.conf" "$SLURM_DIR/gres.conf"
	export SLURM_CONF="$SLURM_DIR/slurm.conf"
	slurmctld -f "$SLURM_CONF" || return 1
	slurmd -f "$SLURM_CONF" || return 1
	slurm_wait "idle node (sinfo)" 90 _slurm_idle
}

slurm_stop() {
	local f pid
	if [[ -z ${SLURM_DIR:-} || ! -d $SLURM_DIR ]]; then
		return 0
	fi
	if _pid_alive "$SLURM_DIR/slurmctld.pid"; then
		scancel --full --quiet --partition=p 2>/dev/null
		slurm_wait "end of every job" 30 _slurm_no_jobs
	fi
	# slurmd first (it ends its steps), then the controller (and its
	# slurmscriptd child), munged last: the others talk through it.
	for f in slurmd.pid slurmctld.pid munge/munged.pid; do
		if _pid_alive "$SLURM_DIR/$f"; then
			pid=$(cat "$SLURM_DIR/$f")
			kill -TERM "$pid"
			slurm_wait "exit of ${f%.pid}" 30 _proc_gone "$pid"
		fi
	done
	rm -rf "$SLURM_DIR"
}
