#!/usr/bin/env bash
# Builds (once, cached) and runs stowage-helm, a `helm template` work-alike for machines without a
# helm binary (see scripts/helm/README.md). The Go sources in scripts/helm/render are compiled with
# Debian's golang packages in GOPATH mode; missing packages are installed with apt-get.
#
# Usage: scripts/helm/render.sh template [RELEASE] CHART_DIR [helm template flags]
#        scripts/helm/render.sh --build-only     (print the binary's path)
# The binary is cached under $STOWAGE_CACHE_DIR (else $XDG_CACHE_HOME/stowage, else
# ~/.cache/stowage)/helm-render/<hash of the sources>/, so editing the sources rebuilds it.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
SRC=$HERE/render
BASE=${STOWAGE_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/stowage}
START=$(date +%s)

log() { printf '[helm-render %3ss] %s\n' "$(( $(date +%s) - START ))" "$*" >&2; }
die() { printf '[helm-render] FAILED: %s\n' "$*" >&2; exit 1; }

HASH=$(cd "$SRC" && cat $(ls *.go | sort) | sha256sum | cut -c1-16)
CACHE=$BASE/helm-render/$HASH
BIN=$CACHE/stowage-helm

if [ ! -x "$BIN" ]; then
  mkdir -p "$CACHE" 2>/dev/null || die "cannot create cache directory $CACHE (set STOWAGE_CACHE_DIR to a writable path)"
  # Serialise concurrent builds (parallel test files).
  exec 9>"$CACHE/.build.lock"
  flock 9
  if [ ! -x "$BIN" ]; then
    PKGS="golang-go golang-github-masterminds-sprig-dev golang-k8s-sigs-yaml-dev golang-github-burntsushi-toml-dev golang-github-gobwas-glob-dev"
    missing=""
    for p in $PKGS; do
      dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing="$missing $p"
    done
    if [ -n "$missing" ]; then
      as_root() {
        if [ "$(id -u)" = 0 ]; then "$@";
        elif command -v sudo >/dev/null 2>&1; then sudo -n "$@" || die "need root to run: $*";
        else die "need root to install:$missing (install them by hand, then re-run)"; fi
      }
      log "installing Debian packages:$missing"
      as_root apt-get update -qq || die "apt-get update failed"
      as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $missing >/dev/null \
        || die "apt-get install$missing failed"
    fi
    GO=$(command -v go || echo /usr/lib/go/bin/go)
    [ -x "$GO" ] || die "go not found after installing golang-go"
    log "building stowage-helm from $SRC"
    # GOPATH mode: Debian's Go libraries live in /usr/share/gocode, unversioned (sprig v3 at .../sprig).
    (cd "$SRC" && GOPATH=$CACHE/gopath:/usr/share/gocode GO111MODULE=off GOFLAGS= CGO_ENABLED=0 \
      GOCACHE=$BASE/helm-render/gocache "$GO" build -o "$BIN.tmp" .) || die "go build failed (see above)"
    mv "$BIN.tmp" "$BIN"
    log "built $BIN"
    # Builds of older sources are of no further use.
    find "$BASE/helm-render" -mindepth 1 -maxdepth 1 -type d ! -name gocache ! -name "$HASH" -exec rm -rf {} +
  fi
  exec 9>&-
fi

if [ "${1:-}" = "--build-only" ]; then
  echo "$BIN"
  exit 0
fi
exec "$BIN" "$@"
