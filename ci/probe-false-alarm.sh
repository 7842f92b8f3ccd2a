#!/usr/bin/env bash
# One GPU visit for the stress's false alarms: correct kernels under the
# default --stress (every schedule), where any failing iteration is the
# stress's fault, not the kernel's. Per setting and target, one plain
#   [artest mps --] mpirun -np N bin/artest [--share-gpus] --stress $STRESS TARGET-FLAGS
# with its log and JSON under OUTDIR/SETTING/; OUTDIR/summary.txt gets each
# job's exit code and time, the plan line and ci/catch-summary.py's table.
#
#   ci/probe-false-alarm.sh OUTDIR SETTING...   SETTING: gpus | gpusN | mps2 | mps4
#
# Environment: STRESS (default 10000); TARGETS (default "builtins example
# vllm trtllm"): builtins is the default stress set of every built-in
# variant (multimem is skipped: no --allow-multicast), example the example
# plugin (bin/plugins/cuda_oneshot.so), vllm its adapter (bin/plugins/vllm.so),
# trtllm TensorRT-LLM's with the block_barrier fix (bin/plugins/trtllm_syncfix.so,
# make plugins-trtllm-syncfix), any other word a built-in variant's name;
# JOB_TIMEOUT_S (default 540) bounds each job.
# Safety: NCCL_NVLS_ENABLE=0; no step passes --allow-multicast.
set -uo pipefail
cd "$(dirname "$0")/.."
out=${1:?usage: ci/probe-false-alarm.sh OUTDIR SETTING...}
shift
stress=${STRESS:-10000}
targets=${TARGETS:-builtins example vllm trtllm}
bin=$PWD/bin/artest
mkdir -p "$out"
summary=$out/summary.txt

# shellcheck source=ci/probe-setting.sh
source ci/probe-setting.sh
probe_env

target_flags() {
	case $1 in
	builtins) ;;
	example) echo "--variant example:oneshot --plugin bin/plugins/cuda_oneshot.so" ;;
	vllm) echo "--variant vllm:custom --plugin bin/plugins/vllm.so" ;;
	trtllm) echo "--variant trtllm:oneshot,trtllm:twoshot --plugin bin/plugins/trtllm_syncfix.so" ;;
	*) echo "--variant $1" ;;
	esac
}

for setting in "$@"; do
	d=$out/$setting
	mkdir -p "$d"
	probe_setting "$setting" || exit 2
	for t in $targets; do
		read -r -a f <<<"$(target_flags "$t")"
		t0=$SECONDS
		timeout --kill-after=10 "${JOB_TIMEOUT_S:-540}" "${pre[@]}" mpirun -np "$np" "$bin" "${share[@]}" --stress "$stress" \
			--json "$d/clean-$t.json" "${f[@]}" >"$d/clean-$t.log" 2>&1
		rc=$?
		printf '%-6s %-20s exit %3d %4d s\n' "$setting" "clean-$t" "$rc" $((SECONDS - t0)) | tee -a "$summary"
		grep -m1 '# stress plan' "$d/clean-$t.log" | tee -a "$summary"
		grep -m3 -E '^# (FAIL|pass [0-9]+, FAIL)' "$d/clean-$t.log" | tee -a "$summary"
	done
done
python3 ci/catch-summary.py "$out"/*/*.json | tee -a "$summary"
