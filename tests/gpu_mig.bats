#!/usr/bin/env bats
# MIG devices, MIG management, IMEX channels, compat32 libraries and the
# graphics configuration files, against the `mig` fake driver
# (tests/fakedriver/build.sh): index 0 an A100 (minor 0) in MIG mode with
# GPU instance 1 (compute instance 0) and GPU instance 2 (compute instances
# 0 and 1), index 1 an H100 (minor 1) without MIG.  Expected minors are
# the driver's: GPU instance G of GPU 0 is nvidia-cap 3+9G, its compute
# instance C is 4+9G+C (proc/driver/nvidia-caps/mig-minors).

load lib/common
load lib/gpu

setup_file() {
	gpu_setup_file
}

gpum() {
	"$GPURUN" --driver-root "$FAKEMIG" "$@"
}

MIG_UUID0=GPU-a1000000-1111-4222-8333-444455556666
# The fake NVML's MIG UUIDs (tests/fakedriver/nvml.c: the parent's UUID,
# its last four digits GI and CI in hex).
MIGU_1_0=MIG-a1000000-1111-4222-8333-444455550100
MIGU_2_0=MIG-a1000000-1111-4222-8333-444455550200
MIGU_2_1=MIG-a1000000-1111-4222-8333-444455550201
CAPS=/proc/driver/nvidia/capabilities

# ---- MIG selection ------------------------------------------------------------------

@test "gpurun info lists each MIG device by the names gpurun selects it with, its UUID from NVML" {
	run --separate-stderr gpum info
	assert_success
	assert_output --partial "Architecture:   8.0
MIG Device:     0:0 $MIGU_1_0 (GPU instance 1, compute instance 0)
MIG Device:     0:1 $MIGU_2_0 (GPU instance 2, compute instance 0)
MIG Device:     0:2 $MIGU_2_1 (GPU instance 2, compute instance 1)

Device Index:   1"
	assert_equal "$(grep -c 'MIG Device' <<<"$output")" 3
	assert_equal "$stderr" ""
}

@test "--gpus GPU:MIG gives the parent GPU and only that instance's nodes and access files" {
	run --separate-stderr gpum --gpus 0:1 --caps utility "$GLIBC_TAR" sh -c \
		"ls /dev/nvidia-caps; find $CAPS -type f | sort; ls /proc/driver/nvidia/gpus; ls /dev | grep '^nvidia[0-9]'"
	assert_success
	assert_output "nvidia-cap21
nvidia-cap22
$CAPS/gpu0/mig/gi2/access
$CAPS/gpu0/mig/gi2/ci0/access
0000:17:00.0
nvidia0"
}

@test "the MIG nodes carry the driver's numbers and the access files are the driver's, read-only" {
	run --separate-stderr gpum --gpus 0:2 --caps utility "$GLIBC_TAR" sh -c \
		"stat -c '%n %t:%T' /dev/nvidia-caps/*; cat $CAPS/gpu0/mig/gi2/ci1/access; probe write $CAPS/gpu0/mig/gi2/ci1/access"
	assert_success
	assert_line --index 0 "/dev/nvidia-caps/nvidia-cap21 1ff:15"
	assert_line --index 1 "/dev/nvidia-caps/nvidia-cap23 1ff:17"
	assert_line --index 2 "DeviceFileMinor: 23"
	assert_line --index 3 "DeviceFileMode: 292"
	assert_line --regexp "^write: (EROFS|EACCES)$"
}

@test "MIG-GPU-<uuid>/GI/CI names the same MIG device as its index, in any case" {
	run --separate-stderr gpum list --gpus 0:2
	assert_success
	local by_index=$output
	run --separate-stderr gpum list --gpus "MIG-${MIG_UUID0^^}/2/1"
	assert_success
	assert_equal "$output" "$by_index"
	assert_line "/dev/nvidia-caps/nvidia-cap23"
	assert_line "$FAKEMIG$CAPS/gpu0/mig/gi2/ci1/access"
	refute_line --partial "nvidia-cap22"
}

@test "MIG-<uuid> names the same MIG device as its index, in any case" {
	local pair idx uuid by_index
	for pair in 0:0=$MIGU_1_0 0:1=$MIGU_2_0 0:2=$MIGU_2_1; do
		idx=${pair%%=*} uuid=${pair#*=}
		run --separate-stderr gpum list --gpus "$idx"
		assert_success
		by_index=$output
		run --separate-stderr gpum list --gpus "$uuid"
		assert_success
		assert_equal "$output" "$by_index"
		run --separate-stderr gpum list --gpus "${uuid^^}"
		assert_success
		assert_equal "$output" "$by_index"
		run --separate-stderr gpum list --gpus "${uuid,,}"
		assert_success
		assert_equal "$output" "$by_index"
	done
	run --separate-stderr gpum list --gpus "$MIGU_2_1"
	assert_line "/dev/nvidia-caps/nvidia-cap23"
	refute_line "/dev/nvidia-caps/nvidia-cap22"
}

@test "a launch with MIG-<uuid> in NVIDIA_VISIBLE_DEVICES gets what GPU:MIG gets" {
	local cmd="ls /dev/nvidia-caps; find $CAPS -type f | sort; ls /proc/driver/nvidia/gpus; ls /dev | grep '^nvidia[0-9]'"
	run --separate-stderr gpum --gpus 0:1 --caps utility "$GLIBC_TAR" sh -c "$cmd"
	assert_success
	local by_index=$output
	run --separate-stderr gpum -e NVIDIA_VISIBLE_DEVICES="$MIGU_2_0" -e NVIDIA_DRIVER_CAPABILITIES=utility \
		"$GLIBC_TAR" sh -c "$cmd"
	assert_success
	assert_equal "$output" "$by_index"
	assert_line "$CAPS/gpu0/mig/gi2/ci0/access"
	run --separate-stderr gpum list --gpus "$MIGU_1_0,1"
	assert_success
	assert_line "/dev/nvidia1"
	assert_line "/dev/nvidia-caps/nvidia-cap13"
}

@test "a MIG UUID NVML does not know is refused in one line" {
	run --separate-stderr gpum --gpus MIG-4b7d8c43-1f5e-5a2b-9c3d-1e2f3a4b5c6d "$GLIBC_TAR" true
	assert_gpurun_error 125 "--gpus: unknown device MIG-4b7d8c43-1f5e-5a2b-9c3d-1e2f3a4b5c6d (NVML lists 3 MIG devices under $FAKEMIG)"
}

@test "when NVML cannot be asked, a MIG UUID is an error naming what failed" {
	skip_unless_root "copies device nodes"
	local copy="$BATS_TEST_TMPDIR/driver" lib
	cp -a "$FAKEMIG" "$copy"
	lib=usr/lib/$(uname -m)-linux-gnu/libnvidia-ml.so.550.54.14
	rm "$copy/dev/nvidiactl"
	run --separate-stderr "$GPURUN" --driver-root "$copy" --gpus "$MIGU_1_0" "$GLIBC_TAR" true
	assert_gpurun_error 125 "--gpus: $MIGU_1_0: cannot ask NVML for MIG UUIDs: $copy/$lib: nvmlInit_v2: Driver Not Loaded"
	cp -a "$FAKEMIG/dev/nvidiactl" "$copy/dev/"
	rm "$copy/$lib"
	run --separate-stderr "$GPURUN" --driver-root "$copy" --gpus "$MIGU_1_0" "$GLIBC_TAR" true
	assert_gpurun_error 125 "--gpus: $MIGU_1_0: cannot ask NVML for MIG UUIDs: no libnvidia-ml.so.550.54.14 in $copy/etc/ld.so.cache"
}

@test "when NVML cannot be asked, gpurun info warns once and prints n/a for the MIG UUIDs" {
	skip_unless_root "copies device nodes"
	local copy="$BATS_TEST_TMPDIR/driver" lib=usr/lib/$(uname -m)-linux-gnu/libnvidia-ml.so.550.54.14
	cp -a "$FAKEMIG" "$copy"
	rm "$copy/dev/nvidiactl"
	run --separate-stderr "$GPURUN" --driver-root "$copy" info
	assert_success
	assert_line "MIG Device:     0:1 n/a (GPU instance 2, compute instance 0)"
	assert_equal "$stderr" "gpurun: warning: MIG UUIDs unknown: $copy/$lib: nvmlInit_v2: Driver Not Loaded"
}

@test "NVML's MIG device without capability files is an error, never another device" {
	skip_unless_root "copies device nodes"
	local copy="$BATS_TEST_TMPDIR/driver"
	cp -a "$FAKEMIG" "$copy"
	# The access file gone: the files no longer show GI 2 CI 1, NVML still
	# does (it lists the directory).
	rm "$copy$CAPS/gpu0/mig/gi2/ci1/access"
	run --separate-stderr "$GPURUN" --driver-root "$copy" --gpus "$MIGU_2_1" "$GLIBC_TAR" true
	assert_gpurun_error 125 "--gpus: $MIGU_2_1: NVML's MIG device (GPU 00000000:17:00.0, GPU instance 2, compute instance 1) has no capability files under $copy"
}

@test "the NVML helper runs chrooted in the driver root, as nobody, with an empty environment" {
	skip_unless_root "copies device nodes"
	local copy="$BATS_TEST_TMPDIR/driver"
	cp -a "$FAKEMIG" "$copy"
	touch "$copy/tmp/fake-nvml-log-on" "$copy/tmp/fake-nvml.log"
	chmod 0666 "$copy/tmp/fake-nvml.log"
	run --separate-stderr env SECRET=1 "$GPURUN" --driver-root "$copy" list --gpus "$MIGU_2_0"
	assert_success
	assert_equal "$(cat "$copy/tmp/fake-nvml.log")" "env=0 uid=65534 cwd=/ root=1"
}

@test "a launch without a MIG UUID never runs the NVML helper" {
	skip_unless_root "copies device nodes"
	local copy="$BATS_TEST_TMPDIR/driver"
	cp -a "$FAKEMIG" "$copy"
	touch "$copy/tmp/fake-nvml-log-on" "$copy/tmp/fake-nvml.log"
	chmod 0666 "$copy/tmp/fake-nvml.log"
	run --separate-stderr "$GPURUN" --driver-root "$copy" --gpus 0:1,1 --caps utility "$GLIBC_TAR" true
	assert_success
	run --separate-stderr "$GPURUN" --driver-root "$copy" --gpus all --caps utility "$GLIBC_TAR" true
	assert_success
	run --separate-stderr "$GPURUN" --driver-root "$copy" -e NVIDIA_VISIBLE_DEVICES="MIG-$MIG_UUID0/1/0" "$GLIBC_TAR" true
	assert_success
	run --separate-stderr "$GPURUN" --driver-root "$copy" list
	assert_success
	assert_equal "$(cat "$copy/tmp/fake-nvml.log")" ""
	# The log works: a MIG UUID asks NVML once.
	run --separate-stderr "$GPURUN" --driver-root "$copy" --gpus "$MIGU_1_0" "$GLIBC_TAR" true
	assert_success
	assert_equal "$(wc -l <"$copy/tmp/fake-nvml.log")" 1
}

@test "a MIG device that does not exist is an error naming what the GPU has" {
	run --separate-stderr gpum --gpus 0:3 "$GLIBC_TAR" true
	assert_gpurun_error 125 "--gpus: unknown device 0:3 (GPU 0 has 3 MIG devices under $FAKEMIG)"
	run --separate-stderr gpum -e NVIDIA_VISIBLE_DEVICES=1:0 "$GLIBC_TAR" true
	assert_gpurun_error 125 "NVIDIA_VISIBLE_DEVICES: unknown device 1:0 (GPU 1 has 0 MIG devices under $FAKEMIG)"
	run --separate-stderr gpum --gpus 2:0 "$GLIBC_TAR" true
	assert_gpurun_error 125 "--gpus: unknown device 2:0 (2 GPUs under $FAKEMIG)"
	run --separate-stderr gpum --gpus "MIG-$MIG_UUID0/2/5" "$GLIBC_TAR" true
	assert_gpurun_error 125 "--gpus: unknown device MIG-$MIG_UUID0/2/5 (3 MIG devices under $FAKEMIG)"
}

@test "all covers every GPU and every MIG device, as nvidia-container-cli does" {
	run --separate-stderr gpum list --gpus all --caps utility
	assert_success
	assert_equal "$(grep -E '^/dev/|/capabilities/' <<<"$output")" "/dev/nvidiactl
/dev/nvidia0
/dev/nvidia1
/dev/nvidia-caps/nvidia-cap12
/dev/nvidia-caps/nvidia-cap13
/dev/nvidia-caps/nvidia-cap21
/dev/nvidia-caps/nvidia-cap22
/dev/nvidia-caps/nvidia-cap23
$FAKEMIG$CAPS/gpu0/mig/gi1/access
$FAKEMIG$CAPS/gpu0/mig/gi1/ci0/access
$FAKEMIG$CAPS/gpu0/mig/gi2/access
$FAKEMIG$CAPS/gpu0/mig/gi2/ci0/access
$FAKEMIG$CAPS/gpu0/mig/gi2/ci1/access"
}

@test "a whole GPU in MIG mode brings no MIG capability" {
	run --separate-stderr gpum list --gpus 0 --caps utility
	assert_success
	refute_output --partial nvidia-cap
	refute_output --partial /capabilities/
}

@test "--dry-run shows the MIG binds the launch makes" {
	run --separate-stderr gpum --dry-run --gpus 0:0 --caps utility "$GLIBC_TAR" true
	assert_success
	# From the driver root, named once ("$D", ns/plan.sh's bind_files).
	assert_line "D=$FAKEMIG   # the driver root"
	assert_line 'bind_files ro,nosuid,noexec "$D"/dev/nvidia-caps dev/nvidia-caps nvidia-cap12   # MIG 0:0: GPU instance 1'
	assert_line 'bind_files ro,nosuid,noexec "$D"/dev/nvidia-caps dev/nvidia-caps nvidia-cap13   # MIG 0:0: compute instance 0'
	assert_line "make_dir -m 0555 proc/driver/nvidia/capabilities/gpu0/mig/gi1/ci0"
	assert_line --regexp "^(bind_files|bind_file|bind_over) ro,nosuid,nodev,noexec .*proc/driver/nvidia/capabilities/gpu0/mig/gi1/ci0( access|/access)( |$)"
}

@test "a missing MIG capability node stops the launch with the nvidia-modprobe that makes it" {
	skip_unless_root "copies device nodes"
	local copy="$BATS_TEST_TMPDIR/driver"
	cp -a "$FAKEMIG" "$copy"
	rm "$copy/dev/nvidia-caps/nvidia-cap22"
	run --separate-stderr "$GPURUN" --driver-root "$copy" --gpus 0:1 "$GLIBC_TAR" true
	assert_gpurun_error 125 "missing NVIDIA device node under $copy: /dev/nvidia-caps/nvidia-cap22 (MIG 0:1: compute instance 0); as root, run nvidia-modprobe -f $CAPS/gpu0/mig/gi2/ci0/access"
}

@test "without a DeviceFileMinor line the minor comes from mig-minors" {
	skip_unless_root "copies device nodes"
	local copy="$BATS_TEST_TMPDIR/driver"
	cp -a "$FAKEMIG" "$copy"
	printf 'DeviceFileMode: 292\n' >"$copy$CAPS/gpu0/mig/gi2/ci1/access"
	run --separate-stderr "$GPURUN" list --driver-root "$copy" --gpus 0:2
	assert_success
	assert_line "/dev/nvidia-caps/nvidia-cap23"
}

# ---- MIG management -----------------------------------------------------------------

@test "NVIDIA_MIG_CONFIG_DEVICES=all gives root the whole capability directory and /dev/nvidia-caps, read-only" {
	skip_unless_root "MIG management is for root launches"
	run --separate-stderr gpum --gpus 0 -e NVIDIA_MIG_CONFIG_DEVICES=all --caps utility "$GLIBC_TAR" sh -c \
		"ls /dev/nvidia-caps | tr '\n' ' '; echo; find $CAPS -type f | sort; probe write $CAPS/mig/config; probe write /dev/nvidia-caps/new"
	assert_success
	assert_line --index 0 "nvidia-cap1 nvidia-cap12 nvidia-cap13 nvidia-cap2 nvidia-cap21 nvidia-cap22 nvidia-cap23 "
	assert_line "$CAPS/mig/config"
	assert_line "$CAPS/mig/monitor"
	assert_line "$CAPS/gpu0/mig/gi2/ci1/access"
	assert_equal "$(grep -c 'write: EROFS' <<<"$output")" 2
	[[ ! -e "$FAKEMIG/dev/nvidia-caps/new" ]]
}

@test "NVIDIA_MIG_MONITOR_DEVICES=all cannot be combined with a specific MIG device, as upstream" {
	skip_unless_root "MIG management is for root launches"
	run --separate-stderr gpum --gpus 0:0 -e NVIDIA_MIG_MONITOR_DEVICES=all "$GLIBC_TAR" true
	assert_gpurun_error 125 "NVIDIA_MIG_MONITOR_DEVICES: all: cannot enable mig-monitor with specific MIG devices selected"
}

@test "MIG management is refused for an unprivileged launch" {
	skip_unless_user
	run --separate-stderr gpum --gpus 0 -e NVIDIA_MIG_CONFIG_DEVICES=all "$GLIBC_TAR" true
	assert_gpurun_error 125 "NVIDIA_MIG_CONFIG_DEVICES: only a launch as root may manage MIG (the toolkit allows it in privileged containers only)"
}

@test "NVIDIA_MIG_CONFIG_DEVICES takes only all, as nvidia-container-cli" {
	run --separate-stderr gpum --gpus 0 -e NVIDIA_MIG_CONFIG_DEVICES=0 "$GLIBC_TAR" true
	assert_gpurun_error 125 "NVIDIA_MIG_CONFIG_DEVICES: 0: only 'all' devices are currently supported"
}

# ---- IMEX channels ------------------------------------------------------------------

@test "NVIDIA_IMEX_CHANNELS binds exactly the channels asked for, with their numbers" {
	run --separate-stderr gpum --gpus 1 -e NVIDIA_IMEX_CHANNELS=1 --caps utility "$GLIBC_TAR" sh -c \
		"stat -c '%n %t:%T' /dev/nvidia-caps-imex-channels/*"
	assert_success
	assert_output "/dev/nvidia-caps-imex-channels/channel1 1fc:1"
	run --separate-stderr gpum --dry-run --gpus none -e NVIDIA_IMEX_CHANNELS=0,1 "$GLIBC_TAR" true
	assert_success
	assert_line --partial " dev/nvidia-caps-imex-channels channel0   # IMEX channel 0"
	assert_line --partial " dev/nvidia-caps-imex-channels channel1   # IMEX channel 1"
}

@test "NVIDIA_IMEX_CHANNELS=all from the environment is ignored, as the toolkit does" {
	run --separate-stderr gpum --dry-run --gpus 0 -e NVIDIA_IMEX_CHANNELS=all "$GLIBC_TAR" true
	assert_success
	refute_output --partial imex
}

@test "an IMEX channel the driver lacks, or not a number, is an error" {
	run --separate-stderr gpum --gpus 0 -e NVIDIA_IMEX_CHANNELS=5 "$GLIBC_TAR" true
	assert_gpurun_error 125 "missing NVIDIA device node under $FAKEMIG: /dev/nvidia-caps-imex-channels/channel5 (IMEX channel 5)"
	run --separate-stderr gpum --gpus 0 -e NVIDIA_IMEX_CHANNELS=0,x "$GLIBC_TAR" true
	assert_gpurun_error 125 "NVIDIA_IMEX_CHANNELS: x: not an IMEX channel number (0-2047)"
	run --separate-stderr gpu1 --gpus 0 -e NVIDIA_IMEX_CHANNELS=0 "$GLIBC_TAR" true
	assert_gpurun_error 125 "missing NVIDIA device node under $FAKE1: /dev/nvidia-caps-imex-channels/channel0 (IMEX channel 0; the driver has no nvidia-caps-imex-channels)"
}

# ---- compat32 ----------------------------------------------------------------------------

@test "compat32 binds the 32-bit libraries into /usr/lib/i386-linux-gnu and ldconfig registers them" {
	[[ -d $FAKEMIG/usr/lib/i386-linux-gnu ]] || skip "the fake driver has no 32-bit libraries (x86_64 only)"
	run --separate-stderr gpum --gpus 0 --caps utility,compute,compat32 "$GLIBC_TAR" sh -c \
		"for f in /usr/lib/i386-linux-gnu/*; do probe mountinfo-has \$f >/dev/null 2>&1 && echo \$f; done;
		 ldconfig -p | grep -F '(libc6) =>' | sort"
	assert_success
	assert_output "/usr/lib/i386-linux-gnu/libcuda.so.$DRIVER_VERSION
/usr/lib/i386-linux-gnu/libnvidia-ml.so.$DRIVER_VERSION
	libcuda.so.1 (libc6) => /usr/lib/i386-linux-gnu/libcuda.so.1
	libnvidia-ml.so.1 (libc6) => /usr/lib/i386-linux-gnu/libnvidia-ml.so.1"
}

@test "without compat32 no 32-bit library goes in" {
	run --separate-stderr gpum --gpus 0 --caps utility,compute "$GLIBC_TAR" sh -c \
		"ls /usr/lib/i386-linux-gnu 2>&1; ldconfig -p | grep -cF '(libc6) =>'"
	assert_failure
	assert_line --index 0 --partial "No such file or directory"
	assert_line --index 1 "0"
}

@test "on an image without /etc/debian_version they go to /usr/lib32 when it has one, else /usr/lib" {
	[[ -d $FAKEMIG/usr/lib/i386-linux-gnu ]] || skip "the fake driver has no 32-bit libraries (x86_64 only)"
	local img="$BATS_TEST_TMPDIR/img"
	mkdir "$img"
	tar -C "$img" -xf "$GLIBC_TAR"
	rm "$img/etc/debian_version"
	run --separate-stderr gpum --gpus 0 --caps utility,compat32 "$img" sh -c \
		"probe mountinfo-has /usr/lib/libnvidia-ml.so.$DRIVER_VERSION >/dev/null && echo in /usr/lib"
	assert_success
	assert_output "in /usr/lib"
	mkdir "$img/usr/lib32"
	run --separate-stderr gpum --gpus 0 --caps utility,compat32 "$img" sh -c \
		"probe mountinfo-has /usr/lib32/libnvidia-ml.so.$DRIVER_VERSION >/dev/null && echo in /usr/lib32"
	assert_success
	assert_output "in /usr/lib32"
}

@test "--dry-run names the 32-bit directory and gives it to ldconfig" {
	run --separate-stderr gpum --dry-run --gpus 0 --caps utility,compat32 "$GLIBC_TAR" true
	assert_success
	# Resolved from the cached image, or set by the plan's own test of it.
	assert_line --regexp "^link_in (\"\\.\\\$LIBDIR32\"|usr/lib/i386-linux-gnu) libnvidia-ml.so.$DRIVER_VERSION libnvidia-ml.so.1( .*)?   # their SONAME links$"
	assert_line --regexp "^after_pivot .* (\\\$LIBDIR \\\$LIBDIR32|$LIBDIR_DEBIAN /usr/lib/i386-linux-gnu)   # "
}

# ---- graphics configuration files -------------------------------------------------------

@test "graphics brings NVIDIA's Vulkan ICD, EGL vendor and EGL platform files at their paths, read-only" {
	run --separate-stderr gpum --gpus 0 --caps graphics "$GLIBC_TAR" sh -c \
		"find /etc/vulkan /usr/share/glvnd /usr/share/egl -type f | sort; cat /etc/vulkan/icd.d/nvidia_icd.json;
		 probe write /usr/share/glvnd/egl_vendor.d/10_nvidia.json"
	assert_success
	assert_line --index 0 /etc/vulkan/icd.d/nvidia_icd.json
	assert_line --index 1 /etc/vulkan/implicit_layer.d/nvidia_layers.json
	assert_line --index 2 /usr/share/egl/egl_external_platform.d/10_nvidia_wayland.json
	assert_line --index 3 /usr/share/egl/egl_external_platform.d/15_nvidia_gbm.json
	assert_line --index 4 /usr/share/glvnd/egl_vendor.d/10_nvidia.json
	assert_line --index 5 "$(cat "$FAKEMIG/etc/vulkan/icd.d/nvidia_icd.json")"
	assert_line --regexp "^write: (EROFS|EACCES)$"
	refute_output --partial 50_mesa
}

@test "without graphics no configuration file goes in" {
	run --separate-stderr gpum list --gpus 0 --caps utility,compute,video
	assert_success
	refute_output --partial .json
	run --separate-stderr gpum list --gpus 0 --caps display
	assert_success
	assert_line "$FAKEMIG/usr/share/glvnd/egl_vendor.d/10_nvidia.json"
}

@test "graphics brings the EGL platform libraries, versioned on their own, and ldconfig registers them" {
	local lib=usr/lib/$(uname -m)-linux-gnu
	run --separate-stderr gpum list --gpus 0 --caps graphics
	assert_success
	assert_line "$FAKEMIG/$lib/libnvidia-egl-gbm.so.1.1.1"
	assert_line "$FAKEMIG/$lib/libnvidia-egl-wayland.so.1.1.13"
	assert_equal "$(grep -c 'libnvidia-egl-' <<<"$output")" 2
	run --separate-stderr gpum --gpus 0 --caps graphics "$GLIBC_TAR" sh -c \
		"ls /$lib | grep '^libnvidia-egl-'; ldconfig -p | grep -o 'libnvidia-egl-[a-z]*\.so\.1 ' | sort"
	assert_success
	assert_output "libnvidia-egl-gbm.so.1
libnvidia-egl-gbm.so.1.1.1
libnvidia-egl-wayland.so.1
libnvidia-egl-wayland.so.1.1.13
libnvidia-egl-gbm.so.1 
libnvidia-egl-wayland.so.1 "
}

@test "without graphics no EGL platform library goes in" {
	run --separate-stderr gpum list --gpus 0 --caps utility,compute,video,compat32
	assert_success
	refute_output --partial "libnvidia-egl-"
}
