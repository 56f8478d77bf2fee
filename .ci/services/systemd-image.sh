#!/usr/bin/env bash
# A Debian bookworm image with systemd as init, OpenSSH and rsync, for the vps
# deploy suite's systemd path (test/vps-systemd-deploy.test.ts). No image
# registry is reachable, so the rootfs is built from Debian's packages with
# mmdebstrap and loaded with `docker import`. Node is not in the image: the
# suite bind-mounts the host's binary. Idempotent: does nothing when the image
# exists. Needs the engine (.ci/services/docker.sh).
set -euo pipefail

IMAGE=assembly-line-test/systemd:bookworm

# Install, updating the package lists first only when they are stale.
apt_install() { DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "$@" >/dev/null 2>&1 || { apt-get update >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "$@" >/dev/null; }; }

docker image inspect "$IMAGE" >/dev/null 2>&1 && exit 0
command -v mmdebstrap >/dev/null 2>&1 || apt_install mmdebstrap

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# The container shares the host's network and cgroups, so units that would
# touch the host (devices, kernel settings, modules, clock) and the consoles
# are masked. sshd's port and the authorized key come from the suite's mounts.
mmdebstrap --quiet --variant=apt \
  --include=systemd,systemd-sysv,dbus,openssh-server,rsync,libstdc++6,procps \
  --customize-hook='for unit in systemd-udevd.service systemd-udevd-control.socket systemd-udevd-kernel.socket systemd-udev-trigger.service systemd-udev-settle.service systemd-sysctl.service systemd-modules-load.service systemd-timesyncd.service systemd-binfmt.service systemd-hwdb-update.service systemd-remount-fs.service systemd-firstboot.service systemd-journald-audit.socket getty.target console-getty.service getty@tty1.service serial-getty@.service sys-kernel-config.mount sys-kernel-debug.mount sys-kernel-tracing.mount sys-fs-fuse-connections.mount dev-hugepages.mount; do ln -sf /dev/null "$1/etc/systemd/system/$unit"; done' \
  --customize-hook='mkdir -p "$1/root/.ssh" && chmod 700 "$1/root/.ssh"' \
  bookworm "$work/rootfs.tar" http://deb.debian.org/debian

docker import \
  -c 'ENV container=docker' \
  -c 'CMD ["/lib/systemd/systemd"]' \
  "$work/rootfs.tar" "$IMAGE" >/dev/null
