# Sourced by the GPU probes (probe-stress-catch.sh, probe-false-alarm.sh):
# the environment every probe job runs in, and what a SETTING word means.
#
#   probe_env              NVLS and multicast off, root allowed for mpirun,
#                          no CPU binding, eager module loading, and the
#                          Python wheel's NCCL when there is one
#   probe_setting SETTING  sets np, pre (the command before mpirun) and share
#                          (artest's flags): gpus (one rank per GPU, all of
#                          them), gpusN (the first N), mps2, mps4 (N ranks on
#                          GPU 0 under a private MPS daemon, --share-gpus;
#                          CUDA_VISIBLE_DEVICES=0); returns 2 for another word

probe_env() {
	export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
	export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
	export OMPI_MCA_hwloc_base_binding_policy=none CUDA_MODULE_LOADING=EAGER
	local p
	for p in /opt/torch/.venv/lib/python3*/site-packages/nvidia/nccl/lib/libnccl.so.2; do
		[[ -e $p ]] && export ARTEST_NCCL=$p && break
	done
	return 0
}

probe_setting() {
	unset CUDA_VISIBLE_DEVICES
	case $1 in
	gpus | gpus[0-9]*)
		np=${1#gpus}
		[[ -z $np ]] && np=$(nvidia-smi -L | wc -l)
		pre=() share=()
		;;
	mps2 | mps4)
		np=${1#mps}
		export CUDA_VISIBLE_DEVICES=0
		pre=("$bin" mps --)
		share=(--share-gpus)
		;;
	*)
		echo "unknown setting $1" >&2
		return 2
		;;
	esac
}
