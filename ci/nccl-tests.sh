#!/usr/bin/env bash
# nccl-tests beside artest's own NCCL timing, on one machine in one visit:
# builds NVIDIA's nccl-tests (all_reduce_perf, reduce_scatter_perf,
# all_gather_perf; one process driving NP GPUs, no MPI) against the NCCL
# that artest loads, runs them at registration modes -R 0, 1 and 2 with
# CUDA graphs, runs `artest bench` with the nccl and nccl-reg baselines on
# the same sizes, and prints both and their ratio per size
# (ci/nccl-tests-compare.py): artest's nccl times should agree with
# nccl-tests -R 0 within 10 %.
#
#   ci/nccl-tests.sh SRC OUTDIR [NP]
#
# SRC is an nccl-tests source tree (e.g. `git archive` of NVIDIA/nccl-tests
# v2.19.6, carried to the GPU machine: it has no network). NP defaults to
# the GPU count. ARTEST_NCCL (default: the torch wheel's) names
# libnccl.so.2; its include/ sits beside its lib/ in the wheel.
set -uo pipefail
cd "$(dirname "$0")/.."
src=${1:?usage: ci/nccl-tests.sh SRC OUTDIR [NP]}
out=${2:?usage: ci/nccl-tests.sh SRC OUTDIR [NP]}
np=${3:-$(nvidia-smi -L | wc -l)}
src=$(realpath "$src")
mkdir -p "$out"
out=$(realpath "$out")
export NCCL_NVLS_ENABLE=0 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
if [[ -z "${ARTEST_NCCL:-}" ]]; then
	for p in /opt/torch/.venv/lib/python3*/site-packages/nvidia/nccl/lib/libnccl.so.2; do
		[[ -e $p ]] && export ARTEST_NCCL=$p && break
	done
fi
lib=$(dirname "$(realpath "${ARTEST_NCCL:?no libnccl.so.2: set ARTEST_NCCL}")")
inc=$(realpath "$lib/../include")
[[ -f $inc/nccl.h ]] || { echo "nccl-tests: no nccl.h in $inc" >&2; exit 4; }
# The link wants libnccl.so; the wheel has only libnccl.so.2.
root=$out/ncclroot
mkdir -p "$root/lib"
ln -sfn "$inc" "$root/include"
ln -sf "$(realpath "$ARTEST_NCCL")" "$root/lib/libnccl.so"
ln -sf "$(realpath "$ARTEST_NCCL")" "$root/lib/libnccl.so.2"
nvcc=${NVCC:-/usr/local/cuda/bin/nvcc}
build=$out/build
t0=$SECONDS
make -C "$src/src" -j "$(nproc)" MPI=0 NCCL_HOME="$root" CUDA_HOME="$(dirname "$(dirname "$nvcc")")" \
	NVCC_GENCODE="-gencode=arch=compute_90,code=sm_90" BUILDDIR="$build" \
	"$build/all_reduce_perf" "$build/reduce_scatter_perf" "$build/all_gather_perf" >"$out/build.log" 2>&1 ||
	{ echo "nccl-tests: build failed (tail of $out/build.log):" >&2; tail -20 "$out/build.log" >&2; exit 4; }
echo "nccl-tests: built in $((SECONDS - t0)) s" >&2
export LD_LIBRARY_PATH=$root/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
rc=0
for t in all_reduce reduce_scatter all_gather; do
	for reg in 0 1 2; do
		"$build/${t}_perf" -g "$np" -b 1K -e 256M -f 4 -d bfloat16 -o sum -G 10 -R "$reg" -c 1 \
			>"$out/$t-R$reg.log" 2>&1 || { echo "nccl-tests: $t -R $reg failed" >&2; rc=1; }
	done
done
mpirun -np "$np" bin/artest bench --variant nccl,nccl-reg -b 1K -e 256M -f 4 --json "$out/artest-nccl.json" \
	>"$out/artest-nccl.log" 2>&1 || rc=1
mpirun -np "$np" bin/artest bench --coll reduce-scatter,all-gather --variant nccl -b 1K -e 256M -f 4 \
	--json "$out/artest-nccl-colls.json" >"$out/artest-nccl-colls.log" 2>&1 || rc=1
python3 ci/nccl-tests-compare.py "$out" | tee "$out/compare.md" || rc=1
exit $rc
