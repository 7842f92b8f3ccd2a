#!/usr/bin/env bash
# Builds artest's OCI image with podman from docker/Containerfile, with
# nothing pulled from a registry: the base from Debian packages
# (ci/make-base-image.sh), then bin/artest, bin/artest.fatbin when it exists,
# and libnccl.so.2 from the pinned nvidia-nccl-cu12 wheel when it can be
# fetched. Checks that `artest --version` inside prints the host binary's
# revision, and prints the image's size and the build's time.
#
#   ci/build-image.sh [IMAGE]         (default: localhost/artest:REVISION)
#
# Environment:
#   ARTEST_IMAGE_NCCL=0   leave NCCL out (the nccl cases then report skipped)
#   ARTEST_BASE_IMAGE     the base (default: localhost/artest-base:bookworm)
#
# The last line of stdout is the image's name. Run `make build` first.
set -euo pipefail

repo_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo_root"
# shellcheck source=ci/image-env.sh
source ci/image-env.sh

nccl_wheel=nvidia-nccl-cu12==2.28.9
base=${ARTEST_BASE_IMAGE:-localhost/artest-base:bookworm}
ctx=bin/image-context

die() { echo "build-image: $*" >&2; exit 4; }
label() { podman image inspect --format "{{index .Config.Labels \"$2\"}}" "$1"; }

# revision_of prints the revision in `artest --version` output:
# "artest 0.1.0 (REV, goX)".
revision_of() { sed -n 's/^artest [^ ]* (\([^,]*\),.*/\1/p'; }

# stage_nccl puts libnccl.so.2 from the pinned wheel under the context and
# prints NCCL's version, or "absent" with the reason on stderr.
stage_nccl() {
	if [[ ${ARTEST_IMAGE_NCCL:-1} == 0 ]]; then
		echo "build-image: NCCL left out (ARTEST_IMAGE_NCCL=0)" >&2
		echo absent
		return
	fi
	local dir=.whl/nccl whl
	whl=$(ls "$dir"/nvidia_nccl_cu12-"${nccl_wheel#*==}"-*.whl 2>/dev/null | head -n1 || true)
	if [[ -z $whl ]]; then
		python3 -m pip download --quiet --no-deps --only-binary=:all: --dest "$dir" "$nccl_wheel" >&2 ||
			{ echo "build-image: $nccl_wheel could not be fetched: NCCL left out" >&2; echo absent; return; }
		whl=$(ls "$dir"/nvidia_nccl_cu12-*.whl | head -n1)
	fi
	mkdir -p "$ctx/root/usr/local/nccl/lib"
	python3 -c 'import sys, zipfile; sys.stdout.buffer.write(zipfile.ZipFile(sys.argv[1]).read("nvidia/nccl/lib/libnccl.so.2"))' \
		"$whl" >"$ctx/root/usr/local/nccl/lib/libnccl.so.2"
	echo "${nccl_wheel#*==}"
}

main() {
	local start=$SECONDS
	[[ -x bin/artest ]] || die "bin/artest missing (run make build)"
	local rev
	rev=$(bin/artest --version | revision_of)
	[[ -n $rev ]] || die "cannot read the revision from bin/artest --version"
	local image=${1:-localhost/artest:$rev}

	image_conf bin/image
	if [[ $base == localhost/artest-base:bookworm ]]; then
		ci/make-base-image.sh "$base"
	fi
	podman image exists "$base" || die "base image $base missing"

	rm -rf "$ctx"
	mkdir -p "$ctx/root/usr/local/bin"
	cp bin/artest "$ctx/root/usr/local/bin/"
	local fatbin_sha=absent
	if [[ -f bin/artest.fatbin ]]; then
		cp bin/artest.fatbin "$ctx/root/usr/local/bin/"
		fatbin_sha=$(sha256sum bin/artest.fatbin | cut -d' ' -f1)
	else
		echo "build-image: bin/artest.fatbin absent (no make kernels here): the image runs the host backend only" >&2
	fi
	local nccl
	nccl=$(stage_nccl)

	# The image this one replaces, removed once untagged.
	local old
	old=$(podman image inspect --format '{{.Id}}' "$image" 2>/dev/null || true)
	podman build --quiet --no-cache -f docker/Containerfile -t "$image" \
		--build-arg "BASE=$base" \
		--build-arg "REVISION=$rev" \
		--build-arg "FATBIN_SHA256=$fatbin_sha" \
		--build-arg "NCCL_VERSION=$nccl" \
		--build-arg "OPENMPI_VERSION=$(label "$base" org.artest.openmpi.version)" \
		--build-arg "DEBIAN_SUITE=$(label "$base" org.artest.base.suite)" \
		--build-arg "DEBIAN_DATE=$(label "$base" org.artest.base.date)" \
		--build-arg "DEBIAN_PACKAGES_SHA256=$(label "$base" org.artest.base.packages-sha256)" \
		"$ctx" >/dev/null

	if [[ -n $old && $old != "$(podman image inspect --format '{{.Id}}' "$image")" ]]; then
		podman rmi "$old" >/dev/null 2>&1 || true
	fi

	local inside
	inside=$(podman run "${image_run_flags[@]}" "$image" artest --version | revision_of)
	[[ $inside == "$rev" ]] || die "artest --version inside $image says '$inside', the host binary '$rev'"

	local size
	size=$(podman image inspect --format '{{.Size}}' "$image")
	echo "build-image: $image: revision $rev, fatbin $fatbin_sha, NCCL $nccl, Open MPI $(label "$image" org.artest.openmpi.version);" \
		"$((size / 1000000)) MB, built in $((SECONDS - start)) s" >&2
	echo "$image"
}

main "$@"
