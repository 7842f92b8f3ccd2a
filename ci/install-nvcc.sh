#!/usr/bin/env bash
# Installs NVIDIA's CUDA 13.0 compiler from its pip wheels into ./.tools/nvcc,
# so kernels compile on a machine with no GPU and no CUDA toolkit (CPU CI).
# The five versions below were checked to work together; change them only
# together. Idempotent: a prefix that already holds these versions is reused.
#
#   ci/install-nvcc.sh [PREFIX]     (default: .tools/nvcc under the repo root)
#
# Afterwards nvcc is PREFIX/nvidia/cu13/bin/nvcc.
set -euo pipefail

repo_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
prefix=${1:-"$repo_root/.tools/nvcc"}

wheels=(
	nvidia-cuda-nvcc==13.0.88
	nvidia-cuda-runtime==13.0.96
	nvidia-cuda-cccl==13.0.85
	nvidia-nvvm==13.0.88
	nvidia-cuda-crt==13.0.88
)
# What the stamp file must say for an existing prefix to be reused.
want_stamp=$(printf '%s\n' "${wheels[@]}")
stamp="$prefix/.artest-wheels"
nvcc="$prefix/nvidia/cu13/bin/nvcc"

if [[ -x "$nvcc" && -f "$stamp" && "$(cat "$stamp")" == "$want_stamp" ]]; then
	echo "install-nvcc: $prefix already holds the pinned wheels" >&2
else
	for tool in python3 unzip; do
		command -v "$tool" >/dev/null || { echo "install-nvcc: $tool not found" >&2; exit 4; }
	done
	download=$(mktemp -d)
	trap 'rm -rf "$download"' EXIT
	python3 -m pip download --quiet --no-deps --only-binary=:all: \
		--dest "$download" "${wheels[@]}"
	# Start clean so files of another version cannot linger in the prefix.
	rm -rf "$prefix"
	mkdir -p "$prefix"
	for whl in "$download"/*.whl; do
		unzip -q -o "$whl" -d "$prefix"
	done
	# Wheels do not always keep the executable bit.
	chmod +x "$prefix"/nvidia/cu13/bin/* "$prefix"/nvidia/cu13/nvvm/bin/* 2>/dev/null || true
	printf '%s\n' "$want_stamp" >"$stamp"
fi

# cuobjdump and the nvdisasm it runs, for ci/check-multimem-sass.sh (SASS
# without a GPU). Added to the same prefix with their own stamp, so the
# compiler above is not downloaded again. The index has no 13.0 release of
# either; 13.2.51, the oldest there, reads 13.0's fatbins.
sass_wheels=(
	nvidia-cuda-cuobjdump==13.2.51
	nvidia-cuda-nvdisasm==13.2.51
)
sass_want=$(printf '%s\n' "${sass_wheels[@]}")
sass_stamp="$prefix/.artest-sass-wheels"
if [[ ! -x "$prefix/nvidia/cu13/bin/cuobjdump" || ! -x "$prefix/nvidia/cu13/bin/nvdisasm" || ! -f "$sass_stamp" ||
	"$(cat "$sass_stamp")" != "$sass_want" ]]; then
	sass_download=$(mktemp -d)
	python3 -m pip download --quiet --no-deps --only-binary=:all: \
		--dest "$sass_download" "${sass_wheels[@]}"
	for whl in "$sass_download"/*.whl; do
		unzip -q -o "$whl" -d "$prefix"
	done
	rm -rf "$sass_download"
	chmod +x "$prefix/nvidia/cu13/bin/cuobjdump" "$prefix/nvidia/cu13/bin/nvdisasm"
	printf '%s\n' "$sass_want" >"$sass_stamp"
fi

"$nvcc" --version
