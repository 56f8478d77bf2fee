#!/usr/bin/env bash
# s3rver (an S3-compatible server from npm) for the s3 and gateway suites. It is
# a devDependency, installed by npm ci; each suite starts its own instance on a
# free port (with NODE_OPTIONS=--openssl-legacy-provider) and stops it. This
# checks that it starts here, so a broken install fails fast. Idempotent.
set -euo pipefail
cd "$(dirname "$0")/../.."

dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
NODE_OPTIONS=--openssl-legacy-provider timeout 60 node plugins/s3/test/support/s3rver-main.mjs "$dir" ci-check > "$dir/out" &
pid=$!
for _ in $(seq 1 60); do grep -q port "$dir/out" 2>/dev/null && break; sleep 0.5; done
grep -q port "$dir/out" || { echo "s3rver did not start" >&2; kill "$pid" 2>/dev/null || true; exit 1; }
kill "$pid"
wait "$pid" 2>/dev/null || true
