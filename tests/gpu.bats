#!/usr/bin/env bats
# GPU injection, as nvidia-container-cli configure does it, against the fake NVIDIA drivers of
# tests/fakedriver: selection, capabilities, placement, /proc/driver/nvidia,
# requirements, the info and list verbs, a host without a driver.
# Escape attempts through image symlinks: gpu_security.bats.

load lib/common
load lib/gpu

setup_file() {
	gpu_setup_file
}

# ---- info and list: what nvidia-container-cli prints -------------------------

@test "gpurun info prints the driver and every GPU like nvidia-container-cli info" {
	run --separate-stderr "$GPURUN" info --driver-root "$FAKE4"
	assert_success
	assert_output "$(
		printf 'NVRM version:   %s\nCUDA version:   12.4\n' "$DRIVER_VERSION"
		for i in 0 1 2 3; do
			brand=Unknown arch=9.0
			[[ $i == 1 ]] && arch=8.0
			[[ $i == 2 ]] && brand=Tesla arch=7.0
			printf '\nDevice Index:   %s\nDevice Minor:   %s\nModel:          %s\nBrand:          %s\n' \
				"$i" "${FOUR_MINOR[i]}" "${FOUR_MODEL[i]}" "$brand"
			printf 'GPU UUID:       %s\nBus Location:   0000%s\nArchitecture:   %s\n' \
				"${FOUR_UUID[i]}" "${FOUR_BUS[i]}" "$arch"
		done
	)"
}

@test "gpurun info --csv prints the same facts as CSV with the reference headers" {
	run --separate-stderr "$GPURUN" info --csv --driver-root "$FAKE1"
	assert_success
	assert_output "NVRM version,CUDA version
$DRIVER_VERSION,12.4

Device Index,Device Minor,Model,Brand,GPU UUID,Bus Location,Architecture
0,0,NVIDIA H100 80GB HBM3,Unknown,$ONE_UUID,00000000:17:00.0,9.0"
}

@test "GPU indexes follow PCI bus order, not device minors" {
	run --separate-stderr "$GPURUN" info --driver-root "$FAKE4" --csv
	assert_success
	# (bats leaves blank lines out of $lines: row N is lines[3+N])
	assert_line --index 4 --partial "1,0,NVIDIA A100-SXM4-80GB,"
	assert_line --index 4 --partial ",00000000:5e:00.0,"
}

@test "a GPU excluded by the driver takes no index and cannot be selected" {
	run --separate-stderr "$GPURUN" info --driver-root "$FAKEODD" --csv
	assert_success
	assert_equal "${#lines[@]}" 6
	assert_line --index 3 --partial "0,${ODD_MINOR[0]},NVIDIA H100 80GB HBM3,"
	assert_line --index 4 --partial "1,${ODD_MINOR[1]},NVIDIA L40S,"
	refute_output --partial "1b:00.0"
	run --separate-stderr "$GPURUN" list --driver-root "$FAKEODD" --gpus all --caps utility
	assert_success
	refute_line /dev/nvidia0
	run --separate-stderr "$GPURUN" --driver-root "$FAKEODD" --gpus "$ODD_EXCLUDED_UUID" "$GLIBC_TAR" true
	assert_gpurun_error 125 "--gpus: unknown device $ODD_EXCLUDED_UUID (3 GPUs under $FAKEODD)"
	assert_equal "${stderr_lines[1]}" "hint: GPU 1 (00000000:2c:00.0) has no UUID yet (written when the GPU is initialised: run nvidia-persistenced); select it by index or bus id; 1 GPU excluded by the driver (GPU Excluded: Yes) has no index"
	run --separate-stderr "$GPURUN" --driver-root "$FAKEODD" --gpus 0000:1b:00.0 "$GLIBC_TAR" true
	assert_gpurun_error 125 "--gpus: unknown device 0000:1b:00.0 (3 GPUs under $FAKEODD)"
	assert_equal "${stderr_lines[1]}" "hint: 1 GPU excluded by the driver (GPU Excluded: Yes) has no index"
	run --separate-stderr "$GPURUN" --driver-root "$FAKEODD" --gpus 3 "$GLIBC_TAR" true
	assert_gpurun_error 125 "--gpus: unknown device 3 (3 GPUs under $FAKEODD)"
}

@test "a GPU whose information file has no UUID yet keeps its index; a UUID request says why it may not match" {
	run --separate-stderr "$GPURUN" info --driver-root "$FAKEODD" --csv
	assert_line --index 4 "1,${ODD_MINOR[1]},NVIDIA L40S,Unknown,n/a,00000000:2c:00.0,8.9"
	run --separate-stderr "$GPURUN" --driver-root "$FAKEODD" --dry-run --gpus 1 "$GLIBC_TAR" true
	assert_success
	assert_line --partial " nvidia${ODD_MINOR[1]}   # GPU 1 = PCI ${ODD_BUS[1]}, minor ${ODD_MINOR[1]}"
	run --separate-stderr "$GPURUN" --driver-root "$FAKEODD" --gpus "GPU-????????-????-????-????-????????????" "$GLIBC_TAR" true
	assert_equal "$status" 125
	assert_equal "${stderr_lines[0]}" "gpurun: --gpus: unknown device GPU-????????-????-????-????-???????????? (3 GPUs under $FAKEODD)"
	assert_equal "${stderr_lines[1]}" "hint: GPU 1 (00000000:2c:00.0) has no UUID yet (written when the GPU is initialised: run nvidia-persistenced); select it by index or bus id; 1 GPU excluded by the driver (GPU Excluded: Yes) has no index"
}

@test "a GPU of a model gpurun cannot name an architecture for never satisfies an arch requirement" {
	run --separate-stderr "$GPURUN" --driver-root "$FAKEODD" --gpus device=2 --require 'arch>=8.0' "$GLIBC_TAR" true
	assert_equal "$status" 125
	assert_equal "${stderr_lines[0]}" "gpurun: requirement error: unsatisfied condition: arch>=8.0"
	assert_equal "${stderr_lines[1]}" "hint: GPU 2 is a NVIDIA RTX PRO 6000 Blackwell Server Edition, whose architecture gpurun does not know (it reads no NVML): no arch condition can be met on it"
	# Another alternative may still hold; other keys are checked as usual.
	run --separate-stderr "$GPURUN" --driver-root "$FAKEODD" --gpus device=2 --require 'arch>=8.0 driver>=550' "$GLIBC_TAR" echo ran
	assert_success
	assert_output ran
	run --separate-stderr "$GPURUN" --driver-root "$FAKEODD" --gpus 0 --require 'arch>=8.0' "$GLIBC_TAR" echo ran
	assert_success
}

@test "GPURUN_DRIVER_ROOT points info at a driver root when --driver-root is absent" {
	GPURUN_DRIVER_ROOT=$FAKE1 run --separate-stderr "$GPURUN" info --csv
	assert_success
	assert_line --index 3 --partial "$ONE_UUID"
}

@test "--driver-root wins over GPURUN_DRIVER_ROOT" {
	GPURUN_DRIVER_ROOT=$FAKE1 run --separate-stderr "$GPURUN" info --csv --driver-root "$FAKE4"
	assert_success
	assert_equal "${#lines[@]}" 7
}

@test "--driver-root before the verb is a global option, as nvidia-container-cli's --root" {
	run --separate-stderr "$GPURUN" --driver-root "$FAKE4" info --csv
	assert_success
	assert_equal "${#lines[@]}" 7
	run --separate-stderr "$GPURUN" --driver-root="$FAKE1" list --gpus 0 --caps utility
	assert_success
	assert_output "$(expected_list "$FAKE1" utility /dev/nvidia0)"
	run --separate-stderr "$GPURUN" --driver-root "$FAKE1" doctor
	assert_line --partial "NVIDIA driver: version $DRIVER_VERSION, 1 GPU under "
	run --separate-stderr "$GPURUN" --driver-root "$FAKE4" run --dry-run --gpus 1 "$GLIBC_TAR" true
	assert_success
	assert_line --partial " nvidia0   # GPU 1 = PCI 0000:5e:00.0, minor 0"
}

@test "the verb's own --driver-root wins over the global one" {
	run --separate-stderr "$GPURUN" --driver-root "$FAKE4" info --csv --driver-root "$FAKE1"
	assert_success
	assert_equal "${#lines[@]}" 4
}

@test "gpurun list prints nodes, binaries, libraries, IPC and firmware in the reference order" {
	run --separate-stderr "$GPURUN" list --driver-root="$FAKE1"
	assert_success
	assert_output "$(expected_list "$FAKE1" all /dev/nvidia0)"
}

@test "gpurun list --gpus 1 lists the node of the second GPU in bus order (minor 0)" {
	run --separate-stderr "$GPURUN" list --driver-root "$FAKE4" --gpus 1 --caps utility
	assert_success
	assert_output "$(expected_list "$FAKE4" utility /dev/nvidia0)"
}

@test "gpurun list --gpus all lists GPU nodes in index order" {
	run --separate-stderr "$GPURUN" list --driver-root "$FAKE4" --gpus all --caps utility
	assert_success
	assert_output "$(expected_list "$FAKE4" utility /dev/nvidia2 /dev/nvidia0 /dev/nvidia3 /dev/nvidia1)"
}

@test "files of an older driver, unlisted libraries and foreign firmware are never listed" {
	run --separate-stderr "$GPURUN" list --driver-root "$FAKE4"
	assert_success
	for d in "${DECOYS[@]}"; do
		refute_output --partial "$d"
	done
}

# cache_variant: a copy of the one-GPU driver's proc, etc and usr (enough for
# the libraries of `gpurun list`) in $BATS_TEST_TMPDIR/cache; prints it.
cache_variant() {
	local root=$BATS_TEST_TMPDIR/cache
	mkdir -p "$root"
	cp -r "$FAKE1/proc" "$FAKE1/etc" "$FAKE1/usr" "$root/" && echo "$root"
}

# The libraries `gpurun list` finds under ROOT, with ROOT cut off.
listed_libs() {
	"$GPURUN" list --driver-root "$1" --gpus none --caps all | grep '\.so\.' | sed "s|^$1||"
}

@test "an ld.so.cache in the old+new compat layout gives the same libraries" {
	root=$(cache_variant)
	python3 "$FAKEDRIVER_SRC/compat-cache.py" "$FAKE1/etc/ld.so.cache" "$root/etc/ld.so.cache"
	run listed_libs "$root"
	assert_success
	assert_output "$(listed_libs "$FAKE1")"
	assert_equal "${#lines[@]}" 34
}

@test "an ld.so.cache in the old-only layout gives the same libraries" {
	skip_unless_root "ldconfig -r chroots"
	root=$(cache_variant)
	ldconfig -c compat -r "$root"
	head -c 11 "$root/etc/ld.so.cache" | grep -q '^ld.so-1.7.0' || fail "not an old-format cache"
	run listed_libs "$root"
	assert_success
	assert_output "$(listed_libs "$FAKE1")"
}

@test "an ld.so.cache of another architecture gives none of its libraries" {
	local other=aarch64 mine=x86_64
	[[ $(uname -m) == aarch64 ]] && other=x86_64 mine=aarch64
	root=$(cache_variant)
	python3 "$FAKEDRIVER_SRC/arch-cache.py" "$FAKE1/etc/ld.so.cache" "$root/etc/ld.so.cache" "$other"
	run listed_libs "$root"
	assert_success
	assert_output ""
	# The same rewrite for this machine's own architecture gives them all back.
	python3 "$FAKEDRIVER_SRC/arch-cache.py" "$FAKE1/etc/ld.so.cache" "$root/etc/ld.so.cache" "$mine"
	run listed_libs "$root"
	assert_success
	assert_output "$(listed_libs "$FAKE1")"
}

@test "a corrupted ld.so.cache is an error naming it, not a crash" {
	root=$(cache_variant)
	head -c 700 "$FAKE1/etc/ld.so.cache" >"$root/etc/ld.so.cache"
	run --separate-stderr "$GPURUN" list --driver-root "$root"
	assert_gpurun_error 125 "$root/etc/ld.so.cache: corrupted ld.so.cache"
}

# ---- capabilities ------------------------------------------------------------------

# list_caps CAPS: `gpurun list` for no GPU and CAPS, compared with the
# reference oracle.
list_caps() {
	run --separate-stderr "$GPURUN" list --driver-root "$FAKE4" --gpus none --caps "$1"
	assert_success
	assert_output "$(expected_list "$FAKE4" "${2:-$1}")"
}

@test "--caps utility lists exactly the utility files" {
	list_caps utility
}

@test "--caps compute lists exactly the compute files and the uvm nodes" {
	list_caps compute
}

@test "--caps video brings the compute libraries and uvm, not the MPS binaries" {
	list_caps video
	assert_output --partial "/libcuda.so.$DRIVER_VERSION"
	refute_output --partial nvidia-cuda-mps
}

@test "--caps graphics lists exactly the graphics libraries, without uvm or modeset" {
	list_caps graphics
	refute_output --partial /dev/nvidia-uvm
	refute_output --partial /dev/nvidia-modeset
}

@test "--caps display brings the graphics libraries and /dev/nvidia-modeset" {
	list_caps display
	assert_line /dev/nvidia-modeset
}

@test "--caps ngx lists exactly the ngx library" {
	list_caps ngx
}

@test "--caps all is every capability" {
	list_caps all utility,compute,video,graphics,display,ngx
}

@test "uvm nodes come only with compute or video" {
	for caps in utility graphics display ngx; do
		run --separate-stderr "$GPURUN" list --driver-root "$FAKE4" --gpus none --caps "$caps"
		assert_success
		refute_output --partial /dev/nvidia-uvm
	done
}

@test "an unknown capability is an error naming it" {
	run --separate-stderr gpu4 --caps compute,warp --gpus 0 "$GLIBC_TAR" true
	assert_gpurun_error 125 'unknown driver capability "warp"'
}

@test "each capability injects exactly its reference files into the container" {
	for caps in utility compute video graphics display ngx; do
		run --separate-stderr gpu4 --gpus 0 --caps "$caps" "$GLIBC_TAR" sh -c "$INJECTED_INSIDE"
		assert_success
		assert_output "$(expected_injected "$caps")"
	done
}

@test "the default capabilities are utility,compute" {
	run --separate-stderr gpu4 --gpus 0 "$GLIBC_TAR" sh -c "$INJECTED_INSIDE"
	assert_success
	assert_output "$(expected_injected utility,compute)"
}

@test "NVIDIA_DRIVER_CAPABILITIES given with -e sets the capabilities" {
	run --separate-stderr gpu4 --gpus 0 -e NVIDIA_DRIVER_CAPABILITIES=video "$GLIBC_TAR" sh -c "$INJECTED_INSIDE"
	assert_success
	assert_output "$(expected_injected video)"
}

@test "--caps wins over NVIDIA_DRIVER_CAPABILITIES" {
	run --separate-stderr gpu4 --gpus 0 --caps ngx -e NVIDIA_DRIVER_CAPABILITIES=video "$GLIBC_TAR" \
		sh -c "$INJECTED_INSIDE"
	assert_success
	assert_output "$(expected_injected ngx)"
}

# ---- selection -------------------------------------------------------------------

# smi_line I: what nvidia-smi -L prints for GPU index I of the four, when it
# is the Nth visible one.
smi_line() {
	echo "GPU $2: ${FOUR_MODEL[$1]} (UUID: ${FOUR_UUID[$1]})"
}

@test "--gpus 1 exposes the minor of the second bus id, and nvidia-smi sees that GPU" {
	run --separate-stderr gpu4 --gpus 1 "$GLIBC_TAR" sh -c 'ls /dev | grep "^nvidia[0-9]"; nvidia-smi -L'
	assert_success
	assert_output "nvidia0
$(smi_line 1 0)"
}

@test "--gpus all: nvidia-smi -L lists the four GPUs in bus order with their UUIDs" {
	run --separate-stderr gpu4 --gpus all "$GLIBC_TAR" nvidia-smi -L
	assert_success
	assert_output "$(smi_line 0 0)
$(smi_line 1 1)
$(smi_line 2 2)
$(smi_line 3 3)"
}

@test "--gpus 0,2 gives exactly those two GPUs" {
	run --separate-stderr gpu4 --gpus 2,0 "$GLIBC_TAR" nvidia-smi -L
	assert_success
	assert_output "$(smi_line 0 0)
$(smi_line 2 1)"
}

@test "--gpus none gives the driver and control nodes but no GPU" {
	run --separate-stderr gpu4 --gpus none "$GLIBC_TAR" sh -c \
		'ls /dev | grep nvidia; ls /proc/driver/nvidia/gpus | wc -l; nvidia-smi -L; echo "smi exit $?"'
	assert_success
	assert_output "nvidia-uvm
nvidia-uvm-tools
nvidiactl
0
No devices were found
smi exit 6"
}

@test "--gpus void injects nothing" {
	run --separate-stderr gpu4 --gpus void "$GLIBC_TAR" sh -c 'ls /dev | grep -c nvidia; ls /usr/bin/nvidia-smi'
	assert_failure
	assert_line --index 0 0
}

@test "GPU-<uuid> selects a GPU, in any case" {
	uuid=${FOUR_UUID[3]}
	run --separate-stderr gpu4 --gpus "${uuid^^}" "$GLIBC_TAR" nvidia-smi -L
	assert_success
	assert_output "$(smi_line 3 0)"
}

@test "a PCI bus id selects a GPU in short and 8-digit-domain forms" {
	run --separate-stderr gpu4 --gpus 86:00.0,00000000:AF:00.0 "$GLIBC_TAR" nvidia-smi -L
	assert_success
	assert_output "$(smi_line 2 0)
$(smi_line 3 1)"
}

@test "docker's device=0,2 form selects devices, quoted or not" {
	for spec in 'device=0,2' '"device=0,2"'; do
		run --separate-stderr gpu4 --gpus "$spec" "$GLIBC_TAR" nvidia-smi -L
		assert_success
		assert_output "$(smi_line 0 0)
$(smi_line 2 1)"
	done
}

@test "docker's count=2 selects the first two GPUs" {
	run --separate-stderr gpu4 --gpus count=2 "$GLIBC_TAR" nvidia-smi -L
	assert_success
	assert_output "$(smi_line 0 0)
$(smi_line 1 1)"
}

@test "NVIDIA_VISIBLE_DEVICES given with -e selects GPUs" {
	run --separate-stderr gpu4 -e NVIDIA_VISIBLE_DEVICES=3 "$GLIBC_TAR" nvidia-smi -L
	assert_success
	assert_output "$(smi_line 3 0)"
}

@test "--gpus wins over NVIDIA_VISIBLE_DEVICES" {
	run --separate-stderr gpu4 --gpus 1 -e NVIDIA_VISIBLE_DEVICES=3 "$GLIBC_TAR" nvidia-smi -L
	assert_success
	assert_output "$(smi_line 1 0)"
}

@test "NVIDIA_VISIBLE_DEVICES=void or empty is not a GPU container" {
	for v in void ""; do
		run --separate-stderr gpu4 -e "NVIDIA_VISIBLE_DEVICES=$v" "$GLIBC_TAR" sh -c 'ls /dev | grep -c nvidia'
		assert_output 0
	done
}

@test "the host's own NVIDIA_VISIBLE_DEVICES never selects GPUs" {
	NVIDIA_VISIBLE_DEVICES=all run --separate-stderr gpu4 "$GLIBC_TAR" sh -c 'ls /dev | grep -c nvidia'
	assert_output 0
}

@test "an unknown device index is an error naming it, exit 125" {
	run --separate-stderr gpu4 --gpus 0,7 "$GLIBC_TAR" true
	assert_gpurun_error 125 "--gpus: unknown device 7 (4 GPUs under $FAKE4)"
}

@test "an unknown GPU UUID in NVIDIA_VISIBLE_DEVICES is an error naming it" {
	run --separate-stderr gpu4 -e NVIDIA_VISIBLE_DEVICES=GPU-deadbeef "$GLIBC_TAR" true
	assert_gpurun_error 125 "NVIDIA_VISIBLE_DEVICES: unknown device GPU-deadbeef"
}

@test "a malformed device is refused before any driver is looked for" {
	mkdir "$BATS_TEST_TMPDIR/empty"
	run --separate-stderr "$GPURUN" --driver-root "$BATS_TEST_TMPDIR/empty" --gpus 0,gpu1 "$GLIBC_TAR" true
	assert_gpurun_error 125 "--gpus: gpu1: not a GPU index, GPU-<uuid>, PCI bus id or MIG device"
}

@test "MIG devices of GPUs without MIG are unknown devices (MIG itself: gpu_mig.bats)" {
	run --separate-stderr gpu4 --gpus 0:1 "$GLIBC_TAR" true
	assert_gpurun_error 125 "--gpus: unknown device 0:1 (GPU 0 has 0 MIG devices under $FAKE4)"
	run --separate-stderr gpu4 --gpus MIG-4b7d8c43-1f5e-5a2b-9c3d-1e2f3a4b5c6d "$GLIBC_TAR" true
	assert_gpurun_error 125 "--gpus: unknown device MIG-4b7d8c43-1f5e-5a2b-9c3d-1e2f3a4b5c6d (NVML lists 0 MIG devices under $FAKE4)"
}

@test "keywords win over devices as in the toolkit: none,1 is none and 0,void is void" {
	run --separate-stderr gpu4 --dry-run -e NVIDIA_VISIBLE_DEVICES=none,1 "$GLIBC_TAR" true
	assert_success
	assert_line --partial '"$D"/dev dev nvidiactl'
	refute_line --regexp " nvidia[0-9]+( |$)"
	run --separate-stderr gpu4 --dry-run --gpus 0,void "$GLIBC_TAR" true
	assert_success
	refute_output --partial nvidia
	run --separate-stderr gpu4 --dry-run -e NVIDIA_VISIBLE_DEVICES=2,all "$GLIBC_TAR" true
	assert_success
	assert_equal "$(grep -cE ' nvidia[0-9]+( |$)' <<<"$output")" 4
}

@test "all is read in any case, none and void only in lower case, as upstream" {
	run --separate-stderr gpu4 --dry-run -e NVIDIA_VISIBLE_DEVICES=ALL "$GLIBC_TAR" true
	assert_success
	assert_equal "$(grep -cE ' nvidia[0-9]+( |$)' <<<"$output")" 4
	run --separate-stderr gpu4 -e NVIDIA_VISIBLE_DEVICES=NONE "$GLIBC_TAR" true
	assert_gpurun_error 125 "NVIDIA_VISIBLE_DEVICES: NONE: not a GPU index, GPU-<uuid>, PCI bus id or MIG device"
	run --separate-stderr gpu4 --gpus Void "$GLIBC_TAR" true
	assert_gpurun_error 125 "--gpus: Void: not a GPU index, GPU-<uuid>, PCI bus id or MIG device"
}

# ---- placement ------------------------------------------------------------------

@test "on a Debian image the libraries land in the multiarch dir and ldconfig -p lists them" {
	run --separate-stderr gpu4 --gpus 0 "$GLIBC_TAR" sh -c \
		"ls $LIBDIR_DEBIAN/libnvidia-ml.so.$DRIVER_VERSION && ldconfig -p | grep -F 'libnvidia-ml.so.1 '"
	assert_success
	assert_line --index 0 "$LIBDIR_DEBIAN/libnvidia-ml.so.$DRIVER_VERSION"
	assert_line --index 1 --partial "=> $LIBDIR_DEBIAN/libnvidia-ml.so.1"
}

@test "with -u 1000:1000 the image's ldconfig, run as that user, still lists the libraries and leaves root's cache" {
	run --separate-stderr gpu4 --gpus 0 -u 1000:1000 "$GLIBC_TAR" sh -c \
		"ldconfig -p | grep -F -e 'libnvidia-ml.so.1 ' -e 'libcuda.so.1 ' | sort; stat -c %a /etc/ld.so.cache; ls -a / | grep -c '^\.gpurun-ldconfig' || :"
	assert_success
	assert_equal "$stderr" ""
	assert_line --index 0 --partial "libcuda.so.1 (libc6,x86-64) => $LIBDIR_DEBIAN/libcuda.so.1"
	assert_line --index 1 --partial "libnvidia-ml.so.1 (libc6,x86-64) => $LIBDIR_DEBIAN/libnvidia-ml.so.1"
	assert_line --index 2 644
	assert_line --index 3 0
	assert_equal "${#lines[@]}" 4
}

@test "with --read-only, ldconfig still ran and nvidia-smi works" {
	run --separate-stderr gpu4 --read-only --gpus 0 "$GLIBC_TAR" sh -c \
		"ldconfig -p | grep -cF 'libnvidia-ml.so.1 '; nvidia-smi -L; touch /x 2>/dev/null || echo read-only"
	assert_success
	assert_output "1
$(smi_line 0 0)
read-only"
}

@test "on a non-Debian image without ldconfig the libraries land in /usr/lib64 and it still runs" {
	run --separate-stderr gpu4 --gpus 0 "$BUSYBOX_TAR" sh -c \
		"ls /usr/lib64/libcuda.so.$DRIVER_VERSION /usr/bin/nvidia-smi; readlink /usr/lib64/libcuda.so"
	assert_success
	assert_output "/usr/bin/nvidia-smi
/usr/lib64/libcuda.so.$DRIVER_VERSION
libcuda.so.1"
}

@test "binaries land in /usr/bin, firmware and IPC paths at their driver-root paths" {
	run --separate-stderr gpu4 --gpus 0 "$GLIBC_TAR" sh -c '
		nvidia-debugdump
		cat /lib/firmware/nvidia/'"$DRIVER_VERSION"'/gsp_ga10x.bin
		test -S /run/nvidia-persistenced/socket && echo socket
		test -d /tmp/nvidia-mps && echo mps-dir'
	assert_success
	assert_output "fake nvidia-debugdump
GSP firmware $DRIVER_VERSION ga10x
socket
mps-dir"
}

@test "libcuda.so links to libcuda.so.1, which ldconfig made" {
	run --separate-stderr gpu4 --gpus 0 "$GLIBC_TAR" sh -c \
		"readlink $LIBDIR_DEBIAN/libcuda.so; readlink $LIBDIR_DEBIAN/libcuda.so.1"
	assert_success
	assert_output "libcuda.so.1
libcuda.so.$DRIVER_VERSION"
}

@test "device nodes are bound ro,nosuid,noexec but not nodev, with the driver's numbers" {
	run --separate-stderr gpu4 --gpus 1 "$GLIBC_TAR" sh -c \
		'for d in /dev/nvidiactl /dev/nvidia-uvm /dev/nvidia0; do probe mountinfo-has $d; probe stat $d; done'
	assert_success
	for d in nvidiactl nvidia-uvm nvidia0; do
		assert_line --regexp "^/dev/$d opts=ro,nosuid,noexec(,|$| )"
	done
	refute_output --partial nodev
	# (owned by root, or by the overflow id in a user namespace)
	assert_line --partial "type=chr mode=0666 rdev=195:255 "
	assert_line --partial "type=chr mode=0666 rdev=510:0 "
	assert_line --partial "type=chr mode=0666 rdev=195:0 "
}

@test "libraries, binaries and firmware are bound read-only, nodev and nosuid" {
	run --separate-stderr gpu4 --gpus 0 "$GLIBC_TAR" sh -c "
		probe mountinfo-has $LIBDIR_DEBIAN/libcuda.so.$DRIVER_VERSION
		probe mountinfo-has /usr/bin/nvidia-smi
		probe mountinfo-has /usr/lib/firmware/nvidia/$DRIVER_VERSION/gsp_tu10x.bin
		probe write $LIBDIR_DEBIAN/libcuda.so.$DRIVER_VERSION"
	assert_success
	# The image is usrmerged: /lib/firmware/... is /usr/lib/firmware/...
	for p in "$LIBDIR_DEBIAN/libcuda.so.$DRIVER_VERSION" /usr/bin/nvidia-smi \
		"/usr/lib/firmware/nvidia/$DRIVER_VERSION/gsp_tu10x.bin"; do
		assert_line --regexp "^$p opts=ro,nosuid,nodev(,| )"
	done
	assert_line --regexp "write: E(ROFS|ACCES)"
}

@test "the plan's control node and GPU node share a line, its comment naming the GPU" {
	run --separate-stderr gpu4 --dry-run --gpus 0 --caps utility "$GLIBC_TAR" true
	assert_success
	assert_line 'bind_files ro,nosuid,noexec "$D"/dev dev nvidiactl nvidia2   # GPU 0 = PCI 0000:3b:00.0, minor 2'
}

@test "the links nvidia-container-cli adds beside the SONAME links share a line whose comment names each" {
	run --separate-stderr gpu4 --dry-run --gpus 0 --caps all "$GLIBC_TAR" true
	assert_success
	run plan_join <<<"$output"
	assert_line --regexp "^link_in [^ ]+ libcuda.so.1 libcuda.so libGLX_nvidia.so.[0-9.]+ libGLX_indirect.so.0 libnvidia-opticalflow.so.1 libnvidia-opticalflow.so   # for -lcuda, GLX's indirect rendering and -lnvidia-opticalflow$"
	run --separate-stderr gpu4 --dry-run --gpus 0 --caps compute "$GLIBC_TAR" true
	run plan_join <<<"$output"
	assert_line --regexp "^link_in [^ ]+ libcuda.so.1 libcuda.so   # for -lcuda$"
}

@test "the plan runs the image's ldconfig over the lib dir after the pivot" {
	run --separate-stderr gpu4 --dry-run --gpus 0 "$GLIBC_TAR" true
	assert_success
	# Started before the pivot (the host's setpriv), told which ldconfig after it.
	assert_line --regexp "^after_pivot [0-9]+:[0-9]+ (''|--groups=[0-9,]+) '' ${LIBDIR_DEBIAN}   # the image's ldconfig, with no capability\$"
	assert_line --regexp "^\( exec 5>\"\\\$S/piv\"; pivot_root \. \.; cuda_compat [0-9]+ >&5 \) &"
	assert_line --partial "exec \"\$l\" -f /etc/ld.so.conf -C \"/\$d/ld.so.cache\" \$c \"\$@\""
	assert_line --partial " nvidia2   # GPU 0 = PCI 0000:3b:00.0, minor 2"
}

# ---- CUDA forward compatibility ---------------------------------------------------

# compat_image VERSION: the glibc image with a cuda-compat directory whose
# libcuda.so.VERSION is a real library with the SONAME libcuda.so.1 (the fake
# driver's, renamed); prints the archive.
compat_image() {
	local d=$BATS_TEST_TMPDIR/compat img=$BATS_TEST_TMPDIR/compat-$1.tar
	mkdir -p "$d/usr/local/cuda/compat"
	cp "$FAKE4$LIBDIR_DEBIAN/libcuda.so.$DRIVER_VERSION" "$d/usr/local/cuda/compat/libcuda.so.$1"
	ln -s "libcuda.so.$1" "$d/usr/local/cuda/compat/libcuda.so.1"
	tar -C "$(fixture glibc)" -cf "$img" . && tar -C "$d" -rf "$img" ./usr/local/cuda && echo "$img"
}

@test "an image whose compat libcuda is newer than the driver gets it first in the loader cache" {
	img=$(compat_image 560.35.03)
	run --separate-stderr gpu4 --gpus 0 "$img" sh -c "ldconfig -p | grep -F 'libcuda.so.1 '"
	assert_success
	assert_line --index 0 --partial "=> /usr/local/cuda/compat/libcuda.so.1"
	assert_line --index 1 --partial "=> $LIBDIR_DEBIAN/libcuda.so.1"
	run --separate-stderr gpu4 --verbose --gpus 0 "$img" true
	assert_success
	grep -qxF "+ # CUDA forward compatibility: /usr/local/cuda/compat has libcuda 560, the driver is $DRIVER_VERSION: \$CUDA_COMPAT=/usr/local/cuda/compat" <<<"$stderr" ||
		fail "no forward-compatibility line in: $stderr"
}

@test "an image whose compat libcuda is not newer than the driver keeps the driver's libcuda first" {
	img=$(compat_image 550.127.05)
	run --separate-stderr gpu4 --gpus 0 "$img" sh -c "ldconfig -p | grep -F 'libcuda.so.1 '"
	assert_success
	assert_equal "${#lines[@]}" 1
	assert_line --index 0 --partial "=> $LIBDIR_DEBIAN/libcuda.so.1"
	run --separate-stderr gpu4 --verbose --gpus 0 "$img" true
	assert_success
	grep -qxF "+ # CUDA forward compatibility: /usr/local/cuda/compat has libcuda 550, the driver is $DRIVER_VERSION: \$CUDA_COMPAT=(empty)" <<<"$stderr" ||
		fail "no forward-compatibility line in: $stderr"
}

@test "--dry-run shows the forward-compatibility rule on the ldconfig line, only with libcuda" {
	run --separate-stderr gpu4 --dry-run --gpus 0 "$GLIBC_TAR" true
	assert_success
	# cuda_compat's word: the driver's major, which the image's compat
	# libcuda must pass to go first (ns/plan.sh).
	assert_line --partial "; pivot_root . .; cuda_compat ${DRIVER_VERSION%%.*} >&5 ) &"
	assert_line --partial "echo \"\$(image_ldconfig)\" \"\$([ \"\$_c\" -le \"\$1\" ] || echo /usr/local/cuda/compat)\""
	run --separate-stderr gpu4 --dry-run --gpus 0 --caps utility "$GLIBC_TAR" true
	assert_success
	assert_line --partial "; pivot_root . .; image_ldconfig >&5 ) &"
	refute_output --partial "cuda_compat"
}

# ---- /proc/driver/nvidia and /dev -----------------------------------------------

@test "/proc/driver/nvidia has params with ModifyDeviceFiles: 0, version and registry" {
	run --separate-stderr gpu4 --gpus 0 "$GLIBC_TAR" sh -c \
		'cd /proc/driver/nvidia && cat params && echo ---- && cat version registry'
	assert_success
	assert_output "$(sed 's/^ModifyDeviceFiles: 1$/ModifyDeviceFiles: 0/' "$FAKE4/proc/driver/nvidia/params")
----
$(cat "$FAKE4/proc/driver/nvidia/version" "$FAKE4/proc/driver/nvidia/registry")"
	assert_line "ModifyDeviceFiles: 0"
}

@test "/proc/driver/nvidia/gpus shows only the selected GPUs" {
	run --separate-stderr gpu4 --gpus 3,1 "$GLIBC_TAR" sh -c \
		'ls /proc/driver/nvidia/gpus; cat /proc/driver/nvidia/gpus/*/information | grep Minor'
	assert_success
	assert_output "${FOUR_BUS[1]}
${FOUR_BUS[3]}
Device Minor: 	 0
Device Minor: 	 1"
}

@test "/dev holds only the selected GPU nodes" {
	run --separate-stderr gpu4 --gpus 0,2 "$GLIBC_TAR" sh -c 'ls /dev | grep "^nvidia[0-9]"'
	assert_success
	assert_output "nvidia2
nvidia3"
}

@test "/proc/driver/nvidia cannot be changed inside" {
	run --separate-stderr gpu4 --gpus 0 "$GLIBC_TAR" sh -c \
		'probe write /proc/driver/nvidia/params; probe write /proc/driver/nvidia/gpus/new; probe mountinfo-has /proc/driver/nvidia/gpus/0000:3b:00.0'
	assert_success
	assert_line --index 0 --regexp "write: E(ROFS|ACCES)"
	assert_line --index 1 --regexp "write: E(ROFS|ACCES)"
	assert_line --index 2 --regexp "opts=ro,nosuid,nodev,noexec"
}

@test "a container given GPU 0 cannot create the node of another GPU" {
	run --separate-stderr gpu4 --gpus 0 "$GLIBC_TAR" probe mknod /dev/nvidia0
	assert_success
	assert_output --regexp "mknod: E(PERM|ACCES)"
}

# ---- requirements -----------------------------------------------------------------

@test "an unmet cuda requirement stops the launch with the reference message" {
	run --separate-stderr gpu4 --gpus 0 -e 'NVIDIA_REQUIRE_CUDA=cuda>=12.5' "$GLIBC_TAR" true
	assert_gpurun_error 125 "requirement error: unsatisfied condition: cuda>=12.5, please update your driver to a newer version, or use an earlier cuda container"
}

@test "a met requirement lets the container run" {
	run --separate-stderr gpu4 --gpus 0 -e 'NVIDIA_REQUIRE_CUDA=cuda>=12.4 driver>=999' "$GLIBC_TAR" echo ran
	assert_success
	assert_output ran
}

@test "in a requirement a space is OR and a comma is AND" {
	run --separate-stderr gpu4 --gpus 0 -e 'NVIDIA_REQUIRE_X=cuda>=99 driver>=550,driver<551' "$GLIBC_TAR" echo ran
	assert_success
	run --separate-stderr gpu4 --gpus 0 -e 'NVIDIA_REQUIRE_X=cuda>=12.0,driver<550 arch<9' "$GLIBC_TAR" true
	assert_gpurun_error 125 "unsatisfied condition: cuda>=12.0,driver<550"
	refute_output --partial "please update"
}

@test "--require adds a constraint" {
	run --separate-stderr gpu4 --gpus 0 --require 'driver<550' "$GLIBC_TAR" true
	assert_gpurun_error 125 "unsatisfied condition: driver<550"
}

@test "NVIDIA_DISABLE_REQUIRE=true skips the image's requirements" {
	run --separate-stderr gpu4 --gpus 0 -e 'NVIDIA_REQUIRE_CUDA=cuda>=99' -e NVIDIA_DISABLE_REQUIRE=true \
		"$GLIBC_TAR" echo ran
	assert_success
	assert_output ran
}

@test "the legacy CUDA_VERSION rule requires cuda>=MAJOR.MINOR" {
	run --separate-stderr gpu4 --gpus 0 -e CUDA_VERSION=12.6.2 "$GLIBC_TAR" true
	assert_gpurun_error 125 "unsatisfied condition: cuda>=12.6, please update your driver"
	run --separate-stderr gpu4 --gpus 0 -e CUDA_VERSION=12.6.2 -e 'NVIDIA_REQUIRE_CUDA=cuda>=12.0' "$GLIBC_TAR" echo ran
	assert_success
}

@test "a legacy CUDA image without NVIDIA_VISIBLE_DEVICES gets every GPU and all capabilities" {
	run --separate-stderr gpu4 --dry-run -e CUDA_VERSION=12.4.1 "$GLIBC_TAR" true
	assert_success
	assert_equal "$(grep -cE ' nvidia[0-9]+( |$)' <<<"$output")" 4
	assert_line --partial " nvidia-modeset"
	# NVIDIA_REQUIRE_CUDA makes it a current image: no GPU without a request.
	run --separate-stderr gpu4 --dry-run -e CUDA_VERSION=12.4.1 -e 'NVIDIA_REQUIRE_CUDA=cuda>=12.0' "$GLIBC_TAR" true
	assert_success
	refute_output --partial nvidia
	# Set but empty, or void: not a GPU container, legacy or not.
	run --separate-stderr gpu4 --dry-run -e CUDA_VERSION=12.4.1 -e NVIDIA_VISIBLE_DEVICES= "$GLIBC_TAR" true
	assert_success
	refute_output --partial nvidia
}

@test "a legacy CUDA_VERSION is read as a semantic version: 12 is cuda>=12.0" {
	run --separate-stderr gpu4 --gpus 0 -e CUDA_VERSION=12 "$GLIBC_TAR" echo ran
	assert_success
	assert_output ran
	run --separate-stderr gpu4 --gpus 0 -e CUDA_VERSION=13 "$GLIBC_TAR" true
	assert_gpurun_error 125 "unsatisfied condition: cuda>=13.0, please update your driver"
	run --separate-stderr gpu4 --gpus 0 -e CUDA_VERSION=v12.5.0-rc1 "$GLIBC_TAR" true
	assert_gpurun_error 125 "unsatisfied condition: cuda>=12.5,"
	run --separate-stderr gpu4 --gpus 0 -e CUDA_VERSION=12.04 "$GLIBC_TAR" true
	assert_gpurun_error 125 "invalid CUDA_VERSION 12.04 (want a version: 12, 12.4, 12.4.1)"
}

@test "arch and brand are checked for each selected GPU" {
	run --separate-stderr gpu4 --gpus 0 --require 'arch>=8.0' "$GLIBC_TAR" echo ran
	assert_success
	run --separate-stderr gpu4 --gpus 0,2 --require 'arch>=8.0' "$GLIBC_TAR" true
	assert_gpurun_error 125 "unsatisfied condition: arch>=8.0"
	run --separate-stderr gpu4 --gpus 2 --require 'brand=TESLA' "$GLIBC_TAR" echo ran
	assert_success
	run --separate-stderr gpu4 --gpus none --require 'brand=geforce,arch>=10' "$GLIBC_TAR" echo ran
	assert_success
}

@test "an invalid requirement expression is an error" {
	run --separate-stderr gpu4 --gpus 0 --require 'brand>tesla' "$GLIBC_TAR" true
	assert_gpurun_error 125 'invalid expression "brand>tesla"'
}

@test "requirements are not looked at when no GPU is asked for" {
	run --separate-stderr gpu4 -e 'NVIDIA_REQUIRE_CUDA=cuda>=99' "$GLIBC_TAR" echo ran
	assert_success
}

# ---- no driver ----------------------------------------------------------------------

@test "without --gpus, a host without a driver runs as before" {
	mkdir "$BATS_TEST_TMPDIR/empty"
	run --separate-stderr "$GPURUN" --driver-root "$BATS_TEST_TMPDIR/empty" "$GLIBC_TAR" echo ran
	assert_success
	assert_output ran
}

@test "--gpus 0 without a driver is one line naming the driver root, exit 125" {
	mkdir "$BATS_TEST_TMPDIR/empty"
	e=$BATS_TEST_TMPDIR/empty
	run --separate-stderr "$GPURUN" --driver-root "$e" --gpus 0 "$GLIBC_TAR" true
	assert_gpurun_error 125
	assert_equal "$stderr" "gpurun: no NVIDIA driver found under $e: $e/proc/driver/nvidia/version: No such file or directory"
}

@test "gpurun info without a driver fails the same way" {
	run --separate-stderr "$GPURUN" info --driver-root /nonexistent-gpurun-root
	assert_gpurun_error 125 "no NVIDIA driver found under /nonexistent-gpurun-root"
}

# ---- missing device nodes: nvidia-uvm not loaded, nodes gone after a reload ----------

# driver_copy ROOT: a copy of a fake driver root (device nodes included, so
# root only) in $BATS_TEST_TMPDIR/drv, by its canonical path.
driver_copy() {
	cp -a "$1" "$BATS_TEST_TMPDIR/drv" && realpath "$BATS_TEST_TMPDIR/drv"
}

MODPROBE_LOG=var/log/nvidia-modprobe.log

@test "unprivileged, a compute launch without /dev/nvidia-uvm fails in one line naming the node and the fix" {
	skip_unless_user
	run --separate-stderr "$GPURUN" --driver-root "$FAKENOUVM" --gpus 0 "$GLIBC_TAR" true
	assert_gpurun_error 125
	assert_equal "$stderr" "gpurun: missing NVIDIA device node under $FAKENOUVM: /dev/nvidia-uvm (nvidia-uvm is not loaded); as root, run nvidia-modprobe -u -c=0"
	assert_file_not_exists "$FAKENOUVM/$MODPROBE_LOG"
}

@test "a launch whose capabilities do not need nvidia-uvm runs without it and runs no nvidia-modprobe" {
	run --separate-stderr "$GPURUN" --driver-root "$FAKENOUVM" --gpus 0 --caps utility "$GLIBC_TAR" sh -c \
		'ls /dev | grep nvidia; nvidia-smi -L'
	assert_success
	assert_output "nvidia0
nvidiactl
GPU 0: NVIDIA H100 80GB HBM3 (UUID: $ONE_UUID)"
	assert_file_not_exists "$FAKENOUVM/$MODPROBE_LOG"
}

@test "as root, a missing /dev/nvidia-uvm is made by the driver root's nvidia-modprobe -u -c=0, chrooted, with only PATH, no stdin, no other fd" {
	skip_unless_root "nvidia-modprobe runs only as root; copying device nodes needs mknod"
	root=$(driver_copy "$FAKENOUVM")
	run --separate-stderr "$GPURUN" --driver-root "$root" --gpus 0 "$GLIBC_TAR" sh -c \
		'stat -c "%n %t:%T" /dev/nvidia-uvm /dev/nvidia-uvm-tools' </dev/zero
	assert_success
	assert_output "/dev/nvidia-uvm 1fe:0
/dev/nvidia-uvm-tools 1fe:1"
	assert_equal "$(cat "$root/$MODPROBE_LOG")" "args: -u -c=0
env: PATH=/usr/sbin:/usr/bin:/sbin:/bin
stdin: /dev/null
fds: 0 1 2"
}

@test "as root, --dry-run prints the nvidia-modprobe run it would do and runs nothing" {
	skip_unless_root "nvidia-modprobe runs only as root; copying device nodes needs mknod"
	root=$(driver_copy "$FAKENOUVM")
	run --separate-stderr "$GPURUN" --driver-root "$root" --dry-run --gpus 0 "$GLIBC_TAR" true
	assert_success
	assert_line "chroot $root /usr/bin/nvidia-modprobe -u -c=0   # a node is missing: the toolkit's --load-kmods, before the namespaces"
	assert_file_not_exists "$root/$MODPROBE_LOG"
	assert_file_not_exists "$root/dev/nvidia-uvm"
}

@test "as root, the nvidia-modprobe line of --dry-run quotes a driver root whose name is shell code" {
	skip_unless_root "nvidia-modprobe runs only as root; copying device nodes needs mknod"
	local root=$BATS_TEST_TMPDIR/'drv $(touch "$GPURUN_CANARY") x'
	cp -a "$FAKENOUVM" "$root"
	export GPURUN_CANARY=$BATS_TEST_TMPDIR/canary
	run --separate-stderr "$GPURUN" --driver-root "$root" --dry-run --gpus 0 "$GLIBC_TAR" true
	assert_success
	local line
	line=$(grep '^chroot ' <<<"$output")
	# The shell reads the line back as chroot, the root as one word, the program.
	sh -c "set -- ${line%%   #*}; printf '%s\n' \"\$2\" \"\$3\"" >"$BATS_TEST_TMPDIR/words"
	assert_equal "$(cat "$BATS_TEST_TMPDIR/words")" "$root
/usr/bin/nvidia-modprobe"
	assert_file_not_exists "$GPURUN_CANARY"
	assert_file_not_exists "$root/$MODPROBE_LOG"
}

@test "as root, /dev/nvidiactl and a GPU node gone after a driver reload are made again with nvidia-modprobe -c=MINOR" {
	skip_unless_root "nvidia-modprobe runs only as root; copying device nodes needs mknod"
	root=$(driver_copy "$FAKENOUVM")
	rm "$root/dev/nvidiactl" "$root/dev/nvidia0"
	run --separate-stderr "$GPURUN" --driver-root "$root" --gpus 0 --caps utility "$GLIBC_TAR" nvidia-smi -L
	assert_success
	assert_output "GPU 0: NVIDIA H100 80GB HBM3 (UUID: $ONE_UUID)"
	assert_equal "$(grep args: "$root/$MODPROBE_LOG")" "args: -c=0"
}

@test "as root, without nvidia-modprobe in the driver root the missing nodes are an error naming them and the fix" {
	skip_unless_root "copying device nodes needs mknod"
	root=$(driver_copy "$FAKENOUVM")
	rm "$root/usr/bin/nvidia-modprobe" "$root/dev/nvidia0"
	run --separate-stderr "$GPURUN" --driver-root "$root" --gpus 0 "$GLIBC_TAR" true
	assert_gpurun_error 125
	assert_equal "$stderr" "gpurun: missing NVIDIA device nodes under $root: /dev/nvidia0 (GPU 0), /dev/nvidia-uvm (nvidia-uvm is not loaded); $root has no usr/bin/nvidia-modprobe to create them; as root, run nvidia-modprobe -c=0; nvidia-modprobe -u -c=0"
}

@test "as root, an nvidia-modprobe that fails leaves an error saying how it ended" {
	skip_unless_root "nvidia-modprobe runs only as root; copying device nodes needs mknod"
	root=$(driver_copy "$FAKENOUVM")
	# A dynamic program in a root without a libc: it cannot even start.
	cp "$root/usr/bin/nvidia-smi" "$root/usr/bin/nvidia-modprobe"
	run --separate-stderr "$GPURUN" --driver-root "$root" --gpus 0 "$GLIBC_TAR" true
	assert_gpurun_error 125
	assert_equal "$stderr" "gpurun: missing NVIDIA device node under $root: /dev/nvidia-uvm (nvidia-uvm is not loaded); chroot $root /usr/bin/nvidia-modprobe -u -c=0: exit status 127; as root, run nvidia-modprobe -u -c=0"
}

@test "a driver root without proc/devices (GPU Operator) finds nvidia-uvm by its node" {
	skip_unless_root "copying device nodes needs mknod"
	root=$(driver_copy "$FAKE1")
	rm "$root/proc/devices"
	run --separate-stderr "$GPURUN" list --driver-root "$root" --gpus 0 --caps compute
	assert_success
	assert_line --index 1 /dev/nvidia-uvm
	assert_line --index 2 /dev/nvidia-uvm-tools
}

# ---- unprivileged ------------------------------------------------------------------

@test "an unprivileged caller gets its GPUs by bind mounts in a user namespace" {
	skip_unless_user
	run --separate-stderr gpu4 --gpus 1 "$GLIBC_TAR" sh -c \
		'probe ns user; probe mountinfo-has /dev/nvidia0; nvidia-smi -L'
	assert_success
	refute_line "$(host_ns user)"
	assert_line --index 1 --partial "/dev/nvidia0 opts=ro,nosuid,noexec"
	assert_line --index 2 "$(smi_line 1 0)"
}

@test "an image without ldconfig finds the driver by SONAME: gpurun makes the SONAME links" {
	local img=$BATS_TEST_TMPDIR/noldconfig.tar
	tar -C "$(fixture glibc)" --exclude=./sbin/ldconfig --exclude=./usr/sbin/ldconfig \
		--exclude=./etc/ld.so.cache -cf "$img" .
	run --separate-stderr gpu4 --gpus 0 "$img" sh -c \
		'[ -e /sbin/ldconfig ] || echo no-ldconfig; readlink '"$LIBDIR_DEBIAN"'/libnvidia-ml.so.1; nvidia-smi -L'
	assert_success
	assert_line no-ldconfig
	assert_line "libnvidia-ml.so.$DRIVER_VERSION"
	assert_line "$(smi_line 0 0)"
	run --separate-stderr gpu4 --dry-run --gpus 0 "$img" true
	run plan_join <<<"$output"
	assert_line --regexp "^link_in (\"\\.\\\$LIBDIR\"|${LIBDIR_DEBIAN#/}) .*libcuda.so.$DRIVER_VERSION libcuda.so.1( |$)"
}

@test "nvidia-smi without the utility capability is not found, with a hint naming utility" {
	run --separate-stderr gpu4 --gpus 0 --caps compute "$GLIBC_TAR" nvidia-smi -L
	assert_gpurun_error 127 "nvidia-smi: command not found"
	assert_equal "${stderr_lines[1]}" "hint: nvidia-smi comes with the driver capability utility, which this launch leaves out: add it to --caps (or NVIDIA_DRIVER_CAPABILITIES)"
	# A command no capability brings, or one the launch has: no hint.
	run --separate-stderr gpu4 --gpus 0 --caps compute "$GLIBC_TAR" no-such-command
	assert_gpurun_error 127 "no-such-command: command not found"
	assert_equal "${#stderr_lines[@]}" 1
	run --separate-stderr gpu4 --gpus 0 --caps utility "$GLIBC_TAR" nvidia-smi -L
	assert_success
}
