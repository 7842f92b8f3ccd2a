#!/usr/bin/env bash
# Two jobs in a row where the first ends in a hang abort, its kernels still
# spinning (no device deadline, so the host watchdog fires and the job is
# aborted with them on the GPU):
#  1. both on one long-lived MPS daemon: the second job must run clean, or
#     stop at once with one line that names the poisoned MPS server (exit 4);
#  2. each under its own daemon (artest mps --): the second must run clean.
#
#   ci/mps-poison.sh NP BIN OUTDIR
#
# Exit 0 when both hold; prints what it saw. Stops the daemon it started,
# by its pid (and its server, the daemon's child, if the quit fails).
set -uo pipefail
np=$1 bin=$2 out=$3
hang=(--share-gpus --variant oneshot --dtype f32 --op sum --size 4K --mode oop,reg,plain,aligned
	--inject "delay:rank=$((np - 1)),us=20000000" --device-timeout 0 --timeout 2s)
clean=(--share-gpus --quick --variant oneshot,twoshot --dtype f32 --op sum)
ok=0

dir=$(mktemp -d /tmp/artest-mps-poison-XXXXXX)
export CUDA_MPS_PIPE_DIRECTORY=$dir/pipe CUDA_MPS_LOG_DIRECTORY=$dir/log
mkdir -p "$CUDA_MPS_PIPE_DIRECTORY" "$CUDA_MPS_LOG_DIRECTORY"
nvidia-cuda-mps-control -d || { echo "mps-poison: nvidia-cuda-mps-control -d failed"; exit 4; }
sleep 0.5
daemon=$(cat "$CUDA_MPS_PIPE_DIRECTORY/nvidia-cuda-mps-control.pid")
t0=$SECONDS
timeout 60 mpirun -np "$np" "$bin" "${hang[@]}" >"$out/mps-poison-shared-1.log" 2>&1
first=$?
t1=$SECONDS
timeout 120 mpirun -np "$np" "$bin" "${clean[@]}" >"$out/mps-poison-shared-2.log" 2>&1
second=$?
t2=$SECONDS
echo "one daemon: first job exit $first in $((t1 - t0))s (want 3), second job exit $second in $((t2 - t1))s (want 0, or 4 naming the server)"
if [[ $second == 4 ]]; then
	grep '^artest:' "$out/mps-poison-shared-2.log" | head -3
	grep -q "likely still holds a job that ended while its kernels ran" "$out/mps-poison-shared-2.log" || ok=1
else
	tail -n 2 "$out/mps-poison-shared-2.log"
fi
[[ $first == 3 && ($second == 0 || $second == 4) ]] || ok=1
echo quit | timeout 10 nvidia-cuda-mps-control
for _ in $(seq 100); do kill -0 "$daemon" 2>/dev/null || break; sleep 0.1; done
if kill -0 "$daemon" 2>/dev/null; then
	servers=$(pgrep -P "$daemon")
	echo "mps-poison: the daemon did not quit; killing its servers ($servers) and it ($daemon)"
	kill -9 $servers "$daemon" 2>/dev/null
fi
unset CUDA_MPS_PIPE_DIRECTORY CUDA_MPS_LOG_DIRECTORY

t0=$SECONDS
timeout 60 "$bin" mps -- mpirun -np "$np" "$bin" "${hang[@]}" >"$out/mps-poison-own-1.log" 2>&1
first=$?
t1=$SECONDS
timeout 120 "$bin" mps -- mpirun -np "$np" "$bin" "${clean[@]}" >"$out/mps-poison-own-2.log" 2>&1
second=$?
t2=$SECONDS
echo "a daemon per job: first job exit $first in $((t1 - t0))s (want 3), second job exit $second in $((t2 - t1))s (want 0)"
grep '^artest mps:' "$out/mps-poison-own-1.log"
tail -n 2 "$out/mps-poison-own-2.log"
[[ $first == 3 && $second == 0 ]] || ok=1
rm -rf "$dir"
exit $ok
