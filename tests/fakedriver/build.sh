#!/bin/sh
# tests/fakedriver/build.sh OUTDIR TOPOLOGY — a fake NVIDIA driver root.
# tests/fakedriver/build.sh --hash          — the sources' hash, which a
#                                             finished OUTDIR/.complete holds
#
# Builds, under OUTDIR, what gpurun reads from a driver root, in the real
# formats, so GPU injection can be tested on a machine without a GPU:
#   usr/lib/<multiarch>/lib*.so.550.54.14   real ELF objects with the
#        driver's SONAMEs and symlink chains, a working fake NVML and libcuda
#        (each fails to initialise when a test creates tmp/fake-nvml-fail or
#        tmp/fake-cuda-fail in its copy of the root: see nvml.c, cuda.c),
#        libraries gpurun must not inject (older-driver decoys, non-listed
#        libs) and a real etc/ld.so.cache made by `ldconfig -r OUTDIR`;
#   usr/bin/nvidia-smi (+ stubs)   nvidia-smi loads libnvidia-ml.so.1 by SONAME;
#   dev/nvidia*                     real character nodes (195:N, 195:255,
#        195:254, nvidia-uvm 510:0/1), mode 0666.  Harmless on a GPU-less
#        host: nothing drives major 195 or 510, opening them fails with ENXIO.
#        On a host with the real driver they reach its GPUs exactly as its
#        own /dev/nvidia* do (mode 0666 too, the driver's DeviceFileMode);
#   proc/driver/nvidia/{version,params,registry,gpus/<bus>/information},
#        proc/devices, lib/firmware/nvidia/<ver>/gsp_*.bin,
#        run/nvidia-persistenced/socket (a real unix socket), tmp/nvidia-mps/.
# TOPOLOGY: `one` (one H100), `four` (four GPUs whose minors are not in
# PCI bus order: index 1 = bus 0000:5e:00.0 = /dev/nvidia0) or `eight` (an
# eight-GPU H100 node, minors again not in bus order; for the benchmark of
# --gpus with 1, 4 and 8 GPUs) or `odd` (what
# the information files give on real hosts and NVML would hide: a GPU
# excluded by NVreg_ExcludedGpus, one whose UUID is not written yet, one
# whose model gpurun cannot name an architecture for) or `nouvm` (`one` after
# a fresh boot: nvidia-uvm not loaded, so no /dev/nvidia-uvm* and no
# nvidia-uvm in proc/devices; with a fake usr/bin/nvidia-modprobe, see
# modprobe.c) or `mig` (a newer host: index 0 an A100 in MIG mode with GPU
# instances 1 (compute instance 0) and 2 (compute instances 0 and 1), index 1
# an H100 without MIG; the driver's capability files
# proc/driver/nvidia/capabilities/{mig/config,mig/monitor,gpu0/mig/gi*/...},
# proc/driver/nvidia-caps/mig-minors and the /dev/nvidia-caps/nvidia-capN
# nodes (major nvidia-caps 511); IMEX channels 0 and 1 (major
# nvidia-caps-imex-channels 508); the Vulkan ICD, EGL vendor and EGL
# external platform JSON files and libraries libnvidia-egl-gbm.so.1.1.1 and
# libnvidia-egl-wayland.so.1.1.13 (their own versions); 32-bit copies of some libraries in
# usr/lib/i386-linux-gnu, on x86_64) or `xid` (six GPUs, minors in bus
# order, for the Xid checks of `gpurun smoke`: dev/kmsg is a regular file of
# kernel log records, as /dev/kmsg gives them, in which index 0 has a
# critical Xid 79, index 1 the Xid 13 twice, index 2 an Xid 31 whose text
# holds terminal escapes, and a bus no GPU here has an Xid 79; index 3's NVML
# raises Xid 94 during the run and index 4's NVML has no Xid events (the
# markers of nvml.c); index 5 has nothing).  The other topologies have no
# dev/kmsg: the log of a driver root that has none is not read.
#
# The broken nodes a nightly job meets (`gpurun smoke`), each a copy of
# `one` with one thing wrong: `broken-nodes` (no /dev/nvidia0 and no
# /dev/nvidiactl, as after a driver reload, and no nvidia-modprobe to make
# them), `broken-uvm` (nvidia-uvm not loaded, no nvidia-modprobe),
# `broken-driver` (no /proc/driver/nvidia: the kernel module is gone, its
# nvidia-smi is still there), `broken-ldcache` (no etc/ld.so.cache),
# `broken-upgrade` (the kernel module says 535.999.01, the libraries are
# 550.54.14: an upgrade without a reboot), `broken-ecc`, `broken-kernel`
# (the fake-smoke-ecc and fake-smoke-kernel markers of nvml.c and cuda.c),
# `broken-xid` (a dev/kmsg with a critical Xid 79 for its GPU); and
# `broken-hang`, a copy of `four` whose index 2 (0000:86:00.0) never
# finishes its kernel (the fake-smoke-hang marker of cuda.c).
#
# Needs root (mknod, ldconfig -r chroots).  Compiled objects are cached in
# tests/build/fakedriver-cache/<hash of the sources>.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
# The identity of a build: tests compare it with OUTDIR/.complete.
hash=$(cat "$here/build.sh" "$here"/*.c "$here"/*.h | sha256sum | cut -c1-16)
if [ "${1:-}" = --hash ]; then
	echo "$hash"
	exit 0
fi
if [ $# -ne 2 ]; then
	echo "usage: $0 OUTDIR one|four|eight|odd|nouvm|mig|xid|broken-KIND" >&2
	exit 2
fi
out=$1
topo=$2
broken=
case $topo in
one | four | eight | odd | nouvm | mig | xid) ;;
broken-hang)
	broken=hang topo=four
	;;
broken-nodes | broken-uvm | broken-driver | broken-ldcache | broken-upgrade | broken-ecc | broken-kernel | broken-xid)
	broken=${topo#broken-} topo=one
	;;
*)
	echo "$0: unknown topology $topo (one, four, eight, odd, nouvm, mig, xid, broken-nodes, broken-uvm," \
		"broken-driver, broken-ldcache, broken-upgrade, broken-ecc, broken-kernel, broken-xid, broken-hang)" >&2
	exit 2
	;;
esac
if [ "$(id -u)" != 0 ]; then
	echo "$0: must run as root (mknod, ldconfig -r)" >&2
	exit 1
fi

VER=550.54.14
OLD=470.57.02
CC=${CC:-cc}
# The driver's libraries in this machine's multiarch directory, as a
# Debian host keeps them.
machine=$(uname -m)
case $machine in
aarch64) LIBDIR=usr/lib/aarch64-linux-gnu ;;
ppc64le) LIBDIR=usr/lib/powerpc64le-linux-gnu ;;
*) LIBDIR=usr/lib/x86_64-linux-gnu ;;
esac

# ---- compiled pieces, cached by source hash -------------------------------
# name:soname pairs; a soname of "-" means the file name itself (the
# driver's version-suffixed internal libraries).
LIBS="
libnvidia-ml:nvml libnvidia-cfg:libnvidia-cfg.so.1 libnvidia-nscq:libnvidia-nscq.so.2
libcuda:cuda libcudadebugger:libcudadebugger.so.1 libnvidia-opencl:libnvidia-opencl.so.1
libnvidia-gpucomp:- libnvidia-ptxjitcompiler:libnvidia-ptxjitcompiler.so.1
libnvidia-fatbinaryloader:- libnvidia-allocator:libnvidia-allocator.so.1 libnvidia-compiler:-
libnvidia-pkcs11:- libnvidia-pkcs11-openssl3:- libnvidia-nvvm:libnvidia-nvvm.so.4
libnvidia-tileiras:libnvidia-tileiras.so.1
libvdpau_nvidia:libvdpau_nvidia.so.1 libnvidia-encode:libnvidia-encode.so.1
libnvidia-opticalflow:libnvidia-opticalflow.so.1 libnvcuvid:libnvcuvid.so.1
libnvidia-eglcore:- libnvidia-glcore:- libnvidia-tls:- libnvidia-glsi:-
libnvidia-fbc:libnvidia-fbc.so.1 libnvidia-ifr:libnvidia-ifr.so.1 libnvidia-rtcore:-
libnvoptix:libnvoptix.so.1 libGLX_nvidia:libGLX_nvidia.so.0 libEGL_nvidia:libEGL_nvidia.so.0
libGLESv2_nvidia:libGLESv2_nvidia.so.2 libGLESv1_CM_nvidia:libGLESv1_CM_nvidia.so.1
libnvidia-glvkspirv:- libnvidia-cbl:-
libnvidia-ngx:libnvidia-ngx.so.1
libnvidia-gtk3:- libnvidia-wayland-client:-
"
# Leftovers of an older driver: a cache entry of their own (version-suffixed
# SONAME) or a file next to the current one.  gpurun must never inject them.
DECOYS="libnvidia-ml:libnvidia-ml.so.1 libnvidia-compiler:- libnvidia-glcore:-"

# The EGL platform libraries of the mig topology (SONAME: .so.<first number>).
EGL_PLATFORM="libnvidia-egl-gbm.so.1.1.1 libnvidia-egl-wayland.so.1.1.13"

# The 32-bit libraries of the mig topology (name:soname).
LIBS32="libnvidia-ml:libnvidia-ml.so.1 libcuda:libcuda.so.1 libGLX_nvidia:libGLX_nvidia.so.0
libnvidia-glcore:libnvidia-glcore.so.$VER"

cache=$here/../build/fakedriver-cache/$hash

link_lib() { # name soname file object
	so=$2
	[ "$so" = - ] && so=$3
	$CC -shared -Wl,-soname,"$so" -o "$tmp/lib/$3" "$4"
}

if [ ! -f "$cache/.done" ]; then
	mkdir -p "$(dirname "$cache")"
	tmp=$(mktemp -d "$cache.XXXXXX")
	trap 'rm -rf "$tmp"' EXIT
	mkdir -p "$tmp/lib" "$tmp/bin"
	w="-std=gnu11 -O2 -Wall -Wextra -Werror"
	$CC $w -fPIC -c -DFAKE_NAME='"stub"' -o "$tmp/stub.o" "$here/stub.c"
	$CC $w -fPIC -c -I"$here" -o "$tmp/nvml.o" "$here/nvml.c"
	$CC $w -fPIC -c -I"$here" -o "$tmp/cuda.o" "$here/cuda.c"
	for pair in $LIBS; do
		name=${pair%%:*} so=${pair#*:}
		case $so in
		nvml) $CC -shared -Wl,-soname,libnvidia-ml.so.1 -o "$tmp/lib/$name.so.$VER" "$tmp/nvml.o" ;;
		cuda) $CC -shared -Wl,-soname,libcuda.so.1 -o "$tmp/lib/$name.so.$VER" "$tmp/cuda.o" ;;
		*) link_lib "$name" "$so" "$name.so.$VER" "$tmp/stub.o" ;;
		esac
	done
	for pair in $DECOYS; do
		link_lib "${pair%%:*}" "${pair#*:}" "${pair%%:*}.so.$OLD" "$tmp/stub.o"
	done
	# The EGL external platform libraries (mig topology): versioned on
	# their own, not with the driver.
	for f in $EGL_PLATFORM; do
		$CC -shared -Wl,-soname,"${f%%.so.*}.so.$(echo "${f#*.so.}" | cut -d. -f1)" -o "$tmp/lib/$f" "$tmp/stub.o"
	done
	$CC $w -o "$tmp/bin/nvidia-smi" "$here/smi.c" -ldl
	$CC $w -o "$tmp/bin/tool" "$here/tool.c"
	$CC $w -static -o "$tmp/bin/nvidia-modprobe" "$here/modprobe.c"
	# 32-bit (i386) copies for compat32, without a 32-bit C library on
	# the build host: -nostdlib, and DT_NEEDED on a stub libc.so.6 so that
	# ldconfig flags them libc6 (0x0003) as it does the real ones.
	if [ "$machine" = x86_64 ] && $CC -m32 -fPIC -c -DFAKE_NAME='"stub32"' -o "$tmp/stub32.o" "$here/stub.c" 2>/dev/null &&
		$CC -m32 -shared -nostdlib -Wl,-soname,libc.so.6 -o "$tmp/libc32.so" "$tmp/stub32.o" 2>/dev/null; then
		mkdir -p "$tmp/lib32"
		for pair in $LIBS32; do
			$CC -m32 -shared -nostdlib -Wl,--no-as-needed -Wl,-soname,"${pair#*:}" \
				-o "$tmp/lib32/${pair%%:*}.so.$VER" "$tmp/stub32.o" "$tmp/libc32.so"
		done
	fi
	touch "$tmp/.done"
	# Another build may have won the race; either copy is the same.
	mv -T "$tmp" "$cache" 2>/dev/null || rm -rf "$tmp"
	trap - EXIT
	# Objects of older sources are of no further use.
	for old in "$(dirname "$cache")"/*; do
		case $old in "$cache"*) ;; *) rm -rf "$old" ;; esac
	done
fi

# ---- the tree -------------------------------------------------------------
rm -rf "$out"
mkdir -p "$out/$LIBDIR" "$out/usr/bin" "$out/etc" "$out/dev" "$out/proc/driver/nvidia/gpus" \
	"$out/lib/firmware/nvidia/$VER" "$out/lib/firmware/nvidia/535.104.05" \
	"$out/run/nvidia-persistenced" "$out/tmp/nvidia-mps"
cp -a "$cache/lib/." "$out/$LIBDIR/"
cd "$out/$LIBDIR"
for f in $EGL_PLATFORM; do
	if [ "$topo" = mig ]; then
		ln -sf "$f" "${f%%.so.*}.so.$(echo "${f#*.so.}" | cut -d. -f1)"
	else
		rm -f "$f"
	fi
done
for pair in $LIBS; do
	name=${pair%%:*} so=${pair#*:}
	case $so in nvml) so=libnvidia-ml.so.1 ;; cuda) so=libcuda.so.1 ;; esac
	[ "$so" = - ] || ln -sf "$name.so.$VER" "$so"
done
ln -sf libcuda.so.1 libcuda.so
ln -sf libnvidia-ml.so.1 libnvidia-ml.so
cd - >/dev/null

cp "$cache/bin/nvidia-smi" "$out/usr/bin/nvidia-smi"
for t in nvidia-debugdump nvidia-persistenced nvidia-cuda-mps-control nvidia-cuda-mps-server \
	nvidia-xconfig; do
	cp "$cache/bin/tool" "$out/usr/bin/$t"
done

printf '/%s\n' "$LIBDIR" >"$out/etc/ld.so.conf"
if [ "$topo" = mig ] && [ -d "$cache/lib32" ]; then
	mkdir -p "$out/usr/lib/i386-linux-gnu"
	cp -a "$cache/lib32/." "$out/usr/lib/i386-linux-gnu/"
	for pair in $LIBS32; do
		so=${pair#*:}
		[ "$so" = "${pair%%:*}.so.$VER" ] || ln -sf "${pair%%:*}.so.$VER" "$out/usr/lib/i386-linux-gnu/$so"
	done
	echo /usr/lib/i386-linux-gnu >>"$out/etc/ld.so.conf"
fi
ldconfig -r "$out"

printf 'GSP firmware %s %s\n' "$VER" ga10x >"$out/lib/firmware/nvidia/$VER/gsp_ga10x.bin"
printf 'GSP firmware %s %s\n' "$VER" tu10x >"$out/lib/firmware/nvidia/$VER/gsp_tu10x.bin"
printf 'GSP firmware of another driver\n' >"$out/lib/firmware/nvidia/535.104.05/gsp_ga10x.bin"

python3 -c 'import socket, sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])' \
	"$out/run/nvidia-persistenced/socket"
chmod 0666 "$out/run/nvidia-persistenced/socket"

# ---- /proc/driver/nvidia and /proc/devices --------------------------------
p=$out/proc/driver/nvidia
printf 'NVRM version: NVIDIA UNIX %s Kernel Module  %s  Thu Feb 22 01:44:30 UTC 2024\nGCC version:  gcc version 12.2.0 (Debian 12.2.0-14)\n' "$machine" "$VER" >"$p/version"
cat >"$p/params" <<'EOF'
ResmanDebugLevel: 4294967295
RmLogonRC: 1
ModifyDeviceFiles: 1
DeviceFileUID: 0
DeviceFileGID: 0
DeviceFileMode: 438
InitializeSystemMemoryAllocations: 1
UsePageAttributeTable: 4294967295
EnableMSI: 1
EnableStreamMemOPs: 0
EnableUserNUMAManagement: 1
NvLinkDisable: 0
RmProfilingAdminOnly: 1
PreserveVideoMemoryAllocations: 0
DynamicPowerManagement: 3
RegisterPCIDriver: 1
EnableGpuFirmware: 18
ImexChannelCount: 2048
RegistryDwords: ""
RegistryDwordsPerDevice: ""
RmMsg: ""
GpuBlacklist: ""
TemporaryFilePath: ""
ExcludedGpus: ""
EOF
printf 'Binary: ""\n' >"$p/registry"

# bus minor model uuid excluded
case $topo in
one | nouvm)
	gpus="0000:17:00.0 0 NVIDIA_H100_80GB_HBM3 GPU-5b1e5f16-6bd4-44c2-a1a8-2d2f3a9c1b01 No" ;;
four)
	gpus="0000:3b:00.0 2 NVIDIA_H100_80GB_HBM3 GPU-0c9c1a44-3f53-4a35-9c7e-7e0d6c1a3b3b No
0000:5e:00.0 0 NVIDIA_A100-SXM4-80GB GPU-1d2e3f40-5162-4738-89ab-cdef01234567 No
0000:86:00.0 3 Tesla_V100-SXM2-16GB GPU-8f7e6d5c-4b3a-4291-8071-605f4e3d2c1b No
0000:af:00.0 1 NVIDIA_H100_80GB_HBM3 GPU-a0b1c2d3-e4f5-4061-9728-394a5b6c7d8e No" ;;
eight)
	gpus="0000:18:00.0 1 NVIDIA_H100_80GB_HBM3 GPU-e8000000-1111-4222-8333-444455556600 No
0000:2a:00.0 0 NVIDIA_H100_80GB_HBM3 GPU-e8000001-1111-4222-8333-444455556601 No
0000:3a:00.0 3 NVIDIA_H100_80GB_HBM3 GPU-e8000002-1111-4222-8333-444455556602 No
0000:5d:00.0 2 NVIDIA_H100_80GB_HBM3 GPU-e8000003-1111-4222-8333-444455556603 No
0000:9a:00.0 5 NVIDIA_H100_80GB_HBM3 GPU-e8000004-1111-4222-8333-444455556604 No
0000:ab:00.0 4 NVIDIA_H100_80GB_HBM3 GPU-e8000005-1111-4222-8333-444455556605 No
0000:ba:00.0 7 NVIDIA_H100_80GB_HBM3 GPU-e8000006-1111-4222-8333-444455556606 No
0000:db:00.0 6 NVIDIA_H100_80GB_HBM3 GPU-e8000007-1111-4222-8333-444455556607 No" ;;
odd)
	gpus="0000:0a:00.0 1 NVIDIA_H100_80GB_HBM3 GPU-0a0a0a0a-1111-4222-8333-444455556666 No
0000:1b:00.0 0 NVIDIA_A100-SXM4-80GB GPU-1b1b1b1b-1111-4222-8333-444455556666 Yes
0000:2c:00.0 2 NVIDIA_L40S GPU-????????-????-????-????-???????????? No
0000:3d:00.0 3 NVIDIA_RTX_PRO_6000_Blackwell_Server_Edition GPU-3d3d3d3d-1111-4222-8333-444455556666 No" ;;
xid)
	gpus="0000:18:00.0 0 NVIDIA_H100_80GB_HBM3 GPU-71d00000-1111-4222-8333-444455556600 No
0000:2a:00.0 1 NVIDIA_H100_80GB_HBM3 GPU-71d00001-1111-4222-8333-444455556601 No
0000:3a:00.0 2 NVIDIA_H100_80GB_HBM3 GPU-71d00002-1111-4222-8333-444455556602 No
0000:5d:00.0 3 NVIDIA_H100_80GB_HBM3 GPU-71d00003-1111-4222-8333-444455556603 No
0000:9a:00.0 4 NVIDIA_H100_80GB_HBM3 GPU-71d00004-1111-4222-8333-444455556604 No
0000:ab:00.0 5 NVIDIA_H100_80GB_HBM3 GPU-71d00005-1111-4222-8333-444455556605 No" ;;
mig)
	gpus="0000:17:00.0 0 NVIDIA_A100-SXM4-40GB GPU-a1000000-1111-4222-8333-444455556666 No
0000:65:00.0 1 NVIDIA_H100_80GB_HBM3 GPU-b2000000-1111-4222-8333-444455556666 No" ;;
esac
echo "$gpus" | while read -r bus minor model uuid excluded; do
	model=$(echo "$model" | tr _ ' ')
	mkdir -p "$p/gpus/$bus"
	printf 'Model: \t\t %s\nIRQ:   \t\t 0\nGPU UUID: \t %s\nVideo BIOS: \t 96.00.74.00.01\nBus Type: \t PCIe\nDMA Size: \t 52 bits\nDMA Mask: \t 0xfffffffffffff\nBus Location: \t %s\nDevice Minor: \t %s\nGPU Excluded:\t %s\n' \
		"$model" "$uuid" "$bus" "$minor" "$excluded" >"$p/gpus/$bus/information"
	mknod -m 0666 "$out/dev/nvidia$minor" c 195 "$minor"
done

cat >"$out/proc/devices" <<'EOF'
Character devices:
  1 mem
  4 /dev/vc/0
  4 tty
  5 /dev/tty
  5 /dev/console
  5 /dev/ptmx
 10 misc
 13 input
136 pts
195 nvidia
195 nvidiactl
226 drm
509 nvidia-nvswitch
510 nvidia-uvm
511 nvidia-caps

Block devices:
  7 loop
  8 sd
259 blkext
EOF

mknod -m 0666 "$out/dev/nvidiactl" c 195 255
mknod -m 0666 "$out/dev/nvidia-modeset" c 195 254
if [ "$topo" = nouvm ]; then
	sed -i '/nvidia-uvm/d' "$out/proc/devices"
	cp "$cache/bin/nvidia-modprobe" "$out/usr/bin/nvidia-modprobe"
	mkdir -p "$out/var/log"
else
	mknod -m 0666 "$out/dev/nvidia-uvm" c 510 0
	mknod -m 0666 "$out/dev/nvidia-uvm-tools" c 510 1
fi

if [ "$topo" = xid ]; then
	# Records as /dev/kmsg gives them: "PRIO,SEQ,USEC,FLAGS;MESSAGE", then
	# " KEY=VALUE" lines; the kernel writes control bytes as \xNN, and a raw
	# ESC is there too (a file can hold anything).
	esc=$(printf '\033')
	{
		printf '%s\n' '6,0,0,-;Linux version 6.1.0-fake (fake driver kit)' \
			'4,1,2100000,-;NVRM: loading NVIDIA UNIX x86_64 Kernel Module  550.54.14' \
			"3,2,5000000,-;NVRM: Xid (PCI:0000:18:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus." \
			' SUBSYSTEM=pci' ' DEVICE=+pci:0000:18:00.0' \
			'4,3,6000000,-;NVRM: Xid (PCI:0000:2a:00): 13, pid=2345, name=train, Graphics SM Warp Exception on (GPC 0, TPC 0, SM 0): Out Of Range Address' \
			'4,4,6100000,-;NVRM: Xid (PCI:0000:2a:00): 13, pid=2345, name=train, Graphics Exception: ESR 0x50df30=0x107000e' \
			"4,5,7000000,-;NVRM: Xid (PCI:0000:3a:00): 31, pid=3456, name=${esc}]0;owned\\x07\\x1b[2J\\x0aFAKE, MMU Fault" \
			'3,6,8000000,-;NVRM: Xid (PCI:0000:d8:00): 79, pid=1, name=init, GPU has fallen off the bus.' \
			'6,7,9000000,-;nvidia-peermem: NVRM: Xid is only a word here'
	} >"$out/dev/kmsg"
	chmod 0644 "$out/dev/kmsg"
	echo 94 >"$p/gpus/0000:5d:00.0/fake-smoke-xid"
	touch "$p/gpus/0000:9a:00.0/fake-smoke-xid-unsupported"
fi

if [ "$topo" = mig ]; then
	# MIG, as the driver shows it (nvidia-caps): every possible GPU/GI/CI
	# has a minor in mig-minors (3 + 135 per GPU, 9 per GPU instance: its
	# access, then CIs 0..7); only the instances that exist have a
	# capability file under capabilities/ (DeviceFileMinor, DeviceFileMode)
	# and, made by nvidia-modprobe, a /dev/nvidia-caps/nvidia-capN node.
	mkdir -p "$out/proc/driver/nvidia-caps" "$out/dev/nvidia-caps" "$out/dev/nvidia-caps-imex-channels"
	{
		echo "config 1"
		echo "monitor 2"
		g=0
		while [ $g -lt 32 ]; do
			i=0
			while [ $i -lt 15 ]; do
				m=$((3 + g * 135 + i * 9))
				echo "gpu$g/gi$i/access $m"
				c=0
				while [ $c -lt 8 ]; do
					echo "gpu$g/gi$i/ci$c/access $((m + 1 + c))"
					c=$((c + 1))
				done
				i=$((i + 1))
			done
			g=$((g + 1))
		done
	} >"$out/proc/driver/nvidia-caps/mig-minors"
	cap() { # path-under-capabilities minor mode(decimal)
		mkdir -p "$(dirname "$p/capabilities/$1")"
		printf 'DeviceFileMinor: %s\nDeviceFileMode: %s\nDeviceFileModify: 1\n' "$2" "$3" >"$p/capabilities/$1"
		mknod -m "$(printf '%o' "$3")" "$out/dev/nvidia-caps/nvidia-cap$2" c 511 "$2"
	}
	cap mig/config 1 256
	cap mig/monitor 2 292
	cap gpu0/mig/gi1/access 12 292
	cap gpu0/mig/gi1/ci0/access 13 292
	cap gpu0/mig/gi2/access 21 292
	cap gpu0/mig/gi2/ci0/access 22 292
	cap gpu0/mig/gi2/ci1/access 23 292
	sed -i 's/^511 nvidia-caps$/508 nvidia-caps-imex-channels\n511 nvidia-caps/' "$out/proc/devices"
	mknod -m 0666 "$out/dev/nvidia-caps-imex-channels/channel0" c 508 0
	mknod -m 0666 "$out/dev/nvidia-caps-imex-channels/channel1" c 508 1
	# The graphics configuration files of a driver installed from the
	# .run installer (ICD and layers under /etc) and the EGL ones.
	mkdir -p "$out/etc/vulkan/icd.d" "$out/etc/vulkan/implicit_layer.d" "$out/usr/share/glvnd/egl_vendor.d" \
		"$out/usr/share/egl/egl_external_platform.d"
	printf '{"file_format_version": "1.0.1", "ICD": {"library_path": "libGLX_nvidia.so.0", "api_version": "1.3.277"}}\n' \
		>"$out/etc/vulkan/icd.d/nvidia_icd.json"
	printf '{"file_format_version": "1.0.0", "layer": {"name": "VK_LAYER_NV_optimus", "library_path": "libGLX_nvidia.so.0"}}\n' \
		>"$out/etc/vulkan/implicit_layer.d/nvidia_layers.json"
	printf '{"file_format_version": "1.0.0", "ICD": {"library_path": "libEGL_nvidia.so.0"}}\n' \
		>"$out/usr/share/glvnd/egl_vendor.d/10_nvidia.json"
	printf '{"file_format_version": "1.0.0", "ICD": {"library_path": "libnvidia-egl-gbm.so.1"}}\n' \
		>"$out/usr/share/egl/egl_external_platform.d/15_nvidia_gbm.json"
	printf '{"file_format_version": "1.0.0", "ICD": {"library_path": "libnvidia-egl-wayland.so.1"}}\n' \
		>"$out/usr/share/egl/egl_external_platform.d/10_nvidia_wayland.json"
	# Another vendor's file in the same directory: never injected.
	printf '{"file_format_version": "1.0.0", "ICD": {"library_path": "libEGL_mesa.so.0"}}\n' \
		>"$out/usr/share/glvnd/egl_vendor.d/50_mesa.json"
fi

# ---- the broken nodes -----------------------------------------------------
case $broken in
nodes) rm "$out/dev/nvidia0" "$out/dev/nvidiactl" ;;
uvm)
	rm "$out/dev/nvidia-uvm" "$out/dev/nvidia-uvm-tools"
	sed -i '/nvidia-uvm/d' "$out/proc/devices"
	;;
driver) rm -r "$out/proc/driver/nvidia" ;;
ldcache) rm "$out/etc/ld.so.cache" ;;
upgrade) sed -i "s/Kernel Module  $VER/Kernel Module  535.999.01/" "$p/version" ;;
ecc) touch "$p/gpus/0000:17:00.0/fake-smoke-ecc" ;;
kernel) touch "$p/gpus/0000:17:00.0/fake-smoke-kernel" ;;
xid)
	printf '%s\n' '6,0,0,-;Linux version 6.1.0-fake (fake driver kit)' \
		'3,1,5000000,-;NVRM: Xid (PCI:0000:17:00): 79, pid=1234, name=train, GPU has fallen off the bus.' \
		>"$out/dev/kmsg"
	chmod 0644 "$out/dev/kmsg"
	;;
hang) touch "$p/gpus/0000:86:00.0/fake-smoke-hang" ;;
esac

# Readable by the unprivileged test run (the runner builds as root).
chmod -R a+rX "$out"
echo "$hash" >"$out/.complete"
