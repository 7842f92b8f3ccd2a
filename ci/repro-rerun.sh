#!/usr/bin/env bash
# On a GPU: a planted failure writes a repro bundle, and
# `artest --repro BUNDLE` reruns that case and fails the same way.
#
#   ci/repro-rerun.sh NP BIN OUTDIR
set -uo pipefail
np=$1 bin=$2 out=$3
dir="$out/repro-np$np"
mkdir -p "$dir"
mpirun -np "$np" "$bin" --variant twoshot --dtype bf16 --op sum --size 4100 --mode oop,reg,plain,aligned \
	--inject skip-last --seed 7 --repro-dir "$dir" --json "$dir/first.json" >"$dir/first.log" 2>&1
rc1=$?
bundle=$(ls "$dir"/artest-repro-*.json 2>/dev/null | head -1)
echo "planted run: exit $rc1, bundle ${bundle:-none}"
grep -m2 "artest: repro\|rerun:" "$dir/first.log"
[[ $rc1 == 1 && -n $bundle ]] || exit 1
mpirun -np "$np" "$bin" --repro "$bundle" --json "$dir/again.json" >"$dir/again.log" 2>&1
rc2=$?
echo "rerun: exit $rc2"
grep -m3 "FAIL" "$dir/first.log" | head -2
grep -m3 "FAIL" "$dir/again.log" | head -2
# Same case, same failure kind and count.
first=$(grep -m1 "^#   FAIL" "$dir/first.log" | sed 's/ (and .*//')
again=$(grep -m1 "^#   FAIL" "$dir/again.log" | sed 's/ (and .*//')
echo "first: $first"
echo "again: $again"
[[ $rc2 == 1 && -n $first && $first == "$again" ]]
