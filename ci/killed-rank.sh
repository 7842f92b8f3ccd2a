#!/usr/bin/env bash
# On a GPU: a rank killed with SIGKILL mid-run. The other ranks must
# end within the timeout with a message naming the lost rank, and the JSON
# Lines file must keep every case that finished before the kill.
#
#   ci/killed-rank.sh NP BIN OUTDIR
#
# Exit 0 when all of that holds; prints what it saw.
set -uo pipefail
np=$1 bin=$2 out=$3
jl="$out/killed-rank-np$np.jsonl"
rm -f "$jl"
mpirun -np "$np" "$bin" --variant oneshot --dtype f32 --op sum --size 4:4M:x2 --mode oop,reg,plain,aligned \
	--iters 20000 --timeout 20s --jsonl "$jl" >"$out/killed-rank-np$np.out" 2>&1 &
job=$!
for _ in $(seq 600); do
	n=$(grep -c '^{"case":' "$jl" 2>/dev/null || true)
	((${n:-0} >= 2)) && break
	sleep 0.1
done
before=$(grep -c '^{"case":' "$jl" 2>/dev/null || echo 0)
# Rank 1: the artest process whose OMPI_COMM_WORLD_RANK is 1 (a child of mpirun).
victim=""
# (The pattern leaves out the binary's path: BIN may be a wrapper that execs it.)
for p in $(pgrep -P "$job" 2>/dev/null) $(pgrep -f -- "--variant oneshot --dtype f32 --op sum --size 4:4M:x2"); do
	if tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep -qx 'OMPI_COMM_WORLD_RANK=1'; then victim=$p; break; fi
done
if [[ -z $victim ]]; then
	echo "killed-rank: rank 1's process not found"
	kill "$job" 2>/dev/null
	exit 1
fi
t0=$SECONDS
kill -9 "$victim"
echo "killed rank 1 (pid $victim) after $before finished cases"
wait "$job"
rc=$?
took=$((SECONDS - t0))
after=$(grep -c '^{"case":' "$jl")
echo "mpirun exit $rc, $took s after the kill; JSONL holds $after case lines (>= $before before the kill)"
grep -i "rank 1" "$out/killed-rank-np$np.out" | head -3
grep -c '"verdict":"pass"' "$jl" | sed 's/^/passing case lines: /'
# Nothing left running on any GPU from this job. Under MPS the server is a
# compute process of its own (the job's daemon ends it after the job), so
# only processes other than an MPS server count.
sleep 1
left=$(nvidia-smi --query-compute-apps=pid,process_name --format=csv,noheader 2>/dev/null | grep -vc nvidia-cuda-mps-server)
echo "compute processes left on the GPUs: $left"
((rc != 0 && took <= 30 && after >= before && before >= 2 && left == 0)) && grep -qi "rank 1" "$out/killed-rank-np$np.out"
