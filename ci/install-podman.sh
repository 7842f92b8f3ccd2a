#!/usr/bin/env bash
# Installs what `make image` needs that a fresh Debian machine may lack:
# podman, runc (crun fails on this project's machines) and debootstrap, from
# Debian packages. Idempotent.
set -euo pipefail
need=()
command -v podman >/dev/null 2>&1 || need+=(podman)
command -v runc >/dev/null 2>&1 || need+=(runc)
command -v debootstrap >/dev/null 2>&1 || need+=(debootstrap)
if ((${#need[@]} == 0)); then
	exit 0
fi
echo "install-podman: installing ${need[*]}" >&2
sudo=""
if [[ $(id -u) -ne 0 ]]; then
	command -v sudo >/dev/null || { echo "install-podman: need root or sudo to install ${need[*]}" >&2; exit 4; }
	sudo=sudo
fi
command -v apt-get >/dev/null || { echo "install-podman: no apt-get here to install ${need[*]}" >&2; exit 4; }
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get install -y "${need[@]}" >/dev/null 2>&1 ||
	{ $sudo apt-get update >/dev/null && $sudo apt-get install -y "${need[@]}" >/dev/null; } ||
	{ echo "install-podman: apt-get could not install ${need[*]}" >&2; exit 4; }
