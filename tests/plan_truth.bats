#!/usr/bin/env bats
# The teaching view tells the truth.  For each kind of launch the command
# line can produce, the --dry-run plan, the --verbose steps and what the
# executor really made (read from inside: /proc/self/mountinfo, links,
# directories, files, host name, lo) are held against each other by
# tests/lib/plantruth.py: same lines in both views; every printed mount there
# with its type, flags and data; no mount or mount option that was not
# printed.  Runs as root and as an unprivileged user (userxattr overlays,
# uid= on tmpfs).

load lib/common
load lib/gpu

PLANTRUTH="python3 $BATS_TEST_DIRNAME/lib/plantruth.py"

setup_file() {
	require_gpurun
	common_images
	GLIBC_TAR=$(fixture glibc.tar)
	GLIBC_TGZ=$(fixture glibc.tar.gz)
	export GLIBC_TAR GLIBC_TGZ
}

# plan_truth ARGS... IMAGE: dry-run, run the generated probe script with
# --verbose, and check.
plan_truth() {
	local d=$BATS_TEST_TMPDIR
	# A first launch caches the image: both views then bind its layers.
	"$GPURUN" "$@" true || fail "the first launch failed"
	run --separate-stderr "$GPURUN" --dry-run "$@" true
	assert_success
	printf '%s\n' "$output" >"$d/dry.txt"
	$PLANTRUTH script "$d/dry.txt" >"$d/script.sh" || fail "plantruth script failed"
	"$GPURUN" --verbose "$@" /bin/sh -c "$(cat "$d/script.sh")" >"$d/inside.txt" 2>"$d/verbose.txt" ||
		fail "the run failed: $(cat "$d/verbose.txt")"
	run $PLANTRUTH check "$d/dry.txt" "$d/verbose.txt" "$d/inside.txt"
	assert_success
	assert_output --partial "every printed line matches what was made"
}

need_fake4() {
	FAKE4=$(fake_driver four) || skip "no fake NVIDIA driver (build it as root: tests/run-bats.sh)"
}

@test "an archive launch: the plan, the steps and the mounts agree" {
	plan_truth "$BUSYBOX_TGZ"
}

@test "a directory image (overlay) with volumes, a workdir, --read-only, --net none and --hostname" {
	local vol=$BATS_TEST_TMPDIR/vol
	mkdir -p "$vol" && echo hi >"$vol/f"
	plan_truth --read-only --net none --hostname truth-box -w /work \
		-v "$vol:/data:ro" -v "$vol/f:/etc/f" "$BUSYBOX_DIR"
}

@test "--ipc host's /dev/shm, a --device node and --userns keep-id: the plan, the steps and the mounts agree" {
	plan_truth --ipc host --device /dev/zero:/dev/extra --userns keep-id "$BUSYBOX_TGZ"
}

@test "GPU injection with every capability: devices, libraries, firmware, /proc/driver/nvidia, ldconfig" {
	need_fake4
	plan_truth --driver-root "$FAKE4" --gpus 0 --caps all "$GLIBC_TAR"
}

@test "a MIG device, an IMEX channel, compat32 libraries and the graphics files" {
	FAKEMIG=$(fake_driver mig) || skip "no fake NVIDIA driver (build it as root: tests/run-bats.sh)"
	[[ -d $FAKEMIG/usr/lib/i386-linux-gnu ]] || skip "the fake driver has no 32-bit libraries"
	plan_truth --driver-root "$FAKEMIG" --gpus 0:1 -e NVIDIA_IMEX_CHANNELS=1 --caps utility,compute,graphics,compat32 \
		"$GLIBC_TAR"
}

@test "two GPUs on a read-only root" {
	need_fake4
	plan_truth --driver-root "$FAKE4" --gpus 1,2 --read-only "$GLIBC_TGZ"
}

@test "an image with newer CUDA forward-compatibility libraries: the ldconfig step is printed as it runs" {
	need_fake4
	local d=$BATS_TEST_TMPDIR/compat img=$BATS_TEST_TMPDIR/compat.tar
	mkdir -p "$d/usr/local/cuda/compat"
	cp "$FAKE4$LIBDIR_DEBIAN/libcuda.so.$DRIVER_VERSION" "$d/usr/local/cuda/compat/libcuda.so.560.35.03"
	tar -C "$(fixture glibc)" -cf "$img" . && tar -C "$d" -rf "$img" ./usr/local/cuda
	plan_truth --driver-root "$FAKE4" --gpus 0 "$img"
}

@test "a CDI launch from a generated spec: node binds, file binds, links, a rw IPC bind, ldconfig" {
	need_fake4
	local specs=$BATS_TEST_TMPDIR/cdi
	mkdir -p "$specs"
	"$GPURUN" cdi generate --driver-root "$FAKE4" --output "$specs/nvidia.yaml"
	plan_truth --cdi-spec-dir "$specs" --device nvidia.com/gpu=1 --device nvidia.com/gpu=all "$GLIBC_TAR"
}

# The checker itself must be able to say no.
@test "the checker refuses a mount option or a mount that was never printed, and views that differ" {
	local d=$BATS_TEST_TMPDIR
	"$GPURUN" --dry-run "$BUSYBOX_DIR" true >"$d/dry.txt"
	$PLANTRUTH script "$d/dry.txt" >"$d/script.sh"
	"$GPURUN" --verbose "$BUSYBOX_DIR" /bin/sh -c "$(cat "$d/script.sh")" >"$d/inside.txt" 2>"$d/verbose.txt"
	run $PLANTRUTH check "$d/dry.txt" "$d/verbose.txt" "$d/inside.txt"
	assert_success

	# The overlay at / gains an option the plan did not print (the drift of
	# unprivileged overlays before the plan and the executor shared one
	# description).
	sed '/ \/ [^ ]* .* - overlay /s/$/,xyzzy/' "$d/inside.txt" >"$d/bad1.txt"
	run $PLANTRUTH check "$d/dry.txt" "$d/verbose.txt" "$d/bad1.txt"
	assert_failure
	assert_output --partial "/: the mount has xyzzy, which the plan never printed"

	# A mount nobody printed.
	sed '/^=== facts/i 999 1 0:99 / /secret rw,relatime - tmpfs tmpfs rw' "$d/inside.txt" >"$d/bad2.txt"
	run $PLANTRUTH check "$d/dry.txt" "$d/verbose.txt" "$d/bad2.txt"
	assert_failure
	assert_output --partial "mounted but never printed: /secret"

	# A printed mount that is not there.
	grep -v ' /dev/shm ' "$d/inside.txt" >"$d/bad3.txt"
	run $PLANTRUTH check "$d/dry.txt" "$d/verbose.txt" "$d/bad3.txt"
	assert_failure
	assert_output --partial "printed but not mounted: /dev/shm"

	# A step printed by --verbose that --dry-run does not show.
	sed 's/^+ make_dir tmp; mount -t tmpfs -o nosuid,nodev,mode=1777 tmpfs tmp$/+ mount -t tmpfs tmpfs tmp/' "$d/verbose.txt" >"$d/bad4.txt"
	run $PLANTRUTH check "$d/dry.txt" "$d/bad4.txt" "$d/inside.txt"
	assert_failure
	assert_output --partial "the --verbose steps differ from the --dry-run plan"
}

# The command's line of a plan (setpriv, possibly split with \), the last
# of its steps: its ids, environment, directory.
run_as_line() {
	sed 's/^+ //' "$1" | sed -n '/^steps() {$/,/^}$/p' | sed -n '/^setpriv \|^unshare --user /,/^}$/p' | sed '$d' | tr -d '\n'
}

@test "-u NAME: HOME is decided once, and the plan, the steps and the command's environment hold the same" {
	local d=$BATS_TEST_TMPDIR glibc
	glibc=$(fixture glibc)
	run --separate-stderr "$GPURUN" --dry-run -u alice "$glibc" env
	assert_success
	printf '%s\n' "$output" >"$d/dry.txt"
	run_as_line "$d/dry.txt" >"$d/dry-run_as"
	grep -q " HOME=/home/alice " "$d/dry-run_as" || fail "the plan's environment lacks the image's HOME: $(cat "$d/dry-run_as")"
	"$GPURUN" --verbose -u alice "$glibc" env >"$d/env.txt" 2>"$d/verbose.txt" || fail "the run failed: $(cat "$d/verbose.txt")"
	run_as_line "$d/verbose.txt" >"$d/verbose-run_as"
	diff "$d/dry-run_as" "$d/verbose-run_as" || fail "--verbose's command step differs from the plan's"
	run grep '^HOME=' "$d/env.txt"
	assert_output "HOME=/home/alice"
}
