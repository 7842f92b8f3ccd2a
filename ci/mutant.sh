#!/usr/bin/env bash
# Builds a fatbin of artest's kernels with one protection deleted from a
# variant's source and every fault hook compiled out: the kind of kernel a
# user brings, which carries no artest switch to turn its race on. Stress
# must catch it from the outside (its schedules and checks alone).
#
#   ci/mutant.sh MUTATION OUT.fatbin [ARCH]    (ARCH default sm_90)
#   ci/mutant.sh --check MUTATION                the edits alone, no nvcc: they
#                                                still apply to the sources
#
# Mutations:
#   oneshot-no-end-barrier   oneshot's end barrier (out of place) deleted
#   twoshot-no-mid-barrier   twoshot's mid barrier deleted (pull and push)
#   pull-no-end-barrier      pull's end barrier deleted (reduce-scatter and
#                            all-gather: run with --coll reduce-scatter,all-gather)
#   cpasync-wait-short       oneshot-cpasync's steady-state cp.async.wait_group
#                            waits for one group too few, so a tile is reduced
#                            before its copy landed: run with --variant
#                            oneshot-cpasync and stages 2..7 (at 8 the wait
#                            clamps to wait_group 7 and the kernel is correct)
#   ring-credit-short        ring's producer waits for credit one slot short:
#                            it overwrites the right neighbour's slot of piece
#                            u-S before that piece is consumed: run with
#                            --variant ring
#   twoshot-mid-relaxed      twoshot's mid barrier (pull and push) with a relaxed
#                            flag store and poll (Sync::kArrive), not release and
#                            acquire: the staging may be read (pull) or copied
#                            out (push) before it is visible: run with
#                            --variant twoshot, both gathers
#   none                     no deletion: the hooks-off build alone, to show
#                            it passes where the mutants fail
#
# Hooks off: every read of the launch's INJECT_* bits (a.inject) becomes the
# constant 0u, so the compiler drops the fault switches and the in-kernel
# delay; nothing a --inject flag sets can reach these kernels. The script
# fails unless each deletion or replacement changes exactly the lines it
# names and no a.inject read is left.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
check_only=
if [[ ${1:-} == --check ]]; then
	check_only=1
	shift
fi
mutation=${1:-}
out=${2:-}
if [[ -z $mutation || (-z $check_only && -z $out) ]]; then
	echo "usage: ci/mutant.sh [--check] MUTATION OUT.fatbin [ARCH]" >&2
	exit 2
fi
arch=${3:-sm_90}
edit_tool=mutant
# shellcheck source=ci/source-edit.sh
source "$repo/ci/source-edit.sh"
copy_kernels

case $mutation in
oneshot-no-end-barrier) delete oneshot/oneshot.cu 'barrier<Sync::k[A-Za-z]+>\(a, SIG_PHASE_END, e\);' 1 ;;
twoshot-no-mid-barrier) delete twoshot/twoshot.cu 'barrier<Sync::k[A-Za-z]+>\(a, SIG_PHASE_MID, e\);' 2 ;;
pull-no-end-barrier) delete pull/pull.cu 'barrier<Sync::k[A-Za-z]+>\(a, SIG_PHASE_END, e\);' 2 ;;
# Tile j's group is the (stages)th newest after the commit: wait_group
# stages-1 lands it, wait_group stages leaves it in flight.
cpasync-wait-short) replace oneshotcpasync/oneshot_cpasync.cu 'wait_pending\(stages - 1\);' 'wait_pending(stages);' 1 ;;
# Piece u's slot held piece u-S (sequence pseq-S): credit pseq-S-1 only
# says piece u-S-1 was consumed.
ring-credit-short) replace ring/ring.cu 'pseq - static_cast<uint32_t>\(slots\)' 'pseq - static_cast<uint32_t>(slots + 1)' 1 ;;
twoshot-mid-relaxed) replace twoshot/twoshot.cu 'barrier<Sync::kPublish>\(a, SIG_PHASE_MID, e\);' 'barrier<Sync::kArrive>(a, SIG_PHASE_MID, e);' 2 ;;
none) ;;
*)
	echo "mutant: unknown mutation $mutation (valid: oneshot-no-end-barrier, twoshot-no-mid-barrier, pull-no-end-barrier, cpasync-wait-short, ring-credit-short, twoshot-mid-relaxed, none)" >&2
	exit 2
	;;
esac

# Hooks off.
find "$tmp/kernels" -name '*.cu' -o -name '*.cuh' | xargs sed -i -E 's/\ba\.inject\b/0u/g'
if grep -rnE '\ba\.inject\b' "$tmp/kernels" --include='*.cu' --include='*.cuh'; then
	echo "mutant: a.inject reads are left" >&2
	exit 1
fi

if [[ -n $check_only ]]; then
	echo "mutant: $mutation applies to the sources (not compiled: --check)" >&2
	exit 0
fi

build_fatbin "$out" "$arch"
echo "mutant: $mutation -> $out ($arch, fault hooks compiled out)" >&2
