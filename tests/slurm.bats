#!/usr/bin/env bats
# Inside a Slurm step the step's GPU allocation is the ceiling (docs/slurm.md,
# "The job's GPUs are the ceiling"; gpu/slurm.c), tested against a real
# one-node Slurm that setup_file starts (tests/lib/slurm.bash) with the
# fake four-GPU driver, whose minors are not in PCI order: gres.conf lists
# /dev/nvidia[0-3], so the gres index N is minor N, and minor 0 is gpurun's
# GPU 1, minor 1 its GPU 3.
#
# Slurm's daemons run as root (SlurmUser=root), so the suite runs in the
# root mode; the unprivileged mode is covered there by a job submitted as
# the unprivileged test user, whose gpurun then makes its own user namespace.
#
# The plan that `gpurun --dry-run` prints inside a step, run in that same
# step, must build the container gpurun builds there, allocation included
# (the fingerprint of tests/plan_run.bats, lib/fingerprint.bash).

load lib/common
load lib/gpu
load lib/slurm
load lib/fingerprint

# bats 1.8 cannot skip from setup_file: it leaves the reason to setup().
setup_file() {
	if [[ $GPURUN_TEST_MODE != root || $(id -u) -ne 0 ]]; then
		export SLURM_SKIP="Slurm's daemons run as root here (SlurmUser=root): the root run covers this suite, and submits one job as the unprivileged user"
		return 0
	fi
	command -v slurmctld >/dev/null && command -v slurmd >/dev/null && command -v srun >/dev/null &&
		command -v munged >/dev/null || fail "Slurm is not installed: run 'make deps-test'"
	gpu_setup_file
	FINGERPRINT=$(cat "$BATS_TEST_DIRNAME/lib/fingerprint.sh")
	export FINGERPRINT
	slurm_start "$FAKE4" || fail "the one-node Slurm did not start"
}

teardown_file() {
	slurm_stop
}

setup() {
	if [[ -n ${SLURM_SKIP:-} ]]; then
		skip "$SLURM_SKIP"
	fi
}

teardown() {
	if [[ -n ${PLAN_DIR:-} ]]; then rm -rf "$PLAN_DIR"; fi
	named_step_end
}

# What nvidia-smi -L prints for gpurun's GPU I as the Nth visible one.
smi_line() {
	echo "GPU $2: ${FOUR_MODEL[$1]} (UUID: ${FOUR_UUID[$1]})"
}

# step SRUN-OPTIONS... -- GPURUN-ARGS...: one srun step running gpurun on
# the fake driver.
step() {
	local opts=()
	while [[ $1 != -- ]]; do
		opts+=("$1")
		shift
	done
	shift
	timeout 60 srun --quiet "${opts[@]}" "$GPURUN" --driver-root "$FAKE4" "$@"
}

# assert_step_error LINE: the step failed with gpurun's 125 and its stderr,
# srun's own lines aside, is exactly LINE.
assert_step_error() {
	assert_equal "$status" 125
	assert_equal "$output" ""
	assert_equal "$(grep -v '^srun: ' <<<"$stderr")" "$1"
}

# assert_task_refused LINE: the plugin refused the task before anything
# ran, saying LINE, and only it, of its own (slurmstepd puts
# "slurmstepd-NODE: error: " before it, then says that task_init failed).
assert_task_refused() {
	assert_failure
	assert_output ""
	assert_equal "$(grep 'gpurun' <<<"$stderr" | grep -v 'spank: required plugin gpurun.so: task_init() failed' |
		sed 's/^slurmstepd[^ ]*: error: //')" "$1"
}

# The job of the next step: Slurm numbers jobs one after the other.
next_job() {
	SLURM_JOB=$(($(scontrol show config | sed -n 's/^NEXT_JOB_ID *= *//p')))
}

@test "srun --gres=gpu:2: the container sees exactly the two allocated GPUs, matched by minor" {
	run --separate-stderr step --gres=gpu:2 -- --gpus all "$GLIBC_TAR" nvidia-smi -L
	assert_success
	assert_output "$(smi_line 1 0)
$(smi_line 3 1)"
}

@test "an image's NVIDIA_VISIBLE_DEVICES=all means the allocated GPUs" {
	run --separate-stderr step --gres=gpu:1 -- -e NVIDIA_VISIBLE_DEVICES=all "$GLIBC_TAR" nvidia-smi -L
	assert_success
	assert_output "$(smi_line 1 0)"
}

# gres 0-2 are minors 0-2: GPUs 1, 3 and 0, which in PCI order are 0, 1, 3.
@test "indexes count within the allocation, in PCI order" {
	run --separate-stderr step --gres=gpu:3 -- --gpus 0 "$GLIBC_TAR" nvidia-smi -L
	assert_success
	assert_output "$(smi_line 0 0)"
	run --separate-stderr step --gres=gpu:3 -- --gpus 2 "$GLIBC_TAR" nvidia-smi -L
	assert_success
	assert_output "$(smi_line 3 0)"
}

@test "srun -n 2 --gpus-per-task=1 gives each task a different GPU" {
	run --separate-stderr step -n 2 --gpus-per-task=1 -- --gpus all "$GLIBC_TAR" nvidia-smi -L
	assert_success
	assert_equal "$(sort <<<"$output")" "$(smi_line 1 0)
$(smi_line 3 0)"
}

@test "a job without GPUs gets none, even from an image asking for all" {
	run --separate-stderr step -- -e NVIDIA_VISIBLE_DEVICES=all "$GLIBC_TAR" \
		sh -c 'ls /dev | grep "^nvidia[0-9]"; nvidia-smi -L || true'
	assert_success
	assert_output "No devices were found"
	run --separate-stderr step -- --gpus all "$GLIBC_TAR" sh -c 'ls /dev | grep "^nvidia[0-9]"; nvidia-smi -L || true'
	assert_success
	assert_output "No devices were found"
}

@test "naming a GPU outside the allocation is refused with one line" {
	next_job
	run --separate-stderr step --gres=gpu:2 -- --gpus "${FOUR_UUID[0]}" "$GLIBC_TAR" true
	assert_step_error "gpurun: --gpus: device ${FOUR_UUID[0]} is outside this Slurm step's 2 GPUs (Slurm job $SLURM_JOB on node $(hostname -s): SLURM_STEP_GPUS=0,1 of $SLURM_DIR/gres.conf -> $FAKE4/dev/nvidia0 = GPU 1, $FAKE4/dev/nvidia1 = GPU 3)"
	run --separate-stderr step --gres=gpu:2 -- --gpus device=2 "$GLIBC_TAR" true
	SLURM_JOB=$((SLURM_JOB + 1))
	assert_step_error "gpurun: --gpus: device 2 is outside this Slurm step's 2 GPUs (Slurm job $SLURM_JOB on node $(hostname -s): SLURM_STEP_GPUS=0,1 of $SLURM_DIR/gres.conf -> $FAKE4/dev/nvidia0 = GPU 1, $FAKE4/dev/nvidia1 = GPU 3)"
}

@test "a CDI device outside the allocation is refused with one line; one inside runs" {
	local spec=$BATS_TEST_TMPDIR/cdi
	mkdir -p "$spec"
	"$GPURUN" cdi generate --driver-root "$FAKE4" --output "$spec/nvidia.yaml" || fail "cdi generate failed"
	# GPU 0 is minor 2, which the step's two GPUs (minors 0 and 1) leave out.
	next_job
	run --separate-stderr step --gres=gpu:2 -- --cdi-spec-dir "$spec" --device nvidia.com/gpu=0 "$GLIBC_TAR" true
	assert_step_error "gpurun: --device: device /dev/nvidia2 is outside this Slurm step's 2 GPUs (Slurm job $SLURM_JOB on node $(hostname -s): SLURM_STEP_GPUS=0,1 of $SLURM_DIR/gres.conf -> $FAKE4/dev/nvidia0 = GPU 1, $FAKE4/dev/nvidia1 = GPU 3)"
	run --separate-stderr step --gres=gpu:2 -- --cdi-spec-dir "$spec" --device nvidia.com/gpu=1 "$GLIBC_TAR" \
		sh -c 'ls /dev | grep "^nvidia[0-9]"'
	assert_success
	assert_output nvidia0
}

@test "--dry-run says where the ceiling came from" {
	run --separate-stderr step --gres=gpu:2 -- --dry-run --gpus all "$GLIBC_TAR" true
	assert_success
	assert_line --regexp "^# GPUs bounded by Slurm job [0-9]+ on node $(hostname -s): SLURM_STEP_GPUS=0,1 of $SLURM_DIR/gres.conf -> $FAKE4/dev/nvidia0 = GPU 1, $FAKE4/dev/nvidia1 = GPU 3\$"
}

@test "gpurun info in a step names the ceiling" {
	run --separate-stderr timeout 60 srun --quiet --gres=gpu:1 "$GPURUN" info --driver-root "$FAKE4"
	assert_success
	assert_line --regexp "^Slurm ceiling:  Slurm job [0-9]+ on node $(hostname -s): SLURM_STEP_GPUS=0 of $SLURM_DIR/gres.conf -> $FAKE4/dev/nvidia0 = GPU 1\$"
}

@test "gpurun info in a step gives each GPU its index within the allocation" {
	run --separate-stderr timeout 60 srun --quiet --gres=gpu:2 "$GPURUN" info --driver-root "$FAKE4"
	assert_success
	# gres.conf's minors 0 and 1 are GPUs 1 and 3: --gpus 0 and 1 in the step.
	run awk '/^Device Index:/ { i = $3 } /^Slurm Index:/ { sub(/^Slurm Index: +/, ""); print i " " $0 }' <<<"$output"
	assert_output "$(printf '%s\n' '0 n/a (not allocated to this step)' '1 0' '2 n/a (not allocated to this step)' '3 1')"
}

@test "info --json and list --json in a step name the ceiling and the allocation's indexes" {
	run --separate-stderr timeout 60 srun --quiet --gres=gpu:2 "$GPURUN" info --json --driver-root "$FAKE4"
	assert_success
	python3 -c '
import json, sys
doc = json.loads(sys.argv[1])
assert "SLURM_STEP_GPUS=0,1" in doc["slurm_ceiling"], doc["slurm_ceiling"]
assert [g["slurm_index"] for g in doc["gpus"]] == [None, 0, None, 1], doc["gpus"]' "$output"
	run --separate-stderr timeout 60 srun --quiet --gres=gpu:2 "$GPURUN" list --json --driver-root "$FAKE4" --gpus all
	assert_success
	python3 -c '
import json, sys
doc = json.loads(sys.argv[1])
assert "SLURM_STEP_GPUS=0,1" in doc["slurm_ceiling"], doc["slurm_ceiling"]
assert [(g["index"], g["slurm_index"]) for g in doc["gpus"]] == [(1, 0), (3, 1)], doc["gpus"]
assert all(g["uuid"].startswith("GPU-") and g["bus_location"].startswith("00000000:") for g in doc["gpus"]), doc' "$output"
}

@test "a host NVIDIA_VISIBLE_DEVICES carried into the step selects nothing" {
	NVIDIA_VISIBLE_DEVICES=all run --separate-stderr step --gres=gpu:2 -- "$GLIBC_TAR" \
		sh -c 'ls /dev | grep "^nvidia[0-9]"; echo end'
	assert_success
	assert_output "end"
}

@test "Slurm variables of another node narrow nothing" {
	run --separate-stderr timeout 60 srun --quiet --gres=gpu:1 env SLURMD_NODENAME=elsewhere \
		"$GPURUN" --driver-root "$FAKE4" --gpus all "$GLIBC_TAR" nvidia-smi -L
	assert_success
	assert_output "$(smi_line 0 0)
$(smi_line 1 1)
$(smi_line 2 2)
$(smi_line 3 3)"
}

@test "a gres.conf with AutoDetect stops the launch with one line saying why" {
	local conf=$BATS_TEST_TMPDIR/conf
	mkdir "$conf"
	touch "$conf/slurm.conf"
	printf 'AutoDetect=nvml\nName=gpu File=%s/dev/nvidia[0-3]\n' "$FAKE4" >"$conf/gres.conf"
	SLURM_CONF=$conf/slurm.conf SLURMD_NODENAME=$(hostname -s) SLURM_JOB_ID=1 SLURM_STEP_GPUS=0 \
		run --separate-stderr gpu4 --gpus all "$GLIBC_TAR" true
	assert_gpurun_error 125
	assert_equal "$stderr" "gpurun: Slurm step on $(hostname -s): $conf/gres.conf: line 1: AutoDetect=nvml: the GPUs' device files are not listed, so the allocation cannot be matched to GPUs"
}

@test "a gres.conf reached through a symbolic link is read" {
	local conf=$BATS_TEST_TMPDIR/conf
	mkdir "$conf"
	touch "$conf/slurm.conf"
	printf 'Name=gpu File=%s/dev/nvidia[0-3]\n' "$FAKE4" >"$conf/site-gres.conf"
	ln -s site-gres.conf "$conf/gres.conf"
	SLURM_CONF=$conf/slurm.conf SLURMD_NODENAME=$(hostname -s) SLURM_JOB_ID=1 SLURM_STEP_GPUS=3 \
		run --separate-stderr gpu4 --gpus all "$GLIBC_TAR" nvidia-smi -L
	assert_success
	assert_output "$(smi_line 2 0)"
}

# The mig topology: GPU 0 (minor 0) an A100 in MIG mode, GPU 1 (minor 1) an H100.
@test "MIG devices follow the ceiling: all brings those of allocated GPUs only, another GPU's is refused" {
	local conf=$BATS_TEST_TMPDIR/conf
	mkdir "$conf"
	touch "$conf/slurm.conf"
	printf 'Name=gpu File=%s/dev/nvidia[0-1]\n' "$FAKEMIG" >"$conf/gres.conf"
	export SLURM_CONF=$conf/slurm.conf SLURMD_NODENAME=$(hostname -s) SLURM_JOB_ID=1
	SLURM_STEP_GPUS=0 run --separate-stderr "$GPURUN" list --driver-root "$FAKEMIG" --gpus all
	assert_success
	assert_line /dev/nvidia0
	assert_line --partial /dev/nvidia-caps/
	SLURM_STEP_GPUS=1 run --separate-stderr "$GPURUN" list --driver-root "$FAKEMIG" --gpus all
	assert_success
	assert_line /dev/nvidia1
	refute_line /dev/nvidia0
	refute_line --partial /dev/nvidia-caps/
	SLURM_STEP_GPUS=1 run --separate-stderr "$GPURUN" list --driver-root "$FAKEMIG" \
		--gpus MIG-GPU-a1000000-1111-4222-8333-444455556666/1/0
	assert_gpurun_error 125
	assert_equal "$stderr" "gpurun: --gpus: device MIG-GPU-a1000000-1111-4222-8333-444455556666/1/0 is outside this Slurm step's 1 GPU (Slurm job 1 on node $(hostname -s): SLURM_STEP_GPUS=1 of $conf/gres.conf -> $FAKEMIG/dev/nvidia1 = GPU 1)"
	SLURM_STEP_GPUS=1 run --separate-stderr "$GPURUN" list --driver-root "$FAKEMIG" --gpus 1:0
	assert_gpurun_error 125 "1:0 is outside this Slurm step's 1 GPU"
}

@test "an unprivileged job user gets exactly its GPUs" {
	local user=${GPURUN_TEST_USER:-gpurun-test} cache
	id "$user" >/dev/null 2>&1 || skip "no user $user (tests/run-bats.sh creates it)"
	runuser -u "$user" -- test -r "$GLIBC_TAR" || skip "$user cannot read $GLIBC_TAR"
	# The step runs as the user, gpurun then in its own user namespace;
	# its cache must be the user's.
	cache=$(mktemp -d /tmp/gpurun-slurm-user.XXXXXX)
	chown "$user" "$cache"
	run --separate-stderr runuser -u "$user" -- env GPURUN_CACHE="$cache/cache" \
		timeout 60 srun --quiet --gres=gpu:2 sh -c 'id -u; exec "$@"' sh \
		"$GPURUN" --driver-root "$FAKE4" --gpus all "$GLIBC_TAR" nvidia-smi -L
	rm -rf "$cache"
	assert_success
	assert_output "$(id -u "$user")
$(smi_line 1 0)
$(smi_line 3 1)"
}

@test "scancel of a running step leaves no mount, process or temporary directory" {
	local token=gpurun-slurm-scancel-$$ before=$BATS_TEST_TMPDIR/before
	host_snapshot "$before"
	srun --quiet --gres=gpu:1 --job-name="$token" "$GPURUN" --driver-root "$FAKE4" --gpus all \
		"$GLIBC_TAR" sh -c "echo $token; exec sleep 600" >"$BATS_TEST_TMPDIR/out" 2>&1 &
	local srun_pid=$!
	wait_for_line "$BATS_TEST_TMPDIR/out" "$token" 60
	scancel --name="$token"
	slurm_wait "end of the cancelled job" 30 _slurm_no_jobs
	wait "$srun_pid" || true
	wait_procs_gone "$token" 30
	assert_host_unchanged "$before"
}

@test "eight tasks on one node from a cold cache unpack the image once and all succeed" {
	local cache
	cache=$(mktemp -d /tmp/gpurun-slurm-cache.XXXXXX)
	run --separate-stderr env GPURUN_CACHE="$cache/c" timeout 100 srun --quiet -n 8 --overcommit \
		"$GPURUN" --verbose "$GLIBC_TAR" echo done
	rm -rf "$cache"
	local unpacked from
	unpacked=$(grep -c ': 1 layer, unpacked into the cache$' <<<"$stderr" || true)
	from=$(grep -c ': 1 layer, from the cache$' <<<"$stderr" || true)
	assert_success
	assert_output "$(printf 'done\n%.0s' 1 2 3 4 5 6 7 8)"
	assert_equal "$unpacked $from" "1 7"
}

# ---- the plan made in a step builds the container gpurun builds --------------

# same_in_step USER|"" SRUN-OPTIONS...: one srun step (as USER when one is
# given: root submits it as that user, whose gpurun and plan then make
# their own user namespace) in which every task runs `gpurun --gpus all` on
# the fake driver with the fingerprint as its command (lib/fingerprint.bash),
# then prints the plan of that same launch and runs it.  Each task's files
# land in $PLAN_DIR/TASK: gpurun.txt, plan.txt.sh (the plan), plan.txt,
# their .err, and job (its SLURM_JOB_ID).  Asserts that every task
# succeeded both ways with the same fingerprint, and that the host is as
# it was.
same_in_step() {
	local user=$1 as=() task
	shift
	PLAN_DIR=$(mktemp -d /tmp/gpurun-slurmplan.XXXXXX)
	chmod 0755 "$PLAN_DIR"
	if [[ -n $user ]]; then
		chown "$user" "$PLAN_DIR"
		as=(runuser -u "$user" -- env GPURUN_CACHE="$PLAN_DIR/cache")
	fi
	# A first launch fills the cache: the plan then binds the cached layers.
	"${as[@]}" "$GPURUN" "$GLIBC_TAR" true || fail "the launch failed"
	host_snapshot "$BATS_TEST_TMPDIR/before"
	run --separate-stderr "${as[@]}" timeout 100 srun --quiet "$@" bash -c '
		. "$1"; d=$2/$SLURM_PROCID; shift 2
		mkdir "$d" && echo "$SLURM_JOB_ID" >"$d/job" || exit 1
		inside gpurun "$d/gpurun.txt" "$@" 2>"$d/gpurun.err" || exit 1
		inside plan "$d/plan.txt" "$@" 2>"$d/plan.err"' bash "$TESTS_DIR/lib/fingerprint.bash" "$PLAN_DIR" \
		--driver-root "$FAKE4" --gpus all "$GLIBC_TAR"
	# What went wrong inside the step, for the failure's report.
	cat "$PLAN_DIR"/[0-9]*/*.err >&2 2>/dev/null || true
	assert_success
	host_same "$BATS_TEST_TMPDIR/before"
	for task in "$PLAN_DIR"/[0-9]*; do
		assert_same_fingerprint "$task/gpurun.txt" "$task/plan.txt"
	done
}

# assert_task_gpus TASK STEP_GPUS GPU...: that task's plan says at its head
# that SLURM_STEP_GPUS=STEP_GPUS of gres.conf bounds it, to the GPUs given
# (gpurun's indexes, in gres order), and binds their device nodes and
# /proc/driver/nvidia/gpus entries and no other GPU's; its container (the
# same as gpurun's) has those and no other.
assert_task_gpus() {
	local d=$PLAN_DIR/$1 gpus=$2 i head= nodes=() procs=() fp_nodes=() fp_procs=()
	shift 2
	for i in "$@"; do
		head+="${head:+, }$FAKE4/dev/nvidia${FOUR_MINOR[i]} = GPU $i"
		nodes+=("dev/nvidia${FOUR_MINOR[i]}")
		procs+=("\"\$D\"/proc/driver/nvidia/gpus/${FOUR_BUS[i]} proc/driver/nvidia/gpus/${FOUR_BUS[i]}")
		fp_nodes+=("/dev/nvidia${FOUR_MINOR[i]}")
		fp_procs+=("/proc/driver/nvidia/gpus/${FOUR_BUS[i]}")
	done
	run grep -xF "# GPUs bounded by Slurm job $(cat "$d/job") on node $(hostname -s): SLURM_STEP_GPUS=$gpus of $SLURM_DIR/gres.conf -> $head" "$d/plan.txt.sh"
	assert_success
	local IFS=$'\n'
	# The plan names the driver root once ($D) and binds its files by their
	# path under it (bind_files, bind_dir).
	run grep -cE "^D=$FAKE4 " "$d/plan.txt.sh"
	assert_output 1
	run sort -u < <(grep -E '^bind_files [^ ]+ "\$D"/dev dev ' "$d/plan.txt.sh" | grep -oE ' nvidia[0-9]+( |$)' | sed 's|^ |dev/|; s| $||')
	assert_output "$(sort <<<"${nodes[*]}")"
	run sort -u < <(grep -oE '"\$D"/proc/driver/nvidia/gpus/[^ ]+ proc/driver/nvidia/gpus/[^ ]+' "$d/plan.txt.sh")
	assert_output "$(sort <<<"${procs[*]}")"
	run sort -u < <(sed -n '/^== dev$/,/^== nvidia$/s|^\(/dev/nvidia[0-9]*\) .*|\1|p' "$d/plan.txt")
	assert_output "$(sort <<<"${fp_nodes[*]}")"
	run sort -u < <(sed -n '/^== nvidia$/,/^== files$/p' "$d/plan.txt" | grep -x '/proc/driver/nvidia/gpus/[^/]*')
	assert_output "$(sort <<<"${fp_procs[*]}")"
}

# gres 0 and 1 are minors 0 and 1: GPUs 1 and 3.
@test "srun --gres=gpu:2: the plan made in the step builds the container gpurun builds, with the allocated GPUs only" {
	same_in_step "" --gres=gpu:2
	assert_task_gpus 0 0,1 1 3
}

@test "srun -n 2 --gpus-per-task=1: each task's plan builds its task's container, with that task's GPU only" {
	same_in_step "" -n 2 --gpus-per-task=1
	local a b
	a=$(grep -o 'SLURM_STEP_GPUS=[0-9]' "$PLAN_DIR/0/plan.txt.sh") || fail "task 0's plan names no ceiling"
	b=$(grep -o 'SLURM_STEP_GPUS=[0-9]' "$PLAN_DIR/1/plan.txt.sh") || fail "task 1's plan names no ceiling"
	assert_equal "$(sort <<<"$a
$b")" "SLURM_STEP_GPUS=0
SLURM_STEP_GPUS=1"
	if [[ $a == *=0 ]]; then
		assert_task_gpus 0 0 1
		assert_task_gpus 1 1 3
	else
		assert_task_gpus 0 1 3
		assert_task_gpus 1 0 1
	fi
}

@test "an unprivileged job user's plan made in its step builds the container its gpurun builds, with the allocated GPUs only" {
	local user=${GPURUN_TEST_USER:-gpurun-test}
	id "$user" >/dev/null 2>&1 || skip "no user $user (tests/run-bats.sh creates it)"
	runuser -u "$user" -- test -r "$GLIBC_TAR" || skip "$user cannot read $GLIBC_TAR"
	same_in_step "$user" --gres=gpu:2
	assert_task_gpus 0 0,1 1 3
	# The step was the user's: the plan made a user namespace of its own.
	grep -qx 'user new' "$PLAN_DIR/0/plan.txt" || fail "the plan made no user namespace"
}

# ---- the SPANK plugin: srun --container-image (make spank) -------------------

# fake_srun ARGS...: srun on the four fake GPUs, a minute at most.
fake_srun() {
	env GPURUN_DRIVER_ROOT="$FAKE4" timeout 60 srun --quiet "$@"
}

skip_unless_spank() {
	[[ -f $SLURM_SPANK ]] || skip "no SPANK plugin: build it with 'make spank' (needs libslurm-dev)"
}

@test "srun --container-image --no-container-remap-root runs the command as the job's user (--userns keep-id) with its GPUs" {
	skip_unless_spank
	local user=${GPURUN_TEST_USER:-gpurun-test} cache
	id "$user" >/dev/null 2>&1 || skip "no user $user (tests/run-bats.sh creates it)"
	cache=$(mktemp -d /tmp/gpurun-slurm-user.XXXXXX)
	chown "$user" "$cache"
	# keep-id's HOME: the user's home is not in the image, so the working
	# directory.
	run --separate-stderr runuser -u "$user" -- env GPURUN_CACHE="$cache/c" GPURUN_DRIVER_ROOT="$FAKE4" \
		timeout 60 srun --quiet --gres=gpu:2 --container-image="$GLIBC_TAR" --no-container-remap-root \
		--container-workdir=/tmp/w sh -c 'id -u; id -g; echo "HOME=$HOME"; nvidia-smi -L'
	rm -rf "$cache"
	assert_success
	assert_output "$(id -u "$user")
$(id -g "$user")
HOME=/tmp/w
$(smi_line 1 0)
$(smi_line 3 1)"
}

@test "srun --container-image with --gpus-per-task: each task is its own container with its own GPU" {
	skip_unless_spank
	run --separate-stderr fake_srun -n 2 --gpus-per-task=1 \
		--container-image="$GLIBC_TAR" sh -c 'nvidia-smi -L; readlink /proc/self/ns/pid'
	assert_success
	assert_equal "$(grep '^GPU' <<<"$output" | sort)" "$(smi_line 1 0)
$(smi_line 3 0)"
	# Two pid namespaces, neither the host's.
	local ns
	ns=$(grep '^pid:' <<<"$output" | sort -u)
	assert_equal "$(wc -l <<<"$ns")" 2
	refute grep -qxF "$(readlink /proc/self/ns/pid)" <<<"$ns"
}

@test "srun --container-image without GPUs gives the container none, even with NVIDIA_VISIBLE_DEVICES=all" {
	skip_unless_spank
	run --separate-stderr env GPURUN_DRIVER_ROOT="$FAKE4" NVIDIA_VISIBLE_DEVICES=all timeout 60 srun --quiet \
		--container-image="$GLIBC_TAR" --container-env=NVIDIA_VISIBLE_DEVICES \
		sh -c 'ls /dev | grep "^nvidia[0-9]"; echo end'
	assert_success
	assert_output "end"
}

@test "the --container-* options: mounts, workdir, env, read-only" {
	skip_unless_spank
	echo canary >"$BATS_TEST_TMPDIR/file"
	run --separate-stderr env GPURUN_DRIVER_ROOT="$FAKE4" GPURUN_SLURM_TEST=from-host timeout 60 srun --quiet \
		--container-image="$GLIBC_TAR" --container-mounts="$BATS_TEST_TMPDIR/file:/mnt/f:ro" \
		--container-workdir=/opt --container-env=GPURUN_SLURM_TEST --container-readonly \
		sh -c 'cat /mnt/f; pwd; echo "$GPURUN_SLURM_TEST"; touch /x 2>/dev/null || echo read-only'
	assert_success
	assert_output "canary
/opt
from-host
read-only"
}

@test "a --container-mounts item with flags other than ro or rw stops the task with one line" {
	skip_unless_spank
	run --separate-stderr fake_srun --container-image="$GLIBC_TAR" \
		--container-mounts="$BATS_TEST_TMPDIR:/mnt:ro+rprivate" echo ran
	assert_task_refused "gpurun: --container-mounts: $BATS_TEST_TMPDIR:/mnt:ro+rprivate: want SRC[:DST[:ro|rw]]"
}

@test "srun --container-name keeps what a step wrote for the next step of the name" {
	skip_unless_spank
	local name=keep$BATS_TEST_NUMBER
	run --separate-stderr fake_srun \
		--container-image="$GLIBC_TAR" --container-name="$name" sh -c 'echo kept > /root/f'
	assert_success
	run --separate-stderr fake_srun \
		--container-image="$GLIBC_TAR" --container-name="$name" cat /root/f
	assert_success
	assert_output kept
	run --separate-stderr fake_srun \
		--container-image="$GLIBC_TAR" --container-name="$name:create" true
	assert_failure
	assert_stderr_partial "gpurun: --name $name:create: container $name exists already"
	"$GPURUN" rm "$name"
}

@test "srun -n 2 --container-name: the step's tasks share one container" {
	skip_unless_spank
	local name=share$BATS_TEST_NUMBER sync=$BATS_TEST_TMPDIR/sync
	mkdir "$sync"
	# Each task writes its pid namespace where the other can see it, and
	# waits (a bounded loop on that state) until both have.
	run --separate-stderr fake_srun -n 2 \
		--container-image="$GLIBC_TAR" --container-name="$name" --container-mounts="$sync:/sync" \
		sh -c 'readlink /proc/self/ns/pid > /sync/$SLURM_PROCID; i=0
			while [ "$(ls /sync | wc -l)" -lt 2 ] && [ $i -lt 300 ]; do i=$((i + 1)); sleep 0.1; done
			cat /sync/0 /sync/1'
	assert_success
	[[ ${#lines[@]} -eq 4 ]] || fail "want two lines from each task: $output"
	assert_equal "$(sort -u <<<"$output" | wc -l)" 1
	"$GPURUN" rm "$name"
}

# named_step_start NAME: a step of --container-name=NAME in the background,
# whose command writes /tmp/mark in its container and its pid namespace to
# $NAMED_SYNC/pidns (a host directory mounted on /sync), says "ready", and
# runs until named_step_end creates $NAMED_SYNC/go (a bounded loop on that
# state: no sleep of a guessed length decides anything).
named_step_start() {
	NAMED_NAME=$1 NAMED_SYNC=$BATS_TEST_TMPDIR/sync
	mkdir "$NAMED_SYNC"
	env GPURUN_DRIVER_ROOT="$FAKE4" timeout 100 srun --quiet --container-image="$GLIBC_TAR" \
		--container-name="$NAMED_NAME" --container-mounts="$NAMED_SYNC:/sync" \
		sh -c 'echo made-by-the-first-step >/tmp/mark; readlink /proc/self/ns/pid >/sync/pidns
			echo ready >/sync/ready; i=0
			while [ ! -e /sync/go ] && [ $i -lt 900 ]; do i=$((i + 1)); sleep 0.1; done' \
		>"$BATS_TEST_TMPDIR/first.out" 2>&1 &
	NAMED_PID=$!
	wait_for_line "$NAMED_SYNC/ready" ready 60 || fail "the first step did not start: $(cat "$BATS_TEST_TMPDIR/first.out")"
}

# named_step_end: let the first step end, and check it ended well; then
# remove the kept container.  From teardown too, for a test that failed
# halfway.
named_step_end() {
	[[ -n ${NAMED_PID:-} ]] || return 0
	local pid=$NAMED_PID
	NAMED_PID=
	touch "$NAMED_SYNC/go"
	wait "$pid" || fail "the first step failed: $(cat "$BATS_TEST_TMPDIR/first.out")"
	"$GPURUN" rm "$NAMED_NAME" >/dev/null || fail "gpurun rm $NAMED_NAME failed"
}

@test "srun --container-name=NAME:exec runs its command in the container a running step made" {
	skip_unless_spank
	named_step_start exec$BATS_TEST_NUMBER
	run --separate-stderr fake_srun \
		--container-image="$GLIBC_TAR" --container-name="$NAMED_NAME:exec" \
		sh -c 'cat /tmp/mark; readlink /proc/self/ns/pid'
	assert_success
	assert_output "made-by-the-first-step
$(cat "$NAMED_SYNC/pidns")"
	named_step_end
}

# pyxis needs no image to join a running container: gpurun exec NAME.
@test "srun --container-name=NAME:exec without --container-image runs its command in the running container" {
	skip_unless_spank
	named_step_start exec$BATS_TEST_NUMBER
	run --separate-stderr fake_srun \
		--container-name="$NAMED_NAME:exec" --container-workdir=/etc \
		sh -c 'cat /tmp/mark; readlink /proc/self/ns/pid; pwd; echo "job $SLURM_JOB_ID"'
	assert_success
	assert_equal "$(sed -n 1,3p <<<"$output")" "made-by-the-first-step
$(cat "$NAMED_SYNC/pidns")
/etc"
	assert_line --index 3 --regexp '^job [0-9]+$'
	# Nothing running: gpurun exec's one line.
	named_step_end
	run --separate-stderr fake_srun \
		--container-name="gone$BATS_TEST_NUMBER:exec" true
	assert_step_error "gpurun: no container gone$BATS_TEST_NUMBER (gpurun ps lists them)"
}

@test "srun --container-name=NAME without --container-image starts from the kept container" {
	skip_unless_spank
	local name=start$BATS_TEST_NUMBER
	run --separate-stderr fake_srun \
		--container-image="$GLIBC_TAR" --container-name="$name" sh -c 'echo kept > /root/f'
	assert_success
	# No image: pyxis's pattern, the kept container's own (gpurun start).
	run --separate-stderr fake_srun --container-name="$name" \
		sh -c 'cat /root/f; echo again >> /root/f'
	assert_success
	assert_output kept
	run --separate-stderr fake_srun \
		--container-name="$name:no_exec" cat /root/f
	"$GPURUN" rm "$name"
	assert_success
	assert_output "kept
again"
}

@test "srun --container-name=NAME without --container-image, of a name never made, is refused with one line" {
	skip_unless_spank
	local name=noimg$BATS_TEST_NUMBER
	run --separate-stderr fake_srun --container-name="$name" true
	assert_step_error "gpurun: start: no container $name (gpurun ps lists them); gpurun run --name $name IMAGE makes one"
	if "$GPURUN" ps | grep -q "^$name "; then fail "the refused step made container $name"; fi
}

@test "srun --container-name=NAME:create without --container-image is refused with one line" {
	skip_unless_spank
	local name=create$BATS_TEST_NUMBER
	run --separate-stderr fake_srun --container-name="$name:create" true
	assert_task_refused "gpurun: --container-name=$name:create needs --container-image: a container is made from an image (without :create, a kept container starts from the image it was made from)"
}

@test "srun --container-name=NAME:exec with no step running it is refused with one line" {
	skip_unless_spank
	local name=exec$BATS_TEST_NUMBER
	# Kept, but not running: exec joins only a running container.
	env GPURUN_DRIVER_ROOT="$FAKE4" timeout 60 srun --quiet --container-image="$GLIBC_TAR" \
		--container-name="$name" true || fail "the first step failed"
	run --separate-stderr fake_srun \
		--container-image="$GLIBC_TAR" --container-name="$name:exec" echo ran
	"$GPURUN" rm "$name" >/dev/null
	assert_step_error "gpurun: --name $name:exec: container $name is not running (gpurun ps)"
	# Nor one that was never made.
	run --separate-stderr fake_srun \
		--container-image="$GLIBC_TAR" --container-name="never$BATS_TEST_NUMBER:exec" echo ran
	assert_step_error "gpurun: --name never$BATS_TEST_NUMBER:exec: container never$BATS_TEST_NUMBER is not running (gpurun ps)"
}

@test "srun --container-name=NAME:no_exec while a step runs the container is refused with one line" {
	skip_unless_spank
	named_step_start noexec$BATS_TEST_NUMBER
	run --separate-stderr fake_srun \
		--container-image="$GLIBC_TAR" --container-name="$NAMED_NAME:no_exec" echo ran
	assert_step_error "gpurun: --name $NAMED_NAME:no_exec: container $NAMED_NAME is running, and a second run on its layer is refused (one overlay per layer); without :no_exec this launch joins it"
	named_step_end
}

@test "GPURUN_CONTAINER_IMAGE in the environment stands for --container-image" {
	skip_unless_spank
	run --separate-stderr env GPURUN_DRIVER_ROOT="$FAKE4" GPURUN_CONTAINER_IMAGE="$GLIBC_TAR" \
		timeout 60 srun --quiet --gres=gpu:1 nvidia-smi -L
	assert_success
	assert_output "$(smi_line 1 0)"
}

@test "PYXIS_CONTAINER_IMAGE in the environment stands for --container-image, as pyxis reads it" {
	skip_unless_spank
	run --separate-stderr env GPURUN_DRIVER_ROOT="$FAKE4" PYXIS_CONTAINER_IMAGE="$GLIBC_TAR" \
		timeout 60 srun --quiet --gres=gpu:1 sh -c 'nvidia-smi -L; readlink /proc/self/ns/pid'
	assert_success
	assert_line --index 0 "$(smi_line 1 0)"
	refute_line "$(readlink /proc/self/ns/pid)"
}

# in_image VAR=VALUE... -- SRUN-OPTIONS... -- COMMAND...: one task in the
# glibc image with those variables in the job's environment.
in_image() {
	local vars=() opts=()
	while [[ $1 != -- ]]; do
		vars+=("$1")
		shift
	done
	shift
	while [[ $1 != -- ]]; do
		opts+=("$1")
		shift
	done
	shift
	env GPURUN_DRIVER_ROOT="$FAKE4" "${vars[@]}" timeout 60 srun --quiet --container-image="$GLIBC_TAR" \
		"${opts[@]}" "$@"
}

# What `touch /x` says in the image: "rw" or "ro".
rootfs_mode() {
	in_image "$@" -- sh -c 'touch /x 2>/dev/null && echo rw || echo ro'
}

@test "GPURUN_ and PYXIS_ switch variables read 1, true, yes, y as on and 0, false, no, n as off" {
	skip_unless_spank
	local v
	for v in 1 true yes y; do
		for var in GPURUN_CONTAINER_READONLY PYXIS_CONTAINER_READONLY; do
			run --separate-stderr rootfs_mode "$var=$v" --
			assert_success
			assert_output ro
		done
		run --separate-stderr rootfs_mode "PYXIS_CONTAINER_WRITABLE=$v" --
		assert_output rw
	done
	for v in 0 false no n; do
		for var in GPURUN_CONTAINER_READONLY PYXIS_CONTAINER_READONLY; do
			run --separate-stderr rootfs_mode "$var=$v" --
			assert_success
			assert_output rw
		done
		run --separate-stderr rootfs_mode "GPURUN_CONTAINER_WRITABLE=$v" --
		assert_output ro
	done
	# pyxis's switch for the entrypoint is named after --container-entrypoint:
	# 0 runs the command alone (docker.tar's Entrypoint is /bin/sh -c, which
	# makes "echo hi" print an empty line).
	local img
	img=$(oci_fixture docker.tar)
	run --separate-stderr env GPURUN_DRIVER_ROOT="$FAKE4" PYXIS_CONTAINER_ENTRYPOINT=n timeout 60 srun --quiet \
		--container-image="$img" echo hi
	assert_success
	assert_output hi
}

@test "a switch variable that is not 1, true, yes, y, 0, false, no or n is refused with one line naming it" {
	skip_unless_spank
	local var
	for var in GPURUN_CONTAINER_READONLY PYXIS_CONTAINER_MOUNT_HOME GPURUN_NO_CONTAINER_ENTRYPOINT; do
		run --separate-stderr in_image "$var=on" -- -- echo ran
		assert_task_refused "gpurun: $var=on: a switch is 1, true, yes or y, or 0, false, no or n"
	done
}

@test "the command line wins over GPURUN_ variables, and GPURUN_ variables over PYXIS_ ones" {
	skip_unless_spank
	run --separate-stderr in_image PYXIS_CONTAINER_WORKDIR=/p -- -- pwd
	assert_output /p
	run --separate-stderr in_image GPURUN_CONTAINER_WORKDIR=/g PYXIS_CONTAINER_WORKDIR=/p -- -- pwd
	assert_output /g
	run --separate-stderr in_image GPURUN_CONTAINER_WORKDIR=/g PYXIS_CONTAINER_WORKDIR=/p -- --container-workdir=/c -- pwd
	assert_output /c
	run --separate-stderr rootfs_mode GPURUN_CONTAINER_READONLY=0 PYXIS_CONTAINER_READONLY=1 --
	assert_output rw
	run --separate-stderr rootfs_mode GPURUN_CONTAINER_READONLY=1 -- --container-writable
	assert_output rw
	run --separate-stderr rootfs_mode PYXIS_CONTAINER_WRITABLE=1 -- --container-readonly
	assert_output ro
}

@test "a variable of a pyxis option gpurun does not have is refused with one line naming it" {
	skip_unless_spank
	run --separate-stderr in_image PYXIS_CONTAINER_SAVE=/tmp/saved.sqsh -- -- echo ran
	assert_task_refused "gpurun: PYXIS_CONTAINER_SAVE: stands for pyxis's --container-save, which has no counterpart in gpurun"
	# Off is what gpurun does: nothing to refuse.
	run --separate-stderr in_image PYXIS_CONTAINER_ENTRYPOINT_LOG=0 -- -- echo ran
	assert_success
	assert_output ran
}

@test "sbatch --container-image: the steps of the batch script run in the image" {
	skip_unless_spank
	run --separate-stderr env GPURUN_DRIVER_ROOT="$FAKE4" timeout 100 sbatch --wait --quiet \
		--output="$BATS_TEST_TMPDIR/out" --gres=gpu:1 --container-image="$GLIBC_TAR" \
		--wrap 'srun nvidia-smi -L'
	assert_success
	assert_equal "$(cat "$BATS_TEST_TMPDIR/out")" "$(smi_line 1 0)"
}

# Slurm hands sbatch's options on to the srun of each step as options: with
# the opposite on srun's command line they are a pair, and the pair's
# winner (docs/slurm.md's table) wins.
@test "sbatch --container-readonly and srun --container-writable are a pair: read-only wins" {
	skip_unless_spank
	run --separate-stderr env GPURUN_DRIVER_ROOT="$FAKE4" timeout 100 sbatch --wait --quiet \
		--output="$BATS_TEST_TMPDIR/out" --container-image="$GLIBC_TAR" --container-readonly \
		--wrap 'srun sh -c "touch /x 2>/dev/null && echo rw || echo ro"
			srun --container-writable sh -c "touch /x 2>/dev/null && echo rw || echo ro"'
	assert_success
	assert_equal "$(cat "$BATS_TEST_TMPDIR/out")" "ro
ro"
}

@test "the nightly jobs of docs/nightly.md check the node with all its GPUs, then sum up" {
	local out=$BATS_TEST_TMPDIR/night node id
	node=$(hostname -s)
	# The jobs' own output files go to the directory they are submitted from.
	cd "$BATS_TEST_TMPDIR"
	run --separate-stderr env GPURUN="$GPURUN" GPURUN_DRIVER_ROOT="$FAKE4" \
		sh "$BATS_TEST_DIRNAME/../examples/nightly/gpu-nightly-submit.sh" p "$out"
	assert_success
	id=$output
	slurm_wait "end of the summary job $id" 120 bash -c '[[ -z $(squeue -h -j "$1" -o %i 2>/dev/null) ]]' _ "$id"
	run cat "$out/nodes" "$out/summary.txt"
	assert_output "$node
$node ok"
	run python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
print(d["ok"], d["doctor"]["failed"], [g["pci_bus_id"] for g in d["gpus"] if g["ok"]])' "$out/$node.json"
	assert_output "True 0 ['${FOUR_BUS[0]}', '${FOUR_BUS[1]}', '${FOUR_BUS[2]}', '${FOUR_BUS[3]}']"
}

@test "a pyxis option gpurun does not have is refused with one line naming it" {
	skip_unless_spank
	run --separate-stderr timeout 60 srun --quiet --container-image="$GLIBC_TAR" --container-save=/tmp/x.sqsh true
	assert_failure
	assert_equal "$(grep '^srun: error: gpurun' <<<"$stderr")" \
		"srun: error: gpurun: --container-save: pyxis's option has no counterpart in gpurun"
}

@test "srun --container-image --no-container-entrypoint runs the command without the image's Entrypoint" {
	skip_unless_spank
	local img
	img=$(oci_fixture docker.tar) # Entrypoint /bin/sh -c
	# With it, "echo hi" is sh -c echo hi: echo prints an empty line.  The
	# image asks for every GPU: the job has none, so it gets the driver
	# files alone.
	run --separate-stderr fake_srun --container-image="$img" echo hi
	assert_success
	assert_output ""
	run --separate-stderr fake_srun --container-image="$img" \
		--no-container-entrypoint echo hi
	assert_success
	assert_output hi
}
