#!/usr/bin/env bats
# Pulling from a registry (rootfs/reg*.c): `gpurun docker://REF` and
# `gpurun pull REF`, against a real registry server (Debian's
# docker-registry) on 127.0.0.1 behind a throw-away TLS certificate: one
# instance with htpasswd basic auth (B), one with token auth (T, with the
# small token service of tests/lib/token_issuer.py), both populated with
# skopeo from the OCI fixtures (tests/lib/registry.bash).  Faults: a blob cut
# off mid-transfer, a server that goes away mid-blob, a blob corrupted on the
# server, a missing tag, wrong credentials, a manifest far above the size
# cap, answers that never end (tests/lib/hostile_registry.py), a token
# service in clear — each one line, nothing half-cached, and a pull after it
# succeeds.

load lib/common
load lib/registry

setup_file() {
	require_gpurun
	registry_require_tools
	common_images
	local oci oci_two
	oci=$(oci_fixture oci)
	oci_two=$(oci_fixture oci-two)
	registry_start T token
	registry_start B htpasswd
	make_multiarch_layout "$oci" "$BATS_FILE_TMPDIR/multi"
	make_plain_layout "$oci" "$BATS_FILE_TMPDIR/plain"
	skopeo --insecure-policy copy -q --dest-compress-format zstd --dest-compress \
		"oci:$oci:latest" "oci:$BATS_FILE_TMPDIR/zstd:latest" >/dev/null
	registry_push T "oci:$oci:latest" gpurun/test:latest
	registry_push T "oci:$oci:latest" private/test:latest
	registry_push T "oci:$oci_two:one" gpurun/one:1
	registry_push T "oci:$oci_two:two" gpurun/two:2
	registry_push T "oci:$BATS_FILE_TMPDIR/zstd:latest" gpurun/zstd:latest
	registry_push T "oci:$BATS_FILE_TMPDIR/plain:latest" gpurun/plain:latest
	registry_push T "oci:$BATS_FILE_TMPDIR/multi:latest" gpurun/multi:latest --all
	# Docker's media types: a schema-2 manifest, and a manifest list.
	registry_push T "oci:$oci:latest" gpurun/v2s2:latest --format v2s2
	registry_push T "oci:$BATS_FILE_TMPDIR/multi:latest" gpurun/multi-v2s2:latest --all --format v2s2
	registry_push B "oci:$oci:latest" gpurun/test:latest
	registry_start P plain
	registry_push P "oci:$oci:latest" gpurun/test:latest
}

teardown_file() {
	registry_stop_all
}

setup() {
	export GPURUN_CACHE=$BATS_TEST_TMPDIR/cache
	# Credentials only where a test puts them; the registries' CA as curl takes it.
	export HOME=$BATS_TEST_TMPDIR/home
	mkdir -p "$HOME"
	unset REGISTRY_AUTH_FILE XDG_RUNTIME_DIR XDG_CONFIG_HOME DOCKER_CONFIG GPURUN_INSECURE_REGISTRIES
	unset http_proxy https_proxy HTTPS_PROXY all_proxy ALL_PROXY no_proxy NO_PROXY
	export CURL_CA_BUNDLE=$REG_CA SSL_CERT_FILE=$REG_CA
	T=$REG_T_HOST
	B=$REG_B_HOST
	P=$REG_P_HOST
	PROXY_PID=
	RESTORE_BLOB=
}

teardown() {
	if [[ -n "$PROXY_PID" ]]; then
		kill "$PROXY_PID" 2>/dev/null
		wait "$PROXY_PID" 2>/dev/null
	fi
	if [[ -n "$RESTORE_BLOB" ]]; then
		cp "$BATS_TEST_TMPDIR/blob.orig" "$RESTORE_BLOB"
	fi
	return 0
}

LAYERS_CHECK='cat /etc/gpurun-layer2 /etc/gpurun-layer3 >/dev/null && echo files-ok
	[ -e /etc/deleted-later ] && echo deleted-later-is-back
	[ -e /data/gone ] && echo gone-is-back
	ls /data/opaque | tr "\n" " "; echo
	echo "env=$GPURUN_IMAGE_ENV"'

assert_layers_applied() {
	assert_success
	assert_line files-ok
	refute_line deleted-later-is-back
	refute_line gone-is-back
	assert_line "new "
	assert_line env=from-config
}

fetched() {
	grep -c ": fetched blob sha256:" <<<"$1" || true
}

# Nothing of a pull is left in the cache: no layer, no record, no scratch.
assert_nothing_cached() {
	local n
	n=$(find "$GPURUN_CACHE/layers" "$GPURUN_CACHE/images" "$GPURUN_CACHE/tmp" -mindepth 1 2>/dev/null | wc -l)
	assert_equal "$n" 0
}

big_blob() {
	local dir_var="REG_${1}_DIR"
	find "${!dir_var}/storage/docker/registry/v2/blobs" -name data -size +500k
}

@test "an image pulled with an anonymous bearer token runs with its layers and its config" {
	run "$GPURUN" --gpus void "docker://$T/gpurun/test:latest" "$LAYERS_CHECK"
	assert_layers_applied
}

@test "the image's Entrypoint, Cmd, WorkingDir and User apply to a pulled image" {
	run "$GPURUN" --gpus void "docker://$T/gpurun/test"
	assert_success
	assert_output "cmd-from-config
/data
1000"
}

@test "gpurun pull fetches into the cache without running anything; a launch then needs no registry" {
	cut_proxy_start T once 999999999999
	run --separate-stderr "$GPURUN" pull "docker://$PROXY_HOST/gpurun/test:latest"
	assert_success
	assert_output ""
	assert_equal "$stderr" ""
	kill "$PROXY_PID"
	wait "$PROXY_PID" 2>/dev/null || true
	PROXY_PID=
	run "$GPURUN" --gpus void "docker://$PROXY_HOST/gpurun/test:latest" 'echo from-cache'
	assert_success
	assert_output from-cache
	# `pull` always asks the registry, which is gone now.
	GPURUN_PULL_RETRIES=0 run --separate-stderr "$GPURUN" pull "docker://$PROXY_HOST/gpurun/test:latest"
	assert_failure 125
	assert_equal "$stderr" "gpurun: image docker://$PROXY_HOST/gpurun/test:latest: manifest: Couldn't connect to server"
}

@test "a second pull fetches no layer, and an image sharing the base layer fetches only its own" {
	run --separate-stderr "$GPURUN" pull --verbose "docker://$T/gpurun/one:1"
	assert_success
	assert_equal "$(fetched "$stderr")" 2
	run --separate-stderr "$GPURUN" pull --verbose "docker://$T/gpurun/one:1"
	assert_success
	assert_equal "$(fetched "$stderr")" 0
	[[ "$stderr" == *"layer 1 of 2 (sha256:"*") is in the cache already"* ]] || fail "$stderr"
	run --separate-stderr "$GPURUN" pull --verbose "docker://$T/gpurun/two:2"
	assert_success
	assert_equal "$(fetched "$stderr")" 1
	run "$GPURUN" --gpus void "docker://$T/gpurun/two:2"
	assert_success
	assert_output two
}

@test "zstd and uncompressed layers unpack to the same tree as gzip layers" {
	run "$GPURUN" --gpus void "docker://$T/gpurun/zstd" "$LAYERS_CHECK"
	assert_layers_applied
	export GPURUN_CACHE=$BATS_TEST_TMPDIR/cache2
	run "$GPURUN" --gpus void "docker://$T/gpurun/plain" "$LAYERS_CHECK"
	assert_layers_applied
}

@test "a reference by digest pulls exactly that manifest, and a wrong digest is refused" {
	local hex
	hex=$(sha256sum <"$(find "$(oci_fixture oci)/blobs/sha256" -type f -size -2k -exec grep -l '"layers"' {} + | head -n 1)" | cut -d' ' -f1)
	run "$GPURUN" --gpus void "docker://$T/gpurun/test@sha256:$hex" "$LAYERS_CHECK"
	assert_layers_applied
	run --separate-stderr "$GPURUN" pull "docker://$T/gpurun/test@sha256:$(printf '%064d' 0)"
	assert_failure 125
	[[ "$stderr" == "gpurun: image docker://$T/gpurun/test@sha256:$(printf '%064d' 0): manifest: not found"* ]] || fail "$stderr"
}

@test "a multi-platform index resolves to the host's platform, --platform picks another" {
	[[ $(uname -m) == x86_64 ]] || skip "the index holds linux/amd64 and linux/arm64 images"
	run "$GPURUN" --gpus void "docker://$T/gpurun/multi" 'echo "arch=$GPURUN_ARCH"'
	assert_success
	assert_output arch=
	run "$GPURUN" --gpus void --platform linux/arm64 "docker://$T/gpurun/multi" 'echo "arch=$GPURUN_ARCH"'
	assert_success
	assert_output arch=arm64
}

@test "Docker schema-2 manifests and Docker manifest lists work as their OCI twins" {
	run "$GPURUN" --gpus void "docker://$T/gpurun/v2s2" "$LAYERS_CHECK"
	assert_layers_applied
	run "$GPURUN" --gpus void --platform linux/arm64/v8 "docker://$T/gpurun/multi-v2s2" 'echo "arch=$GPURUN_ARCH"'
	assert_success
	assert_output arch=arm64
	run --separate-stderr "$GPURUN" pull --platform linux/arm64/v7 "docker://$T/gpurun/multi-v2s2"
	assert_failure 125
	[[ "$stderr" == *"no image for platform linux/arm64/v7 (there are: linux/amd64, linux/arm64/v8)"* ]] || fail "$stderr"
}

@test "a platform the index does not hold is a clear error listing those it does" {
	run --separate-stderr "$GPURUN" pull --platform linux/s390x "docker://$T/gpurun/multi"
	assert_failure 125
	assert_equal "$stderr" "gpurun: image docker://$T/gpurun/multi:latest: no image for platform linux/s390x (there are: linux/amd64, linux/arm64/v8)
hint: pick one with --platform OS/ARCH[/VARIANT]"
	assert_nothing_cached
	run --separate-stderr "$GPURUN" pull --platform s390x "docker://$T/gpurun/multi"
	assert_failure 125
	assert_equal "$stderr" "gpurun: --platform 's390x': expected OS/ARCH[/VARIANT], e.g. linux/arm64"
}

@test "Docker Hub short names resolve as docker does" {
	# A proxy that is not there: the message shows the name resolved, offline.
	export https_proxy=http://127.0.0.1:9 GPURUN_PULL_RETRIES=0
	local ref want
	for ref in "ubuntu docker.io/library/ubuntu:latest" "ubuntu:24.04 docker.io/library/ubuntu:24.04" \
		"docker://nvidia/cuda:12.6.3-base docker.io/nvidia/cuda:12.6.3-base" \
		"docker.io/busybox docker.io/library/busybox:latest" \
		"index.docker.io/library/busybox:1 docker.io/library/busybox:1" \
		"nvcr.io/nvidia/cuda:12.6.3-base-ubuntu24.04 nvcr.io/nvidia/cuda:12.6.3-base-ubuntu24.04" \
		"localhost:5000/a/b localhost:5000/a/b:latest"; do
		want=${ref#* }
		run --separate-stderr "$GPURUN" pull --verbose "${ref% *}"
		assert_failure 125
		[[ "$stderr" == *"gpurun: image docker://$want: manifest: Couldn't connect to server"* ]] || fail "$ref: $stderr"
	done
	run --separate-stderr "$GPURUN" pull --verbose ubuntu
	[[ "$stderr" == *"gpurun: docker://docker.io/library/ubuntu:latest: the registry API at https://registry-1.docker.io/v2/library/ubuntu"* ]] || fail "$stderr"
}

@test "a bare REGISTRY/REPO:TAG that is no file is pulled from its registry, as docker reads it" {
	cd "$BATS_TEST_TMPDIR"
	run "$GPURUN" --gpus void "$P/gpurun/test:latest" "$LAYERS_CHECK"
	assert_layers_applied
	run "$GPURUN" cache ls
	assert_line --regexp " docker://$P/gpurun/test:latest\$"
}

@test "a file named like a reference wins over the registry" {
	cd "$BATS_TEST_TMPDIR"
	mkdir -p "$P/gpurun"
	cp -a "$BUSYBOX_DIR" "$P/gpurun/test:latest"
	run --separate-stderr "$GPURUN" --gpus void "$P/gpurun/test:latest" \
		sh -c '[ -e /etc/gpurun-layer2 ] && echo from-the-registry || echo from-the-file'
	assert_success
	assert_output from-the-file
}

@test "invalid references are refused before any network use" {
	run --separate-stderr "$GPURUN" pull docker://Ubuntu
	assert_failure 125
	assert_equal "$stderr" "gpurun: image reference 'docker://Ubuntu': invalid repository name (lowercase letters, digits and separators)"
	run --separate-stderr "$GPURUN" pull 'docker://ubuntu:bad/tag'
	assert_failure 125
	run --separate-stderr "$GPURUN" pull docker://ubuntu@sha256:abc
	assert_failure 125
	assert_equal "$stderr" "gpurun: image reference 'docker://ubuntu@sha256:abc': invalid digest (want sha256: and 64 hex digits)"
	run --separate-stderr "$GPURUN" docker://
	assert_failure 125
	assert_equal "$stderr" "gpurun: image reference 'docker://': empty"
	run --separate-stderr "$GPURUN" pull docker://me:secret@example.org/a/b
	assert_failure 125
	assert_equal "$stderr" "gpurun: image reference: credentials in a reference are not supported; log in (podman login or docker login) or use REGISTRY_AUTH_FILE"
}

@test "a missing tag is a clear one-line error and caches nothing" {
	run --separate-stderr "$GPURUN" "docker://$T/gpurun/test:nope" true
	assert_failure 125
	assert_equal "$stderr" "gpurun: image docker://$T/gpurun/test:nope: manifest: not found: manifest unknown"
	assert_nothing_cached
}

@test "basic auth: credentials come from the auth files in podman's order" {
	run --separate-stderr "$GPURUN" pull "docker://$B/gpurun/test"
	assert_failure 125
	assert_equal "$stderr" "gpurun: image docker://$B/gpurun/test:latest: $B asks for credentials and none were found
hint: log in first (podman login $B or docker login), or set REGISTRY_AUTH_FILE"
	mkdir -p "$HOME/.docker" "$BATS_TEST_TMPDIR/run/containers"
	auth_file "$HOME/.docker/config.json" "$B" "$REG_USER" "$REG_PASS"
	run "$GPURUN" pull "docker://$B/gpurun/test"
	assert_success
	# $XDG_RUNTIME_DIR/containers/auth.json comes before ~/.docker/config.json.
	export XDG_RUNTIME_DIR=$BATS_TEST_TMPDIR/run
	auth_file "$XDG_RUNTIME_DIR/containers/auth.json" "$B" "$REG_USER" wrong
	run --separate-stderr "$GPURUN" pull "docker://$B/gpurun/test"
	assert_failure 125
	# ... and $REGISTRY_AUTH_FILE before both; a key may carry a scheme and a path.
	auth_file "$BATS_TEST_TMPDIR/auth.json" "https://$B/v2/" "$REG_USER" "$REG_PASS"
	REGISTRY_AUTH_FILE=$BATS_TEST_TMPDIR/auth.json run "$GPURUN" pull "docker://$B/gpurun/test"
	assert_success
	# $REGISTRY_AUTH_FILE replaces the $XDG_RUNTIME_DIR file (the later ones stay).
	auth_file "$XDG_RUNTIME_DIR/containers/auth.json" "$B" "$REG_USER" "$REG_PASS"
	rm "$HOME/.docker/config.json"
	auth_file "$BATS_TEST_TMPDIR/auth.json" example.org "$REG_USER" "$REG_PASS"
	REGISTRY_AUTH_FILE=$BATS_TEST_TMPDIR/auth.json run --separate-stderr "$GPURUN" pull "docker://$B/gpurun/test"
	assert_failure 125
	[[ "$stderr" == *"asks for credentials and none were found"* ]] || fail "$stderr"
	# A namespace entry is more specific than the registry's.
	printf '{"auths": {"%s": {"auth": "%s"}, "%s/gpurun": {"auth": "%s"}}}\n' \
		"$B" "$(printf '%s:wrong' "$REG_USER" | base64 -w0)" \
		"$B" "$(printf '%s:%s' "$REG_USER" "$REG_PASS" | base64 -w0)" >"$BATS_TEST_TMPDIR/auth.json"
	REGISTRY_AUTH_FILE=$BATS_TEST_TMPDIR/auth.json run "$GPURUN" pull "docker://$B/gpurun/test"
	assert_success
	# A damaged auth file is named.
	echo '{"auths": ' >"$BATS_TEST_TMPDIR/auth.json"
	REGISTRY_AUTH_FILE=$BATS_TEST_TMPDIR/auth.json run --separate-stderr "$GPURUN" pull "docker://$B/gpurun/test"
	assert_failure 125
	assert_equal "$stderr" "gpurun: registry credentials $BATS_TEST_TMPDIR/auth.json: invalid JSON"
}

@test "wrong credentials are a clear one-line error, for basic and for token auth" {
	auth_file "$BATS_TEST_TMPDIR/auth.json" "$B" "$REG_USER" wrong
	export REGISTRY_AUTH_FILE=$BATS_TEST_TMPDIR/auth.json
	run --separate-stderr "$GPURUN" pull "docker://$B/gpurun/test"
	assert_failure 125
	assert_equal "$stderr" "gpurun: image docker://$B/gpurun/test:latest: manifest: access denied: authentication required
hint: the credentials found for $B were refused; check them (podman login $B)"
	auth_file "$BATS_TEST_TMPDIR/auth.json" "$T" "$REG_USER" wrong
	run --separate-stderr "$GPURUN" pull "docker://$T/private/test"
	assert_failure 125
	assert_equal "$stderr" "gpurun: image docker://$T/private/test:latest: the token service refused the credentials
hint: the credentials found for $T were refused; check them (podman login $T)"
	assert_nothing_cached
	# With the right ones, the same pull succeeds.
	auth_file "$BATS_TEST_TMPDIR/auth.json" "$T" "$REG_USER" "$REG_PASS"
	run "$GPURUN" --gpus void "docker://$T/private/test" 'echo private-ok'
	assert_success
	assert_output private-ok
}

@test "a private repository needs credentials: anonymous access is refused clearly" {
	run --separate-stderr "$GPURUN" pull "docker://$T/private/test"
	assert_failure 125
	assert_equal "$stderr" "gpurun: image docker://$T/private/test:latest: manifest: access denied: authentication required
hint: log in first (podman login $T or docker login), or set REGISTRY_AUTH_FILE"
}

@test "credentials never appear in messages, --verbose or --dry-run output" {
	local b64 out=$BATS_TEST_TMPDIR/all-output
	b64=$(printf '%s:%s' "$REG_USER" "$REG_PASS" | base64 -w0)
	auth_file "$BATS_TEST_TMPDIR/auth.json" "$T" "$REG_USER" "$REG_PASS"
	export REGISTRY_AUTH_FILE=$BATS_TEST_TMPDIR/auth.json
	{
		"$GPURUN" --verbose --dry-run --gpus void "docker://$T/private/test" true
		"$GPURUN" --verbose --gpus void "docker://$T/private/test" true
		"$GPURUN" pull --verbose "docker://$T/private/test:nope"
		auth_file "$BATS_TEST_TMPDIR/auth.json" "$B" "$REG_USER" "$REG_PASS"
		"$GPURUN" pull --verbose "docker://$B/gpurun/test"
		"$GPURUN" --verbose --dry-run --gpus void "docker://$B/gpurun/test" true
		auth_file "$BATS_TEST_TMPDIR/auth.json" "$B" "$REG_USER" "$REG_PASS-wrong"
		"$GPURUN" pull --verbose "docker://$B/gpurun/test"
		"$GPURUN" cache ls
		"$GPURUN" pull "docker://$REG_USER:$REG_PASS@$B/gpurun/test"
	} >"$out" 2>&1 || true
	grep -q "fetched blob" "$out" || fail "the runs did not get far: $(cat "$out")"
	run grep -c -e "$REG_PASS" -e "$b64" -e "Authorization" -e "Bearer" "$out"
	assert_output 0
}

@test "a registry with an unknown certificate is refused unless it is named insecure" {
	export CURL_CA_BUNDLE=/etc/ssl/certs/ca-certificates.crt SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt
	run --separate-stderr "$GPURUN" pull "docker://$T/gpurun/test"
	assert_failure 125
	assert_equal "$stderr" "gpurun: image docker://$T/gpurun/test:latest: manifest: SSL peer certificate or SSH remote key was not OK
hint: TLS with $T failed: for a registry behind a private CA, set CURL_CA_BUNDLE (or SSL_CERT_FILE) to the CA's PEM file; to skip verification for a host you trust, use --tls-verify=false"
	assert_nothing_cached
	run "$GPURUN" --tls-verify=false --gpus void "docker://$T/gpurun/test" 'echo insecure-ok'
	assert_success
	assert_output insecure-ok
	rm -rf "$GPURUN_CACHE"
	GPURUN_INSECURE_REGISTRIES="example.org,$T" run "$GPURUN" pull "docker://$T/gpurun/test"
	assert_success
	run --separate-stderr "$GPURUN" pull --tls-verify=maybe "docker://$T/gpurun/test"
	assert_failure 125
	assert_equal "$stderr" "gpurun: --tls-verify: invalid value 'maybe' (expected true or false)"
}

@test "a plain-HTTP registry on a loopback address is reached without being named insecure, as docker does" {
	run --separate-stderr "$GPURUN" --verbose --gpus void "docker://$P/gpurun/test" "$LAYERS_CHECK"
	assert_layers_applied
	assert_stderr_partial "gpurun: docker://$P/gpurun/test:latest: the registry API at https://$P/v2/gpurun/test (a loopback address: plain HTTP allowed when TLS is not offered)"
}

@test "--tls-verify=true keeps TLS even on loopback: the failed handshake is one line at once, not retried" {
	run --separate-stderr "$GPURUN" pull --verbose --tls-verify=true "docker://$P/gpurun/test"
	assert_failure 125
	[[ $stderr != *"trying again"* ]] || fail "retried: $stderr"
	# TLS to a plain-HTTP server fails in the handshake: the hint says how
	# to allow it.
	assert_equal "${stderr_lines[-2]}" "gpurun: image docker://$P/gpurun/test:latest: manifest: SSL connect error"
	[[ "${stderr_lines[-1]}" == "hint: TLS with $P failed: "*"use --tls-verify=false" ]] || fail "$stderr"
	[[ -z "$(ls -A "$GPURUN_CACHE/images" 2>/dev/null)" ]] || fail "the failed pull cached an image"
}

@test "a plain-HTTP registry named insecure is used over plain HTTP" {
	GPURUN_INSECURE_REGISTRIES=$P run --separate-stderr "$GPURUN" pull --verbose "docker://$P/gpurun/test"
	assert_success
	assert_stderr_partial "plain HTTP allowed"
	run "$GPURUN" --gpus void "docker://$P/gpurun/test" "$LAYERS_CHECK"
	assert_layers_applied
}

@test "a proxy variable is used as curl uses it, and no_proxy bypasses it" {
	export https_proxy=http://127.0.0.1:9 GPURUN_PULL_RETRIES=0
	run --separate-stderr "$GPURUN" pull "docker://$T/gpurun/test"
	assert_failure 125
	assert_equal "$stderr" "gpurun: image docker://$T/gpurun/test:latest: manifest: Couldn't connect to server"
	no_proxy=127.0.0.1 run "$GPURUN" pull "docker://$T/gpurun/test"
	assert_success
}

@test "a blob cut off in the middle resumes with a Range request" {
	cut_proxy_start T once 400000
	run --separate-stderr "$GPURUN" pull --verbose "docker://$PROXY_HOST/gpurun/test"
	assert_success
	[[ "$stderr" == *"; trying again from where it stopped"* ]] || fail "$stderr"
	[[ "$stderr" != *"ignored the range"* ]] || fail "$stderr"
	run "$GPURUN" --gpus void "docker://$PROXY_HOST/gpurun/test" "$LAYERS_CHECK"
	assert_layers_applied
}

@test "a layer is unpacked while its blob is still arriving" {
	export PROXY_RELEASE=$BATS_TEST_TMPDIR/release
	cut_proxy_start T hold 700000
	"$GPURUN" pull --quiet "docker://$PROXY_HOST/gpurun/test" 3>&- &
	local pid=$! i seen=
	# The blob is held half-way: files of the layer appear all the same.
	for ((i = 0; i < 600; i++)); do
		# find fails when the directory is not there yet or vanishes under it.
		seen=$(find "$GPURUN_CACHE/tmp" -path '*/layer.*' -type f -print -quit 2>/dev/null || true)
		[[ -n "$seen" ]] && break
		sleep 0.1
	done
	touch "$PROXY_RELEASE"
	wait "$pid" || fail "the pull failed once released"
	[[ -n "$seen" ]] || fail "nothing was unpacked while the blob was held"
	run "$GPURUN" --gpus void "docker://$PROXY_HOST/gpurun/test" "$LAYERS_CHECK"
	assert_layers_applied
}

@test "a registry that stops in the middle of a blob: one line, nothing cached, a later pull succeeds" {
	cut_proxy_start T stop 400000
	local port=${PROXY_HOST##*:}
	GPURUN_PULL_RETRIES=1 run --separate-stderr "$GPURUN" pull "docker://$PROXY_HOST/gpurun/test"
	assert_failure 125
	# The class, not libcurl's wording: a connection failure, retried until
	# the retries ran out (the proxy is gone, or going while it is asked).
	[[ "$stderr" =~ ^"gpurun: image docker://$PROXY_HOST/gpurun/test:latest: blob sha256:"[0-9a-f]{64}": "[^$'\n']+" (after retries)"$ ]] || fail "$stderr"
	assert_nothing_cached
	wait "$PROXY_PID" 2>/dev/null || true
	cut_proxy_start T once 999999999999 "$port"
	run "$GPURUN" --gpus void "docker://$PROXY_HOST/gpurun/test" "$LAYERS_CHECK"
	assert_layers_applied
}

@test "a blob corrupted on the server is named and discarded; after repair the pull succeeds" {
	local blob hex
	blob=$(big_blob B)
	hex=$(basename "$(dirname "$blob")")
	cp "$blob" "$BATS_TEST_TMPDIR/blob.orig"
	RESTORE_BLOB=$blob
	printf 'CORRUPTED' | dd of="$blob" bs=1 seek=100000 conv=notrunc status=none
	auth_file "$BATS_TEST_TMPDIR/auth.json" "$B" "$REG_USER" "$REG_PASS"
	export REGISTRY_AUTH_FILE=$BATS_TEST_TMPDIR/auth.json
	run --separate-stderr "$GPURUN" --gpus void "docker://$B/gpurun/test" true
	assert_failure 125
	assert_equal "$stderr" "gpurun: image docker://$B/gpurun/test:latest: blob sha256:$hex: content does not match its digest"
	assert_nothing_cached
	cp "$BATS_TEST_TMPDIR/blob.orig" "$blob"
	run "$GPURUN" --gpus void "docker://$B/gpurun/test" "$LAYERS_CHECK"
	assert_layers_applied
}

@test "a config far above the size cap is refused before it is read; the fixed tag then pulls" {
	local big=$BATS_TEST_TMPDIR/config.json man=$BATS_TEST_TMPDIR/manifest.json digest
	"$REG_PY" -c 'import json,sys; json.dump({"architecture": "amd64", "os": "linux",
		"rootfs": {"type": "layers", "diff_ids": []}, "pad": "x" * (16 << 20)}, open(sys.argv[1], "w"))' "$big"
	digest=$(registry_put_blob T gpurun/huge "$big")
	printf '{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{"mediaType":"application/vnd.oci.image.config.v1+json","digest":"%s","size":%s},"layers":[]}' \
		"$digest" "$(stat -c %s "$big")" >"$man"
	registry_put_manifest T gpurun/huge latest "$man"
	run --separate-stderr "$GPURUN" pull "docker://$T/gpurun/huge"
	assert_failure 125
	assert_equal "$stderr" "gpurun: image docker://$T/gpurun/huge:latest: config is larger than the cap on JSON documents (4 MiB)"
	assert_nothing_cached
	registry_push T "oci:$(oci_fixture oci):latest" gpurun/huge:latest
	run "$GPURUN" pull "docker://$T/gpurun/huge"
	assert_success
}

@test "a manifest far above the size cap is refused before it is read" {
	# docker-registry itself will not serve a manifest above 4 MiB: a
	# stand-in that does (tests/lib/huge_manifest_server.py).
	huge_manifest_server_start $((64 << 20))
	run --separate-stderr "$GPURUN" pull "docker://$HUGE_HOST/gpurun/huge"
	assert_failure 125
	assert_equal "$stderr" "gpurun: image docker://$HUGE_HOST/gpurun/huge:latest: manifest is larger than the cap on JSON documents (4 MiB)"
	assert_nothing_cached
}

@test "an error answer that never ends is cut off at 64 KiB: one line naming the registry, nothing cached" {
	hostile_registry_start errbody
	run --separate-stderr timeout -s KILL 30 "$GPURUN" pull "docker://$HOSTILE_HOST/gpurun/test"
	assert_failure 125
	assert_equal "$stderr" "gpurun: image docker://$HOSTILE_HOST/gpurun/test:latest: manifest: registry $HOSTILE_HOST sent an error answer (HTTP 500) of more than 64 KiB"
	assert_nothing_cached
}

@test "an error answer that trickles forever ends once the answer time (GPURUN_PULL_ANSWER_TIMEOUT) is spent" {
	hostile_registry_start trickle
	GPURUN_PULL_ANSWER_TIMEOUT=2 run --separate-stderr timeout -s KILL 30 "$GPURUN" pull "docker://$HOSTILE_HOST/gpurun/test"
	assert_failure 125
	assert_equal "$stderr" "gpurun: image docker://$HOSTILE_HOST/gpurun/test:latest: manifest: registry $HOSTILE_HOST did not answer within 2 s"
	assert_nothing_cached
}

@test "headers that never end are cut off at 64 KiB: one line naming the registry, nothing cached" {
	hostile_registry_start headers
	run --separate-stderr timeout -s KILL 30 "$GPURUN" pull "docker://$HOSTILE_HOST/gpurun/test"
	assert_failure 125
	assert_equal "$stderr" "gpurun: image docker://$HOSTILE_HOST/gpurun/test:latest: manifest: registry $HOSTILE_HOST sent more than 64 KiB of headers"
	assert_nothing_cached
}

@test "a registry that stops sending ends the pull once no byte came for GPURUN_PULL_STALL_TIMEOUT seconds" {
	hostile_registry_start stall
	GPURUN_PULL_STALL_TIMEOUT=2 GPURUN_PULL_RETRIES=1 run --separate-stderr timeout -s KILL 30 \
		"$GPURUN" pull "docker://$HOSTILE_HOST/gpurun/test"
	assert_failure 125
	assert_equal "$stderr" "gpurun: image docker://$HOSTILE_HOST/gpurun/test:latest: manifest: no data from registry $HOSTILE_HOST for 2 s (after retries)"
	assert_nothing_cached
}

@test "a blob that trickles ends the pull once its time (the answer time plus 1 s per 32 KiB) is spent" {
	hostile_registry_start blob
	GPURUN_PULL_ANSWER_TIMEOUT=2 run --separate-stderr timeout -s KILL 30 \
		"$GPURUN" pull "docker://$HOSTILE_HOST/gpurun/test"
	assert_failure 125
	[[ "$stderr" =~ ^"gpurun: image docker://$HOSTILE_HOST/gpurun/test:latest: blob sha256:"[0-9a-f]{64}": registry $HOSTILE_HOST did not send it within 2 s (2 s plus 1 s per 32 KiB of its size)"$ ]] ||
		fail "$stderr"
	assert_nothing_cached
}

@test "credentials go to a plain-HTTP token service only when its own host is named insecure" {
	local canary=$BATS_TEST_TMPDIR/token-service-got-credentials line
	hostile_registry_start realm "$canary"
	auth_file "$BATS_TEST_TMPDIR/auth.json" "$HOSTILE_HOST" "$REG_USER" "$REG_PASS"
	export REGISTRY_AUTH_FILE=$BATS_TEST_TMPDIR/auth.json GPURUN_PULL_RETRIES=0
	line="gpurun: image docker://$HOSTILE_HOST/gpurun/test:latest: the token service http://$HOSTILE_TOKEN_HOST/token is plain HTTP and $HOSTILE_TOKEN_HOST was not named insecure: the credentials are not sent to it"
	GPURUN_INSECURE_REGISTRIES=$HOSTILE_HOST run --separate-stderr "$GPURUN" pull "docker://$HOSTILE_HOST/gpurun/test"
	assert_failure 125
	assert_equal "$stderr" "$line"
	assert_file_not_exists "$canary"
	# --tls-verify=false names the registry, not the host its challenge points at.
	run --separate-stderr "$GPURUN" pull --tls-verify=false "docker://$HOSTILE_HOST/gpurun/test"
	assert_failure 125
	assert_equal "$stderr" "$line"
	assert_file_not_exists "$canary"
	# Named itself, the token service gets them (the canary works).
	GPURUN_INSECURE_REGISTRIES="$HOSTILE_HOST,$HOSTILE_TOKEN_HOST" run "$GPURUN" pull "docker://$HOSTILE_HOST/gpurun/test"
	assert_failure 125
	assert_file_exists "$canary"
}

@test "credentials go to a token service only over verified TLS unless its own host is named insecure" {
	local token_host
	token_host=127.0.0.1:$(cat "$REG_T_DIR/token.port")
	export CURL_CA_BUNDLE=/etc/ssl/certs/ca-certificates.crt SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt
	auth_file "$BATS_TEST_TMPDIR/auth.json" "$T" "$REG_USER" "$REG_PASS"
	export REGISTRY_AUTH_FILE=$BATS_TEST_TMPDIR/auth.json GPURUN_PULL_RETRIES=0
	run --separate-stderr "$GPURUN" pull --tls-verify=false "docker://$T/private/test"
	assert_failure 125
	assert_equal "$stderr" "gpurun: image docker://$T/private/test:latest: token service $token_host: SSL peer certificate or SSH remote key was not OK
hint: TLS with $token_host failed: for a registry behind a private CA, set CURL_CA_BUNDLE (or SSL_CERT_FILE) to the CA's PEM file; to skip verification for a host you trust, name it in GPURUN_INSECURE_REGISTRIES"
	assert_nothing_cached
	GPURUN_INSECURE_REGISTRIES="$T,$token_host" run "$GPURUN" --gpus void "docker://$T/private/test" 'echo private-ok'
	assert_success
	assert_output private-ok
}

@test "cache ls shows the reference an entry came from" {
	run "$GPURUN" pull "docker://$T/gpurun/one:1"
	assert_success
	run "$GPURUN" cache ls
	assert_success
	assert_line --regexp "^[0-9a-f]{12} +[0-9.]+[kM]?B +[0-9-]+ [0-9:]+ +docker://$T/gpurun/one:1\$"
	# ... and `cache rm` takes it away.
	run "$GPURUN" cache rm "$(awk 'NR == 2 {print $1}' <<<"$output")"
	assert_success
	run "$GPURUN" cache ls
	assert_output "IMAGE ID       SIZE      LAST USE         SOURCE"
}

@test "cache ls lists every reference that led to one image" {
	run "$GPURUN" pull "docker://$T/gpurun/test"
	assert_success
	GPURUN_INSECURE_REGISTRIES=$P run "$GPURUN" pull "docker://$P/gpurun/test"
	assert_success
	run "$GPURUN" cache ls --json
	assert_success
	python3 -c '
import json, sys
[img] = json.loads(sys.stdin.read())["images"]
assert [s["source"] for s in img["sources"]] == sys.argv[1:], img
assert img["source"] == sys.argv[2], img' "docker://$T/gpurun/test:latest" "docker://$P/gpurun/test:latest" <<<"$output"
}

@test "a terminal shows the progress of each layer and of the whole; --quiet and a pipe show none" {
	command -v script >/dev/null || skip "script (util-linux) is missing"
	run script -qec "'$GPURUN' pull docker://$T/gpurun/test" /dev/null
	assert_success
	[[ "$output" == *"gpurun: pulling docker://$T/gpurun/test:latest: "*" MB, "*" MB/s"* ]] || fail "$output"
	[[ "$output" == *"  sha256:"*" / "*" MB "*" MB/s"* ]] || fail "$output"
	rm -rf "$GPURUN_CACHE"
	run script -qec "'$GPURUN' pull --quiet docker://$T/gpurun/test" /dev/null
	assert_success
	assert_output ""
}

@test "--dry-run fetches only the manifest and config and writes nothing to the cache" {
	host_snapshot "$BATS_TEST_TMPDIR/before"
	run "$GPURUN" --dry-run --gpus void "docker://$T/gpurun/test" true
	assert_success
	assert_line "L=$GPURUN_CACHE/layers"
	assert_file_not_exists "$GPURUN_CACHE"
	assert_host_unchanged "$BATS_TEST_TMPDIR/before"
}

@test "--no-cache and --platform are refused where they cannot apply" {
	run --separate-stderr "$GPURUN" --no-cache "docker://$T/gpurun/test" true
	assert_failure 125
	assert_equal "$stderr" "gpurun: image docker://$T/gpurun/test: --no-cache cannot be used with a registry image"
	run --separate-stderr "$GPURUN" --platform linux/amd64 "$(oci_fixture oci)" true
	assert_failure 125
	assert_equal "$stderr" "gpurun: --platform is for registry images (docker://...)"
}
