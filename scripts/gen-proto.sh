#!/usr/bin/env bash
# Generates the TypeScript protobuf/gRPC stubs in src/gen/ from proto/ with ts-proto.
#   bash scripts/gen-proto.sh           regenerate src/gen/
#   bash scripts/gen-proto.sh --check   regenerate into a temp dir; fail with a diff when src/gen/ differs
# protoc comes from Debian's protobuf-compiler package, installed here when missing (CI starts fresh).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

check=false
case "${1:-}" in
  --check) check=true ;;
  '') ;;
  *) echo "usage: $0 [--check]" >&2; exit 2 ;;
esac

if ! command -v protoc >/dev/null 2>&1; then
  echo "gen-proto: protoc not found; installing Debian's protobuf-compiler" >&2
  if [ "$(id -u)" -ne 0 ]; then
    echo "gen-proto: need root to apt-get install protobuf-compiler (or install protoc yourself)" >&2
    exit 1
  fi
  export DEBIAN_FRONTEND=noninteractive
  apt-get install -y -q protobuf-compiler >/dev/null 2>&1 || {
    apt-get update -q >/dev/null && apt-get install -y -q protobuf-compiler >/dev/null
  }
fi

plugin="$root/node_modules/.bin/protoc-gen-ts_proto"
if [ ! -x "$plugin" ]; then
  echo "gen-proto: $plugin missing; run npm ci first" >&2
  exit 1
fi

out="$root/src/gen"
if $check; then
  out="$(mktemp -d)"
  trap 'rm -rf "$out"' EXIT
else
  rm -rf "$out"
  mkdir -p "$out"
fi

# Options: grpc-js services; ESM imports with .js suffixes; Buffer for bytes (Node only); oneofs as
# tagged unions; no protoc/ts-proto versions in headers, so output depends only on proto/ and ts-proto.
opts="outputServices=grpc-js,esModuleInterop=true,importSuffix=.js,env=node,oneof=unions,forceLong=number"
opts="$opts,useExactTypes=false,outputJsonMethods=false,annotateFilesWithVersion=false,useOptionals=messages"

mapfile -t files < <(cd proto && find . -name '*.proto' | sed 's|^\./||' | LC_ALL=C sort)
protoc \
  --plugin="protoc-gen-ts_proto=$plugin" \
  --ts_proto_out="$out" \
  --ts_proto_opt="$opts" \
  -I proto \
  "${files[@]}"

if $check; then
  if ! diff -ru "$root/src/gen" "$out"; then
    echo "gen-proto: src/gen/ is out of date with proto/; run 'npm run gen' and commit the result" >&2
    exit 1
  fi
  echo "gen-proto: src/gen/ is up to date"
else
  echo "gen-proto: wrote $(find "$out" -name '*.ts' | wc -l) files to src/gen/"
fi
