#!/usr/bin/env bash
# Probe: why a late rank hangs 4 ranks sharing one GPU (oneshot bf16 1 MiB
# under skew, host check). Each job under its own MPS daemon; raw
# SignalBlocks at a hang land in OUTDIR/<job>/ (ARTEST_SIGNAL_DUMP), stress
# milestones in the log (ARTEST_STRESS_TRACE).
set -uo pipefail
out=${1:?}
cd "$(dirname "$0")/.."
export NCCL_NVLS_ENABLE=0 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_hwloc_base_binding_policy=none CUDA_MODULE_LOADING=EAGER
bin=$PWD/bin/artest
job() {
	local name=$1; shift
	mkdir -p "$out/$name"
	local t0=$SECONDS
	timeout -k 5 90 "$bin" mps -- mpirun -np 4 -x ARTEST_STRESS_TRACE=1 -x ARTEST_SIGNAL_DUMP="$out/$name" "$bin" --share-gpus --stress 200 \
		--timeout 30s --device-timeout 5s --json "$out/$name/report.json" "$@" >"$out/$name/log" 2>&1
	echo "$name: exit $? $((SECONDS - t0))s: $*" | tee -a "$out/summary.txt"
}
c=oneshot/bf16/sum/1MiB
for i in 1 2 3; do
	job dev-skew-$i --case $c/oop-reg-plain/np4 --schedule skew --check device
	job host-skew-stg-$i --case $c/oop-stg-plain/np4 --schedule skew --check host
	job host-straggler-$i --case $c/oop-reg-plain/np4 --schedule straggler --check host
done
