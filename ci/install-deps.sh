#!/usr/bin/env bash
# Installs what artest needs to build and run that a fresh machine may lack:
# Open MPI (mpirun and mpi.h) from Debian packages. Idempotent.
set -euo pipefail
need=()
command -v mpirun >/dev/null 2>&1 || need+=(openmpi-bin)
pkg-config --exists ompi 2>/dev/null || need+=(libopenmpi-dev)
command -v pkg-config >/dev/null 2>&1 || need+=(pkg-config)
if ((${#need[@]} == 0)); then
	exit 0
fi
echo "install-deps: installing ${need[*]}" >&2
sudo=""
if [[ $(id -u) -ne 0 ]]; then
	command -v sudo >/dev/null || { echo "install-deps: need root or sudo to install ${need[*]}" >&2; exit 4; }
	sudo=sudo
fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get install -y --no-install-recommends "${need[@]}" >/dev/null 2>&1 ||
	{ $sudo apt-get update >/dev/null && $sudo apt-get install -y --no-install-recommends "${need[@]}" >/dev/null; }
command -v mpirun >/dev/null && pkg-config --exists ompi || { echo "install-deps: Open MPI still missing" >&2; exit 4; }
