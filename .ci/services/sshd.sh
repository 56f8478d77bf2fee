#!/usr/bin/env bash
# OpenSSH server and rsync for the vps deploy suite. The suite starts its own
# sshd (own port, host key and authorized key) and stops it; this only installs
# the binaries and the privilege-separation folder. Idempotent.
set -euo pipefail

# Install, updating the package lists first only when they are stale.
apt_install() { DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "$@" >/dev/null 2>&1 || { apt-get update >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "$@" >/dev/null; }; }

if ! command -v /usr/sbin/sshd >/dev/null 2>&1 || ! command -v rsync >/dev/null 2>&1; then
  apt_install openssh-server openssh-client rsync
fi
mkdir -p /run/sshd
