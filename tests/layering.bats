#!/usr/bin/env bats
# `make layering` (tests/layering.sh): the tree keeps its layers (base <
# plan < userns < rootfs, gpu < ns < gpurun.c and cli/) and no two files use each other.  Each
# rule is also shown to fail on a copy of the tree with one bad edge added.
# The check reads files and runs nm: what it finds is the same whoever
# runs it, so tests/run-bats.sh runs this suite in one mode only.
# run-bats: mode-independent

load lib/common

REPO=${BATS_TEST_DIRNAME%/*}

setup() {
	[[ -f "$REPO/ns/exec.o" && -f "$REPO/gpurun.o" ]] || fail "objects missing: run 'make gpurun' first"
	COPY=$BATS_TEST_TMPDIR/tree
	mkdir -p "$COPY/tests"
	(cd "$REPO" && cp -a gpurun.c gpurun.o base rootfs gpu ns cli "$COPY/") &&
		cp "$REPO/tests/layering.sh" "$COPY/tests/"
}

# obj DIR/NAME.c SOURCE: compile a small C file into the copy's objects.
obj() {
	printf '%s\n' "$2" >"$COPY/$1"
	cc -c -o "$COPY/${1%.c}.o" "$COPY/$1"
}

@test "the tree keeps its layers and has no circle" {
	run bash "$REPO/tests/layering.sh"
	assert_success
	assert_output --partial "no circle"
}

@test "an include of ns/ from gpu/ is refused" {
	sed -i '0,/#include "gpu_int.h"/s//#include "gpu_int.h"\n#include "..\/ns\/ns.h"/' "$COPY/gpu/caps.c"
	run bash "$COPY/tests/layering.sh"
	assert_failure
	assert_output --partial "gpu/caps.c (gpu) includes ns/ns.h (ns): against the layers"
}

@test "rootfs/ calling into ns/ is refused" {
	obj rootfs/zz.c 'int plan_execute(void *, void *); int zz(void) { return plan_execute(0, 0); }'
	run bash "$COPY/tests/layering.sh"
	assert_failure
	assert_output --partial "rootfs/zz.c (rootfs) uses plan_execute from ns/exec.c (ns): against the layers"
}

@test "gpu/ and rootfs/ may not use each other" {
	obj gpu/zz.c 'int rootfs_probe(int, const char *, void *); int zz(void) { return rootfs_probe(0, 0, 0); }'
	run bash "$COPY/tests/layering.sh"
	assert_failure
	assert_output --partial "gpu/zz.c (gpu) uses rootfs_probe from rootfs/unpack/probe.c (rootfs)"
}

@test "two files that call each other are a circle" {
	obj gpu/zz1.c 'int zz2(int); int zz1(int n) { return n ? zz2(n - 1) : 0; }'
	obj gpu/zz2.c 'int zz1(int); int zz2(int n) { return n ? zz1(n - 1) : 0; }'
	run bash "$COPY/tests/layering.sh"
	assert_failure
	assert_output --partial "gpu/zz1.c and gpu/zz2.c use each other (a circle)"
}

@test "a longer circle is found too" {
	obj ns/zz1.c 'int zz2(int); int zz1(int n) { return n ? zz2(n - 1) : 0; }'
	obj ns/zz2.c 'int zz3(int); int zz2(int n) { return n ? zz3(n - 1) : 0; }'
	obj ns/zz3.c 'int zz1(int); int zz3(int n) { return n ? zz1(n - 1) : 0; }'
	run bash "$COPY/tests/layering.sh"
	assert_failure
	assert_output --partial "a circle of files"
	assert_output --partial "ns/zz1.c"
}
