#!/usr/bin/env bash
# One GPU visit for the stress's default set and its catch of planted
# barrier bugs, kernels without fault hooks, in the settings the stress must
# hold in: one rank per GPU, and 2 and 4 ranks on one GPU under a private
# MPS daemon (artest mps --). Per setting:
#   default   plain `mpirun -np N artest --stress $STRESS` (every built-in
#             variant, the default set): its plan line, progress and time;
#   bugs      RUNS plain runs of `--stress $STRESS --variant V` against each
#             planted bug: (a) oneshot without its end barrier (ci/mutant.sh),
#             (b) the example plugin's no-end-barrier bug, (c) vLLM's
#             one-stage kernel without its end barrier (make
#             plugins-vllm-noend, built beforehand and carried in bin/), (d)
#             twoshot without its mid barrier (ci/mutant.sh); and the bugs
#             that need a peer's data to come late (ci/mutant.sh): (e)
#             oneshot-cpasync waiting for one cp.async group too few, (f) a
#             ring producer whose credit check is one slot short, (g)
#             twoshot's mid barrier without release/acquire;
#   clean     the same variants without the bugs, once: no failure, and the
#             witness's largest lead on a correct kernel.
# Reports and logs land in OUTDIR/SETTING/; OUTDIR/summary.txt gets the
# times and ci/catch-summary.py's table.
#
#   ci/probe-stress-catch.sh OUTDIR SETTING...   SETTING: gpus | gpusN | mps2 | mps4
#
# Environment: STRESS (default 2000), RUNS (default 5), BUGS (default
# "a b c d"), SKIP_DEFAULT=1 to leave out the default-set run, SKIP_CLEAN=1,
# JOB_TIMEOUT_S (default 300) bounds each job, WITNESS_DUMP=1 writes each
# job's per-iteration leads to SETTING/JOB.leads (ARTEST_WITNESS_DUMP), SKIP_BUILD=1 when the kernels, mutants and example plugin are built,
# BUG_ARGS: more flags for every bug and clean job (e.g. "--size 1M,4M
# --mode plain,aligned": other sizes than the default stress set's).
# BASELINE="--schedule poison-after-return,skew,straggler,link": each bug
# run again with these flags (the stress without its newest schedule), as
# bug-X-base-runN, and the default set once more as default-base.
# Safety: NCCL_NVLS_ENABLE=0; no step passes --allow-multicast.
set -uo pipefail
cd "$(dirname "$0")/.."
out=${1:?usage: ci/probe-stress-catch.sh OUTDIR SETTING...}
shift
stress=${STRESS:-2000}
runs=${RUNS:-5}
bugs=${BUGS:-a b c d}
bin=$PWD/bin/artest
mkdir -p "$out"
summary=$out/summary.txt

# shellcheck source=ci/probe-setting.sh
source ci/probe-setting.sh
probe_env

if [[ -z ${SKIP_BUILD:-} ]]; then
	t0=$SECONDS
	{
		make kernels >/dev/null &&
			ci/mutant.sh oneshot-no-end-barrier bin/mutants/oneshot-no-end-barrier.fatbin &&
			ci/mutant.sh twoshot-no-mid-barrier bin/mutants/twoshot-no-mid-barrier.fatbin &&
			ci/mutant.sh cpasync-wait-short bin/mutants/cpasync-wait-short.fatbin &&
			ci/mutant.sh ring-credit-short bin/mutants/ring-credit-short.fatbin &&
			ci/mutant.sh twoshot-mid-relaxed bin/mutants/twoshot-mid-relaxed.fatbin &&
			make plugins-cuda >/dev/null
	} >"$out/build.log" 2>&1 || {
		echo "build failed" | tee -a "$summary"
		tail -20 "$out/build.log"
		exit 1
	}
	echo "build: $((SECONDS - t0)) s" | tee -a "$summary"
fi

# bug LETTER: the flags of that planted bug (and, after --, its clean twin's).
bug_flags() {
	case $1 in
	a) echo "--variant oneshot --fatbin bin/mutants/oneshot-no-end-barrier.fatbin -- --variant oneshot" ;;
	b) echo "--variant example:oneshot --plugin bin/plugins/cuda_oneshot.so -- --variant example:oneshot --plugin bin/plugins/cuda_oneshot.so" ;;
	c) echo "--variant vllm:custom --plugin bin/plugins/vllm_noend.so -- --variant vllm:custom --plugin bin/plugins/vllm.so" ;;
	d) echo "--variant twoshot --fatbin bin/mutants/twoshot-no-mid-barrier.fatbin -- --variant twoshot" ;;
	e) echo "--variant oneshot-cpasync --fatbin bin/mutants/cpasync-wait-short.fatbin -- --variant oneshot-cpasync" ;;
	f) echo "--variant ring --fatbin bin/mutants/ring-credit-short.fatbin -- --variant ring" ;;
	g) echo "--variant twoshot --fatbin bin/mutants/twoshot-mid-relaxed.fatbin -- --variant twoshot" ;;
	esac
}

for setting in "$@"; do
	d=$out/$setting
	mkdir -p "$d"
	probe_setting "$setting" || exit 2
	job() { # NAME ENV-OR-- FLAGS...: one mpirun, its log and report
		local name=$1 env=$2
		shift 2
		local x=()
		[[ $env != - ]] && x=(-x "$env")
		# Settings under comparison: the link load's block split, the
		# load's kind and its blocks per SM, the witness's stamps
		# (straggle.go, stamp.go).
		for v in ARTEST_LINK_LOAD ARTEST_LOAD_KIND ARTEST_LOAD_SM_BLOCKS ARTEST_WITNESS_STAMP ARTEST_WITNESS_LOAD_STAMPS; do
			[[ -n ${!v:-} ]] && x+=(-x "$v")
		done
		# Every iteration's lead, for choosing the witness's thresholds.
		[[ -n ${WITNESS_DUMP:-} ]] && x+=(-x "ARTEST_WITNESS_DUMP=$d/$name.leads")
		local t0=$SECONDS
		timeout --kill-after=10 "${JOB_TIMEOUT_S:-300}" "${pre[@]}" mpirun -np "$np" "${x[@]}" "$bin" "${share[@]}" --stress "$stress" \
			--json "$d/$name.json" "$@" >"$d/$name.log" 2>&1
		local rc=$?
		printf '%-6s %-28s exit %3d %4d s\n' "$setting" "$name" "$rc" $((SECONDS - t0)) | tee -a "$summary"
	}
	read -r -a base <<<"${BASELINE:-}"
	if [[ -z ${SKIP_DEFAULT:-} ]]; then
		job default -
		grep -m1 '# stress plan' "$d/default.log" | tee -a "$summary"
		if ((${#base[@]})); then
			job default-base - "${base[@]}"
			grep -m1 '# stress plan' "$d/default-base.log" | tee -a "$summary"
		fi
	fi
	for b in $bugs; do
		read -r -a f <<<"$(bug_flags "$b")"
		bugf=() cleanf=() seen=
		for w in "${f[@]}"; do
			if [[ $w == -- ]]; then seen=1; elif [[ -n $seen ]]; then cleanf+=("$w"); else bugf+=("$w"); fi
		done
		env=-
		[[ $b == b ]] && env=ARTEST_EXAMPLE_BUG=no-end-barrier
		for r in $(seq 1 "$runs"); do
			job "bug-$b-run$r" "$env" "${bugf[@]}" ${BUG_ARGS:-} --seed "$r"
		done
		if ((${#base[@]})); then
			for r in $(seq 1 "$runs"); do
				job "bug-$b-base-run$r" "$env" "${bugf[@]}" ${BUG_ARGS:-} --seed "$r" "${base[@]}"
			done
		fi
		[[ -z ${SKIP_CLEAN:-} ]] && job "clean-$b" - "${cleanf[@]}" ${BUG_ARGS:-}
	done
done
python3 ci/catch-summary.py "$out"/*/*.json | tee -a "$summary"
