#!/usr/bin/env bats
# The printed plan runs.  For each shape of launch, `gpurun --dry-run ... >
# plan.sh; sh plan.sh` must build the same container as gpurun itself: the
# same fingerprint taken inside (tests/lib/fingerprint.sh: mounts with their
# flags and data, /dev, /proc/driver/nvidia, injected files, ids,
# capabilities, no_new_privs, new namespaces, environment, host name,
# working directory, resource limits, apt's settings, ldconfig -p), the
# command's exit status, and nothing left on the host.  --verbose prints the
# same lines as --dry-run.  As root each run happens inside a throw-away
# unshare, so a broken plan cannot reach the host's namespaces;
# unprivileged the plan makes its own user namespace.  Allowed differences,
# named at the top of every plan: the seccomp filter (not fingerprinted),
# and with it, with one id mapped, gpurun's success for setgroups, set*id
# and chown to another id, where the plan's calls fail (the fingerprint
# makes none); gpurun's init as pid 1 (pids are not fingerprinted); -t's
# pty and its relay, which are gpurun's (the -t test compares the plans).

load lib/common
load lib/gpu
load lib/fingerprint
load lib/registry

# The heading of the plan's hardening block (ns/show.c).
HARDENING='# Hardening the walkthrough does not have'

setup_file() {
	require_gpurun
	common_images
	GLIBC_TGZ=$(fixture glibc.tar.gz)
	FINGERPRINT=$(cat "$BATS_TEST_DIRNAME/lib/fingerprint.sh")
	export GLIBC_TGZ FINGERPRINT
}

# same_container ARGS... IMAGE: gpurun and its plan make the same container,
# and the host is left as it was.
same_container() {
	local d=${RUNAS:+$SUBDIR}
	d=${d:-$BATS_TEST_TMPDIR}
	# A first launch fills the cache: the plan then binds the cached layers.
	# shellcheck disable=SC2086
	${RUNAS:+as_subuser} "$GPURUN" "$@" ${ENTRY:-} true || fail "the launch failed"
	host_snapshot "$d/before"
	inside gpurun "$d/gpurun.txt" "$@" 2>"$d/gpurun.err" || fail "gpurun failed: $(cat "$d/gpurun.err")"
	inside plan "$d/plan.txt" "$@" 2>"$d/plan.err" || fail "the plan failed: $(cat "$d/plan.err")"
	host_same "$d/before"
	assert_same_fingerprint "$d/gpurun.txt" "$d/plan.txt"
}

@test "a busybox archive: the plan builds the container gpurun builds" {
	same_container "$BUSYBOX_TGZ"
}

@test "a glibc archive: the plan builds the container gpurun builds" {
	same_container "$GLIBC_TGZ"
}

@test "a directory image: the plan builds the container gpurun builds" {
	same_container "$BUSYBOX_DIR"
}

@test "an OCI image from the cache: the plan binds its cached layers as gpurun does" {
	local oci
	oci=$(oci_fixture oci) || skip "no OCI fixture here"
	# Its Entrypoint is /bin/sh -c; its User 1000:1000 and WorkingDir
	# /data come from the cached config.
	ENTRY=" " same_container --gpus void "$oci"
}

@test "--name: the plan mounts the kept container's layer over the cached layers as gpurun does" {
	same_container --name kept "$BUSYBOX_TGZ"
}

@test "--no-cache: the plan unpacks the archive with tar as gpurun unpacks it" {
	same_container --no-cache "$BUSYBOX_TGZ"
}

@test "file and directory volumes, rw and ro, with sources under /tmp" {
	local v
	v=$(mktemp -d /tmp/gpurun-planvol.XXXXXX)
	PLANVOL=$v # teardown removes it when the test fails first
	mkdir "$v/dir" && echo data >"$v/dir/f" && echo file >"$v/file"
	same_container -v "$v/dir:/data" -v "$v/dir:/data-ro:ro" -v "$v/file:/etc/motd" -v "$v/file:/opt/f:ro" "$BUSYBOX_TGZ"
	rm -rf "$v"
}

@test "-w, -u 1000:1000: the command's ids, groups, capabilities and directory" {
	same_container -w /work/here -u 1000:1000 "$BUSYBOX_TGZ"
}

@test "-e K=V and -e K (the host's value): the command's environment" {
	PLAN_FROM_HOST="host's value" same_container -e PLAN_SET="one two" -e PLAN_FROM_HOST "$BUSYBOX_TGZ"
	grep -qx "PLAN_FROM_HOST=host's value" "$BATS_TEST_TMPDIR/plan.txt" || fail "the host's value did not reach the plan's command"
}

@test "-u NAME: the ids the image's /etc/passwd gives that name" {
	same_container -u alice "$BUSYBOX_TGZ"
	# alice is 1000:1000 there.
	assert_equal "$(sed -n '/^== ids$/{n;N;p}' "$BATS_TEST_TMPDIR/plan.txt")" "1000
1000"
}

@test "an image of a docker save archive of two, picked with @NAME:TAG" {
	local two
	two=$(oci_fixture docker-two.tar) || skip "no docker save fixture here"
	same_container "$two@gpurun/two:2"
	# The fingerprint reads no file of the image: its own command says
	# which image the plan built.
	"$GPURUN" --dry-run "$two@gpurun/two:2" cat /etc/which >"$BATS_TEST_TMPDIR/which.sh"
	local wrap=()
	if [[ $(id -u) -eq 0 ]]; then wrap=(unshare --mount --uts --ipc --pid --fork); fi
	run "${wrap[@]}" sh "$BATS_TEST_TMPDIR/which.sh"
	assert_success
	assert_output two
}

@test "a registry image (docker://REF), pulled by its first launch: the plan binds its cached layers" {
	registry_require_tools || skip "no local registry here (make deps-test)"
	registry_start P none
	registry_push P "oci:$(oci_fixture oci):latest" gpurun/plan:latest
	# Entrypoint /bin/sh -c, User 1000:1000 and WorkingDir /data, from the
	# config the pull cached.
	export CURL_CA_BUNDLE=$REG_CA SSL_CERT_FILE=$REG_CA
	ENTRY=" " same_container --gpus void "docker://$REG_P_HOST/gpurun/plan:latest"
}

@test "--platform linux/arm64 of a multi-platform registry image: the plan builds from that platform's image" {
	[[ $(uname -m) == x86_64 ]] || skip "the index holds linux/amd64 and linux/arm64 images"
	registry_require_tools || skip "no local registry here (make deps-test)"
	registry_start P none
	# The arm64 entry is the amd64 image's layers with a config of its own
	# (GPURUN_ARCH=arm64 in its Env), so it runs here.
	make_multiarch_layout "$(oci_fixture oci)" "$BATS_TEST_TMPDIR/multi"
	registry_push P "oci:$BATS_TEST_TMPDIR/multi:latest" gpurun/multi:latest --all
	export CURL_CA_BUNDLE=$REG_CA SSL_CERT_FILE=$REG_CA
	ENTRY=" " same_container --gpus void --platform linux/arm64 "docker://$REG_P_HOST/gpurun/multi:latest"
	grep -qx GPURUN_ARCH=arm64 "$BATS_TEST_TMPDIR/plan.txt" || fail "the plan's container is not the arm64 entry's"
}

@test "--read-only, --net none and --hostname" {
	same_container --read-only --net none --hostname plan-box "$BUSYBOX_TGZ"
}

@test "the plan exits with the command's status" {
	local d=$BATS_TEST_TMPDIR
	"$GPURUN" "$BUSYBOX_TGZ" true
	"$GPURUN" --dry-run "$BUSYBOX_TGZ" sh -c 'exit 7' >"$d/plan.sh"
	local wrap=()
	if [[ $(id -u) -eq 0 ]]; then wrap=(unshare --mount --uts --ipc --pid --fork); fi
	run "${wrap[@]}" sh "$d/plan.sh"
	assert_equal "$status" 7
}

@test "--verbose prints the lines of --dry-run, as the steps run" {
	local d=$BATS_TEST_TMPDIR v
	v=$(mktemp -d /tmp/gpurun-planvol.XXXXXX)
	PLANVOL=$v # teardown removes it when the test fails first
	"$GPURUN" "$BUSYBOX_TGZ" true
	"$GPURUN" --dry-run -v "$v:/v:ro" --read-only -w /w "$BUSYBOX_TGZ" true >"$d/dry.txt"
	"$GPURUN" --verbose -v "$v:/v:ro" --read-only -w /w "$BUSYBOX_TGZ" true 2>"$d/verbose.txt"
	rmdir "$v"
	sed -n 's/^+ //p' "$d/verbose.txt" >"$d/steps.txt"
	run diff -u "$d/dry.txt" "$d/steps.txt"
	assert_success
}

@test "the plan of an image without /bin/sh says at its top why it cannot run, and does not" {
	local d=$BATS_TEST_TMPDIR img
	img=$(image_copy busybox)
	rm "$img/bin/sh"
	"$GPURUN" --dry-run "$img" /bin/true >"$d/plan.sh"
	local why="gpurun plan: cannot run as a script: the image has no /bin/sh, which the plan runs after pivot_root"
	# Said before the first step, by the line that stops it.
	assert_equal "$(grep -n -m1 -F "echo '$why' >&2; exit 125" "$d/plan.sh" | cut -d: -f1)" \
		"$(grep -n -m1 '^S=' "$d/plan.sh" | cut -d: -f1 | awk '{ print $1 - 1 }')"
	run sh "$d/plan.sh"
	assert_equal "$status" 125
	assert_output "$why"
}

@test "--verbose prints the lines of --dry-run with --gpus 0 -u alice: ldconfig's line with her ids" {
	local d=$BATS_TEST_TMPDIR
	fake_in_tmp one
	"$GPURUN" "$GLIBC_TGZ" true
	"$GPURUN" --dry-run --driver-root "$FAKE_ROOT" --gpus 0 -u alice "$GLIBC_TGZ" true >"$d/dry.txt"
	"$GPURUN" --verbose --driver-root "$FAKE_ROOT" --gpus 0 -u alice "$GLIBC_TGZ" true 2>"$d/verbose.txt"
	sed -n 's/^+ //p' "$d/verbose.txt" >"$d/steps.txt"
	run diff -u "$d/dry.txt" "$d/steps.txt"
	assert_success
	if [[ $(id -u) -eq 0 ]]; then
		grep -q "^after_pivot 1000:1000 '--reuid=1000 --regid=1000 --groups=1000,44' " "$d/dry.txt" ||
			fail "ldconfig does not get alice's ids and groups"
	fi
}

# blog_plans: the plans of the walkthrough's own launch (-u 1000:1000
# --gpus 0 --caps utility, in blog.sh) and of --gpus 0 with the default
# capabilities (default.sh), on the one-GPU fake driver.
blog_plans() {
	fake_in_tmp one
	"$GPURUN" "$GLIBC_TGZ" true
	"$GPURUN" --dry-run --driver-root "$FAKE_ROOT" -u 1000:1000 --gpus 0 --caps utility "$GLIBC_TGZ" nvidia-smi -L \
		>"$BATS_TEST_TMPDIR/blog.sh"
	"$GPURUN" --dry-run --driver-root "$FAKE_ROOT" --gpus 0 "$GLIBC_TGZ" nvidia-smi -L >"$BATS_TEST_TMPDIR/default.sh"
}

@test "the plan reads in the walkthrough's numbered sections, in order, the hardening block apart" {
	blog_plans
	local plan=$BATS_TEST_TMPDIR/blog.sh
	run grep -o '^# [0-9]\. [A-Za-z_]*' "$plan"
	assert_output "# 1. New
# 2. The
# 3. The
# 4. The
# 5. pivot_root
# 6. Drop"
	# One line each; the hardening block after the standard mounts,
	# before the GPU.
	assert_equal "$(grep -c '^#    ' "$plan")" 0
	local std hard gpu
	std=$(grep -n '^# 3\. ' "$plan" | cut -d: -f1)
	hard=$(grep -n "^$HARDENING" "$plan" | cut -d: -f1)
	gpu=$(grep -n '^# 4\. ' "$plan" | cut -d: -f1)
	[[ -n $hard && $std -lt $hard && $hard -lt $gpu ]] || fail "hardening at line $hard, not between 3 ($std) and 4 ($gpu)"
	# The steps first, then the functions they call; the driver's files
	# are copied from the driver root as the plan runs, with no body.
	local steps fn
	steps=$(grep -n '^steps() {$' "$plan" | cut -d: -f1)
	fn=$(grep -n '^inroot() {$' "$plan" | cut -d: -f1)
	[[ $steps -lt $fn ]] || fail "steps at $steps, functions at $fn"
	assert_equal "$(grep -c '^body_\(params\|version\|registry\)' "$plan")" 0
	grep -q '^driver_params proc/driver/nvidia/params ' "$plan" || fail "no driver_params step"
	# The steps' function is called by the script's last line.
	[[ $(tail -n 3 "$plan" | head -n 1) =~ (^|"; ")steps$ ]] || fail "the last line does not call steps"
}

@test "the plan's steps are short: no line over 160 characters, the driver root named once" {
	blog_plans
	# --caps all: the steps with the longest paths, a comment above one.
	"$GPURUN" --dry-run --driver-root "$FAKE_ROOT" --gpus all --caps all "$GLIBC_TGZ" true >"$BATS_TEST_TMPDIR/all.sh"
	grep -q '^# EGL sees only the selected GPUs$' "$BATS_TEST_TMPDIR/all.sh" || fail "no comment above the long step"
	local f
	for f in blog default all; do
		run awk 'length > 160' "$BATS_TEST_TMPDIR/$f.sh"
		assert_output ""
		assert_equal "$(grep -c "^D=$FAKE_ROOT " "$BATS_TEST_TMPDIR/$f.sh")" 1
		assert_equal "$(grep -c "$FAKE_ROOT" "$BATS_TEST_TMPDIR/$f.sh")" 1
	done
}

@test "the driver's libraries are one step and their SONAME links another, going on over continuation lines" {
	blog_plans
	local plan=$BATS_TEST_TMPDIR/default.sh
	assert_equal "$(grep -c '^bind_files ro,nosuid,nodev "$D"/usr/lib/x86_64-linux-gnu ' "$plan")" 1
	assert_equal "$(grep -c '^link_in .* libnvidia-ml\.so\.1 ' "$plan")" 1
	# Every library of the default capabilities is on that one step.
	local lib
	for lib in libcuda.so libnvidia-ml.so libnvidia-ptxjitcompiler.so libnvidia-nvvm.so; do
		sed -n '/^bind_files .*"$D"\/usr\/lib\/x86_64-linux-gnu /,/[^\\]$/p' "$plan" | grep -qE "[[:space:]]$lib\.550\.54\.14( |\$)" || fail "$lib is not on the step"
	done
	run awk 'length > 160' "$plan"
	assert_output ""
}

# plan_size FILE: "LINES CHARACTERS" of a plan less the steps of its
# hardening block, which follow the host rather than gpurun: docker's
# masked paths where this kernel has them, and a read-only remount for
# each mount the host has below /sys (here cgroup v1's eleven; a systemd
# host has tracefs, configfs, pstore...).  The block's heading counts.
plan_size() {
	awk -v hardening="$HARDENING" 'index($0, hardening) == 1 { h = 1; n++; c += length($0) + 1; next }
		h && /^#/ { h = 0 }
		!h { n++; c += length($0) + 1 }
		END { print n, c }' "$1"
}

# The sizes of issue 38's two launches: the one-GPU fake driver, the glibc
# image not cached yet.  The blog's launch was 211 lines and 14,330
# characters, --gpus 0 16,677 characters (as root, less the hardening
# block's steps); about 101, 7,600 and 8,800 since the helpers bind a
# directory's files in one step (bind_files) and the plan prints a comment
# only where a step needs one.  These bounds keep what was won; the test
# after this one holds the issue's own targets.
blog_sizes() {
	local d=$BATS_TEST_TMPDIR
	GPURUN_CACHE=$d/empty "$GPURUN" --driver-root "$FAKE_ROOT" --dry-run -u 1000:1000 --gpus 0 --caps utility \
		"$GLIBC_TGZ" nvidia-smi -L >"$d/blog.sh"
	GPURUN_CACHE=$d/empty "$GPURUN" --driver-root "$FAKE_ROOT" --dry-run --gpus 0 "$GLIBC_TGZ" nvidia-smi -L >"$d/default.sh"
	echo "$(plan_size "$d/blog.sh") $(plan_size "$d/default.sh")"
}

@test "the plans of the blog's launch and of --gpus 0 stay within their sizes, no line over 160 characters" {
	fake_in_tmp one
	local d=$BATS_TEST_TMPDIR lines chars default_lines default_chars
	read -r lines chars default_lines default_chars <<<"$(blog_sizes)"
	# Unprivileged, one id mapped: the user namespaces and apt's file.
	local max_lines=104 max_blog=7700 max_default=8900
	if [[ $(id -u) -ne 0 ]]; then max_lines=113 max_blog=8270 max_default=9470; fi
	[[ $lines -le $max_lines && $chars -le $max_blog ]] || fail "the blog's plan: $lines lines, $chars characters"
	[[ $default_chars -le $max_default ]] || fail "the --gpus 0 plan: $default_chars characters"
	run awk 'length > 160' "$d/blog.sh" "$d/default.sh"
	assert_output ""
}

@test "as root, the blog's launch is at most 120 lines and 8,000 characters, --gpus 0 at most 10,000, as issue 38 measures" {
	skip_unless_root "the blog's launch runs as root (sudo)"
	fake_in_tmp one
	# Its measure: the whole plan, hardening included, the kit under /tmp,
	# the image not in the cache.  The image is named through a link under
	# /tmp, so that where this checkout lies does not count.
	local d=$BATS_TEST_TMPDIR cache lines chars
	cache=$(mktemp -d /tmp/gpurun-c.XXXXXX)
	ln -s "$GLIBC_TGZ" "$cache/glibc.tar.gz"
	GPURUN_CACHE=$cache "$GPURUN" --driver-root "$FAKE_ROOT" --dry-run -u 1000:1000 --gpus 0 --caps utility \
		"$cache/glibc.tar.gz" nvidia-smi -L >"$d/blog.sh"
	GPURUN_CACHE=$cache "$GPURUN" --driver-root "$FAKE_ROOT" --dry-run --gpus 0 "$cache/glibc.tar.gz" nvidia-smi -L >"$d/default.sh"
	rm -rf "$cache"
	lines=$(wc -l <"$d/blog.sh") chars=$(wc -c <"$d/blog.sh")
	[[ $lines -le 120 && $chars -le 8000 ]] || fail "the blog's plan: $lines lines, $chars characters"
	chars=$(wc -c <"$d/default.sh")
	[[ $chars -le 10000 ]] || fail "the --gpus 0 plan: $chars characters"
	run awk 'length > 160' "$d/blog.sh" "$d/default.sh"
	assert_output ""
}

@test "the plans' sizes leave out the host's own mounts below /sys" {
	skip_unless_root "a private mount namespace with one more mount below /sys"
	fake_in_tmp one
	local dir
	for dir in /sys/kernel/tracing /sys/kernel/config /sys/fs/fuse/connections /sys/kernel/debug /sys/kernel/mm; do
		[[ -d $dir ]] && ! mountpoint -q "$dir" && break
		dir=
	done
	[[ -n $dir ]] || skip "no directory below /sys without a mount on it"
	local before after
	before=$(blog_sizes)
	export -f blog_sizes plan_size
	after=$(GPURUN=$GPURUN FAKE_ROOT=$FAKE_ROOT GLIBC_TGZ=$GLIBC_TGZ BATS_TEST_TMPDIR=$BATS_TEST_TMPDIR HARDENING=$HARDENING \
		unshare -m --propagation private bash -c 'mount -t tmpfs gpurun-test "$1" && blog_sizes' _ "$dir")
	grep -q "^remount ro,nosuid,nodev,noexec .*${dir#/}" "$BATS_TEST_TMPDIR/blog.sh" ||
		fail "the plan in that namespace does not remount $dir"
	assert_equal "$after" "$before"
}

@test "the plan defines the shell functions of ns/plan.sh its steps call, each once, and no other" {
	blog_plans
	local name n=0 plan=$BATS_TEST_TMPDIR/blog.sh
	for name in $(sed -n 's/^\([a-z_]*\)() .*/\1/p' "$BATS_TEST_DIRNAME/../ns/plan.sh"); do
		case $(grep -c "^$name() " "$plan") in
		1) n=$((n + 1)) ;;
		0) if grep -qw -- "$name" "$plan"; then fail "$name is called but not defined"; fi ;;
		*) fail "$name is defined twice" ;;
		esac
	done
	[[ $n -ge 10 ]] || fail "only $n functions of ns/plan.sh defined in the plan"
	# Not called: not printed (the blog's launch binds no file recursively).
	assert_equal "$(grep -c '^rbind_file() ' "$plan")" 0
}

@test "every shell function and variable a plan defines is used by its steps or another function" {
	blog_plans
	"$GPURUN" --dry-run -u 65534:65534 -v /tmp:/data:ro --read-only "$GLIBC_TGZ" true >"$BATS_TEST_TMPDIR/nogpu.sh"
	local plan name code
	for plan in blog default nogpu; do
		# Comments left out: they name what they describe.
		code=$(sed -e '/^#/d' -e 's/   # .*//' "$BATS_TEST_TMPDIR/$plan.sh")
		for name in $(sed -n -e 's/^\([a-z_]*\)() .*/\1/p' -e 's/^\([A-Z_]*\)=.*/\1/p' <<<"$code"); do
			[[ $(grep -ow -- "$name" <<<"$code" | wc -l) -ge 2 ]] || fail "$plan: $name is defined, never used"
		done
	done
	# A launch without a GPU has none of the driver's helpers.
	run grep -c '^driver_[a-z]*() ' "$BATS_TEST_TMPDIR/nogpu.sh"
	assert_output 0
}

@test "the plan's first line names the host's tools its steps run: tar, awk, hostname, ip only where they do" {
	blog_plans
	"$GPURUN" --dry-run "$GLIBC_TGZ" true >"$BATS_TEST_TMPDIR/nogpu.sh"
	"$GPURUN" --dry-run --no-cache "$GLIBC_TGZ" true >"$BATS_TEST_TMPDIR/nocache.sh"
	"$GPURUN" --dry-run --hostname h --net none "$GLIBC_TGZ" true >"$BATS_TEST_TMPDIR/uts.sh"
	local plan tool code
	for plan in blog nogpu nocache uts; do
		code=$(sed -e '/^#/d' -e 's/   # .*//' "$BATS_TEST_TMPDIR/$plan.sh")
		for tool in tar awk hostname ip; do
			if grep -qE "(^|[ ;(])$tool " <<<"$code"; then
				sed -n 2p "$BATS_TEST_TMPDIR/$plan.sh" | grep -qw "$tool" || fail "$plan runs $tool, its first line does not say so"
			else
				sed -n 2p "$BATS_TEST_TMPDIR/$plan.sh" | grep -qvw "$tool" || fail "$plan names $tool, which it does not run"
			fi
		done
	done
	run sed -n 2p "$BATS_TEST_TMPDIR/blog.sh"
	assert_output --partial "with util-linux, coreutils and awk."
	run sed -n 2p "$BATS_TEST_TMPDIR/uts.sh"
	assert_output --partial "with util-linux, coreutils, hostname and iproute2 (ip)."
}

# fake_in_tmp NAME: FAKE_ROOT, as root a copy of that fake driver root
# under /tmp (a plan's scratch must not hide bind sources there), removed
# by the test; unprivileged (no mknod for its device nodes) the driver root
# where it was built.
fake_in_tmp() {
	local src
	src=$(fake_driver "$1") || skip "no fake NVIDIA driver (build it as root: tests/run-bats.sh)"
	FAKE_ROOT=$src
	if [[ $(id -u) -eq 0 ]]; then
		FAKE_TMP=$(mktemp -d /tmp/gpurun-planfake.XXXXXX)
		cp -a "$src/." "$FAKE_TMP/"
		FAKE_ROOT=$FAKE_TMP
	fi
}

teardown() {
	registry_stop_all
	if [[ -n "${FAKE_TMP:-}" ]]; then rm -rf "$FAKE_TMP"; fi
	if [[ -n "${PLANVOL:-}" ]]; then rm -rf "$PLANVOL"; fi
	if [[ -n "${SUBDIR:-}" ]]; then rm -rf "$SUBDIR"; fi
}

@test "--gpus 0 on a fake driver (under /tmp as root): devices, libraries, /proc/driver/nvidia, ldconfig" {
	fake_in_tmp one
	same_container --driver-root "$FAKE_ROOT" --gpus 0 "$GLIBC_TGZ"
}

@test "--gpus 0 -u 1000:1000 --read-only on a fake driver: ldconfig as the command's user, its cache put in place" {
	fake_in_tmp one
	same_container --driver-root "$FAKE_ROOT" --gpus 0 -u 1000:1000 --read-only "$GLIBC_TGZ"
	grep -q 'libnvidia-ml.so.1 (libc6,x86-64)' "$BATS_TEST_TMPDIR/plan.txt" || fail "ldconfig -p does not list the driver"
}

@test "--gpus all --caps all on a fake driver (under /tmp as root)" {
	fake_in_tmp four
	same_container --driver-root "$FAKE_ROOT" --gpus all --caps all "$GLIBC_TGZ"
}

@test "--gpus none on a fake driver (under /tmp as root): the driver's files, no GPU" {
	fake_in_tmp four
	same_container --driver-root "$FAKE_ROOT" --gpus none "$GLIBC_TGZ"
	grep -q '^/dev/nvidiactl ' "$BATS_TEST_TMPDIR/plan.txt" || fail "no driver files"
	if grep -q '^/dev/nvidia[0-9]' "$BATS_TEST_TMPDIR/plan.txt"; then fail "a GPU's device node"; fi
}

# hostile_plan absolute|last|climbing: a busybox directory image whose mount
# targets are symlinks to a host canary directory (absolute: /etc, a
# directory on the way; last: /tmp, the target itself; or climbing with
# ..); the plan must refuse with one line and write nothing there.
hostile_plan() {
	local how=$1 d=$BATS_TEST_TMPDIR img canary
	img=$(image_copy busybox)
	canary=$(mktemp -d /tmp/gpurun-plancanary.XXXXXX)
	mkdir "$canary/etc" "$canary/tmp"
	rm -rf "$img/etc" "$img/tmp"
	if [[ $how == absolute ]]; then
		ln -s "$canary/etc" "$img/etc"
		mkdir "$img/tmp"
	elif [[ $how == last ]]; then
		mkdir "$img/etc"
		ln -s "$canary/tmp" "$img/tmp"
	else
		ln -s "../../../../../../../../..$canary/tmp" "$img/tmp"
		ln -s "$canary/etc" "$img/etc"
	fi
	"$GPURUN" --dry-run "$img" /bin/true >"$d/plan.sh"
	host_snapshot "$d/before"
	local wrap=()
	if [[ $(id -u) -eq 0 ]]; then wrap=(unshare --mount --uts --ipc --pid --fork); fi
	run --separate-stderr "${wrap[@]}" sh "$d/plan.sh"
	run_status=$status run_stderr=$stderr
	host_same "$d/before"
	run find "$canary" -mindepth 2
	assert_output ""
	rm -rf "$canary"
	assert_equal "$run_status" 125
}

@test "a plan refuses, in one line, a mount target that is an absolute symlink to a host path" {
	hostile_plan absolute
	assert_equal "$run_stderr" "gpurun plan: refused: a symlink in the image sends etc out of the new root"
}

@test "a plan refuses, in one line, a mount target that is itself an absolute symlink to a host path" {
	hostile_plan last
	assert_equal "$run_stderr" "gpurun plan: refused: a symlink in the image sends tmp out of the new root"
}

@test "a plan refuses, in one line, a mount target that is a symlink climbing out with .." {
	hostile_plan climbing
	assert_equal "$run_stderr" "gpurun plan: refused: a symlink in the image sends tmp out of the new root"
}

@test "the plan of an image whose layers are not cached yet says so at its top, and does not run" {
	local d=$BATS_TEST_TMPDIR
	GPURUN_CACHE=$d/empty-cache "$GPURUN" --dry-run "$BUSYBOX_TGZ" true >"$d/plan.sh"
	run sh "$d/plan.sh"
	assert_equal "$status" 125
	assert_output "gpurun plan: cannot run as a script: launch it once to fill the cache, then print the plan"
	run grep -c '^mount ' "$d/plan.sh"
	refute_output 0
}

@test "a MIG device on a fake driver (under /tmp as root): the parent GPU, the instance's nodes and access files" {
	fake_in_tmp mig
	same_container --driver-root "$FAKE_ROOT" --gpus 0:1 --caps utility "$GLIBC_TGZ"
}

@test "a CDI device from gpurun cdi generate: its nodes, mounts and hooks" {
	fake_in_tmp one
	local specs=$BATS_TEST_TMPDIR/cdi
	mkdir -p "$specs"
	"$GPURUN" cdi generate --driver-root "$FAKE_ROOT" --output "$specs/nvidia.yaml"
	same_container --cdi-spec-dir "$specs" --device nvidia.com/gpu=0 "$GLIBC_TGZ"
}

@test "--tmpfs /scratch:size=64m and --shm-size 128m: the tmpfs mounts with their options" {
	same_container --tmpfs /scratch:size=64m --shm-size 128m "$BUSYBOX_TGZ"
}

@test "--mount type=bind,... and --mount type=tmpfs,...: docker's syntax, the same mounts" {
	local v
	v=$(mktemp -d /tmp/gpurun-planvol.XXXXXX)
	PLANVOL=$v # teardown removes it when the test fails first
	echo data >"$v/f"
	same_container --mount "type=bind,source=$v,target=/b,readonly" --mount type=tmpfs,destination=/t,tmpfs-size=1m,tmpfs-mode=1770 "$BUSYBOX_TGZ"
	rm -rf "$v"
}

@test "--entrypoint and --env-file: the command and its environment" {
	local env=$BATS_TEST_TMPDIR/env
	printf '# a comment\nPLAN_A=one two\nPLAN_B=$HOME\n' >"$env"
	ENTRY="-c" same_container --entrypoint /bin/sh --env-file "$env" "$BUSYBOX_TGZ"
}

@test "--ipc host: the plan shares the caller's IPC namespace and /dev/shm as gpurun does" {
	same_container --ipc host "$BUSYBOX_TGZ"
}

@test "--device /dev/zero:/dev/extra: the host's node bound read-only, as gpurun binds it" {
	same_container --device /dev/zero:/dev/extra "$BUSYBOX_TGZ"
	grep -q '^/dev/extra character special file 1:5 ' "$BATS_TEST_TMPDIR/plan.txt" || fail "no /dev/extra in the plan's container"
}

@test "--userns keep-id (unprivileged with one id: the caller's ids for the command)" {
	same_container --userns keep-id -w /tmp/w "$BUSYBOX_TGZ"
}

@test "--ulimit nofile=512:1024: the command's limits" {
	same_container --ulimit nofile=512:1024 "$BUSYBOX_TGZ"
}

# Options that change no step of the launch must not change its plan
# either: the plans are compared, the shapes above run them.
@test "--rm, --init, -i without -t, --quiet and --max-image-size leave the plan as it is" {
	local d=$BATS_TEST_TMPDIR
	"$GPURUN" "$BUSYBOX_TGZ" true
	"$GPURUN" --dry-run "$BUSYBOX_TGZ" true >"$d/plain.sh"
	"$GPURUN" --dry-run --rm --init -i --quiet --max-image-size 1G "$BUSYBOX_TGZ" true >"$d/more.sh"
	run diff -u "$d/plain.sh" "$d/more.sh"
	assert_success
}

@test "--gpus by UUID, device= or count=, with a --require it meets, prints the plan of --gpus 0 on a one-GPU driver" {
	local d=$BATS_TEST_TMPDIR spec root
	root=$(fake_driver one) || skip "no fake NVIDIA driver (build it as root: tests/run-bats.sh)"
	"$GPURUN" "$GLIBC_TGZ" true
	"$GPURUN" --dry-run --driver-root "$root" --gpus 0 "$GLIBC_TGZ" true >"$d/index.sh"
	for spec in "$ONE_UUID" device=0 count=1; do
		"$GPURUN" --dry-run --driver-root "$root" --gpus "$spec" --require 'cuda>=11.0' "$GLIBC_TGZ" true >"$d/spec.sh"
		run diff -u "$d/index.sh" "$d/spec.sh"
		assert_success
	done
}

# Allowed difference: with -t gpurun makes a pty and relays it to this
# terminal (ns/tty.c), which no shell tool does; the plan says so in a
# comment and runs the command on the caller's stdin, stdout and stderr.
@test "-t: the plan is the plan without -t, with a comment saying the pty relay is gpurun's" {
	local d=$BATS_TEST_TMPDIR
	"$GPURUN" "$BUSYBOX_TGZ" true
	"$GPURUN" --dry-run "$BUSYBOX_TGZ" true >"$d/plain.sh"
	"$GPURUN" --dry-run -t "$BUSYBOX_TGZ" true >"$d/tty.sh"
	run grep -A1 '^# -t: ' "$d/tty.sh"
	assert_output "# -t: stdin, stdout and stderr are a new pty of that devpts (/dev/pts/0, the controlling
#  terminal); gpurun relays its output here, and reads no keystrokes (no -i)"
	# Beyond the comment, only the TERM that -t sets.
	sed '/^# -t: /{N;d}; s/ TERM=xterm / /' "$d/tty.sh" >"$d/tty-less.sh"
	run diff -u "$d/plain.sh" "$d/tty-less.sh"
	assert_success
}

# as_subuser CMD...: CMD as the root suite's second user, which has
# subordinate ranges (tests/run-bats.sh), with a cache and TMPDIR of its own.
as_subuser() {
	local u=${GPURUN_TEST_SUBUSER:-gpurun-test-sub}
	(cd "$SUBDIR" && runuser -u "$u" -- env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8 \
		GPURUN_CACHE="$SUBDIR/cache" TMPDIR="$SUBDIR" "$@")
}

@test "a user with subordinate ranges: the plan maps them with newuidmap as gpurun does" {
	skip_unless_root "runs a second unprivileged user, which takes root to start"
	local u=${GPURUN_TEST_SUBUSER:-gpurun-test-sub}
	id "$u" >/dev/null 2>&1 || skip "no user $u (tests/run-bats.sh creates it)"
	grep -q "^$u:" /etc/subuid || skip "$u has no range in /etc/subuid"
	SUBDIR=$(mktemp -d /tmp/gpurun-plansub.XXXXXX)
	chmod 0755 "$SUBDIR"
	cp "$BUSYBOX_TGZ" "$SUBDIR/busybox.tar.gz"
	chown -R "$u:" "$SUBDIR"
	as_subuser test -x "$GPURUN" || skip "$u cannot run $GPURUN"
	RUNAS=1 same_container -u 1000:1000 "$SUBDIR/busybox.tar.gz"
	grep -q -- '--map-users=' "$SUBDIR/plan.txt.sh" || fail "the plan maps no subordinate range"
	# unshare runs them: the first line names them among the tools.
	sed -n 2p "$SUBDIR/plan.txt.sh" | grep -q ' and uidmap (newuidmap, newgidmap)\.$' || fail "newuidmap is not named"
}

@test "a Debian minbase image: apt's settings file and the ids, as gpurun makes them" {
	local tgz
	tgz=$(bash "$BATS_TEST_DIRNAME/lib/debian_minbase.sh" 2>/dev/null) || skip "no Debian minbase image (built as root by tests/run-bats.sh)"
	same_container "$tgz"
}
