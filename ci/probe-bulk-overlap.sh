#!/usr/bin/env bash
# One GPU visit for twoshot-bulk (the bulk-copy all-gather) and bench
# --overlap: the default matrix and stress of twoshot-bulk with ranks
# sharing one GPU under MPS (verdicts only), its planted missing mid
# barrier, compute-sanitizer on one rank, and --overlap on one rank alone.
#   ci/probe-bulk-overlap.sh OUTDIR
set -uo pipefail
out=${1:?}
cd "$(dirname "$0")/.."
mkdir -p "$out"
export NCCL_NVLS_ENABLE=0 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_hwloc_base_binding_policy=none CUDA_MODULE_LOADING=EAGER
for p in /opt/torch/.venv/lib/python3*/site-packages/nvidia/nccl/lib/libnccl.so.2; do [[ -e $p ]] && export ARTEST_NCCL=$p; done
bin=$PWD/bin/artest
job() { # NAME WANT LIMIT CMD...
	local name=$1 want=$2 limit=$3; shift 3
	local t0=$SECONDS
	timeout -k 5 "$limit" "$@" >"$out/$name.log" 2>&1
	local rc=$?
	local v=ok; [[ $rc == "$want" ]] || v=UNEXPECTED
	printf '%-28s exit %3d (want %s) %4ds %s\n' "$name" "$rc" "$want" $((SECONDS - t0)) "$v" | tee -a "$out/summary.txt"
	grep -E "^# (pass|variant|overlap)" "$out/$name.log" | head -6 | sed 's/^/    /'
}
# A job with NP ranks sharing the GPU, under a private MPS daemon.
printf '#!/bin/sh\nnp=$1; shift; exec %s mps -- mpirun -np "$np" %s --share-gpus "$@"\n' "$bin" "$bin" >"$out/shared.sh"
chmod +x "$out/shared.sh"
shared=$out/shared.sh
job bulk-matrix-np4 0 200 "$shared" 4 --variant twoshot-bulk --json "$out/bulk-matrix-np4.json"
job bulk-matrix-np2 0 150 "$shared" 2 --variant twoshot-bulk --json "$out/bulk-matrix-np2.json"
job bulk-stress-np4 0 150 "$shared" 4 --variant twoshot-bulk --stress 2000 --json "$out/bulk-stress-np4.json"
job bulk-no-mid-barrier-np4 1 120 "$shared" 4 --variant twoshot-bulk --dtype f32 --op sum --size 64K,4M --mode oop,reg,plain,aligned \
	--stress 500 --inject no-mid-barrier --inject delay:rank=3,us=200 --json "$out/bulk-no-mid-np4.json"
[[ ${ONLY_SHARED:-} ]] && exit 0
job bulk-memcheck-np1 0 200 mpirun -np 1 -x ARTEST_NCCL=/nonexistent/libnccl.so.2 /usr/local/cuda/bin/compute-sanitizer --tool memcheck \
	--error-exitcode 9 --print-limit 20 "$bin" --variant twoshot-bulk --dtype bf16,f32 --op sum --size 4100,64K,1M --mode oop,reg,plain \
	--iters 2 --reps 1 --warmup 0 --device-timeout 120s --timeout 300s
job overlap-np1 0 200 mpirun -np 1 "$bin" bench -b 64K -e 64M -f 4 --overlap 66 --variant oneshot,twoshot,twoshot-bulk,nccl \
	--json "$out/overlap-np1.json"
