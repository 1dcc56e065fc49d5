#!/usr/bin/env bash
# tests/layering.sh — `make layering`: fail when the code's dependencies go
# against the layers, or when files depend on each other in a circle.
#
# Layers, lowest first (a file may use its own layer and any lower one),
# each a set of folders; a file belongs to the layer of its own folder:
#   base    base/: errors, memory, strings, files
#   plan    base/plan/: the list of ops, its shared description, its printed words
#   userns  ns/userns/: subordinate id ranges and work under a full id map
#           (the image cache unpacks under the map the container gets)
#   rootfs  rootfs/ and its folders: where the root file system comes from
#   gpu     gpu/ and gpu/cdi/: driver discovery and injection (adds ops to the plan)
#   ns      ns/: namespaces, mounts, pivot, init, the plan executor
#   cli     gpurun.c and cli/: the command line
# rootfs and gpu are side by side: neither may use the other.
#
# Two views are checked: the #include lines of every .c and .h file, and the
# symbols each object file takes from the others (nm), which also catches a
# call through a declaration written by hand.  On the symbol graph, any
# cycle between files (a.c calls b.c, b.c calls a.c, or longer) is an error.
#
# The whole check is one nm per view and one awk program: it used to spawn
# a few processes per include and per symbol, 8 CPU seconds a run, and
# layering.bats runs it six times.
#
#   tests/layering.sh            after `make gpurun` (needs the .o files)
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2
# Byte order for sort, awk's comparisons and tsort, whatever the caller's locale.
export LC_ALL=C

# Every folder of the tree and its layer: the one table this check reads.
declare -A layer_dirs=(
	[.]=cli [cli]=cli
	[base]=base [base/plan]=plan
	[ns/userns]=userns [ns]=ns
	[rootfs]=rootfs [rootfs/unpack]=rootfs [rootfs/cache]=rootfs [rootfs/image]=rootfs [rootfs/registry]=rootfs
	[gpu]=gpu [gpu/cdi]=gpu [gpu/probe]=gpu
)
# A folder of C files that the table does not name would go unchecked.
while IFS= read -r d; do
	if [[ -z ${layer_dirs[$d]:-} ]]; then
		printf 'layering: %s\n' "$d/ holds C files but has no layer: add it to layer_dirs in tests/layering.sh" >&2
		exit 1
	fi
done < <(find base ns gpu rootfs cli -name '*.[ch]' -printf '%h\n' 2>/dev/null | sort -u)
shopt -s nullglob
sources=(gpurun.c) objects=(gpurun.o)
for d in "${!layer_dirs[@]}"; do
	[[ $d == . ]] && continue
	sources+=("$d"/*.[ch])
	objects+=("$d"/*.o)
done
shopt -u nullglob
dirmap=""
for d in "${!layer_dirs[@]}"; do
	dirmap+="$d=${layer_dirs[$d]} "
done
for o in "${objects[@]}"; do
	if [[ ! -f $o ]]; then
		printf 'layering: %s\n' "$o is missing: run 'make gpurun' first" >&2
		exit 1
	fi
done

tmp=$(mktemp -d) || exit 2
trap 'rm -rf "$tmp"' EXIT
# "FILE.o:" before each symbol line, in the order of the objects given.
nm -A -g --defined-only "${objects[@]}" >"$tmp/defined" || exit 2
nm -A -u "${objects[@]}" >"$tmp/undefined" || exit 2

# The includes of every source (its input files), then the symbols:
# complaints to stderr, one "FROM.c TO.c" line per symbol a file takes from
# another into $tmp/edges, exit status 1 when anything was against the layers.
awk -v defined="$tmp/defined" -v undefined="$tmp/undefined" -v edges="$tmp/edges" -v dirmap="$dirmap" '
BEGIN {
	n = split(dirmap, pairs, " ")
	for (i = 1; i <= n; i++) {
		split(pairs[i], kv, "=")
		dir_layer[kv[1]] = kv[2]
	}
}
# The layer of the folder a file is in (the top of the tree is gpurun.c).
function layer_of(p) {
	d = dir_of(p)
	return (d in dir_layer) ? dir_layer[d] : "unknown"
}
function rank_of(l) {
	if (l == "base") return 0
	if (l == "plan") return 1
	if (l == "userns") return 2
	if (l == "rootfs" || l == "gpu") return 3
	if (l == "ns") return 4
	if (l == "cli") return 5
	return 99
}
function allowed(from, to) {
	return from == to || rank_of(to) < rank_of(from)
}
function complain(msg) {
	print "layering: " msg > "/dev/stderr"
	bad = 1
}
# What realpath -m --relative-to=. makes of a path relative to the top of
# the tree (no symbolic links in it): "." and ".." resolved by name.
function normalize(p,    n, i, parts, out, depth, k) {
	n = split(p, parts, "/")
	depth = 0
	for (i = 1; i <= n; i++) {
		if (parts[i] == "" || parts[i] == ".") continue
		if (parts[i] == ".." && depth > 0 && out[depth] != "..") { depth--; continue }
		out[++depth] = parts[i]
	}
	if (depth == 0) return "."
	p = out[1]
	for (k = 2; k <= depth; k++) p = p "/" out[k]
	return p
}
function dir_of(p) {
	return (p ~ /\//) ? substr(p, 1, match(p, /\/[^\/]*$/) - 1) : "."
}
# The file part and the rest of an "nm -A" line.
function split_nm(line) {
	nm_file = substr(line, 1, index(line, ":") - 1)
	nm_rest = substr(line, index(line, ":") + 1)
}
function c_of(o) {
	sub(/\.o$/, ".c", o)
	return o
}
/^[[:space:]]*#[[:space:]]*include[[:space:]]*"[^"]*"/ {
	inc = $0
	sub(/^[[:space:]]*#[[:space:]]*include[[:space:]]*"/, "", inc)
	sub(/".*/, "", inc)
	from = layer_of(FILENAME)
	target = normalize(dir_of(FILENAME) "/" inc)
	to = layer_of(target)
	if (to == "unknown")
		complain(FILENAME " includes " inc ", which is outside the layered tree")
	else if (!allowed(from, to))
		complain(FILENAME " (" from ") includes " target " (" to "): against the layers")
}
END {
	# The last object that defines a symbol owns it.
	while ((getline line < defined) > 0) {
		split_nm(line)
		if (split(nm_rest, f, " ") == 3) owner[f[3]] = nm_file
	}
	while ((getline line < undefined) > 0) {
		split_nm(line)
		if (split(nm_rest, f, " ") < 2) continue
		o = nm_file
		sym = f[2]
		def = (sym in owner) ? owner[sym] : ""
		if (def == "" || def == o) continue
		from = layer_of(o)
		to = layer_of(def)
		if (!allowed(from, to))
			complain(c_of(o) " (" from ") uses " sym " from " c_of(def) " (" to "): against the layers")
		print c_of(o) " " c_of(def) > edges
	}
	close(edges)
	exit bad
}' "${sources[@]}"
bad=$?
((bad > 1)) && exit 2
touch "$tmp/edges"
sort -u -o "$tmp/edges" "$tmp/edges"

# Two files that use each other, named plainly; tsort then finds longer loops.
awk '{ edge[$1 " " $2] = 1; order[NR] = $0 }
END {
	for (i = 1; i <= NR; i++) {
		split(order[i], e, " ")
		if (e[1] < e[2] && ((e[2] " " e[1]) in edge))
			print "layering: " e[1] " and " e[2] " use each other (a circle)"
	}
}' "$tmp/edges" >"$tmp/pairs"
if [[ -s $tmp/pairs ]]; then
	cat "$tmp/pairs" >&2
	bad=1
fi
if ! loop=$(tsort "$tmp/edges" 2>&1 >/dev/null); then
	printf 'layering: %s\n' "a circle of files: $(printf '%s' "$loop" | grep -v 'input contains a loop' | tr -s '[:space:]' ' ')" >&2
	bad=1
fi

if ((bad)); then
	echo "layering: FAILED" >&2
	exit 1
fi
echo "layering: ok ($(wc -l <"$tmp/edges") dependencies between ${#objects[@]} files, no circle)"
