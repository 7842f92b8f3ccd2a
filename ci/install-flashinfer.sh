#!/usr/bin/env bash
# Downloads one pinned flashinfer-python wheel into ./.tools/flashinfer and
# unpacks its CUDA headers, for the adapter plugins (plugin/adapters): they
# #include vLLM's custom allreduce, TensorRT-LLM's (plain and fusion) and
# flashinfer's PCIe IPC allreduce as the wheel ships them; nothing of the wheel is copied into the repository. The wheel is
# pure Python plus headers (py3-none-any), so no GPU, CUDA or torch is needed
# to fetch it. Idempotent: a prefix that already holds this version is reused.
#
#   ci/install-flashinfer.sh [PREFIX]     (default: .tools/flashinfer under the repo root)
#
# Afterwards the headers are under PREFIX/flashinfer/data/include (the
# adapters include <flashinfer/comm/vllm_custom_all_reduce.cuh>,
# trtllm_allreduce.cuh, trtllm_allreduce_fusion.cuh and pcie_ipc_all_reduce.cuh
# there) and PREFIX/flashinfer/data/spdlog/include. Exit 4,
# with one line saying why, when pip or unzip is missing or the download fails.
set -euo pipefail

repo_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
prefix=${1:-"$repo_root/.tools/flashinfer"}

# The newest release on the index when pinned (checked with `pip index
# versions flashinfer-python`); it holds comm/vllm_custom_all_reduce.cuh and
# comm/trtllm_allreduce.cuh.
wheel=flashinfer-python==0.7.2.post1
# The stamp names what was unpacked too, so a prefix from an older script
# (no spdlog) is unpacked again.
stamp="$prefix/.artest-wheel"
want_stamp="$wheel include spdlog"
header="$prefix/flashinfer/data/include/flashinfer/comm/vllm_custom_all_reduce.cuh"

if [[ -f "$header" && -f "$stamp" && "$(cat "$stamp")" == "$want_stamp" ]]; then
	echo "install-flashinfer: $prefix already holds $wheel" >&2
	exit 0
fi

for tool in python3 unzip; do
	command -v "$tool" >/dev/null || { echo "install-flashinfer: $tool not found" >&2; exit 4; }
done
python3 -m pip --version >/dev/null 2>&1 || { echo "install-flashinfer: python3 -m pip not found" >&2; exit 4; }

download=$(mktemp -d)
trap 'rm -rf "$download"' EXIT
if ! python3 -m pip download --quiet --no-deps --only-binary=:all: --dest "$download" "$wheel" >"$download/pip.log" 2>&1; then
	echo "install-flashinfer: pip download $wheel failed: $(tail -n 1 "$download/pip.log")" >&2
	exit 4
fi
whl=("$download"/*.whl)
if [[ ${#whl[@]} -ne 1 || ! -f ${whl[0]} ]]; then
	echo "install-flashinfer: pip download $wheel left no single wheel in $download" >&2
	exit 4
fi
# Start clean so files of another version cannot linger in the prefix; only
# the headers are unpacked: flashinfer's and the spdlog it bundles (its
# logging.h includes spdlog; trtllm_allreduce.cuh includes logging.h). The
# wheel's Python and sources are not used.
rm -rf "$prefix"
mkdir -p "$prefix"
unzip -q -o "${whl[0]}" 'flashinfer/data/include/*' 'flashinfer/data/spdlog/include/*' -d "$prefix"
if [[ ! -f "$header" ]]; then
	echo "install-flashinfer: $wheel has no $(basename "$header")" >&2
	exit 4
fi
printf '%s\n' "$want_stamp" >"$stamp"
echo "install-flashinfer: $wheel headers in $prefix/flashinfer/data/include" >&2
