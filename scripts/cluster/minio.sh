#!/usr/bin/env bash
# Builds the MinIO server (test infrastructure only, never shipped) from the Go module proxy at
# one pinned pseudo-version (MinIO's tags are not semver, so `go list -m github.com/minio/minio@latest`
# names a pseudo-version). Idempotent and flock'd: exits at once when the cached binary exists.
# Prints timestamped progress and a heartbeat so a person sees the first build is moving.
#
# Usage: minio.sh CACHE_ROOT VERSION   (the binary lands in CACHE_ROOT/minio-VERSION/minio)
set -euo pipefail

ROOT=${1:?usage: minio.sh CACHE_ROOT VERSION}
VERSION=${2:?usage: minio.sh CACHE_ROOT VERSION}
DIR=$ROOT/minio-$VERSION
BIN=$DIR/minio
START=$(date +%s)

log() { printf '[minio %s +%4ss] %s\n' "$(date -u +%H:%M:%S)" "$(( $(date +%s) - START ))" "$*" >&2; }
die() { printf '[minio] PROVISIONING FAILED: %s\n' "$*" >&2; exit 1; }

[ -x "$BIN" ] && exit 0

mkdir -p "$DIR" 2>/dev/null || die "cannot create cache directory $DIR (set STOWAGE_CACHE_DIR to a writable path)"
[ -w "$DIR" ] || die "cache directory $DIR is not writable (set STOWAGE_CACHE_DIR to a writable path)"

# Serialise concurrent builds (parallel test runs, or a demo and a test run).
exec 9>"$DIR/.build.lock"
flock 9
[ -x "$BIN" ] && exit 0

# $GO names the go binary; else the first of PATH's go and /usr/local/go/bin/go that is new enough
# (Debian's /usr/bin/go may be an older release).
go_minor() { "$1" env GOVERSION 2>/dev/null | sed -n 's/^go1\.\([0-9]*\).*/\1/p'; }
if [ -z "${GO:-}" ]; then
  for cand in "$(command -v go || true)" /usr/local/go/bin/go; do
    [ -n "$cand" ] && [ -x "$cand" ] && [ "$(go_minor "$cand")" -ge 24 ] 2>/dev/null && { GO=$cand; break; }
  done
  [ -n "${GO:-}" ] || GO=$(command -v go || true)
fi
[ -n "$GO" ] && [ -x "$GO" ] || die "no go binary found (PATH, /usr/local/go/bin/go, or \$GO): MinIO is built from the Go module proxy and needs Go >= 1.24"
minor=$(go_minor "$GO")
[ -n "$minor" ] && [ "$minor" -ge 24 ] || die "$GO is $("$GO" env GOVERSION 2>/dev/null || echo 'not a working go'); MinIO $VERSION needs Go >= 1.24 (set GO to a newer go binary)"

with_heartbeat() {
  local what=$1; shift
  local t0; t0=$(date +%s)
  "$@" &
  local pid=$!
  while kill -0 "$pid" 2>/dev/null; do
    for _ in $(seq 1 30); do sleep 1; kill -0 "$pid" 2>/dev/null || break; done
    kill -0 "$pid" 2>/dev/null && log "  still $what ($(( $(date +%s) - t0 ))s so far)"
  done
  wait "$pid" || die "$what failed (see the go output above; is proxy.golang.org reachable, and is Go new enough?)"
}

# One module and build cache shared with the other Go-built test tools.
export GOMODCACHE=$ROOT/gomod GOCACHE=$ROOT/gocache GOFLAGS=-modcacherw CGO_ENABLED=0 GOTOOLCHAIN=local
export GOBIN=$DIR/.gobin
rm -rf "$GOBIN"
log "building github.com/minio/minio@$VERSION with $("$GO" version | cut -d' ' -f3) (about 20 minutes on 2 busy cores the first time)"
with_heartbeat "building minio" "$GO" install -trimpath -ldflags "-s -w" "github.com/minio/minio@$VERSION"
[ -x "$GOBIN/minio" ] || die "go install finished but produced no $GOBIN/minio"
mv "$GOBIN/minio" "$BIN"
rmdir "$GOBIN" 2>/dev/null || true
log "minio ready at $BIN"
