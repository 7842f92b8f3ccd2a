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
# NVCC when it names a compiler that exists; else the toolkit's, else the
# pinned wheels' (ci/install-nvcc.sh).
nvcc=${NVCC:-}
if [[ -z $nvcc ]] || ! command -v "$nvcc" >/dev/null; then
	nvcc=$(command -v /usr/local/cuda/bin/nvcc || echo "$repo/.tools/nvcc/nvidia/cu13/bin/nvcc")
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cp -r "$repo/kernels" "$tmp/kernels"

fail() {
	echo "experiment: $*" >&2
	exit 1
}

# matching FILE PATTERN N: the numbers of the lines of FILE matching
# PATTERN (an extended regular expression), which must be exactly N.
matching() {
	local f=$tmp/kernels/$1 pat=$2 want=$3 lines n
	lines=$(grep -nE "$pat" "$f" | cut -d: -f1 || true)
	n=$(grep -cE "$pat" "$f" || true)
	if [[ $n != "$want" ]]; then
		fail "$1 has $n lines matching /$pat/, want $want: the source moved; update ci/experiment.sh"
	fi
	echo "$lines"
}

# delete FILE PATTERN N: removes the lines of FILE matching PATTERN, which
# must be exactly N.
delete() {
	local f=$tmp/kernels/$1 pat=$2 want=$3
	matching "$1" "$pat" "$want" >/dev/null
	grep -vE "$pat" "$f" >"$f.new" && mv "$f.new" "$f"
	echo "experiment: deleted $want line(s) /$pat/ from kernels/$1" >&2
}

# replace FILE PATTERN REPLACEMENT N: substitutes REPLACEMENT (sed -E: \1
# and & work) for PATTERN on the lines of FILE matching it, which must be
# exactly N, and must all change.
replace() {
	local f=$tmp/kernels/$1 pat=$2 rep=$3 want=$4 changed d=$'\x01'
	matching "$1" "$pat" "$want" >/dev/null
	sed -E "s${d}${pat}${d}${rep}${d}" "$f" >"$f.new"
	changed=$(awk 'NR == FNR { old[FNR] = $0; next } old[FNR] != $0 { c++ } END { print c + 0 }' "$f" "$f.new")
	if [[ $changed != "$want" ]]; then
		rm -f "$f.new"
		fail "replacing /$pat/ in $1 changed $changed line(s), want $want: update ci/experiment.sh"
	fi
	mv "$f.new" "$f"
	echo "experiment: replaced /$pat/ with '$rep' on $want line(s) of kernels/$1" >&2
}

# insert FILE before|after PATTERN N TEXT: puts TEXT (lines, taken as they
# are) before or after each line of FILE matching PATTERN, which must be
# exactly N.
insert() {
	local f=$tmp/kernels/$1 where=$2 pat=$3 want=$4 text=$5 lines
	lines=$(matching "$1" "$pat" "$want")
	LINES_AT=" $(echo $lines) " TEXT=$text WHERE=$where awk '
		BEGIN { at = ENVIRON["LINES_AT"] }
		index(at, " " FNR " ") && ENVIRON["WHERE"] == "before" { print ENVIRON["TEXT"] }
		{ print }
		index(at, " " FNR " ") && ENVIRON["WHERE"] == "after" { print ENVIRON["TEXT"] }' "$f" >"$f.new"
	mv "$f.new" "$f"
	echo "experiment: inserted $(printf '%s\n' "$text" | wc -l) line(s) $where /$pat/ (line(s) $(echo $lines)) of kernels/$1" >&2
}

# splice FILE FROM TO N TEXT: the N lines of FILE from the one line matching
# FROM through the first line matching TO (at or after it) become TEXT
# (lines; empty: none). FROM must match exactly one line, and TO must end
# the span at exactly N lines.
splice() {
	local f=$tmp/kernels/$1 from=$2 to=$3 want=$4 text=$5 first span
	first=$(matching "$1" "$from" 1)
	span=$(tail -n +"$first" "$f" | grep -nE "$to" | head -1 | cut -d: -f1 || true)
	if [[ $span != "$want" ]]; then
		fail "$1: from /$from/ (line $first) to /$to/ is ${span:-no} line(s), want $want: the source moved; update ci/experiment.sh"
	fi
	{
		head -n $((first - 1)) "$f"
		if [[ -n $text ]]; then printf '%s\n' "$text"; fi
		tail -n +$((first + want)) "$f"
	} >"$f.new"
	mv "$f.new" "$f"
	echo "experiment: replaced lines $first to $((first + want - 1)) (/$from/ to /$to/) of kernels/$1" >&2
}

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

# One translation unit of every kernel source, as kernels/kernels.mk makes.
unity=$tmp/unity.cu
(cd "$tmp/kernels" && find . -name '*.cu' ! -name '*_test.cu' | sort | sed 's|^\./|#include "|; s|$|"|') >"$unity"
mkdir -p "$(dirname "$out")"
"$nvcc" -fatbin -O3 -std=c++17 --threads 0 -I"$tmp/kernels" -gencode "arch=compute_${arch#sm_},code=$arch" \
	-o "$out" "$unity"
echo "experiment: $names -> $out ($arch)" >&2
