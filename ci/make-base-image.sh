#!/usr/bin/env bash
# Makes artest's container base image from Debian packages, with nothing
# pulled from a container registry: debootstrap --variant=minbase of a pinned
# Debian suite plus Open MPI's runtime (openmpi-bin), imported with podman.
#
#   ci/make-base-image.sh [IMAGE]     (default: localhost/artest-base:bookworm)
#
# Environment:
#   ARTEST_DEBIAN_MIRROR  the Debian mirror (default: the first deb.debian.org
#                         style URI of apt's own sources, else deb.debian.org)
#   ARTEST_BASE_REBUILD=1 rebuild even when IMAGE exists for this script
#
# The mirror is a moving archive (snapshot.debian.org is not reachable from
# this project's machines), so the suite is pinned and every installed
# package's version is recorded: in the image at
# /usr/share/artest/base-packages.txt and, as its sha256, in the label
# org.artest.base.packages-sha256, with the Open MPI version in
# org.artest.openmpi.version. An existing IMAGE made by this same script
# (label org.artest.base.script-sha256) is reused.
set -euo pipefail

suite=bookworm
image=${1:-localhost/artest-base:$suite}
script_sha=$(sha256sum "${BASH_SOURCE[0]}" | cut -d' ' -f1)

die() { echo "make-base-image: $*" >&2; exit 4; }

for tool in podman debootstrap; do
	command -v "$tool" >/dev/null || die "$tool not found (ci/install-podman.sh installs it)"
done
[[ $(id -u) -eq 0 ]] || die "debootstrap needs root"

have=$(podman image inspect --format '{{index .Config.Labels "org.artest.base.script-sha256"}}' "$image" 2>/dev/null || true)
if [[ $have == "$script_sha" && ${ARTEST_BASE_REBUILD:-0} != 1 ]]; then
	echo "make-base-image: $image is up to date (made by this script)" >&2
	exit 0
fi

# apt's own mirror: the machines here reach Debian only through it.
default_mirror() {
	local uri
	uri=$(grep -hoE '^(URIs:|deb) +https?://[^ ]+/debian/?( |$)' /etc/apt/sources.list /etc/apt/sources.list.d/* 2>/dev/null |
		grep -oE 'https?://[^ ]+' | head -n1 || true)
	echo "${uri:-http://deb.debian.org/debian}"
}
mirror=${ARTEST_DEBIAN_MIRROR:-$(default_mirror)}

work=$(mktemp -d "${TMPDIR:-/tmp}/artest-base.XXXXXX")
trap 'rm -rf "$work"' EXIT
root=$work/rootfs

echo "make-base-image: debootstrap $suite (minbase + openmpi-bin) from $mirror" >&2
debootstrap --variant=minbase --include=openmpi-bin "$suite" "$root" "$mirror" >"$work/debootstrap.log" 2>&1 ||
	{ tail -n 20 "$work/debootstrap.log" >&2; die "debootstrap failed (log above)"; }

mkdir -p "$root/usr/share/artest"
chroot "$root" dpkg-query -W -f '${Package}=${Version}\n' | sort >"$root/usr/share/artest/base-packages.txt"
packages_sha=$(sha256sum "$root/usr/share/artest/base-packages.txt" | cut -d' ' -f1)
ompi=$(chroot "$root" dpkg-query -W -f '${Version}' openmpi-bin)
built=$(date -u +%Y-%m-%dT%H:%M:%SZ)

# What a runtime image does not need: package lists, caches, documentation.
rm -rf "$root"/var/lib/apt/lists/* "$root"/var/cache/apt/* "$root"/var/cache/debconf/*-old \
	"$root"/usr/share/doc/* "$root"/usr/share/man/* "$root"/usr/share/info/* "$root"/usr/share/locale/* \
	"$root"/var/log/* "$root"/tmp/*

tar -C "$root" --numeric-owner -c . |
	podman import --quiet \
		--change "LABEL org.artest.base.script-sha256=$script_sha" \
		--change "LABEL org.artest.base.suite=$suite" \
		--change "LABEL org.artest.base.mirror=$mirror" \
		--change "LABEL org.artest.base.date=$built" \
		--change "LABEL org.artest.base.packages-sha256=$packages_sha" \
		--change "LABEL org.artest.openmpi.version=$ompi" \
		--change "ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin" \
		--change 'CMD ["/bin/bash"]' \
		- "$image" >/dev/null
echo "make-base-image: $image: Debian $suite of $built, openmpi-bin $ompi, $(wc -l <"$root/usr/share/artest/base-packages.txt") packages" >&2
