# The example plugin (plugin/example) and the adapter plugins
# (plugin/adapters), included by the top-level Makefile.
#
#   make plugins-host   bin/plugins/host_oneshot.so: the host twin, built
#                       with cc (what `make test` runs through mpirun)
#   make plugins-check  CPU-CI compile gate: cuda_oneshot.cu compiled for
#                       sm_90 with nvcc, compile only (the pinned wheels of
#                       ci/install-nvcc.sh when no nvcc exists)
#   make plugins-cuda   bin/plugins/cuda_oneshot.so, with the CUDA toolkit's
#                       nvcc (or the pinned wheels'), the runtime linked
#                       statically; ci/gpu.sh builds and runs it

PLUGIN_DIR := plugin
PLUGIN_BIN := bin/plugins
CC ?= cc

.PHONY: plugins-host plugins-check plugins-cuda

plugins-host: $(PLUGIN_BIN)/host_oneshot.so

$(PLUGIN_BIN)/host_oneshot.so: $(PLUGIN_DIR)/example/host_oneshot.c $(PLUGIN_DIR)/artest_plugin.h $(PLUGIN_DIR)/artest_device.h
	@mkdir -p $(@D)
	$(CC) -std=c11 -O2 -fPIC -shared -ffp-contract=off -Wl,--no-undefined -Wall -Wextra -Werror -I$(PLUGIN_DIR) -o $@ $< -lm

plugins-check: $(PLUGIN_DIR)/example/cuda_oneshot.cu $(PLUGIN_DIR)/artest_plugin.h $(PLUGIN_DIR)/artest_device.h
	@nvcc='$(NVCC)'; \
	if ! command -v "$$nvcc" >/dev/null 2>&1; then \
	  echo "plugins-check: no nvcc ($$nvcc); installing the pinned wheels" >&2; \
	  ci/install-nvcc.sh >&2 || exit 4; \
	  nvcc='$(KERNELS_TOOLS_NVCC)'; \
	fi; \
	mkdir -p $(PLUGIN_BIN); \
	echo "plugins-check: $(PLUGIN_DIR)/example/cuda_oneshot.cu (sm_90, compile only)"; \
	"$$nvcc" -c -O3 -std=c++17 -arch=sm_90 -Werror all-warnings -Xcompiler -fPIC,-Wall,-Wextra,-Werror \
	  -I$(PLUGIN_DIR) -o $(PLUGIN_BIN)/cuda_oneshot.o $(PLUGIN_DIR)/example/cuda_oneshot.cu

# The toolkit's nvcc on a GPU machine (NVCC, kernels/kernels.mk); the -L is
# for the pip wheels, which keep libcudart_static.a in lib/ (as
# kernels-selftest). The runtime is linked statically: the plugin runs in
# the primary context artest made current, through the same libcuda.
plugins-cuda: $(PLUGIN_DIR)/example/cuda_oneshot.cu $(PLUGIN_DIR)/artest_plugin.h $(PLUGIN_DIR)/artest_device.h
	@mkdir -p $(PLUGIN_BIN)
	$(NVCC) -O3 -std=c++17 -arch=sm_90 -Werror all-warnings -Xcompiler -fPIC,-Wall,-Wextra,-Werror -shared \
	  -I$(PLUGIN_DIR) -L$(dir $(NVCC))../lib -o $(PLUGIN_BIN)/cuda_oneshot.so $(PLUGIN_DIR)/example/cuda_oneshot.cu

# Adapter plugins (plugin/adapters): thin shims over allreduces written
# elsewhere, built from the headers of the pinned flashinfer-python wheel
# that ci/install-flashinfer.sh downloads into .tools/flashinfer (never
# copied into the repo). Included with -isystem: their warnings are not ours.
# --expt-relaxed-constexpr as flashinfer's own build: trtllm_allreduce.cuh
# calls std::min in device code. trtllm.cu takes about 2 minutes of one core
# (customAllReduce instantiates every fusion and push-mode kernel);
# trtllm_fusion.cu about 20 seconds (the allreduce-only pattern), pcie_ipc.cu
# a few.
#
#   make plugins                 bin/plugins/vllm.so, trtllm.so,
#                                trtllm_fusion.so and pcie_ipc.so, with the
#                                toolkit's nvcc (NVCC) or the pinned wheels';
#                                ci/gpu.sh runs them
#   make plugins-adapters-check  compile only, sm_90, with the pinned nvcc
#                                wheels when no nvcc exists (not in make test)
FLASHINFER_INCLUDE := .tools/flashinfer/flashinfer/data/include
FLASHINFER_SPDLOG := .tools/flashinfer/flashinfer/data/spdlog/include
ADAPTERS := vllm trtllm trtllm_fusion pcie_ipc
ADAPTER_FLAGS = -O3 -std=c++17 -arch=sm_90 --expt-relaxed-constexpr -Werror all-warnings -Xcompiler -fPIC,-Wall,-Wextra,-Werror \
	-I$(PLUGIN_DIR) -isystem $(FLASHINFER_INCLUDE) -isystem $(FLASHINFER_SPDLOG)

.PHONY: plugins plugins-adapters-check flashinfer-headers

flashinfer-headers:
	@ci/install-flashinfer.sh || exit 4

plugins: flashinfer-headers
	@mkdir -p $(PLUGIN_BIN)
	@for a in $(ADAPTERS); do \
	  echo "plugins: $(PLUGIN_BIN)/$$a.so"; \
	  $(NVCC) $(ADAPTER_FLAGS) -shared -L$(dir $(NVCC))../lib -o $(PLUGIN_BIN)/$$a.so $(PLUGIN_DIR)/adapters/$$a.cu || exit 1; \
	done

plugins-adapters-check: flashinfer-headers
	@nvcc='$(NVCC)'; \
	if ! command -v "$$nvcc" >/dev/null 2>&1; then \
	  echo "plugins-adapters-check: no nvcc ($$nvcc); installing the pinned wheels" >&2; \
	  ci/install-nvcc.sh >&2 || exit 4; \
	  nvcc='$(KERNELS_TOOLS_NVCC)'; \
	fi; \
	mkdir -p $(PLUGIN_BIN); \
	for a in $(ADAPTERS); do \
	  echo "plugins-adapters-check: $(PLUGIN_DIR)/adapters/$$a.cu (sm_90, compile only)"; \
	  "$$nvcc" -c $(ADAPTER_FLAGS) -o $(PLUGIN_BIN)/$$a.o $(PLUGIN_DIR)/adapters/$$a.cu || exit 1; \
	done

# An experiment, not a fix shipped by artest: TensorRT-LLM's kernels in the
# wheel's trtllm_allreduce.cuh store a block_barrier flag before the block's
# other warps have finished copying their part of the input (no
# __syncthreads() first). This builds bin/plugins/trtllm_syncfix.so from a
# copy of the headers with __syncthreads() added at the start of
# block_barrier, so that ci/gpu.sh can run the same stress on both (load one
# of the two at a time: both name their plugin trtllm).
SYNCFIX_INCLUDE := .tools/flashinfer-syncfix/include
.PHONY: plugins-trtllm-syncfix
plugins-trtllm-syncfix: flashinfer-headers
	@rm -rf .tools/flashinfer-syncfix && mkdir -p .tools/flashinfer-syncfix
	@cp -r $(FLASHINFER_INCLUDE) $(SYNCFIX_INCLUDE)
	@awk '/void block_barrier\(/ { s = 1 } { print } s == 1 && /\{$$/ { print "  __syncthreads();"; s = 2 }' \
	  $(FLASHINFER_INCLUDE)/flashinfer/comm/trtllm_allreduce.cuh > $(SYNCFIX_INCLUDE)/flashinfer/comm/trtllm_allreduce.cuh
	@n=$$(diff $(FLASHINFER_INCLUDE)/flashinfer/comm/trtllm_allreduce.cuh $(SYNCFIX_INCLUDE)/flashinfer/comm/trtllm_allreduce.cuh | grep -c '^> '); \
	  [ "$$n" = 1 ] || { echo "plugins-trtllm-syncfix: the patch did not apply once ($$n lines added)" >&2; exit 1; }
	@mkdir -p $(PLUGIN_BIN)
	$(NVCC) $(subst $(FLASHINFER_INCLUDE),$(SYNCFIX_INCLUDE),$(ADAPTER_FLAGS)) -shared -L$(dir $(NVCC))../lib \
	  -o $(PLUGIN_BIN)/trtllm_syncfix.so $(PLUGIN_DIR)/adapters/trtllm.cu

# A planted bug for the stress's catch, not a kernel artest ships: vLLM's
# one-stage allreduce (cross_device_reduce_1stage in the wheel's
# vllm_custom_all_reduce.cuh) with its end barrier deleted, the question
# kernel authors ask most ("why the end sync?"). Builds
# bin/plugins/vllm_noend.so from a copy of the headers with that one line
# removed; it names its plugin vllm, so load it instead of vllm.so.
NOEND_INCLUDE := .tools/flashinfer-vllm-noend/include
.PHONY: plugins-vllm-noend
plugins-vllm-noend: flashinfer-headers
	@rm -rf .tools/flashinfer-vllm-noend && mkdir -p .tools/flashinfer-vllm-noend
	@cp -r $(FLASHINFER_INCLUDE) $(NOEND_INCLUDE)
	@awk '/cross_device_reduce_1stage\(/ { s = 1 } s == 1 && /multi_gpu_barrier<ngpus, false>\(sg, self_sg, rank\);/ { s = 2; next } { print }' \
	  $(FLASHINFER_INCLUDE)/flashinfer/comm/vllm_custom_all_reduce.cuh > $(NOEND_INCLUDE)/flashinfer/comm/vllm_custom_all_reduce.cuh
	@n=$$(diff $(FLASHINFER_INCLUDE)/flashinfer/comm/vllm_custom_all_reduce.cuh $(NOEND_INCLUDE)/flashinfer/comm/vllm_custom_all_reduce.cuh | grep -c '^< '); \
	  [ "$$n" = 1 ] || { echo "plugins-vllm-noend: the deletion did not apply once ($$n lines removed)" >&2; exit 1; }
	@mkdir -p $(PLUGIN_BIN)
	$(NVCC) $(subst $(FLASHINFER_INCLUDE),$(NOEND_INCLUDE),$(ADAPTER_FLAGS)) -shared -L$(dir $(NVCC))../lib \
	  -o $(PLUGIN_BIN)/vllm_noend.so $(PLUGIN_DIR)/adapters/vllm.cu
