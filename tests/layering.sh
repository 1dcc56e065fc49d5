#!/usr/bin/env bash
# tests/layering.sh — `make layering`: fail when the code's dependencies go
# against the layers, or when files depend on each other in a circle.
#
# Layers, lowest first (a file may use its own layer and any lower one):
#   base    base/ except the plan: errors, memory, strings, files
#   plan    base/plan.* and base/planshow.c: the list of ops, its shared description and its printer
#   rootfs  rootfs/: where the root file system comes from
#   gpu     gpu/: driver discovery and injection (adds ops to the plan)
#   ns      ns/: namespaces, mounts, pivot, init, the plan executor
#   cli     gpurun.c
# rootfs and gpu are side by side: neither may use the other.
#
# Two views are checked: the #include lines of every .c and .h file, and the
# symbols each object file takes from the others (nm), which also catches a
# call through a declaration written by hand.  On the symbol graph, any
# cycle between files (a.c calls b.c, b.c calls a.c, or longer) is an error.
#
#   tests/layering.sh            after `make gpurun` (needs the .o files)
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2

layer_of() {
	case $1 in
	base/plan.* | base/planshow.*) echo plan ;;
	base/*) echo base ;;
	rootfs/*) echo rootfs ;;
	gpu/*) echo gpu ;;
	ns/*) echo ns ;;
	gpurun.*) echo cli ;;
	*) echo unknown ;;
	esac
}

rank_of() {
	case $1 in
	base) echo 0 ;; plan) echo 1 ;; rootfs | gpu) echo 2 ;; ns) echo 3 ;; cli) echo 4 ;; *) echo 99 ;;
	esac
}

# allowed FROM_LAYER TO_LAYER
allowed() {
	[[ $1 == "$2" ]] && return 0
	(($(rank_of "$2") < $(rank_of "$1")))
}

bad=0
complain() {
	printf 'layering: %s\n' "$*" >&2
	bad=1
}

# ---- includes ----------------------------------------------------------------
sources=(gpurun.c base/*.[ch] rootfs/*.[ch] gpu/*.[ch] ns/*.[ch])
for f in "${sources[@]}"; do
	from=$(layer_of "$f")
	while IFS= read -r inc; do
		target=$(realpath -m --relative-to=. "$(dirname "$f")/$inc")
		to=$(layer_of "$target")
		if [[ $to == unknown ]]; then
			complain "$f includes $inc, which is outside the layered tree"
		elif ! allowed "$from" "$to"; then
			complain "$f ($from) includes $target ($to): against the layers"
		fi
	done < <(sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$f")
done

# ---- symbols -----------------------------------------------------------------
objects=(gpurun.o base/*.o rootfs/*.o gpu/*.o ns/*.o)
for o in "${objects[@]}"; do
	[[ -f $o ]] || {
		complain "$o is missing: run 'make gpurun' first"
		exit 1
	}
done
declare -A owner=()
for o in "${objects[@]}"; do
	while read -r sym; do
		owner[$sym]=$o
	done < <(nm -g --defined-only "$o" | awk 'NF == 3 { print $3 }')
done
edges=$(mktemp)
trap 'rm -f "$edges"' EXIT
for o in "${objects[@]}"; do
	from=$(layer_of "$o")
	while read -r sym; do
		def=${owner[$sym]:-}
		[[ -n $def && $def != "$o" ]] || continue
		to=$(layer_of "$def")
		allowed "$from" "$to" || complain "${o%.o}.c ($from) uses $sym from ${def%.o}.c ($to): against the layers"
		echo "${o%.o}.c ${def%.o}.c" >>"$edges"
	done < <(nm -u "$o" | awk '{ print $2 }')
done
sort -u -o "$edges" "$edges"
# Two files that use each other, named plainly; tsort then finds longer loops.
while read -r a b; do
	if [[ $a < $b ]] && grep -qx "$b $a" "$edges"; then
		complain "$a and $b use each other (a circle)"
	fi
done <"$edges"
if ! loop=$(tsort "$edges" 2>&1 >/dev/null); then
	complain "a circle of files: $(printf '%s' "$loop" | grep -v 'input contains a loop' | tr -s '[:space:]' ' ')"
fi

if ((bad)); then
	echo "layering: FAILED" >&2
	exit 1
fi
echo "layering: ok ($(wc -l <"$edges") dependencies between ${#objects[@]} files, no circle)"
