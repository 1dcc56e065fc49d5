#!/usr/bin/env bats
# CDI: `gpurun --device vendor.com/class=name` with the specs of
# --cdi-spec-dir / GPURUN_CDI_SPEC_DIRS, and `gpurun cdi generate|list`,
# against the fake NVIDIA drivers.  Specs come from `gpurun cdi generate`
# and from tests/cdi/ (hand-written in the shape nvidia-ctk writes).  No
# test reads or writes the host's /etc/cdi or /var/run/cdi.

load lib/common
load lib/gpu

setup_file() {
	gpu_setup_file
}

setup() {
	SPECS=$BATS_TEST_TMPDIR/cdi
	mkdir -p "$SPECS"
	host_snapshot "$BATS_TEST_TMPDIR/host.before"
}

# cdi ARGS...: gpurun with the test's spec directory.
cdi() {
	"$GPURUN" --cdi-spec-dir "$SPECS" "$@"
}

# template NAME DRIVER_ROOT OUT: tests/cdi/NAME with its driver root filled in.
template() {
	sed "s|@DRIVER_ROOT@|$2|g" "$TESTS_DIR/cdi/$1" >"$3"
}

# What the container sees of the driver: every node with its numbers, the
# binaries, the driver's libraries and links in the lib dir, the firmware
# and the loader cache.
VIEW='
for d in /dev/nvidia*; do probe stat "$d"; done
ls /usr/bin | grep "^nvidia"
cd '"$LIBDIR_DEBIAN"' || exit 1
for f in $(ls | grep -E "nvidia|cuda|GL|EGL|vdpau|nvcuvid|nvoptix"); do
	if [ -L "$f" ]; then echo "$f -> $(readlink "$f")"; else echo "$f"; fi
done
find /lib/firmware/nvidia -type f | sort
ldconfig -p | grep -E "nvidia|cuda|GL|EGL|vdpau|nvcuvid|nvoptix" | sort'

# ---- generate and list ----------------------------------------------------------

@test "cdi generate names each GPU by index and by UUID, plus all" {
	run --separate-stderr "$GPURUN" cdi generate --driver-root "$FAKE4" --output "$SPECS/nvidia.yaml"
	assert_success
	run --separate-stderr "$GPURUN" cdi list --cdi-spec-dir "$SPECS"
	assert_success
	assert_output "$(
		printf 'nvidia.com/gpu=%s\n' 0 1 2 3 "${FOUR_UUID[@]}" all | LC_ALL=C sort
	)"
}

@test "cdi generate writes YAML by default and JSON with --format json or a .json output" {
	run --separate-stderr "$GPURUN" --driver-root "$FAKE1" cdi generate
	assert_success
	assert_line --index 0 -- "---"
	assert_line --index 1 'cdiVersion: "0.5.0"'
	assert_line --index 2 'kind: "nvidia.com/gpu"'
	"$GPURUN" cdi generate --driver-root "$FAKE1" --format json >"$BATS_TEST_TMPDIR/a.json"
	"$GPURUN" cdi generate --driver-root "$FAKE1" --output "$BATS_TEST_TMPDIR/b.json"
	run python3 -c 'import json,sys
for f in sys.argv[1:]:
    s = json.load(open(f))
    print(s["kind"], [d["name"] for d in s["devices"]], s["containerEdits"]["env"])' \
		"$BATS_TEST_TMPDIR/a.json" "$BATS_TEST_TMPDIR/b.json"
	assert_success
	assert_output "nvidia.com/gpu ['0', '$ONE_UUID', 'all'] ['NVIDIA_VISIBLE_DEVICES=void']
nvidia.com/gpu ['0', '$ONE_UUID', 'all'] ['NVIDIA_VISIBLE_DEVICES=void']"
}

@test "cdi generate writes the nvidia-cdi-hook hooks and ro,nosuid,nodev,rbind,rprivate mounts" {
	"$GPURUN" cdi generate --driver-root "$FAKE1" --output "$BATS_TEST_TMPDIR/s.json"
	run python3 -c 'import json,sys
s = json.load(open(sys.argv[1]))["containerEdits"]
for h in s["hooks"]:
    print(h["hookName"], h["path"], " ".join(h["args"][:3]))
m = [x for x in s["mounts"] if x["containerPath"].endswith("/libcuda.so.550.54.14")][0]
print(m["hostPath"], m["containerPath"], ",".join(m["options"]))
print(" ".join(n["path"] for n in s["deviceNodes"]))' "$BATS_TEST_TMPDIR/s.json"
	assert_success
	assert_output "createContainer /usr/bin/nvidia-cdi-hook nvidia-cdi-hook create-symlinks --link
createContainer /usr/bin/nvidia-cdi-hook nvidia-cdi-hook enable-cuda-compat --host-driver-version=$DRIVER_VERSION
createContainer /usr/bin/nvidia-cdi-hook nvidia-cdi-hook update-ldcache --folder
$FAKE1$LIBDIR_DEBIAN/libcuda.so.$DRIVER_VERSION $LIBDIR_DEBIAN/libcuda.so.$DRIVER_VERSION ro,nosuid,nodev,rbind,rprivate
/dev/nvidiactl /dev/nvidia-uvm /dev/nvidia-uvm-tools /dev/nvidia-modeset"
}

@test "cdi generate on a host without a driver fails with the driver error" {
	run --separate-stderr "$GPURUN" cdi generate --driver-root "$BATS_TEST_TMPDIR"
	assert_gpurun_error 125 "no NVIDIA driver found under $BATS_TEST_TMPDIR"
}

@test "cdi generate refuses an unknown format" {
	run --separate-stderr "$GPURUN" cdi generate --driver-root "$FAKE1" --format toml
	assert_gpurun_error 125 "--format: invalid value 'toml' (expected yaml or json)"
}

# ---- round trip: a generated spec gives what --gpus gives --------------------------

@test "a generated YAML spec and --device nvidia.com/gpu=0 give the container what --gpus 0 --caps all gives" {
	"$GPURUN" cdi generate --driver-root "$FAKE4" --output "$SPECS/nvidia.yaml"
	run --separate-stderr gpu4 --gpus 0 --caps all "$GLIBC_TAR" sh -c "$VIEW"
	assert_success
	local want=$output
	# The view is not trivially empty: nodes, links and the cache are there.
	assert_line --partial "rdev=195:2 "
	assert_line "libcuda.so -> libcuda.so.1"
	assert_line --partial "libcuda.so.1 (libc6,x86-64) => $LIBDIR_DEBIAN/libcuda.so.1"
	run --separate-stderr cdi --device nvidia.com/gpu=0 "$GLIBC_TAR" sh -c "$VIEW"
	assert_success
	assert_equal "$output" "$want"
}

@test "a generated JSON spec by UUID, and =all, match --gpus by UUID and --gpus all" {
	"$GPURUN" cdi generate --driver-root "$FAKE4" --format json --output "$SPECS/nvidia.json"
	run --separate-stderr gpu4 --gpus "${FOUR_UUID[2]}" --caps all "$GLIBC_TAR" sh -c "$VIEW"
	assert_success
	local want=$output
	run --separate-stderr cdi --device "nvidia.com/gpu=${FOUR_UUID[2]}" "$GLIBC_TAR" sh -c "$VIEW"
	assert_success
	assert_equal "$output" "$want"
	run --separate-stderr gpu4 --gpus all --caps all "$GLIBC_TAR" sh -c "$VIEW"
	assert_success
	want=$output
	run --separate-stderr cdi --device nvidia.com/gpu=all "$GLIBC_TAR" sh -c "$VIEW"
	assert_success
	assert_equal "$output" "$want"
	assert_equal "$(grep -c 'rdev=195:[0-3] ' <<<"$output")" 4
}

@test "a generated spec names MIG devices as nvidia-ctk does; =0:1 and its MIG UUID give the nodes --gpus 0:1 gives" {
	[[ -n "${FAKEMIG:-}" ]] || skip "no MIG fake driver"
	"$GPURUN" cdi generate --driver-root "$FAKEMIG" --output "$SPECS/nvidia.yaml"
	run --separate-stderr "$GPURUN" cdi list --cdi-spec-dir "$SPECS"
	assert_success
	assert_line nvidia.com/gpu=0:0
	assert_line nvidia.com/gpu=0:1
	assert_line nvidia.com/gpu=0:2
	assert_line nvidia.com/gpu=MIG-a1000000-1111-4222-8333-444455550200
	local nodes='for d in /dev/nvidia[0-9]* /dev/nvidia-caps/*; do echo "$d $(probe stat "$d")"; done'
	run --separate-stderr "$GPURUN" --driver-root "$FAKEMIG" --gpus 0:1 "$GLIBC_TAR" sh -c "$nodes"
	assert_success
	local want=$output
	assert_line --partial "/dev/nvidia-caps/nvidia-cap21 "
	assert_line --partial "/dev/nvidia-caps/nvidia-cap22 "
	assert_equal "${#lines[@]}" 3
	run --separate-stderr cdi --device nvidia.com/gpu=0:1 "$GLIBC_TAR" sh -c "$nodes"
	assert_success
	assert_equal "$output" "$want"
	run --separate-stderr cdi --device nvidia.com/gpu=MIG-a1000000-1111-4222-8333-444455550200 "$GLIBC_TAR" sh -c "$nodes"
	assert_success
	assert_equal "$output" "$want"
}

@test "a generated spec mounts the graphics JSON files read-only at their host paths" {
	[[ -n "${FAKEMIG:-}" ]] || skip "no MIG fake driver"
	"$GPURUN" cdi generate --driver-root "$FAKEMIG" --output "$SPECS/nvidia.yaml"
	run --separate-stderr cdi --device nvidia.com/gpu=1 "$GLIBC_TAR" sh -c \
		'cat /etc/vulkan/icd.d/nvidia_icd.json /usr/share/glvnd/egl_vendor.d/10_nvidia.json; touch /etc/vulkan/icd.d/nvidia_icd.json'
	assert_failure
	assert_output "$(cat "$FAKEMIG/etc/vulkan/icd.d/nvidia_icd.json" "$FAKEMIG/usr/share/glvnd/egl_vendor.d/10_nvidia.json")"
	assert_stderr_partial "Read-only file system"
}

@test "two --device of one spec give both GPUs and the spec-wide edits once" {
	"$GPURUN" cdi generate --driver-root "$FAKE4" --output "$SPECS/nvidia.yaml"
	run --separate-stderr cdi --dry-run --device nvidia.com/gpu=1 --device nvidia.com/gpu=3 "$GLIBC_TAR" true
	assert_success
	assert_equal "$(grep -cE " dev( [a-z0-9-]+)* nvidiactl( |\$)" <<<"$output")" 1
	assert_line --regexp "^bind_files ro,nosuid,noexec $FAKE4/dev dev( [a-z0-9-]+)* nvidia0( |\$)"
	assert_line --regexp "^bind_files ro,nosuid,noexec $FAKE4/dev dev( [a-z0-9-]+)* nvidia1( |\$)"
	refute_line --regexp " nvidia2( |\$)"
	assert_equal "$(grep -c "^after_pivot .*   # the image's ldconfig, with no capability$" <<<"$output")" 1
}

@test "--dry-run prints the CDI plan: node binds, file binds, links and the ldconfig step" {
	"$GPURUN" cdi generate --driver-root "$FAKE1" --output "$SPECS/nvidia.yaml"
	run --separate-stderr cdi --dry-run --device nvidia.com/gpu=0 "$GLIBC_TAR" true
	assert_success
	assert_line "bind_files ro,nosuid,noexec $FAKE1/dev dev nvidia0   # CDI nvidia.com/gpu=0"
	run plan_join <<<"$output"
	assert_line --regexp "^bind_files ro,nosuid,nodev $FAKE1$LIBDIR_DEBIAN ${LIBDIR_DEBIAN#/} .*libcuda\.so\.$DRIVER_VERSION( |\$)"
	assert_line --regexp "^link_in ${LIBDIR_DEBIAN#/} .* libcuda\.so\.1 libcuda\.so( |$)"
	assert_line --regexp "^after_pivot [0-9:]+ ('[^']*'|[^ ']+) '' $LIBDIR_DEBIAN   # the image's ldconfig, with no capability$"
	assert_output --partial " NVIDIA_VISIBLE_DEVICES=void "
	assert_line --regexp ' "\$S/go" / true$'
	refute_line --regexp "^[^#].*proc/driver"
}

# ---- the nvidia-ctk shapes --------------------------------------------------------

@test "a hand-written spec in nvidia-ctk's shape injects what it lists, and names the hook it skips" {
	template nvidia-ctk.yaml "$FAKE1" "$SPECS/nvidia.yaml"
	run --separate-stderr cdi --device nvidia.com/gpu=0 "$GLIBC_TAR" sh -c "$VIEW"
	assert_success
	# (probe stat prints more than type, mode and rdev: compare those)
	assert_line --partial "type=chr mode=0666 rdev=195:0 "
	assert_line --partial "type=chr mode=0666 rdev=195:255 "
	assert_line "libcuda.so -> libcuda.so.1"
	assert_line "libnvidia-ml.so.$DRIVER_VERSION"
	assert_line "/lib/firmware/nvidia/$DRIVER_VERSION/gsp_ga10x.bin"
	assert_line --partial "libnvidia-ml.so.1 (libc6,x86-64) => $LIBDIR_DEBIAN/libnvidia-ml.so.1"
	refute_line --partial libnvidia-cfg
	assert_equal "$stderr" "gpurun: warning: CDI hook nvidia-cdi-hook disable-device-node-modification skipped: gpurun honours only create-symlinks, update-ldcache and enable-cuda-compat"
}

@test "the spec's env reaches the container over the image's; -e still wins" {
	template nvidia-ctk.yaml "$FAKE1" "$SPECS/nvidia.yaml"
	run --separate-stderr cdi --device nvidia.com/gpu=0 -e NVIDIA_DRIVER_CAPABILITIES=all "$GLIBC_TAR" \
		sh -c 'echo "$NVIDIA_VISIBLE_DEVICES $NVIDIA_DRIVER_CAPABILITIES"'
	assert_success
	assert_output "void all"
	run --separate-stderr cdi --device nvidia.com/gpu=0 -e NVIDIA_VISIBLE_DEVICES=mine "$GLIBC_TAR" \
		sh -c 'echo "$NVIDIA_VISIBLE_DEVICES"'
	assert_success
	assert_output "mine"
}

@test "the older nvidia-ctk hook form in JSON with tabs, numbers and a deprecated chmod hook" {
	template nvidia-ctk-legacy.json "$FAKE1" "$SPECS/legacy.json"
	run --separate-stderr cdi --device example.com/gpu=0 "$GLIBC_TAR" sh -c \
		"ls /dev; readlink $LIBDIR_DEBIAN/libnvidia-ml.so.1; echo \$FROM_CDI"
	assert_success
	assert_line nvidia0
	assert_line nvidiactl
	refute_line nvidia-uvm
	assert_line "libnvidia-ml.so.$DRIVER_VERSION"
	assert_line json
	assert_equal "$stderr" "gpurun: warning: CDI hook nvidia-ctk chmod skipped: gpurun honours only create-symlinks, update-ldcache and enable-cuda-compat"
}

# ---- errors ---------------------------------------------------------------------

@test "an unknown device is a one-line error listing the known ones, exit 125" {
	"$GPURUN" cdi generate --driver-root "$FAKE1" --output "$SPECS/nvidia.yaml"
	run --separate-stderr cdi --device nvidia.com/gpu=7 "$GLIBC_TAR" true
	assert_gpurun_error 125
	assert_equal "$stderr" "gpurun: unknown CDI device nvidia.com/gpu=7 (known: nvidia.com/gpu=0, nvidia.com/gpu=$ONE_UUID, nvidia.com/gpu=all)"
	assert_host_unchanged "$BATS_TEST_TMPDIR/host.before"
}

@test "a spec naming a driver version the host no longer has is refused in one line naming it and how to regenerate it" {
	"$GPURUN" cdi generate --driver-root "$FAKE1" --output "$SPECS/nvidia.yaml"
	# Written for 550.54.13, before an upgrade to .14.
	sed -i 's/550\.54\.14/550.54.13/g' "$SPECS/nvidia.yaml"
	run --separate-stderr cdi --device nvidia.com/gpu=0 "$GLIBC_TAR" true
	assert_gpurun_error 125
	[[ "$stderr" =~ ^"gpurun: CDI spec $SPECS/nvidia.yaml is stale: it names $FAKE1"[^\ ]*".so.550.54.13 and "[0-9]+" other paths, which this host no longer has (the driver was upgraded or a GPU is gone since it was written); regenerate it: gpurun cdi generate --output $SPECS/nvidia.yaml"$ ]] ||
		fail "stderr: $stderr"
	assert_host_unchanged "$BATS_TEST_TMPDIR/host.before"
}

@test "a spec naming a GPU node the host no longer has is refused as stale" {
	"$GPURUN" cdi generate --driver-root "$FAKE4" --output "$SPECS/nvidia.yaml"
	# GPU 0 (minor 2) was /dev/nvidia2 when the spec was written.
	sed -i 's|/dev/nvidia2$|/dev/nvidia9|; s|/dev/nvidia2"|/dev/nvidia9"|' "$SPECS/nvidia.yaml"
	grep -q /dev/nvidia9 "$SPECS/nvidia.yaml" || fail "the spec names no /dev/nvidia2: $(cat "$SPECS/nvidia.yaml")"
	run --separate-stderr cdi --device nvidia.com/gpu=0 "$GLIBC_TAR" true
	assert_gpurun_error 125
	assert_equal "$stderr" "gpurun: CDI spec $SPECS/nvidia.yaml is stale: it names $FAKE4/dev/nvidia9, which this host no longer has (the driver was upgraded or a GPU is gone since it was written); regenerate it: gpurun cdi generate --output $SPECS/nvidia.yaml"
	# Another GPU of the same spec is not stale.
	run --separate-stderr cdi --device nvidia.com/gpu=1 "$GLIBC_TAR" true
	assert_success
}

@test "with no spec at all the error says none is known" {
	run --separate-stderr cdi --device nvidia.com/gpu=0 "$GLIBC_TAR" true
	assert_gpurun_error 125
	assert_equal "$stderr" "gpurun: unknown CDI device nvidia.com/gpu=0 (known: none)"
}

@test "a device name not of the form vendor.com/class=name is refused before any spec is read" {
	run --separate-stderr cdi --device gpu0 "$GLIBC_TAR" true
	assert_gpurun_error 125
	assert_equal "$stderr" "gpurun: --device gpu0: not a CDI device name (want vendor.com/class=name)"
}

@test "--device with --gpus is refused: one way to say what is injected" {
	run --separate-stderr cdi --device nvidia.com/gpu=0 --gpus 0 "$GLIBC_TAR" true
	assert_gpurun_error 125
	assert_equal "$stderr" "gpurun: --device cannot be combined with --gpus: the CDI spec says what is injected"
}

@test "a malformed spec is a one-line error naming the file and the problem" {
	printf 'cdiVersion: 0.5.0\nkind: nvidia.com/gpu\ndevices:\n- name: "0"\n  containerEdits:\n    mounts:\n    - hostPath: lib/x\n' \
		>"$SPECS/broken.yaml"
	run --separate-stderr cdi --device nvidia.com/gpu=0 "$GLIBC_TAR" true
	assert_gpurun_error 125
	assert_equal "$stderr" "gpurun: CDI spec $SPECS/broken.yaml: line 7: devices[0].containerEdits.mounts[0]: 'lib/x' is not an absolute path"
	printf 'cdiVersion: 0.5.0\nkind: [nvidia.com/gpu\n' >"$SPECS/broken.yaml"
	run --separate-stderr cdi --device nvidia.com/gpu=0 "$GLIBC_TAR" true
	assert_equal "$stderr" "gpurun: CDI spec $SPECS/broken.yaml: line 3: did not find expected ',' or ']' while parsing a flow sequence"
	printf '{"cdiVersion": "0.5.0", "kind": "nvidia.com/gpu", "devices": [{"name": "0", "extra": 1}]}' \
		>"$SPECS/broken.yaml"
	run --separate-stderr cdi --device nvidia.com/gpu=0 "$GLIBC_TAR" true
	assert_equal "$stderr" "gpurun: CDI spec $SPECS/broken.yaml: line 1: devices[0]: unknown field 'extra'"
}

@test "a broken spec does not hide a good one: the device is used and the broken file is named in a warning" {
	"$GPURUN" cdi generate --driver-root "$FAKE1" --output "$SPECS/nvidia.yaml"
	printf 'kind: other.com/x\n' >"$SPECS/zz-other.yaml"
	run --separate-stderr cdi --device nvidia.com/gpu=0 "$GLIBC_TAR" true
	assert_success
	assert_equal "$stderr" "gpurun: warning: CDI spec $SPECS/zz-other.yaml ignored: line 1: the spec: cdiVersion is missing"
}

@test "YAML aliases are refused: a small spec cannot expand into a large one" {
	printf 'cdiVersion: 0.5.0\nkind: nvidia.com/gpu\nx: &a ["y"]\ndevices: *a\n' >"$SPECS/alias.yaml"
	run --separate-stderr cdi --device nvidia.com/gpu=0 "$GLIBC_TAR" true
	assert_gpurun_error 125
	assert_equal "$stderr" "gpurun: CDI spec $SPECS/alias.yaml: line 4: YAML aliases are not allowed in a CDI spec"
}

@test "the same device in two files of one directory is a conflict naming both" {
	"$GPURUN" cdi generate --driver-root "$FAKE1" --output "$SPECS/a.yaml"
	"$GPURUN" cdi generate --driver-root "$FAKE1" --output "$SPECS/b.json"
	run --separate-stderr cdi --device nvidia.com/gpu=0 "$GLIBC_TAR" true
	assert_gpurun_error 125
	assert_equal "$stderr" "gpurun: CDI device nvidia.com/gpu=0 is defined in both $SPECS/a.yaml and $SPECS/b.json"
}

# spec_with EDITS_JSON: a one-device spec test.com/dev=x with those edits.
spec_with() {
	printf '{"cdiVersion": "0.6.0", "kind": "test.com/dev", "devices": [{"name": "x", "containerEdits": %s}]}\n' \
		"$1" >"$SPECS/test.json"
}

@test "a device node that is not the device the spec says is refused" {
	spec_with '{"deviceNodes": [{"path": "/dev/nvidia0", "hostPath": "'"$FAKE1"'/dev/nvidia0", "major": 195, "minor": 1}]}'
	run --separate-stderr cdi --device test.com/dev=x "$GLIBC_TAR" true
	assert_gpurun_error 125
	assert_equal "$stderr" "gpurun: CDI device test.com/dev=x: $FAKE1/dev/nvidia0 is the device 195:0, the spec ($SPECS/test.json line 1) says 195:1"
	spec_with '{"deviceNodes": [{"path": "/dev/nvidia0", "hostPath": "'"$FAKE1"'/etc/ld.so.conf"}]}'
	run --separate-stderr cdi --device test.com/dev=x "$GLIBC_TAR" true
	assert_gpurun_error 125
	assert_equal "$stderr" "gpurun: CDI device test.com/dev=x: $FAKE1/etc/ld.so.conf is not a character device"
}

@test "a mount option gpurun cannot honour is refused with the options it does honour" {
	spec_with '{"mounts": [{"hostPath": "'"$FAKE1"'/etc", "containerPath": "/drv", "options": ["rbind", "rshared"]}]}'
	run --separate-stderr cdi --device test.com/dev=x "$GLIBC_TAR" true
	assert_gpurun_error 125
	assert_equal "$stderr" "gpurun: CDI spec $SPECS/test.json: line 1: mount /drv: option 'rshared' is not supported (gpurun honours ro, rw, nosuid, nodev, noexec, bind, rbind, and private or slave propagation)"
}

@test "mounts are read-only unless the spec says rw" {
	mkdir -p "$BATS_TEST_TMPDIR/share"
	spec_with '{"mounts": [{"hostPath": "'"$BATS_TEST_TMPDIR/share"'", "containerPath": "/ro"},
		{"hostPath": "'"$BATS_TEST_TMPDIR/share"'", "containerPath": "/rw", "options": ["rw", "nodev"]}]}'
	run --separate-stderr cdi --device test.com/dev=x "$GLIBC_TAR" sh -c \
		'probe mountinfo-has /ro; probe mountinfo-has /rw; echo x >/rw/written && echo wrote; echo y >/ro/no 2>/dev/null || echo refused'
	assert_success
	assert_line --regexp "^/ro opts=ro,nosuid(,| )"
	assert_line --regexp "^/rw opts=rw,nosuid,nodev(,| )"
	assert_line wrote
	assert_line refused
	assert_file_exists "$BATS_TEST_TMPDIR/share/written"
	assert_file_not_exists "$BATS_TEST_TMPDIR/share/no"
}

@test "a mount whose containerPath goes through an image symlink to the host stays inside the container" {
	local img=$BATS_TEST_TMPDIR/img host=$BATS_TEST_TMPDIR/host-dir
	mkdir -p "$host"
	echo "host data" >"$host/keep"
	image_copy busybox "$img" >/dev/null
	# /escape names the host directory: absolutely and by climbing.
	ln -s "$host" "$img/escape"
	ln -s "../../../../../../../../../..$host" "$img/climb"
	tar_from_dir "$img" "$BATS_TEST_TMPDIR/img.tar"
	spec_with '{"mounts": [{"hostPath": "'"$FAKE1"'/usr/bin/nvidia-smi", "containerPath": "/escape/planted"},
		{"hostPath": "'"$FAKE1"'/usr/bin/nvidia-smi", "containerPath": "/climb/planted2"}]}'
	run --separate-stderr cdi --device test.com/dev=x "$BATS_TEST_TMPDIR/img.tar" sh -c \
		"ls $host"
	assert_success
	assert_output "planted
planted2"
	assert_equal "$(ls "$host")" "keep"
	assert_host_unchanged "$BATS_TEST_TMPDIR/host.before"
}

@test "a hook of any other program is skipped with a warning and never run" {
	local marker=$BATS_TEST_TMPDIR/hook-ran
	printf '#!/bin/sh\ntouch %s\n' "$marker" >"$BATS_TEST_TMPDIR/hook.sh"
	chmod +x "$BATS_TEST_TMPDIR/hook.sh"
	spec_with '{"hooks": [{"hookName": "createContainer", "path": "'"$BATS_TEST_TMPDIR/hook.sh"'", "args": ["hook.sh"]},
		{"hookName": "poststop", "path": "'"$BATS_TEST_TMPDIR/hook.sh"'"}]}'
	run --separate-stderr cdi --device test.com/dev=x "$GLIBC_TAR" true
	assert_success
	assert_equal "$stderr" "gpurun: warning: CDI hook $BATS_TEST_TMPDIR/hook.sh skipped: gpurun never runs hook programs from a spec"
	assert_file_not_exists "$marker"
}

@test "GPURUN_CDI_SPEC_DIRS sets the directories; a later one overrides an earlier one" {
	mkdir -p "$BATS_TEST_TMPDIR/d1" "$BATS_TEST_TMPDIR/d2"
	local s='{"cdiVersion": "0.5.0", "kind": "test.com/dev", "devices": [{"name": "x"}], "containerEdits": {"env": ["WHICH=%s"]}}\n'
	printf "$s" first >"$BATS_TEST_TMPDIR/d1/t.json"
	printf "$s" second >"$BATS_TEST_TMPDIR/d2/t.json"
	GPURUN_CDI_SPEC_DIRS=$BATS_TEST_TMPDIR/d1:$BATS_TEST_TMPDIR/d2 run --separate-stderr \
		"$GPURUN" --device test.com/dev=x "$GLIBC_TAR" sh -c 'echo $WHICH'
	assert_success
	assert_output second
	GPURUN_CDI_SPEC_DIRS=$BATS_TEST_TMPDIR/d2:$BATS_TEST_TMPDIR/d1 run --separate-stderr \
		"$GPURUN" --device test.com/dev=x "$GLIBC_TAR" sh -c 'echo $WHICH'
	assert_output first
	# --cdi-spec-dir replaces the variable's list.
	GPURUN_CDI_SPEC_DIRS=$BATS_TEST_TMPDIR/d2 run --separate-stderr \
		"$GPURUN" --cdi-spec-dir "$BATS_TEST_TMPDIR/d1" --device test.com/dev=x "$GLIBC_TAR" sh -c 'echo $WHICH'
	assert_output first
}

@test "cdi list names every device of every spec directory, and warns about a broken spec" {
	"$GPURUN" cdi generate --driver-root "$FAKE1" --output "$SPECS/nvidia.json"
	mkdir -p "$BATS_TEST_TMPDIR/d2"
	printf 'cdiVersion: "0.5.0"\nkind: test.com/dev\ndevices:\n- name: x\n' >"$BATS_TEST_TMPDIR/d2/t.yaml"
	printf 'not: [a spec\n' >"$BATS_TEST_TMPDIR/d2/u.yaml"
	echo 'ignored: not a spec name' >"$BATS_TEST_TMPDIR/d2/README"
	run --separate-stderr "$GPURUN" cdi list --cdi-spec-dir "$SPECS" --cdi-spec-dir "$BATS_TEST_TMPDIR/d2"
	assert_success
	assert_output "nvidia.com/gpu=0
nvidia.com/gpu=$ONE_UUID
nvidia.com/gpu=all
test.com/dev=x"
	assert_equal "$stderr" "gpurun: warning: CDI spec $BATS_TEST_TMPDIR/d2/u.yaml: line 2: did not find expected ',' or ']' while parsing a flow sequence"
}
