#!/usr/bin/env bash
# nccl-tests beside artest's own NCCL timing, on one machine in one visit:
# builds NVIDIA's nccl-tests (all_reduce_perf, reduce_scatter_perf,
# all_gather_perf; one process driving NP GPUs, no MPI) against the NCCL
# that artest loads, runs them at registration modes -R 0, 1 and 2 with
# CUDA graphs, runs `artest bench` with the nccl, nccl-reg and nccl-win baselines on
# the same sizes, and prints both and their ratio per size
# (ci/nccl-tests-compare.py): artest's nccl times should agree with
# nccl-tests -R 0 within 10 %.
#
#   ci/nccl-tests.sh SRC OUTDIR [NP]
#
# SRC is an nccl-tests source tree (e.g. `git archive` of NVIDIA/nccl-tests
# v2.19.6, carried to the GPU machine: it has no network). NP defaults to
# the GPU count. SKIP_1PROC=1 leaves out the one-process runs beside the
# per-process ones; NO_SHIFT=1 adds nccl-tests -R 0 with its buffers held in
# place (see below). ARTEST_NCCL (default: the torch wheel's) names
# libnccl.so.2; its include/ sits beside its lib/ in the wheel.
set -uo pipefail
cd "$(dirname "$0")/.."
src=${1:?usage: ci/nccl-tests.sh SRC OUTDIR [NP]}
out=${2:?usage: ci/nccl-tests.sh SRC OUTDIR [NP]}
np=${3:-$(nvidia-smi -L | wc -l)}
src=$(realpath "$src")
mkdir -p "$out"
out=$(realpath "$out")
export NCCL_NVLS_ENABLE=0 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
if [[ -z "${ARTEST_NCCL:-}" ]]; then
	for p in /opt/torch/.venv/lib/python3*/site-packages/nvidia/nccl/lib/libnccl.so.2; do
		[[ -e $p ]] && export ARTEST_NCCL=$p && break
	done
fi
lib=$(dirname "$(realpath "${ARTEST_NCCL:?no libnccl.so.2: set ARTEST_NCCL}")")
inc=$(realpath "$lib/../include")
[[ -f $inc/nccl.h ]] || { echo "nccl-tests: no nccl.h in $inc" >&2; exit 4; }
# The link wants libnccl.so; the wheel has only libnccl.so.2.
root=$out/ncclroot
mkdir -p "$root/lib"
ln -sfn "$inc" "$root/include"
ln -sf "$(realpath "$ARTEST_NCCL")" "$root/lib/libnccl.so"
ln -sf "$(realpath "$ARTEST_NCCL")" "$root/lib/libnccl.so.2"
nvcc=${NVCC:-/usr/local/cuda/bin/nvcc}
# build DIR MAKEFLAGS...: the three tests into DIR.
build() {
	local dir=$1
	shift
	make -C "$src/src" -j "$(nproc)" "$@" NCCL_HOME="$root" CUDA_HOME="$(dirname "$(dirname "$nvcc")")" \
		NVCC_GENCODE="-gencode=arch=compute_90,code=sm_90" BUILDDIR="$dir" \
		"$dir/all_reduce_perf" "$dir/reduce_scatter_perf" "$dir/all_gather_perf"
}
t0=$SECONDS
build "$out/build" MPI=0 >"$out/build.log" 2>&1 ||
	{ echo "nccl-tests: build failed (tail of $out/build.log):" >&2; tail -20 "$out/build.log" >&2; exit 4; }
# artest runs a process per GPU; so do these where MPI's headers are here
# (nccl-tests' MPI=1 wants MPI_HOME/include and MPI_HOME/lib): one
# process driving every GPU (-g NP) is a different setup (NCCL's
# transports between GPUs of one process), run beside for comparison.
launch="one process driving $np GPUs (-g $np)"
run=("$out/build")
gpus=$np
if command -v mpicc >/dev/null; then
	mroot=$out/mpiroot
	mkdir -p "$mroot"
	ln -sfn "$(mpicc --showme:incdirs | awk '{print $1}')" "$mroot/include"
	ln -sfn "$(mpicc --showme:libdirs | awk '{print $1}')" "$mroot/lib"
	if build "$out/build-mpi" MPI=1 MPI_HOME="$mroot" >"$out/build-mpi.log" 2>&1; then
		launch="a process per GPU (mpirun -np $np, -g 1)"
		run=(mpirun -np "$np" "$out/build-mpi")
		gpus=1
	else
		echo "nccl-tests: MPI build failed (tail of $out/build-mpi.log); one process drives every GPU" >&2
		tail -5 "$out/build-mpi.log" >&2
	fi
fi
# NO_SHIFT=1: also a copy of nccl-tests whose calls keep their buffers
# where they are. nccl-tests moves each call's send and receive pointers
# one message further through its allocation (startColl's shift, "to avoid
# cache effects"); artest's calls reuse one input and one output. The copy
# (patched in OUTDIR, the source tree untouched) times -R 0 as artest does,
# to measure what that difference is worth.
if [[ -n ${NO_SHIFT:-} ]]; then
	cp -r "$src" "$out/src-noshift"
	if sed -i 's/size_t shift = totalnbytes \* (iter % steps);/size_t shift = 0 * totalnbytes * (iter % steps);/' "$out/src-noshift/src/common.cu" &&
		grep -q 'size_t shift = 0 \* totalnbytes' "$out/src-noshift/src/common.cu" &&
		src=$out/src-noshift build "$out/build-noshift" MPI=${mroot:+1} ${mroot:+MPI_HOME=$mroot} >"$out/build-noshift.log" 2>&1; then
		noshift=$out/build-noshift
	else
		echo "nccl-tests: the no-shift copy did not build or patch (tail of $out/build-noshift.log)" >&2
		tail -5 "$out/build-noshift.log" >&2
	fi
fi
echo "$launch" >"$out/launch.txt"
echo "nccl-tests: built in $((SECONDS - t0)) s; $launch" >&2
export LD_LIBRARY_PATH=$root/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
rc=0
for t in all_reduce reduce_scatter all_gather; do
	for reg in 0 1 2; do
		if [[ ${run[0]} == mpirun ]]; then
			"${run[@]:0:3}" -x LD_LIBRARY_PATH -x NCCL_NVLS_ENABLE "${run[3]}/${t}_perf" -g 1 -b 1K -e 256M -f 4 -d bfloat16 -o sum -G 10 -R "$reg" -c 1 \
				>"$out/$t-R$reg.log" 2>&1 || { echo "nccl-tests: $t -R $reg failed" >&2; rc=1; }
		else
			"${run[0]}/${t}_perf" -g "$np" -b 1K -e 256M -f 4 -d bfloat16 -o sum -G 10 -R "$reg" -c 1 \
				>"$out/$t-R$reg.log" 2>&1 || { echo "nccl-tests: $t -R $reg failed" >&2; rc=1; }
		fi
	done
	if [[ ${run[0]} == mpirun && -z ${SKIP_1PROC:-} ]]; then
		# The single-process figure beside, for the difference it makes.
		"$out/build/${t}_perf" -g "$np" -b 1K -e 256M -f 4 -d bfloat16 -o sum -G 10 -R 0 -c 1 \
			>"$out/$t-R0-1proc.log" 2>&1 || { echo "nccl-tests: $t -g $np failed" >&2; rc=1; }
	fi
done
if [[ -n ${noshift:-} ]]; then
	for t in all_reduce reduce_scatter all_gather; do
		if [[ ${run[0]} == mpirun ]]; then
			mpirun -np "$np" -x LD_LIBRARY_PATH -x NCCL_NVLS_ENABLE "$noshift/${t}_perf" -g 1 -b 1K -e 256M -f 4 -d bfloat16 -o sum -G 10 -R 0 -c 1 \
				>"$out/$t-R0-noshift.log" 2>&1 || { echo "nccl-tests: $t no-shift failed" >&2; rc=1; }
		else
			"$noshift/${t}_perf" -g "$np" -b 1K -e 256M -f 4 -d bfloat16 -o sum -G 10 -R 0 -c 1 \
				>"$out/$t-R0-noshift.log" 2>&1 || { echo "nccl-tests: $t no-shift failed" >&2; rc=1; }
		fi
	done
fi
mpirun -np "$np" bin/artest bench --variant nccl,nccl-reg,nccl-win -b 1K -e 256M -f 4 --json "$out/artest-nccl.json" \
	>"$out/artest-nccl.log" 2>&1 || rc=1
mpirun -np "$np" bin/artest bench --coll reduce-scatter,all-gather --variant nccl,nccl-reg -b 1K -e 256M -f 4 \
	--json "$out/artest-nccl-colls.json" >"$out/artest-nccl-colls.log" 2>&1 || rc=1
python3 ci/nccl-tests-compare.py "$out" | tee "$out/compare.md" || rc=1
exit $rc
