#!/usr/bin/env bash
# Builds a fatbin of artest's kernels with a measurement-only edit: the
# builds that priced a protection or a choice of the production kernels
# (each named in the results page that measured it, and in the comment by
# the code it priced), kept out of the kernel sources. Compare it with
# `bench --fatbin` against make kernels' bin/artest.fatbin in one visit.
#
#   ci/experiment.sh NAME[,NAME...] OUT.fatbin [ARCH]   (ARCH default sm_90)
#   ci/experiment.sh --check NAME[,NAME...]             the edits alone, no
#                                                       nvcc: they still apply
#                                                       to the sources
#
# Experiments (several, comma-separated, apply in turn: spin,no-claim is
# the vLLM study's "both"):
#   no-claim              epoch_begin reads the epoch word with a plain
#                         load, not the claiming atomicOr (gpu.sh step
#                         claim-cost)
#   spin                  wait_until polls without ever sleeping (no
#                         backoff), as vLLM's barrier does
#   no-pdl                pdl_wait issues neither griddepcontrol
#                         instruction (late-trigger's edit included: the
#                         two do not combine)
#   late-trigger          pdl_wait leaves out griddepcontrol.launch_dependents:
#                         a PDL successor (bench --pdl-chain) starts when
#                         this grid exits
#   stamps                oneshot (out of place): block 0's thread 0 prints
#                         the clock64() cycles of its claim, start barrier,
#                         data and end barrier ("stamp rank ..." lines);
#                         the printf makes a call tens of us
#   sentinel-no-deadline  oneshot-sentinel's wait_slot: a bare spin, no
#                         deadline and no give-up
#   no-checks             oneshot-sentinel without its launch checks
#
# Unlike ci/mutant.sh the fault hooks stay: the fatbin differs from make
# kernels' only by the edit (and by its one ARCH and no -lineinfo, which
# does not change the code). The script fails unless each edit changes
# exactly the lines it names.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
check_only=
if [[ ${1:-} == --check ]]; then
	check_only=1
	shift
fi
names=${1:-}
out=${2:-}
if [[ -z $names || (-z $check_only && -z $out) ]]; then
	echo "usage: ci/experiment.sh [--check] NAME[,NAME...] OUT.fatbin [ARCH]" >&2
	exit 2
fi
arch=${3:-sm_90}
edit_tool=experiment
# shellcheck source=ci/source-edit.sh
source "$repo/ci/source-edit.sh"
copy_kernels

apply() {
	case $1 in
	no-claim)
		splice device/sync.cuh '^ +const uint64_t old = atomicOr\(reinterpret_cast<unsigned long long\*>\(epoch_word\(a\)\),$' \
			'^ +static_cast<unsigned long long>\(SIG_EPOCH_CLAIM\) << 32\);$' 2 \
			'    const uint64_t old = *reinterpret_cast<volatile uint64_t*>(epoch_word(a));'
		;;
	spin)
		splice device/sync.cuh '^ +if \(spins != 0\) \{$' '^ +\}$' 6 \
			$'    (void)sleep_ns;\n    (void)spins;'
		;;
	no-pdl)
		replace device/sync.cuh \
			'^ +(if \(\(a\.inject & INJECT_PDL_NO_WAIT\) == 0\) )?asm volatile\("griddepcontrol\.(wait|launch_dependents);" ::: "memory"\);$' \
			'  (void)a;' 2
		;;
	late-trigger)
		delete device/sync.cuh '^ +asm volatile\("griddepcontrol\.launch_dependents;" ::: "memory"\);$' 1
		;;
	stamps)
		local f=oneshot/oneshot.cu
		local claim='^ +const uint32_t e = epoch_begin\(a\);$'
		local end='^ +if \(\(a\.inject & INJECT_NO_END_BARRIER\) == 0\) barrier<Sync::kArrive>\(a, SIG_PHASE_END, e\);$'
		insert $f before "$claim" 1 '  const long long t0 = clock64();'
		insert $f after "$claim" 1 '  const long long t_claim = clock64();'
		insert $f after '^ +inject_delay\(a\);$' 1 '  const long long t_start = clock64();'
		insert $f before "$end" 1 '    const long long t_data = clock64();'
		insert $f after "$end" 1 '    const long long t_end = clock64();
    if (blockIdx.x == 0 && threadIdx.x == 0)
      printf("stamp rank %u count %llu epoch %u cycles claim %lld start %lld data %lld end %lld\n", a.rank,
             static_cast<unsigned long long>(a.count), e, t_claim - t0, t_start - t_claim, t_data - t_start,
             t_end - t_data);'
		;;
	sentinel-no-deadline)
		insert oneshotsentinel/oneshot_sentinel.cu after \
			'^ +if \(\(a\.inject & INJECT_SENTINEL_NO_WAIT\) != 0\) return true;' 1 '  while (!full<EB>(s = poll(p))) {
  }
  return true;'
		;;
	no-checks)
		delete oneshotsentinel/oneshot_sentinel.cu '^ +check_launch\(a, 0, sizeof\(T\)\);$' 1
		delete oneshotsentinel/oneshot_sentinel.cu \
			'^ +if \(artest_sentinel_stage_bytes\(slots, n\) > a\.stage_bytes \|\| n > kMaxRanks\) __trap\(\);' 1
		;;
	*)
		echo "experiment: unknown experiment $1 (valid: no-claim, spin, no-pdl, late-trigger, stamps, sentinel-no-deadline, no-checks)" >&2
		exit 2
		;;
	esac
}

IFS=, read -ra list <<<"$names"
for name in "${list[@]}"; do
	apply "$name"
done

if [[ -n $check_only ]]; then
	echo "experiment: $names applies to the sources (not compiled: --check)" >&2
	exit 0
fi

build_fatbin "$out" "$arch"
echo "experiment: $names -> $out ($arch)" >&2
