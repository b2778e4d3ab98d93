#!/usr/bin/env bash
# Builds Velero's server/CLI and its AWS object-store plugin from the Go module proxy, for the
# benchmark's peer rows only (never shipped, never in a test). Idempotent and flock'd: exits at once
# when both binaries are cached. Prints timestamped progress and a heartbeat.
#
# Usage: build.sh CACHE_ROOT VELERO_VERSION AWS_PLUGIN_VERSION
#   binaries land in CACHE_ROOT/velero-VELERO_VERSION/velero and .../plugins/velero-plugin-for-aws
set -euo pipefail

ROOT=${1:?usage: build.sh CACHE_ROOT VELERO_VERSION AWS_PLUGIN_VERSION}
VERSION=${2:?usage: build.sh CACHE_ROOT VELERO_VERSION AWS_PLUGIN_VERSION}
AWS_VERSION=${3:?usage: build.sh CACHE_ROOT VELERO_VERSION AWS_PLUGIN_VERSION}
DIR=$ROOT/velero-$VERSION
BIN=$DIR/velero
PLUGIN=$DIR/plugins/velero-plugin-for-aws
STAMP=$DIR/.aws-plugin-version   # outside plugins/: velero server warns about every file there that is not a plugin
START=$(date +%s)

TAG=velero FAILED="BUILD FAILED"
# shellcheck source=../lib/gobuild.sh
source "$(dirname "${BASH_SOURCE[0]}")/../lib/gobuild.sh"

built() { [ -x "$BIN" ] && [ -x "$PLUGIN" ] && [ "$(cat "$STAMP" 2>/dev/null)" = "$AWS_VERSION" ]; }

built && exit 0
mkdir -p "$DIR/plugins" 2>/dev/null || die "cannot create cache directory $DIR (set STOWAGE_CACHE_DIR to a writable path)"

# Serialise concurrent builds (two benchmark runs at once build once).
exec 9>"$DIR/.build.lock"
flock 9
built && exit 0

require_go 26 Velero "$VERSION"

# One module and build cache shared with the other Go-built test tools.
export GOMODCACHE=$ROOT/gomod GOCACHE=$ROOT/gocache GOFLAGS="-modcacherw -buildvcs=false" CGO_ENABLED=0 GOTOOLCHAIN=local

if [ ! -x "$PLUGIN" ] || [ "$(cat "$STAMP" 2>/dev/null)" != "$AWS_VERSION" ]; then
  log "building github.com/vmware-tanzu/velero-plugin-for-aws@$AWS_VERSION with $("$GO" version | cut -d' ' -f3)"
  export GOBIN=$DIR/.gobin
  rm -rf "$GOBIN"
  # Its go.mod has no replace directive, so `go install pkg@version` builds it as released.
  with_heartbeat "building velero-plugin-for-aws" "$GO" install -trimpath -ldflags "-s -w" \
    "github.com/vmware-tanzu/velero-plugin-for-aws/velero-plugin-for-aws@$AWS_VERSION"
  [ -x "$GOBIN/velero-plugin-for-aws" ] || die "go install finished but produced no $GOBIN/velero-plugin-for-aws"
  mv "$GOBIN/velero-plugin-for-aws" "$PLUGIN"
  rmdir "$GOBIN" 2>/dev/null || true
  unset GOBIN
  printf '%s\n' "$AWS_VERSION" > "$STAMP"
fi

if [ ! -x "$BIN" ]; then
  # Velero's go.mod replaces github.com/kopia/kopia with Velero's fork, which `go install pkg@version`
  # refuses; a wrapper module carries the same replace and builds cmd/velero at the release.
  SRC=$DIR/src
  rm -rf "$SRC" && mkdir -p "$SRC"
  cat > "$SRC/go.mod" <<EOG
module stowage.dev/bench/velero-build

go 1.26

require github.com/vmware-tanzu/velero $VERSION

// As in Velero's own go.mod.
replace github.com/kopia/kopia => github.com/project-velero/kopia v0.0.0-20251230033609-d946b1e75197

// The proxy no longer serves k8s.io/cli-runtime v0.33.12 (403 "not available"); the next patch
// release of the same minor stands in for it.
replace k8s.io/cli-runtime => k8s.io/cli-runtime v0.33.13
EOG
  log "resolving github.com/vmware-tanzu/velero@$VERSION (a wrapper module in $SRC)"
  (cd "$SRC" && with_heartbeat "resolving velero's modules" "$GO" get "github.com/vmware-tanzu/velero/cmd/velero@$VERSION")
  log "building github.com/vmware-tanzu/velero/cmd/velero@$VERSION (about 10 minutes on 2 busy cores the first time)"
  (cd "$SRC" && with_heartbeat "building velero" "$GO" build -trimpath \
    -ldflags "-s -w -X github.com/vmware-tanzu/velero/pkg/buildinfo.Version=$VERSION" -o "$DIR/.velero.new" github.com/vmware-tanzu/velero/cmd/velero)
  mv "$DIR/.velero.new" "$BIN"
fi
log "velero $VERSION and velero-plugin-for-aws $AWS_VERSION ready in $DIR"
