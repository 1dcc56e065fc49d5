#!/usr/bin/env bats
# --json on `info`, `list`, `doctor` and `cache ls`: one document each, in
# the schema of docs/json.md, read back by a JSON parser; text from outside
# (file names, a driver root's paths) JSON-escaped, never a raw control byte.

load lib/common
load lib/gpu

setup_file() {
	gpu_setup_file
	common_images
}

setup() {
	export GPURUN_CACHE=$BATS_TEST_TMPDIR/cache
	host_snapshot "$BATS_TEST_TMPDIR/host.before"
}

teardown() {
	assert_host_unchanged "$BATS_TEST_TMPDIR/host.before"
}

# check_json PYTHON ARGS...: parse $output, as `doc`, and run the checks.
check_json() {
	python3 -c "
import json, sys
doc = json.loads(sys.stdin.read())
$1" "${@:2}" <<<"$output" || fail "the document: $output"
}

@test "info --json gives the driver, CUDA and each GPU in PCI bus order" {
	run --separate-stderr "$GPURUN" info --json --driver-root "$FAKE4"
	assert_success
	assert_equal "${#lines[@]}" 1
	check_json '
assert doc["driver_version"] == "550.54.14" and doc["cuda_version"] == "12.4", doc
g = doc["gpus"]
assert [x["index"] for x in g] == [0, 1, 2, 3], g
assert [x["minor"] for x in g] == [int(m) for m in sys.argv[1].split()], g
assert [x["bus_location"] for x in g] == ["0000" + b for b in sys.argv[2].split()], g
assert [x["uuid"] for x in g] == sys.argv[3].split(), g
assert g[0]["model"] == "NVIDIA H100 80GB HBM3" and g[0]["architecture"] == "9.0", g[0]
assert all(isinstance(x["brand"], str) and x["mig_devices"] == [] for x in g), g' \
		"${FOUR_MINOR[*]}" "${FOUR_BUS[*]}" "${FOUR_UUID[*]}"
}

@test "info --json names each MIG device with its UUID from NVML" {
	run --separate-stderr "$GPURUN" info --json --driver-root "$FAKEMIG"
	assert_success
	check_json '
m = doc["gpus"][0]["mig_devices"]
assert [(x["index"], x["gpu_instance"], x["compute_instance"]) for x in m] == [(0, 1, 0), (1, 2, 0), (2, 2, 1)], m
assert m[0]["uuid"] == "MIG-a1000000-1111-4222-8333-444455550100", m'
}

@test "list --json gives what list prints, by kind" {
	run --separate-stderr "$GPURUN" list --driver-root "$FAKE4" --gpus 1 --caps utility,compute
	assert_success
	local text=$output
	run --separate-stderr "$GPURUN" list --json --driver-root "$FAKE4" --gpus 1 --caps utility,compute
	assert_success
	check_json '
keys = ["devices", "mig_capabilities", "binaries", "libraries", "libraries32", "ipcs", "firmware", "configs"]
assert list(doc) == keys + ["gpus", "slurm_ceiling"], list(doc)
assert doc["devices"][:2] == ["/dev/nvidiactl", "/dev/nvidia-uvm"], doc["devices"]
assert "/dev/nvidia0" in doc["devices"], doc["devices"]
assert sum((doc[k] for k in keys), []) == sys.argv[1].splitlines(), "not the text list"' "$text"
}

@test "list --json names the GPUs it injects by index, UUID and bus id" {
	run --separate-stderr "$GPURUN" list --json --driver-root "$FAKE4" --gpus 1,3 --caps utility
	assert_success
	check_json '
g = doc["gpus"]
assert [x["index"] for x in g] == [1, 3], g
assert [x["uuid"] for x in g] == sys.argv[1].split()[1::2], g
assert [x["bus_location"] for x in g] == ["0000" + b for b in sys.argv[2].split()[1::2]], g
assert all(x["slurm_index"] is None for x in g) and doc["slurm_ceiling"] is None, doc' \
		"${FOUR_UUID[*]}" "${FOUR_BUS[*]}"
}

@test "list --json with --gpus void lists nothing" {
	run --separate-stderr "$GPURUN" list --json --driver-root "$FAKE1" --gpus void
	assert_success
	check_json 'assert all(v in ([], None) for v in doc.values()), doc'
}

@test "doctor --json gives every verdict and the tally, and the same exit status" {
	run --separate-stderr "$GPURUN" doctor --json --driver-root "$FAKE1" --gpus 0
	assert_success
	assert_equal "${#lines[@]}" 1
	check_json '
names = [c["name"] for c in doc["checks"]]
for n in ["cache", "user namespaces", "NVIDIA driver", "nvidia-persistenced", "NVML", "libcuda", "CDI specs"]:
    assert n in names, names
assert all(c["level"] in ("ok", "warn", "fail") and isinstance(c["text"], str) for c in doc["checks"]), doc
assert doc["failed"] == 0 and doc["warnings"] == int(sys.argv[1]) and doc["ok"] is True, doc
assert [c["level"] for c in doc["checks"] if c["name"] == "nvidia-persistenced"] == ["warn"], doc' \
		"$(slash_overlay_refused && echo 2 || echo 1)"
	run --separate-stderr "$GPURUN" doctor --json --driver-root "$FAKE1" --gpus 5
	assert_failure 1
	check_json '
assert doc["ok"] is False and doc["failed"] == 1, doc
[g] = [c for c in doc["checks"] if c["name"] == "GPUs"]
assert g["level"] == "fail" and "unknown device 5" in g["text"], g'
}

@test "doctor --json gives each check its stable id beside its name" {
	run --separate-stderr "$GPURUN" doctor --json --driver-root "$FAKE1" --gpus 0
	assert_success
	check_json '
ids = {c["name"]: c["id"] for c in doc["checks"]}
assert ids == {"cache": "cache", "user namespaces": "userns", "/proc": "proc", "overlayfs": "overlayfs",
    "NVIDIA driver": "driver", "NVIDIA devices": "devices", "nvidia-uvm": "uvm",
    "nvidia-persistenced": "persistenced", "ld.so.cache": "ldcache", "GPUs": "gpus", "NVML": "nvml",
    "libcuda": "libcuda", "CDI specs": "cdi"}, ids'
}

@test "doctor --json escapes control bytes from outside: the document has none raw" {
	export GPURUN_CACHE=$BATS_TEST_TMPDIR/$'cache\e]0;retitled\a\n'
	run --separate-stderr "$GPURUN" doctor --json --driver-root "$FAKE1"
	assert_success
	[[ "$output" != *$'\e'* && "$output" != *$'\a'* ]] || fail "raw control bytes in: $(cat -v <<<"$output")"
	assert_equal "${#lines[@]}" 1
	check_json '
[c] = [c for c in doc["checks"] if c["name"] == "cache"]
assert c["text"].startswith(sys.argv[1] + " does not exist yet"), c' "$GPURUN_CACHE"
}

@test "cache ls --json gives each image with its layers and sources; an empty cache gives no image" {
	run --separate-stderr "$GPURUN" cache ls --json
	assert_success
	assert_output '{"images":[]}'
	run "$GPURUN" --gpus void "$BUSYBOX_TAR" true
	assert_success
	run --separate-stderr "$GPURUN" cache ls --json
	assert_success
	check_json '
import re, time
[img] = doc["images"]
assert re.fullmatch("[0-9a-f]{64}", img["id"]), img
assert isinstance(img["bytes"], int) and img["bytes"] > 0, img
assert abs(img["last_use"] - time.time()) < 3600, img
assert img["source"] == sys.argv[1] and img["ref"] is None, img
assert img["sources"] == [{"source": sys.argv[1], "ref": None}], img
assert len(img["layers"]) == 1 and img["layers"][0].startswith("sha256:"), img' "$(realpath "$BUSYBOX_TAR")"
}

@test "an unknown option beside --json is a usage error, exit 125" {
	run --separate-stderr "$GPURUN" info --json --bogus
	assert_equal "$status" 125
	[[ "$stderr" == "gpurun: info: unknown option --bogus"* ]] || fail "stderr: $stderr"
}
