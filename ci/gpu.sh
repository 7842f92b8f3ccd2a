#!/usr/bin/env bash
# What a GPU runner executes: build the kernels, run the default matrix, the
# stress mode, the fault switches that must fail, a hang that must be
# diagnosed, and hostile environments, with the world sizes the node allows.
# Every step's output, JSON and JUnit lands in OUTDIR; a table of the steps
# and their exit codes is printed last.
#
#   ci/gpu.sh [OUTDIR]          (default: bin/gpu-results)
#
# Environment:
#   ARTEST_BIN      the artest binary (default bin/artest, built by make build)
#   ARTEST_NCCL     libnccl.so.2 to use (default: the Python wheel's if present)
#   GPU_NPS         world sizes to run (default: the GPU count). A world
#                   larger than the GPU count shares GPUs: each step then
#                   runs under its own MPS daemon (artest mps --) with
#                   --share-gpus, and the timing steps are not run (shared
#                   times mean nothing)
#   GPU_BUDGET_S    start no step after this many seconds (default: no limit)
#   STRESS          back-to-back iterations for the stress steps (default 10000)
#   PLUGIN_STRESS   the same for the plugins' stress steps (default 2000)
#   STRESS_ARGS     extra flags for the stress step, e.g. "--variant ring"
#                   (note: --size replaces the small stress matrix with the
#                   default matrix's modes and ops at those sizes: far more cases)
#   MATRIX_ARGS     extra flags for the matrix step, e.g. "--variant ring"
#   MATRIX_TIMEOUT_S, STRESS_TIMEOUT_S  time limits of those steps (default 420)
#   FAULT_VARIANTS  variants of the no-end-barrier step (default oneshot,oneshot-cpasync)
#   STEPS           space-separated subset of steps to run (default: all)
#   NCCL_TESTS_SRC  an nccl-tests source tree: adds the nccl-tests step
#                   (ci/nccl-tests.sh), built here against artest's NCCL;
#                   with NO_SHIFT=1 it also times nccl-tests with its
#                   buffers held in place
#
# Safety: NVLS multicast is never used. NCCL_NVLS_ENABLE=0 and friends are
# exported for every rank, and no step passes --allow-multicast (never add
# it here): the default matrix includes the multimem variant, and without
# the flag its safety gate reports every multimem case skipped, resolving no
# multicast entry point at all; the multicast-off step checks that the
# report says so. The sass-multimem step only reads the fatbin (cuobjdump).
set -uo pipefail

cd "$(dirname "$0")/.."
out=${1:-bin/gpu-results}
mkdir -p "$out"
bin=${ARTEST_BIN:-bin/artest}
stress=${STRESS:-10000}

export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# Open MPI binds each rank to one core when there are 2 ranks or fewer (and
# to a socket above): the stress step's host-side checking then runs on one
# core per rank (64 KiB f16 cases took 10 s each on 2 ranks). The launch
# thread stays on its own OS thread (LockOSThread) either way.
export OMPI_MCA_hwloc_base_binding_policy=none
# Load every kernel at module load: ranks spin waiting for each other, and a
# lazily loaded kernel would stall its rank mid-protocol.
export CUDA_MODULE_LOADING=EAGER
if [[ -z "${ARTEST_NCCL:-}" ]]; then
	for p in /opt/torch/.venv/lib/python3*/site-packages/nvidia/nccl/lib/libnccl.so.2; do
		[[ -e $p ]] && export ARTEST_NCCL=$p && break
	done
fi

ngpu=$(nvidia-smi -L 2>/dev/null | wc -l)
if ((ngpu == 0)); then
	echo "gpu.sh: no GPU (nvidia-smi -L lists none)" >&2
	exit 4
fi
nps=${GPU_NPS:-$ngpu}
# The variant lists come from the binary: every custom variant is every
# built-in one beside the NCCL baselines (named nccl and nccl-*, which
# kernels/registry/conformance_test.go holds them to).
custom=$("$bin" --list-variants | grep -v -e '^nccl$' -e '^nccl-' | paste -sd, -)
if [[ -z $custom ]]; then
	echo "gpu.sh: $bin --list-variants listed no custom variant" >&2
	exit 4
fi
# Steps stop being started after this many seconds, so that a runner with a
# time limit still gets every log back.
budget=${GPU_BUDGET_S:-100000}

# prefix runs before every step's command: in a world that shares GPUs, a
# private MPS daemon for that step alone, so a step that hangs cannot leave
# the next one a poisoned MPS server.
prefix=()
summary="$out/summary.txt"
: >"$summary"
want_all=${STEPS:-all}

# step NAME EXPECTED TIMEOUT CMD...: runs CMD with a time limit, logs to
# OUTDIR/NAME.log, and records whether the exit code was the expected one.
step() {
	local name=$1 expect=$2 limit=$3
	shift 3
	if [[ $want_all != all && " $want_all " != *" ${name%%-np*} "* ]]; then
		return 0
	fi
	local t0=$SECONDS
	if ((SECONDS > budget)); then
		printf '%-28s not run: past GPU_BUDGET_S=%s\n' "$name" "$budget" | tee -a "$summary" >&2
		return 0
	fi
	# Checks of earlier logs (grep) need no daemon.
	local pre=("${prefix[@]}")
	[[ $1 == grep ]] && pre=()
	# ci/catch.sh starts a daemon per job itself (CATCH_MPS), and so does
	# ci/probe-stress-catch.sh in its mpsN settings.
	[[ $1 == ci/catch.sh || " $* " == *" ci/probe-stress-catch.sh "* ]] && pre=()
	echo "== $name: ${pre[*]} $*" >&2
	timeout --kill-after=10 "$limit" "${pre[@]}" "$@" >"$out/$name.log" 2>&1
	local rc=$?
	local verdict=ok
	[[ $rc == "$expect" ]] || verdict=UNEXPECTED
	printf '%-28s exit %3d (want %s) %5ds  %s\n' "$name" "$rc" "$expect" $((SECONDS - t0)) "$verdict" | tee -a "$summary" >&2
	tail -n 4 "$out/$name.log" | sed 's/^/    /' >&2
	return 0
}

{
	echo "# $(date -u +%FT%TZ) $(hostname)"
	nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv
	nvidia-smi topo -m
	/usr/local/cuda/bin/nvcc --version 2>/dev/null | tail -2
	echo "ARTEST_NCCL=${ARTEST_NCCL:-}"
	"$bin" --version
} >"$out/machine.txt" 2>&1

step kernels 0 300 make --no-print-directory kernels
# The example plugin (plugin/example/cuda_oneshot.cu), with the toolkit's nvcc.
step plugins-cuda 0 300 make --no-print-directory plugins-cuda
plugin=$PWD/bin/plugins/cuda_oneshot.so
# The adapter plugins (plugin/adapters): vLLM's and TensorRT-LLM's custom
# allreduces from the pinned flashinfer-python wheel's headers (ci/install-flashinfer.sh downloads
# it: this step needs the package index, or a .tools/flashinfer fetched
# beforehand on a machine that has it, which the script reuses).
step plugins 0 300 make --no-print-directory plugins
vllm=$PWD/bin/plugins/vllm.so
trtllm=$PWD/bin/plugins/trtllm.so
trtllm_fusion=$PWD/bin/plugins/trtllm_fusion.so
pcie_ipc=$PWD/bin/plugins/pcie_ipc.so
# An experiment, run only when STEPS names it (it costs another 2 to 3
# minutes of nvcc): TensorRT-LLM's adapter built against headers with
# __syncthreads() at the start of block_barrier (plugin/plugin.mk).
if [[ $want_all != all ]]; then
	step plugins-trtllm-syncfix 0 300 make --no-print-directory plugins-trtllm-syncfix
fi
trtllm_syncfix=$PWD/bin/plugins/trtllm_syncfix.so
# Kernels with a protection deleted from the source and the fault hooks
# compiled out (ci/mutant.sh), for the catch step; a fatbin already there
# (built beforehand on a machine with nvcc and carried) is kept.
step mutants 0 600 bash -c 'for m in oneshot-no-end-barrier twoshot-no-mid-barrier pull-no-end-barrier cpasync-wait-short ring-credit-short twoshot-mid-relaxed; do
	[[ -f bin/mutants/$m.fatbin ]] || ci/mutant.sh $m bin/mutants/$m.fatbin || exit 1; done'
# Compile-only: the multimem kernels hold LDGMC (multimem.ld_reduce) in SASS
# and multimem.st in PTX. (grep -i multimem on SASS finds nothing: ptxas
# names the instructions LDGMC and STG.) Nothing runs on the GPU.
step sass-multimem 0 120 ci/check-multimem-sass.sh bin/artest.fatbin

# nottimed NAME: a timing step that a world sharing GPUs does not run.
nottimed() {
	[[ $want_all != all && " $want_all " != *" ${1%%-np*} "* ]] && return 0
	printf '%-28s not run: ranks share GPUs, times mean nothing\n' "$1" | tee -a "$summary" >&2
}

# Sharing GPUs without MPS stops at once, in one line, exit 4 (no daemon
# runs outside the steps' own).
if [[ " $nps " == *" $((ngpu * 2)) "* || $(echo "$nps" | awk -v g="$ngpu" '{for (i = 1; i <= NF; i++) if ($i > g) print 1}') ]]; then
	step "no-mps" 4 5 mpirun -np $((ngpu * 2)) "$bin" --share-gpus --quick
	step "why-no-mps" 0 5 grep -q "but no MPS server serves them" "$out/no-mps.log"
	# A hang under one long-lived daemon, then another job on it: it runs
	# clean, or stops in one line naming the poisoned server (exit 4).
	step "mps-poison" 0 180 ci/mps-poison.sh $((ngpu * 2)) "$bin" "$out"
fi

realbin=$(realpath "$bin")
for np in $nps; do
	r="$out"
	bin=$realbin shared=""
	prefix=()
	if ((np > ngpu)); then
		shared=1
		prefix=("$realbin" mps --)
		# Every rank gets --share-gpus; a wrapper keeps the steps' lines
		# (and the scripts they call) as they are.
		bin=$realbin-shared
		printf '#!/bin/sh\nexec %s "$@" --share-gpus\n' "$realbin" >"$bin"
		chmod +x "$bin"
	fi
	step "smoke-np$np" 0 120 mpirun -np "$np" "$bin" --quick --json "$r/smoke-np$np.json"
	# The gate stayed closed: the header says why, and multimem was skipped.
	step "multicast-off-np$np" 0 10 grep -q "off: --allow-multicast not given" "$r/smoke-np$np.json"
	if ! grep -q "^smoke-np$np .* ok$" "$summary" && [[ $want_all == all ]]; then
		echo "gpu.sh: the smoke run failed on $np ranks; skipping the long steps" >&2
		continue
	fi
	step "matrix-np$np" 0 "${MATRIX_TIMEOUT_S:-420}" mpirun -np "$np" "$bin" ${MATRIX_ARGS:-} --progress \
		--jsonl "$r/matrix-np$np.jsonl" --json "$r/matrix-np$np.json" --junit "$r/matrix-np$np.xml"
	step "stress-np$np" 0 "${STRESS_TIMEOUT_S:-420}" mpirun -np "$np" "$bin" --stress "$stress" ${STRESS_ARGS:-} --progress \
		--jsonl "$r/stress-np$np.jsonl" --json "$r/stress-np$np.json" --junit "$r/stress-np$np.xml"
	# Special inputs (signed zeros, subnormals, Inf, NaN, the largest
	# values; reference/special.go) on every variant: exactly the default
	# matrix's special cases (4100 B and 64 KiB, every dtype and op,
	# out of place registered and in place staged), checked once, not timed.
	step "special-np$np" 0 240 bash -c 'for m in oop,reg,plain,aligned ip,stg,plain,aligned; do
		mpirun -np "$0" "$1" --input special --size 4100,64K --mode $m --iters 0 --json "$2/special-${m%%,*}-np$0.json" || exit 1
		done' "$np" "$bin" "$r"
	# The device checker (artest_check) against the Go reference: every
	# iteration checked on the GPU, some on the host too; a disagreement
	# fails the case as kind "checker". Random inputs (bit-exact and bound
	# checks), exact inputs, and a planted bug it must see.
	step "devcheck-np$np" 0 180 mpirun -np "$np" "$bin" --stress 200 --check device --variant oneshot,ring \
		--dtype bf16,f16,f32 --op sum,max --size 4100,1M --mode oop,reg,plain --json "$r/devcheck-np$np.json"
	step "devcheck-exact-np$np" 0 180 mpirun -np "$np" "$bin" --stress 200 --check device --input exact --variant oneshot,ring \
		--dtype bf16,f16,f32 --op sum --size 4100,1M --mode oop,reg,plain --json "$r/devcheck-exact-np$np.json"
	step "devcheck-planted-np$np" 1 120 mpirun -np "$np" "$bin" --stress 200 --check device --variant oneshot --dtype bf16 \
		--op sum --size 4M --mode oop,reg,plain --schedule none --inject skip-last --json "$r/devcheck-planted-np$np.json"
	step "why-devcheck-planted-np$np" 0 5 grep -q "200 of 200 stress iterations wrong" "$out/devcheck-planted-np$np.log"
	# Launch skew on the GPU (artest_delay before a late rank's input copy).
	step "skew-np$np" 0 180 mpirun -np "$np" "$bin" --stress 2000 --schedule skew --variant oneshot --dtype f32 --op sum \
		--size 64K --mode oop,reg,plain --json "$r/skew-np$np.json"
	step "why-skew-np$np" 0 5 bash -c '! grep -q "skew off" "$0" && grep -q "schedules skew" "$0"' "$out/skew-np$np.log"
	# The straggler schedule on the GPU (artest_load beside a rank's call):
	# on, and clean on a correct kernel.
	step "straggler-np$np" 0 180 mpirun -np "$np" "$bin" --stress 2000 --schedule straggler --variant oneshot,twoshot --dtype f32 \
		--op sum --size 64K,1M --mode oop,reg,plain --json "$r/straggler-np$np.json"
	step "why-straggler-np$np" 0 5 bash -c '! grep -q "straggler off" "$0" && grep -q "schedules straggler" "$0"' "$out/straggler-np$np.log"
	# Mutants (a protection deleted in the source, no fault hooks): plain
	# --stress must fail them; then each schedule's catch rate alone.
	CATCH_MPS="${prefix[*]}" step "catch-np$np" 0 "${CATCH_TIMEOUT_S:-420}" ci/catch.sh "$np" "$bin" "$r" "${CATCH_STRESS:-2000}"
	# Without the end barrier, and with the last rank slow to read, fast
	# ranks overwrite their registered inputs while it still reads them.
	step "fault-no-end-barrier-np$np" 1 180 mpirun -np "$np" "$bin" --variant "${FAULT_VARIANTS:-oneshot,oneshot-cpasync}" --stress 2000 \
		--inject no-end-barrier --inject "delay:rank=$((np - 1)),us=200" --json "$r/fault-np$np.json"
	# Exit 1 alone could be a launch error: the failure must be wrong data.
	step "why-no-end-barrier-np$np" 0 5 grep -q "stress iterations wrong" "$out/fault-no-end-barrier-np$np.log"
	# The other collectives (--coll): pull's reduce-scatter and all-gather
	# beside NCCL's, checked, then stressed; without pull's end barrier
	# (the switch with no delay hook, then the mutant with no switch at
	# all) plain stress must fail them.
	step "colls-np$np" 0 300 mpirun -np "$np" "$bin" --coll reduce-scatter,all-gather --variant pull,nccl,nccl-reg --quick \
		--json "$r/colls-np$np.json"
	# The default matrix of both collectives (every dtype, op, size and
	# mode of the default matrix, special inputs included) for pull and NCCL.
	step "colls-matrix-np$np" 0 "${MATRIX_TIMEOUT_S:-420}" mpirun -np "$np" "$bin" --coll reduce-scatter,all-gather \
		--variant pull,nccl,nccl-reg --progress --jsonl "$r/colls-matrix-np$np.jsonl" --json "$r/colls-matrix-np$np.json" \
		--junit "$r/colls-matrix-np$np.xml"
	step "colls-stress-np$np" 0 300 mpirun -np "$np" "$bin" --coll reduce-scatter,all-gather --variant pull --stress 2000 \
		--json "$r/colls-stress-np$np.json"
	step "fault-pull-no-end-barrier-np$np" 1 180 mpirun -np "$np" "$bin" --coll reduce-scatter,all-gather --variant pull \
		--stress 2000 --inject no-end-barrier --json "$r/fault-pull-np$np.json"
	step "why-pull-no-end-barrier-np$np" 0 5 grep -q "stress iterations wrong" "$out/fault-pull-no-end-barrier-np$np.log"
	step "catch-pull-np$np" 1 300 mpirun -np "$np" "$bin" --coll reduce-scatter,all-gather --variant pull --stress 2000 \
		--fatbin bin/mutants/pull-no-end-barrier.fatbin --json "$r/catch-pull-np$np.json"
	# Without the ring's credit wait, and with the last rank slow to start,
	# its left neighbour overwrites slots it has not read. Small rings make
	# thousands of pieces wrap around; 4 slots, not 2: a producer can run
	# at most 2 x 3 pieces ahead at 2 ranks, more than 4 slots (with 2
	# slots, 2 x 1: never more than the ring; kernels/ring/protocol.go).
	step "fault-no-credit-wait-np$np" 1 180 mpirun -np "$np" "$bin" --variant ring --dtype f32 --op sum --size 64K \
		--mode oop,reg,plain,aligned --stress 2000 --param slots=4 --param slot-bytes=1024 \
		--inject no-credit-wait --inject "delay:rank=$((np - 1)),us=200" --json "$r/fault-no-credit-np$np.json"
	step "why-no-credit-wait-np$np" 0 5 grep -q "stress iterations wrong" "$out/fault-no-credit-wait-np$np.log"
	step "hang-ring-np$np" 3 60 mpirun -np "$np" "$bin" --variant ring --dtype f32 --op sum --size 64K \
		--mode oop,reg,plain,aligned --inject "delay:rank=$((np - 1)),us=3000000" --timeout 1s
	# The four planted barrier bugs (a to d: ci/probe-stress-catch.sh), 5
	# plain --stress 2000 runs each and their clean twins, under the
	# default schedules (link included where ranks have a link): the
	# catch table of docs/checks.md. Only when STEPS names it (about 5
	# minutes at 2 ranks); needs bin/plugins/vllm_noend.so (make
	# plugins-vllm-noend) and the mutants.
	if [[ $want_all != all ]]; then
		if [[ -n $shared ]]; then catchset=mps$np; else catchset=gpus$np; fi
		step "catch-bugs-np$np" 0 420 env SKIP_BUILD=1 SKIP_DEFAULT=1 RUNS=5 JOB_TIMEOUT_S=60 \
			ci/probe-stress-catch.sh "$r/catch-bugs-np$np" "$catchset"
	fi
	step "fault-planted-np$np" 1 60 mpirun -np "$np" "$bin" --variant oneshot,twoshot --dtype bf16 --op sum \
		--size 4100 --mode oop,plain,aligned --inject skip-last --inject overrun --json "$r/planted-np$np.json"
	step "fault-wrong-kernel-np$np" 1 60 mpirun -np "$np" "$bin" --variant twoshot --dtype f32 --op sum \
		--size 64K --mode oop,reg,plain,aligned --inject wrong-kernel --json "$r/wrong-kernel-np$np.json"
	# oneshot-cpasync computes oneshot's bits: only the trace word can see
	# a dispatcher that ran plain oneshot instead.
	step "fault-wrong-kernel-cpasync-np$np" 1 60 mpirun -np "$np" "$bin" --variant oneshot-cpasync --dtype f32 --op sum \
		--size 64K --mode oop,reg,plain,aligned --inject wrong-kernel --json "$r/wrong-kernel-cpasync-np$np.json"
	step "why-wrong-kernel-cpasync-np$np" 0 5 grep -q "but the kernel that ran wrote oneshot" "$out/fault-wrong-kernel-cpasync-np$np.log"
	# Lane counts 1, 2 and the maximum (32), each verified, small to large.
	step "ring-lanes-np$np" 0 180 bash -c 'for lanes in 1 2 32; do mpirun -np "$0" "$1" --variant ring --param lanes=$lanes \
		--dtype bf16,f32 --op sum --size 4,4100,1M,16M --mode oop,reg --json "$2/ring-lanes$lanes-np$0.json" || exit 1; done' \
		"$np" "$bin" "$r"
	# Benchmark mode: the default sweep (1K to 256M by x2, bf16
	# sum, plain and graph), every variant beside NCCL, each case checked
	# once then timed; a plot; and compare against itself (must exit 0).
	if [[ -n $shared ]]; then nottimed "bench-np$np"; else
	step "bench-np$np" 0 300 mpirun -np "$np" "$bin" bench --json "$r/bench-np$np.json" --plot "$r/bench-np$np.svg"
	fi
	if [[ -n $shared ]]; then nottimed "bench-compare-np$np"; else
	step "bench-compare-np$np" 0 30 "$bin" compare "$r/bench-np$np.json" "$r/bench-np$np.json"
	fi
	# PDL: each call poisons the input, the producer kernel writes
	# it, and the allreduce is launched with programmatic stream
	# serialization; the kernels wait (griddepcontrol.wait) and pass. Without
	# the wait they read the poison: exit 1 with mismatches. bench-pdl times
	# the same calls with and without PDL (nopdl_time_us, pdl_gain_us).
	step "pdl-np$np" 0 240 mpirun -np "$np" "$bin" --pdl --variant "$custom" --dtype bf16 \
		--op sum --size 4K,64K,1M,16M --mode oop,reg --json "$r/pdl-np$np.json"
	step "fault-pdl-no-wait-np$np" 1 240 mpirun -np "$np" "$bin" --pdl --inject pdl-no-wait \
		--variant "$custom" --dtype bf16 --op sum --size 4K,64K,1M,16M --mode oop,reg \
		--json "$r/fault-pdl-no-wait-np$np.json"
	step "why-pdl-no-wait-np$np" 0 5 grep -q "mismatch" "$out/fault-pdl-no-wait-np$np.log"
	if [[ -n $shared ]]; then nottimed "bench-pdl-np$np"; else
	step "bench-pdl-np$np" 0 300 mpirun -np "$np" "$bin" bench -b 4K -e 16M -f 4 --pdl --variant oneshot,twoshot \
		--json "$r/bench-pdl-np$np.json"
	fi
	# Overlap with compute: every case timed again with artest_compute's 66
	# blocks (half an H100's SMs) running beside the calls; the report has
	# overlap_time_us, load_alone_us, load_with_allreduce_us, load_slowdown.
	if [[ -n $shared ]]; then nottimed "bench-overlap-np$np"; else
	step "bench-overlap-np$np" 0 300 mpirun -np "$np" "$bin" bench -b 64K -e 64M -f 4 --overlap 66 \
		--variant oneshot,twoshot,nccl --json "$r/bench-overlap-np$np.json"
	fi
	# SM budgets: each collective's grid capped at 8, 16, 32 and 66 blocks
	# (NCCL's by NCCL_MAX_CTAS) beside a compute load of fixed work on the
	# other multiprocessors; ci/sm-budget-table.py puts the four reports in
	# one table with the budget that finishes the pair soonest.
	if [[ -n $shared ]]; then nottimed "bench-sm-budget-np$np"; else
	step "bench-sm-budget-np$np" 0 420 bash -c 'for b in 8 16 32 66; do
		mpirun -np "$0" "$1" bench --sm-budget $b --coll allreduce,reduce-scatter,all-gather --variant oneshot,twoshot,pull,nccl \
			--size 1M,16M,64M --mode oop,reg,graph --json "$2/bench-smb$b-np$0.json" || exit 1
		done; python3 ci/sm-budget-table.py "$2"/bench-smb{8,16,32,66}-np$0.json' "$np" "$bin" "$r"
	fi
	# NVIDIA's nccl-tests beside artest's nccl and nccl-reg (ci/nccl-tests.sh),
	# when NCCL_TESTS_SRC names an nccl-tests source tree carried here.
	if [[ -n $shared ]]; then nottimed "nccl-tests-np$np"; elif [[ -n ${NCCL_TESTS_SRC:-} ]]; then
	step "nccl-tests-np$np" 0 420 ci/nccl-tests.sh "$NCCL_TESTS_SRC" "$r/nccl-tests-np$np" "$np"
	fi
	# Reduce-scatter and all-gather: pull beside NCCL, plain and registered.
	if [[ -n $shared ]]; then nottimed "bench-colls-np$np"; else
	step "bench-colls-np$np" 0 300 mpirun -np "$np" "$bin" bench --coll reduce-scatter,all-gather --variant pull,nccl,nccl-reg \
		-b 1K -e 256M -f 4 --json "$r/bench-colls-np$np.json"
	fi
	# Consecutive allreduces launched with PDL after each other (bench
	# --pdl-chain): the chained time and the gain per case.
	if [[ -n $shared ]]; then nottimed "bench-chain-np$np"; else
	step "bench-chain-np$np" 0 300 mpirun -np "$np" "$bin" bench -b 4K -e 64M -f 4 --pdl-chain \
		--variant "$custom" --mode oop-reg --json "$r/bench-chain-np$np.json"
	fi
	# twoshot's gather, pull against push, on one sweep (bf16 sum oop reg).
	if [[ -n $shared ]]; then nottimed "bench-gather-np$np"; else
	step "bench-gather-np$np" 0 240 bash -c 'for g in 1 2; do mpirun -np "$0" "$1" bench --variant twoshot --param gather=$g \
		-b 64K -e 256M -f 4 --json "$2/bench-gather$g-np$0.json" || exit 1; done' "$np" "$bin" "$r"
	fi
	# Push without the mid barrier: peers copy staging before the pushes land.
	step "fault-no-mid-barrier-push-np$np" 1 180 mpirun -np "$np" "$bin" --variant twoshot --param gather=2 --dtype f32 --op sum \
		--size 64K --mode oop,reg,plain,aligned --stress 2000 --inject no-mid-barrier --inject "delay:rank=$((np - 1)),us=200" \
		--json "$r/fault-no-mid-push-np$np.json"
	step "why-no-mid-barrier-push-np$np" 0 5 grep -q "stress iterations wrong" "$out/fault-no-mid-barrier-push-np$np.log"
	# Memory checking: a small matrix under compute-sanitizer;
	# racecheck where shared memory is used (oneshot-cpasync's pipeline).
	# --error-exitcode makes any report fail the step.
	# NCCL is left out (-x ARTEST_NCCL=...): its own kernel set-up reports
	# errors under the sanitizer (cudaErrorNoKernelImageForDevice in
	# ncclInitKernelsForDevice, seen on H200 with NCCL 2.28.9), which are
	# not artest's.
	san=${SANITIZER:-/usr/local/cuda/bin/compute-sanitizer}
	if [[ -n $shared ]]; then nottimed "sanitizer-memcheck-np$np"; else
	step "sanitizer-memcheck-np$np" 0 300 mpirun -np "$np" -x ARTEST_NCCL=/nonexistent/libnccl.so.2 "$san" --tool memcheck --error-exitcode 9 --print-limit 20 \
		"$bin" --variant "$custom" --dtype bf16,f32 --op sum --size 4100,64K \
		--mode oop,reg,plain --iters 2 --reps 1 --warmup 0 --device-timeout 120s --timeout 300s --json "$r/sanitizer-memcheck-np$np.json"
	fi
	if [[ -n $shared ]]; then nottimed "sanitizer-racecheck-np$np"; else
	step "sanitizer-racecheck-np$np" 0 300 mpirun -np "$np" -x ARTEST_NCCL=/nonexistent/libnccl.so.2 "$san" --tool racecheck --error-exitcode 9 --print-limit 20 \
		"$bin" --variant oneshot-cpasync --dtype bf16 --op sum --size 64K --mode oop,reg,plain,aligned \
		--iters 2 --reps 1 --warmup 0 --device-timeout 120s --timeout 300s --json "$r/sanitizer-racecheck-np$np.json"
	fi
	# oneshot-ll: without the sequence check a late rank's slots are read
	# stale; a rank that never pushes is diagnosed at the slot.
	step "fault-ll-no-flag-np$np" 1 180 mpirun -np "$np" "$bin" --variant oneshot-ll --dtype f32 --op sum --size 64K \
		--mode oop,reg,plain,aligned --stress 2000 --inject ll-no-flag --inject "delay:rank=$((np - 1)),us=200" \
		--json "$r/fault-ll-np$np.json"
	step "why-ll-no-flag-np$np" 0 5 grep -q "stress iterations wrong" "$out/fault-ll-no-flag-np$np.log"
	step "hang-ll-np$np" 3 60 mpirun -np "$np" "$bin" --variant oneshot-ll --dtype f32 --op sum --size 4K \
		--mode oop,reg,plain,aligned --inject "delay:rank=$((np - 1)),us=5000000" --device-timeout 1s --timeout 30s
	step "why-hang-ll-np$np" 0 5 grep -q "waiting for LL slot .* from rank $((np - 1))" "$out/hang-ll-np$np.log"
	# oneshot-sentinel: a reader that does not wait for its slots, or does
	# not clear them, reads empty or stale data beside a late rank; a rank
	# that never pushes is diagnosed at the slot.
	for fault in sentinel-no-wait sentinel-no-clear; do
		step "fault-$fault-np$np" 1 180 mpirun -np "$np" "$bin" --variant oneshot-sentinel --dtype f32 --op sum --size 64K \
			--mode oop,reg,plain,aligned --stress 2000 --inject "$fault" --inject "delay:rank=$((np - 1)),us=200" \
			--json "$r/fault-$fault-np$np.json"
	done
	step "hang-sentinel-np$np" 3 60 mpirun -np "$np" "$bin" --variant oneshot-sentinel --dtype f32 --op sum --size 4K \
		--mode oop,reg,plain,aligned --inject "delay:rank=$((np - 1)),us=5000000" --device-timeout 1s --timeout 30s
	step "why-hang-sentinel-np$np" 0 5 grep -q "waiting for slot .* from rank $((np - 1)) to be written" "$out/hang-sentinel-np$np.log"
	# Benchmark sweep by x4 (the perf page's tables), every variant.
	if [[ -n $shared ]]; then nottimed "bench4-np$np"; else
	step "bench4-np$np" 0 300 mpirun -np "$np" "$bin" bench -b 1K -e 256M -f 4 --json "$r/bench4-np$np.json" \
		--plot "$r/bench4-np$np.svg"
	fi
	# artest tune: small sizes with the whole launch space, large
	# sizes with the plausible corner of it; tables as JSON, C++ and Go.
	if [[ -n $shared ]]; then nottimed "tune-np$np"; else
	step "tune-np$np" 0 "${TUNE_TIMEOUT_S:-330}" bash -c 'np=$0 bin=$1 r=$2
		mpirun -np "$np" "$bin" tune -b 1K -e 1M --variant oneshot,oneshot-ll,twoshot \
			--tune-blocks 8,16,32,64,132 --tune-threads ${TUNE_SMALL_THREADS:-32,64,128,256,512} --tune-param gather=1,2 \
			--budget ${TUNE_SMALL_S:-70} --json "$r/tune-small-np$np.json" || exit 1
		mpirun -np "$np" "$bin" tune -b 4M -e 256M --variant twoshot,ring --tune-blocks 36,64,132,256 --tune-threads 512 \
			--tune-param gather=1,2 --tune-param lanes=16,32 --tune-param slot-bytes=64K,256K --tune-param slots=8 \
			--budget ${TUNE_LARGE_S:-150} --merge "$r/tune-small-np$np.json" --json "$r/tune-np$np.json" \
			--header "$r/tuned-np$np.h" --go "$r/tuned-np$np.go"' "$np" "$bin" "$r"
	fi
	# What the claim atomic of epoch_begin costs (the detection of
	# concurrent use): the same small sweep with a fatbin built with a plain
	# load in its place (ci/experiment.sh no-claim, measurement only).
	if [[ -n $shared ]]; then nottimed "claim-cost-np$np"; else
	step "claim-cost-np$np" 0 200 bash -c 'np=$0 bin=$1 r=$2
		ci/experiment.sh no-claim bin/noclaim.fatbin sm_90 || exit 1
		for fb in bin/artest.fatbin bin/noclaim.fatbin; do
			mpirun -np "$np" "$bin" bench --fatbin "$fb" --variant oneshot,twoshot -b 1K -e 64K -f 4 \
				--json "$r/claim-cost-$(basename $fb .fatbin)-np$np.json" || exit 1
		done' "$np" "$bin" "$r"
	fi
	# The benchmark sweep again, every custom variant launched as the table
	# just measured says (--tuned): the perf page's final numbers.
	if [[ -n $shared ]]; then nottimed "bench-tuned-np$np"; else
	step "bench-tuned-np$np" 0 300 mpirun -np "$np" "$bin" bench -b 1K -e 256M -f 4 --tuned "$r/tune-np$np.json" \
		--json "$r/bench-tuned-np$np.json" --plot "$r/bench-tuned-np$np.svg"
	fi
	# A planted failure's repro bundle reruns and fails the same way.
	step "repro-rerun-np$np" 0 120 ci/repro-rerun.sh "$np" "$bin" "$r"
	# A rank killed mid-run: the others end, naming it; the JSON
	# Lines file keeps the finished cases; nothing is left on the GPUs.
	step "killed-rank-np$np" 0 120 ci/killed-rank.sh "$np" "$bin" "$r"
	# Every custom variant beside NCCL on one size sweep (bf16 sum, out of
	# place, registered, plain and graph): the comparison table's data.
	step "variants-np$np" 0 180 mpirun -np "$np" "$bin" --variant "$custom,nccl" \
		--dtype bf16 --op sum --mode oop,reg,aligned --size 4:256M:x4 --json "$r/variants-np$np.json"
	# The example plugin through --plugin, on the cuda backend: the quick and
	# the default matrix pass (graph modes capture its launches on artest's
	# stream); its planted bugs (ARTEST_EXAMPLE_BUG, read by the plugin) are
	# caught as wrong data. no-end-barrier also makes the last rank read
	# late (artest's --inject does not reach a plugin), so it needs a peer.
	step "plugin-quick-np$np" 0 180 mpirun -np "$np" "$bin" --plugin "$plugin" --variant example:oneshot --quick \
		--json "$r/plugin-quick-np$np.json"
	step "plugin-matrix-np$np" 0 "${MATRIX_TIMEOUT_S:-420}" mpirun -np "$np" "$bin" --plugin "$plugin" --variant example:oneshot \
		--progress --jsonl "$r/plugin-matrix-np$np.jsonl" --json "$r/plugin-matrix-np$np.json" --junit "$r/plugin-matrix-np$np.xml"
	step "plugin-planted-np$np" 1 180 mpirun -np "$np" -x ARTEST_EXAMPLE_BUG=skip-last "$bin" --plugin "$plugin" \
		--variant example:oneshot --quick --json "$r/plugin-planted-np$np.json"
	step "why-plugin-planted-np$np" 0 5 grep -q "mismatch" "$out/plugin-planted-np$np.log"
	step "plugin-stress-np$np" 0 "${STRESS_TIMEOUT_S:-420}" mpirun -np "$np" "$bin" --plugin "$plugin" --variant example:oneshot \
		--stress "${PLUGIN_STRESS:-2000}" --progress --jsonl "$r/plugin-stress-np$np.jsonl" --json "$r/plugin-stress-np$np.json"
	# The example declares the device helpers (plugin/artest_device.h): its
	# cases get the trace check and device deadlines.
	step "why-plugin-checks-np$np" 0 5 grep -q "example:oneshot: trace check, device deadlines" "$out/plugin-quick-np$np.log"
	if ((np > 1)); then
		# A planted bug that skips the trace write: the trace check fails it.
		step "plugin-no-trace-np$np" 1 180 mpirun -np "$np" -x ARTEST_EXAMPLE_BUG=no-trace "$bin" --plugin "$plugin" \
			--variant example:oneshot --quick --dtype f32 --json "$r/plugin-no-trace-np$np.json"
		step "why-plugin-no-trace-np$np" 0 5 grep -q "no kernel wrote the trace word" "$out/plugin-no-trace-np$np.log"
		# The last rank never arrives at the start barrier: a block of rank 0
		# gives up at the device deadline and says where and for whom.
		step "plugin-hang-np$np" 3 60 mpirun -np "$np" -x ARTEST_EXAMPLE_BUG=hang "$bin" --plugin "$plugin" \
			--variant example:oneshot --quick --dtype f32 --op sum --device-timeout 1s --timeout 30s
		step "why-plugin-hang-np$np" 0 5 grep -q "rank 0 block .* gave up after .* in example:oneshot at \"start barrier\" waiting for rank $((np - 1))" \
			"$out/plugin-hang-np$np.log"
		step "plugin-wrong-kernel-np$np" 1 180 mpirun -np "$np" "$bin" --plugin "$plugin" --variant example:oneshot \
			--quick --dtype f32 --op sum --inject wrong-kernel
		step "why-plugin-wrong-kernel-np$np" 0 5 grep -q "but the kernel that ran wrote oneshot (id 0x51)" "$out/plugin-wrong-kernel-np$np.log"
		step "plugin-no-end-barrier-np$np" 1 180 mpirun -np "$np" -x ARTEST_EXAMPLE_BUG=no-end-barrier "$bin" --plugin "$plugin" \
			--variant example:oneshot --dtype f32 --stress 2000 --json "$r/plugin-no-end-barrier-np$np.json"
		step "why-plugin-no-end-barrier-np$np" 0 5 grep -q "stress iterations wrong" "$out/plugin-no-end-barrier-np$np.log"
	fi
	# vLLM's custom allreduce (vllm:custom) runs 2, 4, 6 or 8 ranks: the
	# quick and the default matrix pass (its order is declared unknown, so
	# sums are checked within the error bound; cases above its 4 MiB and
	# misaligned ones are skipped).
	if ((np % 2 == 0 && np <= 8)); then
		step "vllm-quick-np$np" 0 180 mpirun -np "$np" "$bin" --plugin "$vllm" --variant vllm:custom --quick \
			--json "$r/vllm-quick-np$np.json"
		step "vllm-stress-np$np" 0 "${STRESS_TIMEOUT_S:-420}" mpirun -np "$np" "$bin" --plugin "$vllm" --variant vllm:custom \
			--stress "${PLUGIN_STRESS:-2000}" --progress --jsonl "$r/vllm-stress-np$np.jsonl" --json "$r/vllm-stress-np$np.json"
		step "vllm-matrix-np$np" 0 "${MATRIX_TIMEOUT_S:-420}" mpirun -np "$np" "$bin" --plugin "$vllm" --variant vllm:custom \
			--progress --jsonl "$r/vllm-matrix-np$np.jsonl" --json "$r/vllm-matrix-np$np.json" --junit "$r/vllm-matrix-np$np.xml"
	fi
	# TensorRT-LLM's (trtllm:oneshot, trtllm:twoshot) runs 2, 4, 6, 8 or 16
	# ranks; on 6 its two-shot fails sizes that are not a multiple of 96
	# bytes (it declares 128-byte alignment), so 2, 4 and 8 only.
	if ((np == 2 || np == 4 || np == 8)); then
		step "trtllm-quick-np$np" 0 180 mpirun -np "$np" "$bin" --plugin "$trtllm" --variant trtllm:oneshot,trtllm:twoshot --quick \
			--json "$r/trtllm-quick-np$np.json"
		step "trtllm-stress-np$np" 0 "${STRESS_TIMEOUT_S:-420}" mpirun -np "$np" "$bin" --plugin "$trtllm" \
			--variant trtllm:oneshot,trtllm:twoshot --stress "${PLUGIN_STRESS:-2000}" --progress \
			--jsonl "$r/trtllm-stress-np$np.jsonl" --json "$r/trtllm-stress-np$np.json"
		if [[ $want_all != all ]]; then
			step "trtllm-syncfix-stress-np$np" 0 "${STRESS_TIMEOUT_S:-420}" mpirun -np "$np" "$bin" --plugin "$trtllm_syncfix" \
				--variant trtllm:oneshot,trtllm:twoshot --stress "${PLUGIN_STRESS:-2000}" --progress \
				--json "$r/trtllm-syncfix-stress-np$np.json"
		fi
		step "trtllm-matrix-np$np" 0 "${MATRIX_TIMEOUT_S:-420}" mpirun -np "$np" "$bin" --plugin "$trtllm" \
			--variant trtllm:oneshot,trtllm:twoshot --progress --jsonl "$r/trtllm-matrix-np$np.jsonl" \
			--json "$r/trtllm-matrix-np$np.json" --junit "$r/trtllm-matrix-np$np.xml"
	fi
	# TensorRT-LLM's fusion allreduce, its allreduce-only pattern
	# (trtllm-fusion:*: the Lamport one-shot and the two-shot, each with and
	# without fp32 accumulation), and flashinfer's PCIe IPC allreduce
	# (pcie-ipc:*, the variants of the world size: unstaged and staged at 2
	# ranks, staged-ring from 4, flat-staged at 8). Their sentinel buffers
	# keep state between calls in the staging each declares, which artest
	# gives the plugin alone. The default matrix at 2, 4 and 8 ranks
	# (trtllm-fusion runs 16 too), the stress at 2.
	fusion_vars=trtllm-fusion:oneshot,trtllm-fusion:oneshot-fp32acc,trtllm-fusion:twoshot,trtllm-fusion:twoshot-fp32acc
	pcie_vars=pcie-ipc:unstaged,pcie-ipc:staged
	((np >= 4)) && pcie_vars+=,pcie-ipc:staged-ring
	((np == 8)) && pcie_vars+=,pcie-ipc:flat-staged
	if ((np == 2 || np == 4 || np == 8)); then
		step "trtllm-fusion-matrix-np$np" 0 "${MATRIX_TIMEOUT_S:-420}" mpirun -np "$np" "$bin" --plugin "$trtllm_fusion" \
			--variant "$fusion_vars" --progress --jsonl "$r/trtllm-fusion-matrix-np$np.jsonl" \
			--json "$r/trtllm-fusion-matrix-np$np.json" --junit "$r/trtllm-fusion-matrix-np$np.xml"
		step "pcie-ipc-matrix-np$np" 0 "${MATRIX_TIMEOUT_S:-420}" mpirun -np "$np" "$bin" --plugin "$pcie_ipc" \
			--variant "$pcie_vars" --progress --jsonl "$r/pcie-ipc-matrix-np$np.jsonl" \
			--json "$r/pcie-ipc-matrix-np$np.json" --junit "$r/pcie-ipc-matrix-np$np.xml"
	fi
	if ((np == 2)); then
		step "trtllm-fusion-stress-np$np" 0 "${STRESS_TIMEOUT_S:-420}" mpirun -np "$np" "$bin" --plugin "$trtllm_fusion" \
			--variant "$fusion_vars" --stress "${PLUGIN_STRESS:-2000}" --progress \
			--jsonl "$r/trtllm-fusion-stress-np$np.jsonl" --json "$r/trtllm-fusion-stress-np$np.json"
		step "pcie-ipc-stress-np$np" 0 "${STRESS_TIMEOUT_S:-420}" mpirun -np "$np" "$bin" --plugin "$pcie_ipc" \
			--variant "$pcie_vars" --stress "${PLUGIN_STRESS:-2000}" --progress \
			--jsonl "$r/pcie-ipc-stress-np$np.jsonl" --json "$r/pcie-ipc-stress-np$np.json"
	fi
	# Each plugin alone on the default matrix's special cases (as the
	# special step above): signed zeros against sentinel protocols
	# (trtllm-fusion polls for -0.0, pcie-ipc for +0.0), NaN payloads,
	# overflow. Both mode halves in one step; a failure is a finding.
	special_plugin() {
		local name=$1 so=$2 vars=$3
		step "special-$name-np$np" 0 300 bash -c 'rc=0; for m in oop,reg,plain,aligned ip,stg,plain,aligned; do
			mpirun -np "$0" "$1" --plugin "$2" --variant "$3" --input special --size 4100,64K --mode $m --iters 0 \
				--json "$4/special-$5-${m%%,*}-np$0.json" || rc=1
			done; exit $rc' "$np" "$bin" "$so" "$vars" "$r" "$name"
	}
	special_plugin example "$plugin" example:oneshot
	((np % 2 == 0 && np <= 8)) && special_plugin vllm "$vllm" vllm:custom
	if ((np == 2 || np == 4 || np == 8)); then
		special_plugin trtllm "$trtllm" trtllm:oneshot,trtllm:twoshot
		special_plugin trtllm-fusion "$trtllm_fusion" "$fusion_vars"
		special_plugin pcie-ipc "$pcie_ipc" "$pcie_vars"
	fi
	# Every plugin beside oneshot, twoshot and NCCL. Sharing GPUs, the times
	# mean nothing (--allow-shared-timing: the table says so; NCCL is
	# skipped); it shows the plugins run under bench and graph replay.
	pbench=(--plugin "$plugin") pvars=example:oneshot
	if ((np % 2 == 0 && np <= 8)); then pbench+=(--plugin "$vllm") pvars+=,vllm:custom; fi
	if ((np == 2 || np == 4 || np == 8)); then
		pbench+=(--plugin "$trtllm" --plugin "$trtllm_fusion" --plugin "$pcie_ipc")
		pvars+=,trtllm:oneshot,trtllm:twoshot,$fusion_vars,$pcie_vars
	fi
	# The fieldbest column: the fastest NCCL mode or plugin at each size,
	# and each artest variant's gain over it (sizes past a plugin's limits
	# are skipped for it). Every plugin in one process: a plugin's declared
	# staging is its own, so the sentinel adapters keep their state beside
	# artest's variants' scratch use up to 256 MiB.
	step "plugin-bench-np$np" 0 400 mpirun -np "$np" "$bin" bench ${shared:+--allow-shared-timing} "${pbench[@]}" \
		--variant "oneshot,oneshot-ll,twoshot,nccl,nccl-reg,$pvars" --dtype bf16 -b 1K -e 256M -f 4 --json "$r/plugin-bench-np$np.json" \
		--plot "$r/plugin-bench-np$np.svg"
	step "hang-np$np" 3 60 mpirun -np "$np" "$bin" --variant oneshot --dtype f32 --op sum --size 4K \
		--mode oop,reg,plain,aligned --inject "delay:rank=$((np - 1)),us=3000000" --timeout 1s
	# The kernels' own deadline (--device-timeout) fires before the
	# host watchdog; the blocks that gave up say where and for whom.
	step "hang-device-np$np" 3 60 mpirun -np "$np" "$bin" --variant oneshot --dtype f32 --op sum --size 4K \
		--mode oop,reg,plain,aligned --inject "delay:rank=$((np - 1)),us=5000000" --device-timeout 1s --timeout 30s
	step "why-hang-device-np$np" 0 5 grep -q "gave up after .* barrier waiting for rank $((np - 1))" "$out/hang-device-np$np.log"
	step "hang-device-ring-np$np" 3 60 mpirun -np "$np" "$bin" --variant ring --dtype f32 --op sum --size 64K \
		--mode oop,reg,plain,aligned --inject "delay:rank=$((np - 1)),us=5000000" --device-timeout 1s --timeout 30s
	step "why-hang-device-ring-np$np" 0 5 grep -q "rank 0 lane .* gave up after .* from rank $((np - 1))" "$out/hang-device-ring-np$np.log"
	# The hang scenarios that must be diagnosed, not hung: launch tags in
	# the barrier flags and a claim in each block's epoch word make the
	# kernels give up at once (the 2 s deadline only ends blocks left
	# waiting for peers that already left); exit 3 and rank 0's line names
	# the rank and the barrier. The job stops at its first case, hence one
	# step per variant and size. Names end in -np$np-VARIANT-SIZE so that
	# STEPS=hang-size-mismatch (etc.) selects them all.
	for v in oneshot twoshot; do for sz in 4K 64K; do
		sfx="np$np-$v-$sz" last=$((np - 1))
		step "hang-size-mismatch-$sfx" 3 60 mpirun -np "$np" "$bin" --variant "$v" --dtype f32 --op sum --size "$sz" \
			--mode oop,reg,plain,aligned --inject "size-mismatch:rank=$last" --device-timeout 2s --timeout 30s
		step "why-hang-size-mismatch-$sfx" 0 5 grep -q "rank 0 block .* gave up at the start barrier: rank $last launched a different call" \
			"$out/hang-size-mismatch-$sfx.log"
		step "hang-reregister-$sfx" 3 60 mpirun -np "$np" "$bin" --variant "$v" --dtype f32 --op sum --size "$sz" \
			--mode oop,reg,graph,aligned --inject "reregister:rank=$last" --device-timeout 2s --timeout 30s
		step "why-hang-reregister-$sfx" 0 5 grep -q "rank 0 block .* gave up at the start barrier: rank $last re-registered its buffers (generation 1)" \
			"$out/hang-reregister-$sfx.log"
		step "hang-two-streams-$sfx" 3 60 mpirun -np "$np" "$bin" --variant "$v" --dtype f32 --op sum --size "$sz" \
			--mode oop,reg,plain,aligned --inject two-streams --device-timeout 2s --timeout 30s
		step "why-hang-two-streams-$sfx" 0 5 grep -q "rank 0 block .* gave up before the start barrier: another launch of rank 0" \
			"$out/hang-two-streams-$sfx.log"
	done; done
done

bin=$realbin prefix=()
# One rank per GPU for the hostile environments (at most the first world
# size): each must fail for its own reason, not for shared GPUs.
np=$(echo "$nps" | awk -v g="$ngpu" '{print ($1 < g) ? $1 : g}')
# Hostile environments: one clear line and the documented exit code.
step "bad-fatbin" 4 60 mpirun -np "$np" "$bin" --quick --fatbin /nonexistent/artest.fatbin
step "bad-too-many-ranks" 4 60 mpirun -np $((ngpu * 2)) --oversubscribe "$bin" --quick
step "bad-size" 2 60 mpirun -np "$np" "$bin" --size 3 --dtype f32
step "no-nccl" 0 120 env ARTEST_NCCL= mpirun -np "$np" -x ARTEST_NCCL=/nonexistent/libnccl.so.2 "$bin" \
	--quick --dtype f32 --op sum --json "$out/no-nccl.json"
# The checkers' speed, one rank alone on its GPU: each stress case's JSON
# holds device_gbps and host_gbps (docs/perf.md, "Harness speed").
step "devcheck-speed" 0 240 bash -c 'bin=$0 out=$1
	for c in device host; do
		mpirun -np 1 "$bin" --stress 500 --check $c --variant oneshot --dtype bf16,f32 --op sum --size 4M --mode oop,reg,plain \
			--json "$out/devcheck-speed-4M-$c.json" || exit 1
	done
	mpirun -np 1 "$bin" --stress 40 --check device --variant oneshot --dtype bf16,f32 --op sum --size 64M --mode oop,reg,plain \
		--json "$out/devcheck-speed-64M-device.json"' "$bin" "$out"
# More ranks than GPUs, two per GPU, under a private MPS daemon: covers
# 2N-rank code paths; times mean nothing.
step "shared-np$((ngpu * 2))" 0 180 "$bin" mps -- mpirun -np $((ngpu * 2)) --oversubscribe "$bin" --share-gpus --quick \
	--json "$out/shared-np$((ngpu * 2)).json"

echo "== summary" >&2
cat "$summary"
! grep -q UNEXPECTED "$summary"
