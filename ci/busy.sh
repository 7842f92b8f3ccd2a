#!/usr/bin/env bash
# Runs a command beside CPU hogs, as on a shared CI machine: by default 2
# busy processes per core (nproc x 2), started before the command and
# ended (by their ids) after it, whatever it exits with. Each run's time
# and exit status is printed; the script exits with the first non-zero
# status, else 0.
#
#   ci/busy.sh [--per-core N] [--runs N] -- COMMAND [ARGS...]
#
# make test-busy runs `make test` this way (RUNS=5 for five runs in a row).
set -euo pipefail

per_core=2 runs=1
while (($#)); do
	case $1 in
	--per-core) per_core=$2; shift 2 ;;
	--runs) runs=$2; shift 2 ;;
	--) shift; break ;;
	*) echo "busy: unknown argument $1 (usage: ci/busy.sh [--per-core N] [--runs N] -- COMMAND...)" >&2; exit 2 ;;
	esac
done
(($#)) || { echo "busy: no command (usage: ci/busy.sh [--per-core N] [--runs N] -- COMMAND...)" >&2; exit 2; }
[[ $per_core =~ ^[0-9]+$ && $runs =~ ^[1-9][0-9]*$ ]] || { echo "busy: --per-core and --runs take whole numbers" >&2; exit 2; }

hogs=()
stop_hogs() {
	((${#hogs[@]})) && kill "${hogs[@]}" 2>/dev/null || true
	hogs=()
}
trap stop_hogs EXIT INT TERM
n=$(($(nproc) * per_core))
for ((i = 0; i < n; i++)); do
	# A shell loop doing nothing but arithmetic: one core's worth of demand.
	bash -c 'while :; do :; done' &
	hogs+=($!)
done
echo "busy: $n CPU hogs beside the command ($per_core per core, $(nproc) cores)" >&2

first=0
for ((r = 1; r <= runs; r++)); do
	start=$(date +%s)
	status=0
	"$@" || status=$?
	echo "busy: run $r of $runs: exit $status in $(($(date +%s) - start)) s (load average $(cut -d' ' -f1-3 /proc/loadavg))" >&2
	if ((status != 0 && first == 0)); then
		first=$status
	fi
done
exit "$first"
