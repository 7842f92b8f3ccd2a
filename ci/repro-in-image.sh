#!/usr/bin/env bash
# Prints (and with --run, runs) the one command that reruns a repro bundle
# inside artest's image: the bundle mounted read-only at /in/bundle.json, an
# output folder at /out for the rerun's bundles and its JSON report
# (/out/rerun.json). The image is localhost/artest:REV of bin/artest, built
# by ci/build-image.sh when missing.
#
#   ci/repro-in-image.sh [--run] BUNDLE [OUTDIR]
#
# OUTDIR defaults to bin/repro-image/<bundle name>. A host-backend bundle
# runs with a private 1 GiB /dev/shm (--shm-size); a cuda-backend bundle
# with the GPUs through CDI (--device nvidia.com/gpu=all; with Docker:
# --gpus all) and the host's IPC namespace (--ipc=host, for CUDA IPC). With
# --run, the rerun's exit status is this script's.
set -euo pipefail

repo_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo_root"
# shellcheck source=ci/image-env.sh
source ci/image-env.sh

die() { echo "repro-in-image: $*" >&2; exit 2; }

# field prints one top-level or header field of the bundle; nothing for a
# file that is not JSON.
field() {
	python3 -c 'import json, sys
try:
    d = json.load(open(sys.argv[1]))
except ValueError:
    sys.exit(0)
for k in sys.argv[2].split("."):
    d = d.get(k, "") if isinstance(d, dict) else ""
print(d)' "$1" "$2"
}

run=0
if [[ ${1:-} == --run ]]; then
	run=1
	shift
fi
[[ $# -ge 1 && $# -le 2 ]] || die "usage: ci/repro-in-image.sh [--run] BUNDLE [OUTDIR]"
bundle=$(realpath -e "$1" 2>/dev/null) || die "$1: no such bundle"
[[ $(field "$bundle" artest_repro) == 1 ]] || die "$1 is not an artest repro bundle"
case_id=$(field "$bundle" case)
np=$(field "$bundle" ranks)
backend=$(field "$bundle" header.backend)
bundle_rev=$(field "$bundle" header.git_revision)
if grep -q '"--plugin"' "$bundle"; then
	die "$1 reruns a plugin variant: the image holds no plugins"
fi
out=${2:-bin/repro-image/$(basename "$bundle" .json)}
mkdir -p "$out"
out=$(realpath "$out")

[[ -x bin/artest ]] || die "bin/artest missing (run make build)"
rev=$(bin/artest --version | sed -n 's/^artest [^ ]* (\([^,]*\),.*/\1/p')
image=localhost/artest:$rev
image_conf bin/image
if ! podman image exists "$image"; then
	ci/build-image.sh "$image" >/dev/null
fi
if [[ -n $bundle_rev && $bundle_rev != "$rev" ]]; then
	echo "repro-in-image: note: the bundle was made by artest $bundle_rev, the image holds $rev" >&2
fi

if [[ $backend != host ]]; then
	fatbin=$(podman image inspect --format '{{index .Config.Labels "org.artest.fatbin.sha256"}}' "$image")
	[[ $fatbin != absent ]] || die "$image holds no fatbin for this $backend-backend bundle: make kernels, then rebuild it (ci/build-image.sh)"
fi

# Host backend: more ranks than cores is fine. GPU: one rank per GPU, CDI
# devices and the host's IPC namespace (podman refuses --shm-size beside
# --ipc=host).
flags=("${image_run_flags[@]}") mpirun_flags=(--oversubscribe)
if [[ $backend != host ]]; then
	flags=(--rm --ulimit host --runtime runc --device nvidia.com/gpu=all --ipc=host) mpirun_flags=()
fi
cmd=(podman run "${flags[@]}" -v "$bundle:/in/bundle.json:ro" -v "$out:/out" "$image"
	mpirun --allow-run-as-root "${mpirun_flags[@]}" -np "$np" artest --repro /in/bundle.json --repro-dir /out --json /out/rerun.json)
echo "repro-in-image: $case_id ($backend backend, $np ranks) in $image; reports in $out" >&2
echo "CONTAINERS_CONF=$CONTAINERS_CONF ${cmd[*]}"
if ((run)); then
	exec "${cmd[@]}"
fi
