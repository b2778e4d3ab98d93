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

TAG=minio FAILED="PROVISIONING FAILED"
# shellcheck source=../lib/gobuild.sh
source "$(dirname "${BASH_SOURCE[0]}")/../lib/gobuild.sh"

[ -x "$BIN" ] && exit 0

mkdir -p "$DIR" 2>/dev/null || die "cannot create cache directory $DIR (set STOWAGE_CACHE_DIR to a writable path)"
[ -w "$DIR" ] || die "cache directory $DIR is not writable (set STOWAGE_CACHE_DIR to a writable path)"

# Serialise concurrent builds (parallel test runs, or a demo and a test run).
exec 9>"$DIR/.build.lock"
flock 9
[ -x "$BIN" ] && exit 0

require_go 24 MinIO "$VERSION"

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
