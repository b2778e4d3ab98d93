#!/usr/bin/env bash
# Provisions etcd, kube-apiserver and kube-controller-manager v1.20.2 from Debian's archive only
# (see shared/design/local-control-plane.md). Idempotent: exits at once when the cached binaries
# exist. Prints timestamped progress so a person sees the ~10 minute first build is moving.
#
# Usage: provision.sh CACHE_DIR    (binaries land in CACHE_DIR/bin)
set -euo pipefail

CACHE=${1:?usage: provision.sh CACHE_DIR}
K8S_VERSION=1.20.2
BIN=$CACHE/bin
START=$(date +%s)

log() { printf '[cluster %4ss] %s\n' "$(( $(date +%s) - START ))" "$*" >&2; }
die() { printf '[cluster] PROVISIONING FAILED: %s\n' "$*" >&2; exit 1; }

have_all() {
  [ -x "$BIN/kube-apiserver" ] && [ -x "$BIN/kube-controller-manager" ] && command -v etcd >/dev/null 2>&1
}
if have_all; then exit 0; fi

mkdir -p "$CACHE" 2>/dev/null || die "cannot create cache directory $CACHE (set STOWAGE_CACHE_DIR to a writable path)"
[ -w "$CACHE" ] || die "cache directory $CACHE is not writable (set STOWAGE_CACHE_DIR to a writable path)"
mkdir -p "$BIN"

# Serialise concurrent provisioning (two test runs, or a demo and a test run).
exec 9>"$CACHE/.provision.lock"
flock 9
if have_all; then exit 0; fi

as_root() {
  if [ "$(id -u)" = 0 ]; then "$@";
  elif command -v sudo >/dev/null 2>&1; then sudo -n "$@" || die "need root to run: $*";
  else die "need root to run: $* (install the packages by hand, then re-run)"; fi
}

# Runs a long command in the background and prints a heartbeat every 30 s.
with_heartbeat() {
  local what=$1; shift
  local t0; t0=$(date +%s)
  "$@" &
  local pid=$!
  while kill -0 "$pid" 2>/dev/null; do
    for _ in $(seq 1 30); do sleep 1; kill -0 "$pid" 2>/dev/null || break; done
    kill -0 "$pid" 2>/dev/null && log "  still $what ($(( $(date +%s) - t0 ))s so far)"
  done
  wait "$pid" || die "$what failed (see the output above)"
}

PKGS="etcd-server golang-go golang-github-modern-go-reflect2-dev openssl"
missing=""
for p in $PKGS; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing="$missing $p"
done
if [ -n "$missing" ]; then
  log "installing Debian packages:$missing"
  as_root apt-get update -qq || die "apt-get update failed"
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $missing >/dev/null \
    || die "apt-get install$missing failed"
fi
command -v etcd >/dev/null || die "etcd is not on PATH after installing etcd-server"
GO=$(command -v go || echo /usr/lib/go/bin/go)
[ -x "$GO" ] || die "go not found after installing golang-go"

if [ -x "$BIN/kube-apiserver" ] && [ -x "$BIN/kube-controller-manager" ]; then exit 0; fi

SRC=$CACHE/src
TREE=$SRC/kubernetes-$K8S_VERSION
if [ ! -f "$TREE/.stowage-prepared" ]; then
  mkdir -p "$SRC/lists/partial"
  echo "deb-src http://deb.debian.org/debian bookworm main" > "$SRC/src.list"
  APTOPTS=(-o "Dir::Etc::SourceList=$SRC/src.list" -o "Dir::Etc::SourceParts=/dev/null" -o "Dir::State::Lists=$SRC/lists")
  if ! ls "$SRC"/kubernetes_*.orig.tar.gz >/dev/null 2>&1; then
    log "downloading the kubernetes source package from Debian (34 MB)"
    apt-get "${APTOPTS[@]}" update -qq || die "apt-get update of the private deb-src list failed"
    (cd "$SRC" && apt-get "${APTOPTS[@]}" source --download-only kubernetes >/dev/null) \
      || die "apt-get source --download-only kubernetes failed"
  fi
  log "unpacking the source tree"
  rm -rf "$TREE"
  tar -xzf "$(ls "$SRC"/kubernetes_*.orig.tar.gz | head -1)" -C "$SRC" || die "cannot untar the kubernetes source"
  [ -d "$TREE" ] || die "expected $TREE after untar"
  # The vendored reflect2 1.0.1 crashes under Go >= 1.18; Debian ships 1.0.2.
  rm -rf "$TREE/vendor/github.com/modern-go/reflect2"
  cp -r /usr/share/gocode/src/github.com/modern-go/reflect2 "$TREE/vendor/github.com/modern-go/reflect2"
  touch "$TREE/.stowage-prepared"
fi

export GOPATH=$CACHE/gopath GO111MODULE=off GOCACHE=$CACHE/gocache GOFLAGS= CGO_ENABLED=0
mkdir -p "$GOPATH/src/k8s.io"
ln -sfn "$TREE" "$GOPATH/src/k8s.io/kubernetes"
cd "$GOPATH/src/k8s.io/kubernetes"

OPENAPI=pkg/generated/openapi/zz_generated.openapi.go
if [ ! -s "$OPENAPI" ]; then
  log "building openapi-gen"
  with_heartbeat "building openapi-gen" "$GO" build -o "$CACHE/openapi-gen" ./vendor/k8s.io/kube-openapi/cmd/openapi-gen
  dirs=$( { grep -rl --include='*.go' '+k8s:openapi-gen=' pkg cmd; grep -Rl --include='*.go' '+k8s:openapi-gen=' vendor; } \
    | xargs -n1 dirname | sort -u \
    | grep -v -e '^vendor/k8s.io/code-generator/' -e '^vendor/k8s.io/sample-apiserver/' \
    | sed 's#^#k8s.io/kubernetes/#' | paste -sd, -)
  log "generating OpenAPI definitions ($(echo "$dirs" | tr ',' '\n' | wc -l) packages)"
  with_heartbeat "generating OpenAPI definitions" "$CACHE/openapi-gen" -i "$dirs" -p k8s.io/kubernetes/pkg/generated/openapi \
    -O zz_generated.openapi -h vendor/k8s.io/code-generator/hack/boilerplate.go.txt -r "$CACHE/violations.report"
  [ -s "$OPENAPI" ] || die "openapi-gen produced no $OPENAPI"
fi

# /version reads client-go's copy of the version variables, the binaries' --version reads component-base's.
LDFLAGS="-s -w"
for pkg in k8s.io/kubernetes/vendor/k8s.io/component-base/version k8s.io/kubernetes/vendor/k8s.io/client-go/pkg/version; do
  LDFLAGS="$LDFLAGS -X $pkg.gitVersion=v$K8S_VERSION -X $pkg.gitMajor=1 -X $pkg.gitMinor=20 -X $pkg.gitTreeState=archive"
done
for cmd in kube-apiserver kube-controller-manager; do
  if [ ! -x "$BIN/$cmd" ]; then
    log "building $cmd (kube-apiserver takes ~7 minutes on 2 cores the first time)"
    with_heartbeat "building $cmd" "$GO" build -ldflags "$LDFLAGS" -o "$BIN/$cmd.tmp" "./cmd/$cmd"
    mv "$BIN/$cmd.tmp" "$BIN/$cmd"
  fi
done
log "control plane binaries ready in $BIN"
