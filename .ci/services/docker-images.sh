#!/usr/bin/env bash
# The base images the Docker suites use, made locally with `docker import`
# (no image registry is reachable): a busybox rootfs, and busybox + the host's
# node with its libraries, tagged by a hash of their contents (reused when
# present). The node image is also tagged node:22-slim when that name is free,
# so the spec's gateway example runs unchanged. Needs npm ci (dockerode).
set -euo pipefail
cd "$(dirname "$0")/../.."

refs=$(node plugins/docker/test/support/base-images.mjs)
node_ref=$(node -e 'process.stdout.write(JSON.parse(process.argv[1]).node)' "$refs")
docker image inspect node:22-slim >/dev/null 2>&1 || docker tag "$node_ref" node:22-slim
