#!/usr/bin/env bash
# Docker engine for @assemblyline-agents/docker's suites: Debian's docker.io,
# started without a bridge or iptables (neither works in the CI sandbox).
# Idempotent: does nothing when an engine already answers on the socket.
set -euo pipefail

# Install, updating the package lists first only when they are stale.
apt_install() { DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "$@" >/dev/null 2>&1 || { apt-get update >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "$@" >/dev/null; }; }

if ! command -v dockerd >/dev/null 2>&1; then
  apt_install docker.io busybox-static
fi
if ! command -v busybox >/dev/null 2>&1; then
  apt_install busybox-static
fi

engine_up() { docker version --format '{{.Server.Version}}' >/dev/null 2>&1; }

if ! engine_up; then
  mkdir -p /var/log
  nohup dockerd --bridge=none --iptables=false --ip-masq=false --ip-forward=false >/var/log/dockerd-ci.log 2>&1 &
  for _ in $(seq 1 60); do engine_up && break; sleep 1; done
  engine_up || { echo "dockerd did not start; see /var/log/dockerd-ci.log" >&2; exit 1; }
fi
