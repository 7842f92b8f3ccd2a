#!/usr/bin/env bash
# Checks, without a GPU and without running anything, that the fatbin's
# multimem kernels hold the NVLink SHARP instructions, and that no other
# kernel does:
#
#   sm_90 SASS  artest_multimem_<dtype>_sum has its LDGMC (multimem.ld_reduce:
#               LDGMC.E.ADD.F32x4, LDGMC.E.F32ADD.F16x8, LDGMC.E.F32ADD.BF16x8);
#               no other kernel has an LDGMC
#   sm_80 SASS  the multimem kernels trap and hold no LDGMC (no multimem
#               below sm_90)
#   PTX         multimem.ld_reduce and multimem.st of each vector type, and
#               fence.proxy.alias (a multimem.st compiles to an ordinary
#               STG.E.128.STRONG.SYS whose address happens to be a multicast
#               one, so the PTX is where it can be seen)
#
#   ci/check-multimem-sass.sh [FATBIN]      (default: bin/artest.fatbin)
#
# cuobjdump (and the nvdisasm it runs) come from $CUOBJDUMP, the CUDA
# toolkit, or the pip wheels ci/install-nvcc.sh puts in .tools/nvcc.
# Exit codes: 0 all found, 1 something missing, 4 no cuobjdump or fatbin.
set -euo pipefail

repo_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
fatbin=${1:-$repo_root/bin/artest.fatbin}
[[ -f $fatbin ]] || { echo "check-multimem-sass: no fatbin $fatbin (make kernels)" >&2; exit 4; }

cuobjdump=${CUOBJDUMP:-}
if [[ -z $cuobjdump ]]; then
	for c in /usr/local/cuda/bin/cuobjdump "$repo_root/.tools/nvcc/nvidia/cu13/bin/cuobjdump" "$(command -v cuobjdump || true)"; do
		[[ -n $c && -x $c ]] && cuobjdump=$c && break
	done
fi
[[ -n $cuobjdump ]] || { echo "check-multimem-sass: no cuobjdump (ci/install-nvcc.sh installs one)" >&2; exit 4; }
# cuobjdump -sass runs nvdisasm: the one beside it first.
export PATH="$(dirname "$cuobjdump"):$PATH"

fail=0
miss() { echo "check-multimem-sass: $*" >&2; fail=1; }

# ops FUNCTION-NAME... per function: the LDGMC opcodes in its SASS.
ops_per_function() {
	awk '/Function : / { fn = $3 } /LDGMC/ { for (i = 1; i <= NF; i++) if ($i ~ /^LDGMC/) print fn, $i } /BPT.TRAP/ { print fn, "BPT.TRAP" }'
}

sass90=$("$cuobjdump" -sass -arch sm_90 "$fatbin" | ops_per_function)
sass80=$("$cuobjdump" -sass -arch sm_80 "$fatbin" | ops_per_function)
ptx=$("$cuobjdump" -ptx "$fatbin")

declare -A want=([f32]=LDGMC.E.ADD.F32x4 [f16]=LDGMC.E.F32ADD.F16x8 [bf16]=LDGMC.E.F32ADD.BF16x8)
declare -A ptxtype=([f32]=f32 [f16]=f16x2 [bf16]=bf16x2)
for d in f32 f16 bf16; do
	fn=artest_multimem_${d}_sum
	got=$(awk -v fn="$fn" '$1 == fn && $2 ~ /^LDGMC/ { print $2 }' <<<"$sass90" | sort -u)
	if grep -q "^${want[$d]}" <<<"$got"; then
		echo "check-multimem-sass: $fn sm_90: $(tr '\n' ' ' <<<"$got")"
	else
		miss "$fn: no ${want[$d]} in its sm_90 SASS (found: ${got:-nothing})"
	fi
	awk -v fn="$fn" '$1 == fn && $2 ~ /^LDGMC/' <<<"$sass80" | grep -q . && miss "$fn: LDGMC in its sm_80 SASS"
	awk -v fn="$fn" '$1 == fn && $2 == "BPT.TRAP"' <<<"$sass80" | grep -q . || miss "$fn: its sm_80 code does not trap"
	acc=""
	[[ $d != f32 ]] && acc=".acc::f32"
	grep -qF "multimem.ld_reduce.relaxed.sys.global.add${acc}.v4.${ptxtype[$d]}" <<<"$ptx" || miss "no multimem.ld_reduce .v4.${ptxtype[$d]} in the PTX"
	grep -qF "multimem.st.relaxed.sys.global.v4.${ptxtype[$d]}" <<<"$ptx" || miss "no multimem.st .v4.${ptxtype[$d]} in the PTX"
done
grep -qF "fence.proxy.alias" <<<"$ptx" || miss "no fence.proxy.alias in the PTX"
others=$(awk '$2 ~ /^LDGMC/ && $1 !~ /^artest_multimem_/ { print $1 }' <<<"$sass90$sass80" | sort -u)
[[ -z $others ]] || miss "LDGMC outside the multimem kernels: $others"

if ((fail)); then
	exit 1
fi
echo "check-multimem-sass: ok ($fatbin, $("$cuobjdump" --version | tail -1))"
