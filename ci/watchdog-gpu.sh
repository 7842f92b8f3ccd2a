#!/usr/bin/env bash
# The watchdog on a GPU: the example plugin's kernel that never returns
# (ARTEST_EXAMPLE_BUG=spin) and the same with the plugin's call waiting for
# it (spin-sync), plain and graph, quick and stress, at 2 ranks; artest's
# own oneshot held in a wait with no deadline; a run with no bug before and
# after (no false alarm, the GPU still serves). Each run must end within
# --timeout plus the watchdog's grace (10 s) plus start-up, with exit 3 and
# its reports written; a table of the runs is printed last and kept in
# OUTDIR/runs.tsv.
#
#   ci/watchdog-gpu.sh [OUTDIR]      (default: bin/watchdog-results)
#
# With one GPU the 2 ranks share it under a private MPS daemon (artest mps
# --, --share-gpus); with two or more each rank has a GPU. Needs bin/artest,
# bin/artest.fatbin (make build kernels) and nvcc for the example plugin.
# WATCHDOG_BACKEND=host runs the same on the host backend with the host
# twin of the plugin (no GPU; the stress runs block on the host stream's
# bounded queue). Safety: no multicast; NCCL_NVLS_ENABLE=0.
set -uo pipefail

cd "$(dirname "$0")/.."
out=${1:-bin/watchdog-results}
mkdir -p "$out"
bin=bin/artest
timeout_s=${WATCHDOG_TIMEOUT_S:-5}
export NCCL_NVLS_ENABLE=0 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_hwloc_base_binding_policy=none CUDA_MODULE_LOADING=EAGER

target=plugins-cuda so=bin/plugins/cuda_oneshot.so
[[ ${WATCHDOG_BACKEND:-cuda} == host ]] && target=plugins-host so=bin/plugins/host_oneshot.so
make --no-print-directory "$target" >"$out/plugin-build.log" 2>&1 || {
	echo "watchdog-gpu: make $target failed (see $out/plugin-build.log)" >&2
	exit 4
}
ngpu=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ')
launch=(mpirun -np 2)
share=()
setting="2 ranks, one GPU each"
if [[ ${WATCHDOG_BACKEND:-cuda} == host ]]; then
	launch=(mpirun -np 2 --oversubscribe)
	share=(--backend host)
	setting="2 ranks on the host backend"
elif ((ngpu < 2)); then
	launch=("$bin" mps -- mpirun -np 2 --oversubscribe)
	share=(--share-gpus)
	setting="2 ranks on 1 GPU under MPS"
fi
mps_before=$(pgrep -c -f nvidia-cuda-mps 2>/dev/null || true)

printf 'run\tbug\tmode\tkind\texit\tseconds\twatchdog_lines\tstack_traces\treport_exit\thung_case\tenqueued\n' >"$out/runs.tsv"

# one NAME BUG MODE KIND [extra artest flags...]
one() {
	local name=$1 bug=$2 mode=$3 kind=$4
	shift 4
	local d="$out/$name" args=()
	mkdir -p "$d"
	[[ $kind == stress ]] && args+=(--stress 2000)
	local env=()
	[[ $bug != none ]] && env=(-x "ARTEST_EXAMPLE_BUG=$bug")
	local start end rc
	start=$(date +%s.%N)
	timeout 240 "${launch[@]}" "${env[@]}" "$bin" "${share[@]}" --size 64K --dtype bf16 --op sum --mode "$mode" \
		--timeout "${timeout_s}s" --json "$d/r.json" --junit "$d/r.xml" --jsonl "$d/r.jsonl" --repro-dir "$d" \
		"${args[@]}" "$@" >"$d/stdout.log" 2>"$d/stderr.log"
	rc=$?
	end=$(date +%s.%N)
	local secs lines rexit hung enq
	secs=$(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.1f", b - a }')
	lines=$(grep -c '^artest: watchdog: rank ' "$d/stderr.log")
	traces=$(grep -c -E '^goroutine [0-9]+ |^SIGSEGV|^panic:' "$d/stderr.log")
	rexit=$(grep -o '"exit_code": *[0-9]*' "$d/r.json" 2>/dev/null | tail -1 | grep -o '[0-9]*$')
	hung=$(grep -o '"id": *"[^"]*"' "$d/r.jsonl" 2>/dev/null | tail -1 | sed 's/.*"\([^"]*\)"$/\1/')
	grep -q '"verdict": *"HUNG"' "$d/r.json" 2>/dev/null || hung="-"
	enq=$(sed -n 's/^artest: watchdog: rank \([0-9]*\):.*; \([0-9]*\) call(s) enqueued.*/r\1=\2/p' "$d/stderr.log" | tr '\n' ' ')
	grep -E '^artest: (watchdog: rank|hang in case)|^  ' "$d/stderr.log" | sed "s|^|$name: |" >>"$out/lines.txt"
	printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$name" "$bug" "$mode" "$kind" "$rc" "$secs" "$lines" "$traces" \
		"${rexit:--}" "$hung" "${enq:--}" >>"$out/runs.tsv"
}

one control-before none oop-reg-plain stress --plugin "$so" --variant example:oneshot
for bug in spin spin-sync; do
	for mode in oop-reg-plain oop-reg-graph; do
		for kind in quick stress; do
			one "$bug-${mode##*-}-$kind" "$bug" "$mode" "$kind" --plugin "$so" --variant example:oneshot --device-timeout 0
		done
	done
done
# The default device deadline: the peers give up, the spinning rank's
# watchdog names its call.
one spin-plain-stress-deadline spin oop-reg-plain stress --plugin "$so" --variant example:oneshot
# artest's own kernel held with no deadline (rank 1 starts 30 s late).
one oneshot-held-stress none oop-reg-plain stress --variant oneshot --inject delay:rank=1,us=30000000 --device-timeout 0
one control-after none oop-reg-plain stress --plugin "$so" --variant example:oneshot

mps_after=$(pgrep -c -f nvidia-cuda-mps 2>/dev/null || true)
{
	echo "# $setting; --timeout ${timeout_s}s; $("$bin" --version 2>&1 | head -1)"
	echo "# MPS processes before: ${mps_before:-0}, after: ${mps_after:-0}"
	awk -F'\t' '{ printf "%-27s %-9s %-13s %-6s %-4s %-7s %-14s %-12s %-11s %-50s %s\n", $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11 }' "$out/runs.tsv"
} | tee "$out/summary.txt"
