# Sourced (not run) by the scripts that build a test or benchmark tool from the Go module proxy
# (scripts/cluster/minio.sh, scripts/velero/build.sh): their progress lines, their failure line, the
# choice of a Go new enough, and the heartbeat that shows a person a cold build is moving.
#
# The sourcing script sets, before it calls anything here:
#   TAG    the word in its lines' brackets ("minio" prints "[minio 12:00:00 +  3s] ...")
#   FAILED the words of its failure line ("PROVISIONING FAILED" prints "[minio] PROVISIONING FAILED: ...")
#   START  $(date +%s) when it began, for the elapsed seconds in each line

log() { printf '[%s %s +%4ss] %s\n' "$TAG" "$(date -u +%H:%M:%S)" "$(( $(date +%s) - START ))" "$*" >&2; }
die() { printf '[%s] %s: %s\n' "$TAG" "$FAILED" "$*" >&2; exit 1; }

# The minor version of the go binary $1 (24 for go1.24.3), or nothing when it is not a working go.
go_minor() { { "$1" env GOVERSION 2>/dev/null || true; } | sed -n 's/^go1\.\([0-9]*\).*/\1/p'; }

# require_go MINOR NAME VERSION: sets GO to $GO when given, else to the first of PATH's go and
# /usr/local/go/bin/go that is at least go1.MINOR (Debian's /usr/bin/go may be an older release);
# dies saying which Go NAME VERSION needs when there is none or it is too old.
require_go() {
  local need=$1 name=$2 version=$3 cand
  if [ -z "${GO:-}" ]; then
    for cand in "$(command -v go || true)" /usr/local/go/bin/go; do
      [ -n "$cand" ] && [ -x "$cand" ] && [ "$(go_minor "$cand")" -ge "$need" ] 2>/dev/null && { GO=$cand; break; }
    done
    [ -n "${GO:-}" ] || GO=$(command -v go || true)
  fi
  [ -n "$GO" ] && [ -x "$GO" ] || die "no go binary found (PATH, /usr/local/go/bin/go, or \$GO): $name is built from the Go module proxy and needs Go >= 1.$need"
  local minor; minor=$(go_minor "$GO")
  [ -n "$minor" ] && [ "$minor" -ge "$need" ] || die "$GO is $("$GO" env GOVERSION 2>/dev/null || echo 'not a working go'); $name $version needs Go >= 1.$need (set GO to a newer go binary)"
}

# with_heartbeat WHAT CMD...: runs CMD with its output on the terminal and a "still WHAT" line every
# 30 s; dies naming WHAT when CMD fails.
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
