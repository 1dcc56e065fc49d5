# tests/lib/registry.bash — a real registry for the pull tests: Debian's
# docker-registry (the CNCF distribution registry) on 127.0.0.1, a free port,
# behind a throw-away TLS certificate, with htpasswd basic auth or with token
# auth (token_issuer.py beside this file), populated with skopeo from the OCI
# fixtures of oci.bash.  Whoever runs the suite (root or gpurun-test) runs
# the servers; registry_stop_all (teardown_file) ends them.
#
#   registry_start NAME MODE
#       MODE htpasswd, token, or none (the benchmark).  Sets, for NAME (a shell word):
#         REG_<NAME>_HOST     127.0.0.1:PORT
#         REG_<NAME>_DIR      its directory (config, certificate, storage)
#       and, once: REG_CA (the certificate, which is also the CA: pass it as
#       SSL_CERT_FILE), REG_USER, REG_PASS.
#   registry_push NAME SRC DEST [SKOPEO OPTION...]
#       skopeo copy SRC (e.g. oci:DIR:latest) to docker://HOST/DEST.
#   registry_blob NAME HEX     the file holding a blob in NAME's storage.
#   registry_put_manifest NAME REPO TAG FILE
#       a manifest written straight into the storage (what the API would
#       refuse: one far above any size cap), tagged REPO:TAG.
#   registry_put_blob NAME REPO FILE   a blob straight into the storage.
#   huge_manifest_server_start SIZE
#       huge_manifest_server.py (the one fault the registry cannot serve).
#   hostile_registry_start MODE [CANARY]
#       hostile_registry.py (answers that never end; a token realm elsewhere
#       in clear); sets HOSTILE_HOST, PROXY_PID, and for MODE realm
#       HOSTILE_TOKEN_HOST.
#   cut_proxy_start NAME MODE CUT [PORT]
#       cut_proxy.py in front of NAME; sets PROXY_HOST, PROXY_PID (MODE hold:
#       released when the file $PROXY_RELEASE exists).
#   auth_file FILE HOST USER PASS    a podman/docker auth file.
#
# Needs docker-registry, skopeo, openssl, htpasswd (apache2-utils),
# python3-jwt and python3-cryptography.

# Without a fork: a suite sources this again for every test.
REGISTRY_LIB_DIR=${BASH_SOURCE[0]%/*}
[[ $REGISTRY_LIB_DIR == "${BASH_SOURCE[0]}" ]] && REGISTRY_LIB_DIR=$PWD
[[ $REGISTRY_LIB_DIR == /* ]] || REGISTRY_LIB_DIR=$PWD/$REGISTRY_LIB_DIR
REGISTRY_PIDS=()
# Debian's python3, which has python3-jwt (not whatever python3 PATH finds first).
REG_PY=/usr/bin/python3
[[ -x $REG_PY ]] || REG_PY=python3

registry_require_tools() {
	local t missing=()
	for t in docker-registry skopeo openssl htpasswd python3; do
		command -v "$t" >/dev/null 2>&1 || missing+=("$t")
	done
	"$REG_PY" -c 'import jwt, cryptography' 2>/dev/null || missing+=(python3-jwt python3-cryptography)
	if [[ ${#missing[@]} -gt 0 ]]; then
		echo "registry.bash: missing ${missing[*]}: apt-get install -y docker-registry skopeo openssl apache2-utils python3-jwt python3-cryptography" >&2
		return 1
	fi
}

free_port() {
	"$REG_PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# wait_for CMD...: up to 30 s.
wait_for() {
	local i
	for ((i = 0; i < 300; i++)); do
		"$@" >/dev/null 2>&1 && return 0
		sleep 0.1
	done
	echo "registry.bash: timed out waiting for: $*" >&2
	return 1
}

registry_pki() {
	local dir=$1
	[[ -n "${REG_CA:-}" ]] && return 0
	mkdir -p "$dir"
	openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=127.0.0.1 \
		-addext "subjectAltName=IP:127.0.0.1,DNS:localhost" \
		-keyout "$dir/tls.key" -out "$dir/tls.crt" 2>/dev/null || return 1
	# The token signing key, with its certificate: the registry's rootcertbundle.
	openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=gpurun-test-token \
		-keyout "$dir/sign.key" -out "$dir/sign.crt" 2>/dev/null || return 1
	REG_CA=$dir/tls.crt
	REG_PKI=$dir
	REG_USER=gpurun
	# A string that must never appear in any output of gpurun.
	REG_PASS=Pa55-never-print-me-7Q
	export REG_CA REG_PKI REG_USER REG_PASS
}

registry_start() {
	local name=$1 mode=$2 dir port
	dir=${REGISTRY_WORK:-$BATS_FILE_TMPDIR}/registry-$name
	registry_pki "${REGISTRY_WORK:-$BATS_FILE_TMPDIR}/pki" || return 1
	mkdir -p "$dir/storage"
	port=$(free_port)
	{
		echo "version: 0.1"
		echo "log: {level: error, accesslog: {disabled: true}}"
		echo "storage: {filesystem: {rootdirectory: $dir/storage}, delete: {enabled: true}}"
		if [[ $mode == plain ]]; then
			echo "http: {addr: 127.0.0.1:$port, secret: gpurun-test}"
		else
			echo "http: {addr: 127.0.0.1:$port, secret: gpurun-test, tls: {certificate: $REG_PKI/tls.crt, key: $REG_PKI/tls.key}}"
		fi
	} >"$dir/config.yml"
	case $mode in
	htpasswd)
		htpasswd -Bbn "$REG_USER" "$REG_PASS" >"$dir/htpasswd" 2>/dev/null || return 1
		echo "auth: {htpasswd: {realm: gpurun-test, path: $dir/htpasswd}}" >>"$dir/config.yml"
		;;
	token)
		"$REG_PY" "$REGISTRY_LIB_DIR/token_issuer.py" --port-file "$dir/token.port" \
			--tls-cert "$REG_PKI/tls.crt" --tls-key "$REG_PKI/tls.key" --sign-key "$REG_PKI/sign.key" \
			--service gpurun-test-registry --issuer gpurun-test-issuer \
			--user "$REG_USER" --password "$REG_PASS" </dev/null >"$dir/token.log" 2>&1 3>&- &
		REGISTRY_PIDS+=($!)
		wait_for test -s "$dir/token.port" || return 1
		echo "auth: {token: {realm: \"https://127.0.0.1:$(cat "$dir/token.port")/token\", service: gpurun-test-registry, issuer: gpurun-test-issuer, rootcertbundle: $REG_PKI/sign.crt}}" >>"$dir/config.yml"
		;;
	none | plain) ;; # plain: no TLS at all, no auth
	*) echo "registry_start: mode $mode?" >&2; return 1 ;;
	esac
	docker-registry serve "$dir/config.yml" </dev/null >"$dir/registry.log" 2>&1 3>&- &
	REGISTRY_PIDS+=($!)
	echo $! >"$dir/pid"
	local scheme=https
	[[ $mode == plain ]] && scheme=http
	wait_for curl -s -o /dev/null --cacert "$REG_CA" "$scheme://127.0.0.1:$port/v2/" || {
		cat "$dir/registry.log" >&2
		return 1
	}
	printf -v "REG_${name}_HOST" '%s' "127.0.0.1:$port"
	printf -v "REG_${name}_DIR" '%s' "$dir"
	export "REG_${name}_HOST" "REG_${name}_DIR"
}

registry_push() {
	local name=$1 src=$2 dest=$3 host_var="REG_${1}_HOST"
	shift 3
	skopeo --insecure-policy copy -q --dest-tls-verify=false \
		--dest-creds "$REG_USER:$REG_PASS" "$@" "$src" "docker://${!host_var}/$dest" >/dev/null
}

registry_blob() {
	local dir_var="REG_${1}_DIR" hex=$2
	echo "${!dir_var}/storage/docker/registry/v2/blobs/sha256/${hex:0:2}/$hex/data"
}

registry_put_manifest() {
	local name=$1 repo=$2 tag=$3 file=$4 dir_var="REG_${1}_DIR" hex base
	hex=$(sha256sum "$file" | cut -d' ' -f1)
	base=${!dir_var}/storage/docker/registry/v2
	mkdir -p "$base/blobs/sha256/${hex:0:2}/$hex" \
		"$base/repositories/$repo/_manifests/revisions/sha256/$hex" \
		"$base/repositories/$repo/_manifests/tags/$tag/current" \
		"$base/repositories/$repo/_manifests/tags/$tag/index/sha256/$hex"
	cp "$file" "$base/blobs/sha256/${hex:0:2}/$hex/data"
	for l in revisions/sha256/$hex tags/$tag/current tags/$tag/index/sha256/$hex; do
		printf 'sha256:%s' "$hex" >"$base/repositories/$repo/_manifests/$l/link"
	done
}

# registry_put_blob NAME REPO FILE: FILE as a blob of REPO, straight into
# the storage (a config far above any size cap); prints its digest.
registry_put_blob() {
	local repo=$2 file=$3 dir_var="REG_${1}_DIR" hex base
	hex=$(sha256sum "$file" | cut -d' ' -f1)
	base=${!dir_var}/storage/docker/registry/v2
	mkdir -p "$base/blobs/sha256/${hex:0:2}/$hex" "$base/repositories/$repo/_layers/sha256/$hex"
	cp "$file" "$base/blobs/sha256/${hex:0:2}/$hex/data"
	printf 'sha256:%s' "$hex" >"$base/repositories/$repo/_layers/sha256/$hex/link"
	echo "sha256:$hex"
}

# huge_manifest_server_start SIZE: huge_manifest_server.py; sets HUGE_HOST, PROXY_PID.
huge_manifest_server_start() {
	local pf
	pf=$(mktemp -u "$BATS_TEST_TMPDIR/huge.XXXXXX")
	"$REG_PY" "$REGISTRY_LIB_DIR/huge_manifest_server.py" --port-file "$pf" --tls-cert "$REG_PKI/tls.crt" \
		--tls-key "$REG_PKI/tls.key" --size "$1" </dev/null >/dev/null 2>&1 3>&- &
	PROXY_PID=$!
	wait_for test -s "$pf" || return 1
	HUGE_HOST=127.0.0.1:$(cat "$pf")
}

hostile_registry_start() {
	local mode=$1 canary=${2:-/nonexistent} pf ports
	pf=$(mktemp -u "$BATS_TEST_TMPDIR/hostile.XXXXXX")
	"$REG_PY" "$REGISTRY_LIB_DIR/hostile_registry.py" --port-file "$pf" --mode "$mode" \
		--tls-cert "$REG_PKI/tls.crt" --tls-key "$REG_PKI/tls.key" --canary "$canary" \
		</dev/null >/dev/null 2>&1 3>&- &
	PROXY_PID=$!
	wait_for test -s "$pf" || return 1
	read -r -a ports <"$pf" || true # one line without a newline: read says 1
	HOSTILE_HOST=127.0.0.1:${ports[0]}
	HOSTILE_TOKEN_HOST=127.0.0.1:${ports[1]:-}
}

cut_proxy_start() {
	local name=$1 mode=$2 cut=$3 port=${4:-0} host_var="REG_${1}_HOST" pf
	pf=$(mktemp -u "$BATS_TEST_TMPDIR/proxy.XXXXXX")
	"$REG_PY" "$REGISTRY_LIB_DIR/cut_proxy.py" --port-file "$pf" --to "${!host_var##*:}" \
		--cut "$cut" --mode "$mode" --port "$port" --release "${PROXY_RELEASE:-/nonexistent}" \
		</dev/null >/dev/null 2>&1 3>&- &
	PROXY_PID=$!
	REGISTRY_PIDS+=("$PROXY_PID")
	wait_for test -s "$pf" || return 1
	PROXY_HOST=127.0.0.1:$(cat "$pf")
}

auth_file() {
	local file=$1 host=$2 user=$3 pass=$4
	printf '{"auths": {"%s": {"auth": "%s"}}}\n' "$host" "$(printf '%s:%s' "$user" "$pass" | base64 -w0)" >"$file"
}

registry_stop_all() {
	local pid
	for pid in "${REGISTRY_PIDS[@]}"; do
		kill "$pid" 2>/dev/null
	done
	for pid in "${REGISTRY_PIDS[@]}"; do
		wait "$pid" 2>/dev/null
	done
	REGISTRY_PIDS=()
}

# make_multiarch_layout SRC DST: a copy of the OCI layout SRC (one image,
# tag latest) whose tag names an image index of two platforms: linux/amd64
# (the image as it is) and linux/arm64/v8 (the same layers, a config with
# "architecture": "arm64" and GPURUN_ARCH=arm64 in its Env).
make_multiarch_layout() {
	cp -r "$1" "$2" && chmod -R u+w "$2" && "$REG_PY" - "$2" <<'PY'
import hashlib, json, os, sys
d = sys.argv[1]
def blob(data):
    h = hashlib.sha256(data).hexdigest()
    with open(os.path.join(d, "blobs/sha256", h), "wb") as f:
        f.write(data)
    return {"digest": "sha256:" + h, "size": len(data)}
def read(desc):
    with open(os.path.join(d, "blobs/sha256", desc["digest"][7:]), "rb") as f:
        return f.read()
index = json.load(open(os.path.join(d, "index.json")))
mdesc = index["manifests"][0]
manifest = json.loads(read(mdesc))
config = json.loads(read(manifest["config"]))
config["architecture"] = "arm64"
config["variant"] = "v8"
config.setdefault("config", {}).setdefault("Env", []).append("GPURUN_ARCH=arm64")
cdesc = blob(json.dumps(config).encode())
manifest["config"] = dict(manifest["config"], **cdesc)
arm = dict(blob(json.dumps(manifest).encode()), mediaType=mdesc["mediaType"],
           platform={"os": "linux", "architecture": "arm64", "variant": "v8"})
amd = {"mediaType": mdesc["mediaType"], "digest": mdesc["digest"], "size": mdesc["size"],
       "platform": {"os": "linux", "architecture": "amd64"}}
nested = {"schemaVersion": 2, "mediaType": "application/vnd.oci.image.index.v1+json", "manifests": [amd, arm]}
ndesc = dict(blob(json.dumps(nested).encode()), mediaType="application/vnd.oci.image.index.v1+json",
             annotations={"org.opencontainers.image.ref.name": "latest"})
index["manifests"] = [ndesc]
json.dump(index, open(os.path.join(d, "index.json"), "w"))
PY
}

# make_plain_layout SRC DST: a copy of the OCI layout SRC (one image) whose
# layers are stored uncompressed (media type ...layer.v1.tar).
make_plain_layout() {
	cp -r "$1" "$2" && chmod -R u+w "$2" && "$REG_PY" - "$2" <<'PY'
import gzip, hashlib, json, os, sys
d = sys.argv[1]
def path(desc):
    return os.path.join(d, "blobs/sha256", desc["digest"][7:])
def blob(data):
    h = hashlib.sha256(data).hexdigest()
    with open(os.path.join(d, "blobs/sha256", h), "wb") as f:
        f.write(data)
    return {"digest": "sha256:" + h, "size": len(data)}
index = json.load(open(os.path.join(d, "index.json")))
mdesc = index["manifests"][0]
manifest = json.load(open(path(mdesc)))
for layer in manifest["layers"]:
    layer.update(blob(gzip.decompress(open(path(layer), "rb").read())))
    layer["mediaType"] = "application/vnd.oci.image.layer.v1.tar"
mdesc.update(blob(json.dumps(manifest).encode()))
json.dump(index, open(os.path.join(d, "index.json"), "w"))
PY
}
