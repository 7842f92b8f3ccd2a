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

"$nvcc" --version
