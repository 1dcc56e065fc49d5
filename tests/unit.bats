#!/usr/bin/env bats
# C unit tests of the library code that needs no namespace: the baseline
# layout of a container checked as plan ops (tests/unit/layout_test.c), built
# under ASan/UBSan by `make unit`.  A missing binary is a failure.

load lib/common

UNIT_LAYOUT="$TESTS_BUILD/unit_layout"

setup() {
	[[ -x "$UNIT_LAYOUT" ]] || fail "$UNIT_LAYOUT is missing: run 'make unit'"
}

unit_case() {
	run "$UNIT_LAYOUT" "$1"
	assert_success
}

@test "every unit case is run by this file" {
	run "$UNIT_LAYOUT" --list
	assert_success
	local listed mine
	listed=$(sort <<<"$output")
	mine=$(grep -o 'unit_case [a-z][a-z-]*;' "$BATS_TEST_FILENAME" | tr -d ';' | cut -d' ' -f2 | sort)
	[[ "$listed" == "$mine" ]] || fail "cases in the binary and in unit.bats differ: $(diff <(echo "$listed") <(echo "$mine"))"
}

@test "an archive root keeps owners as root, in a private tmpfs" { unit_case archive-root; }
@test "an unprivileged archive root drops owners and setuid bits" { unit_case archive-user; }
@test "a directory image is an overlay" { unit_case directory-root; }
@test "an unprivileged overlay uses userxattr, and the printed line says so" { unit_case directory-user; }
@test "/dev is a private tmpfs with six checked device nodes, devpts and shm" { unit_case dev; }
@test "--net none and --hostname give lo, a fresh sysfs and no host network files" { unit_case net-none-hostname; }
@test "volumes: flags, file or directory, and every malformed spec refused" { unit_case volumes; }
@test "workdir before the pivot, ldconfig after it, read-only last" { unit_case finish; }
@test "every fresh mount prints its type, flags and data" { unit_case mount-data-printed; }
@test "the read-only /proc paths are printed" { unit_case proc-readonly-printed; }
@test "\$LIBDIR expands by the Debian rule; only per-mount flags become attributes" { unit_case libdir; }
