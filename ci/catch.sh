#!/usr/bin/env bash
# Catch rates of stress's schedules against kernels that carry no fault
# hook: for each mutant of ci/mutant.sh (built into bin/mutants/ by
# `ci/gpu.sh` step mutants, or by hand), a plain `artest --stress N` over
# every variant (must exit 1: the time it took is the time to catch), then
# the mutated variant alone under each schedule, with CATCH_ARGS (default
# --dtype f32: the stress matrix's 10 f32 cases, to fit a GPU visit). Reports land in OUTDIR;
# ci/catch-summary.py prints the table.
#
#   ci/catch.sh NP ARTEST OUTDIR [STRESS]     (STRESS default 2000)
#
# ARTEST may be a wrapper that adds --share-gpus (ci/gpu.sh's). With
# CATCH_MPS set (ci/gpu.sh sets it to "artest mps --" when ranks share a
# GPU), each job runs under a daemon of its own: a job that hangs leaves
# its MPS server refusing new clients, which must not fail the next job.
set -uo pipefail
np=${1:?usage: ci/catch.sh NP ARTEST OUTDIR [STRESS]}
bin=${2:?}
out=${3:?}
stress=${4:-2000}
mps=${CATCH_MPS:-}
read -r -a args <<<"${CATCH_ARGS:---dtype f32}"
cd "$(dirname "$0")/.."
mkdir -p "$out"
rc=0
for m in oneshot-no-end-barrier:oneshot twoshot-no-mid-barrier:twoshot; do
	mut=${m%%:*} variant=${m##*:}
	fb=bin/mutants/$mut.fatbin
	if [[ ! -f $fb ]]; then
		echo "catch: $fb missing (ci/mutant.sh $mut $fb)" >&2
		rc=1
		continue
	fi
	t0=$SECONDS
	$mps mpirun -np "$np" "$bin" --stress "$stress" --fatbin "$fb" --json "$out/catch-$mut-plain-np$np.json" \
		>"$out/catch-$mut-plain-np$np.log" 2>&1
	got=$?
	echo "catch: $mut: plain --stress $stress over every variant: exit $got after $((SECONDS - t0)) s (want 1)" >&2
	[[ $got == 1 ]] || rc=1
	for sched in none poison-after-return skew straggler all; do
		t0=$SECONDS
		$mps mpirun -np "$np" "$bin" --stress "$stress" --fatbin "$fb" --variant "$variant" --schedule "$sched" "${args[@]}" \
			--json "$out/catch-$mut-$sched-np$np.json" >"$out/catch-$mut-$sched-np$np.log" 2>&1
		echo "catch: $mut: $variant --schedule $sched: exit $? after $((SECONDS - t0)) s" >&2
	done
done
python3 ci/catch-summary.py "$out"/catch-*-np"$np".json
exit $rc
