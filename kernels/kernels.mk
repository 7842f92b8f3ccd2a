# Building the CUDA kernels: included by the top-level Makefile, or run alone
# from the repository root as `make -f kernels/kernels.mk kernels`.
#
#   make kernels        bin/artest.fatbin: every kernel, sm_80 and sm_90
#                       machine code plus compute_90 PTX (for newer GPUs),
#                       and the ptxas report in bin/kernels-ptxas.log
#   make kernels-check  CPU-CI compile gate: every kernel source alone (to
#                       PTX, kernels-check-alone) and all of them together
#                       (an sm_90 cubin), and the selftest's host code;
#                       installs the pinned nvcc wheels (ci/install-nvcc.sh)
#                       when no nvcc exists
#   make kernels-ptx    bin/artest.ptx (compute_90), to inspect code
#   make kernels-sass-check  the fatbin's multimem kernels hold the NVLS
#                       instructions (SASS and PTX, cuobjdump; no GPU needed;
#                       ci/check-multimem-sass.sh)
#   make kernels-selftest  on a GPU machine: builds bin/artest.fatbin and
#                       bin/artest-selftest (kernels/selftest_test.cu) and
#                       runs every kernel on every GPU of this host, up to
#                       SELFTEST_RANKS ranks (default 8)
#
# One fatbin, one cuModuleLoadData: every kernels/*/*.cu (the harness's own
# kernels in kernels/harness/, each variant's in kernels/<variant>/;
# *_test.cu aside) is #included into one generated translation unit,
# bin/artest_kernels.cu, which nvcc compiles with -fatbin. That is simpler
# than -rdc plus nvlink and fatbinary, keeps whole-program optimization, and
# a new variant folder is picked up with no edit here. The price: family
# files share one namespace scope, so each keeps its code in namespace
# artest::<family> (kernels-check compiles the combined unit too, so a clash
# fails CI).

# Paths are relative to wherever this file is, so it works both included
# and with -f. Evaluated now, before MAKEFILE_LIST grows.
KERNELS_DIR := $(patsubst %/,%,$(dir $(lastword $(MAKEFILE_LIST))))
KERNELS_ROOT := $(patsubst %/,%,$(dir $(KERNELS_DIR)))
KERNELS_BIN ?= $(KERNELS_ROOT)/bin

# The CUDA toolkit's nvcc where there is one (GPU machines), else the pinned
# wheels of ci/install-nvcc.sh, else whatever nvcc is on PATH.
KERNELS_TOOLS_NVCC := $(KERNELS_ROOT)/.tools/nvcc/nvidia/cu13/bin/nvcc
NVCC ?= $(firstword $(wildcard /usr/local/cuda/bin/nvcc $(KERNELS_TOOLS_NVCC)) nvcc)

# The harness's own kernels (kernels/harness/: check, compute, delay, load,
# pdl, stamp), and each variant's in its folder (kernels/<variant>/*.cu).
# kernels/*.cu holds only the selftest, a host program.
KERNELS_SRC := $(sort $(filter-out %_test.cu,$(wildcard $(KERNELS_DIR)/*/*.cu)))
# The shared device headers (kernels/device/, included as "device/x.cuh"
# through -I kernels), and every kernel's own beside it.
KERNELS_HDR := $(sort $(wildcard $(KERNELS_DIR)/*/*.cuh))
KERNELS_UNITY := $(KERNELS_BIN)/artest_kernels.cu
KERNELS_FATBIN := $(KERNELS_BIN)/artest.fatbin
KERNELS_PTX := $(KERNELS_BIN)/artest.ptx
KERNELS_PTXAS_LOG := $(KERNELS_BIN)/kernels-ptxas.log

KERNELS_GENCODE := -gencode arch=compute_80,code=sm_80 \
                   -gencode arch=compute_90,code=sm_90 \
                   -gencode arch=compute_90,code=compute_90
# -lineinfo maps SASS to source lines for ncu; it does not change the code.
# Every nvcc, front-end and ptxas warning is an error.
# --threads 0 compiles the three targets in parallel.
KERNELS_NVCCFLAGS := -O3 -std=c++17 -lineinfo -Werror all-warnings --threads 0 -I$(KERNELS_DIR)

KERNELS_SELFTEST := $(KERNELS_BIN)/artest-selftest
SELFTEST_RANKS ?= 8

.PHONY: kernels kernels-check kernels-check-alone kernels-ptx kernels-selftest kernels-sass-check kernels-mutants-check

# The mutants of ci/mutant.sh (a protection deleted or weakened in a
# variant's source, the fault hooks compiled out) still apply: the script
# fails when the lines it deletes or rewrites moved or a fault-bit read it
# cannot rewrite appears. Edits only (compiling them takes half a minute of
# the 2 cores, and the edits only remove code from kernels kernels-check
# compiles or swap one expression for another of the same type); ci/gpu.sh's
# mutants step builds and its catch step runs them. The measurement builds
# of ci/experiment.sh (kept out of the kernel sources) still apply too,
# edits only as well.
kernels-mutants-check:
	@for m in oneshot-no-end-barrier twoshot-no-mid-barrier pull-no-end-barrier \
	    cpasync-wait-short ring-credit-short twoshot-mid-relaxed; do \
	  $(KERNELS_ROOT)/ci/mutant.sh --check $$m || exit 1; \
	done
	@for e in no-claim spin no-pdl late-trigger stamps sentinel-no-deadline no-checks; do \
	  $(KERNELS_ROOT)/ci/experiment.sh --check $$e || exit 1; \
	done

kernels: $(KERNELS_FATBIN)

# The combined unit: one #include per family file, in sorted order. Made
# afresh on every make (a family file deleted leaves no newer prerequisite),
# and replaced only when the list changed, so that its time moves, and the
# fatbin is rebuilt, only then: a deleted kernel does not stay in the fatbin.
.PHONY: kernels-unity-list
$(KERNELS_UNITY): kernels-unity-list $(KERNELS_DIR)/kernels.mk
	@mkdir -p $(@D)
	@{ echo '// Generated by kernels/kernels.mk: every kernel family in one translation unit.'; \
	  for f in $(patsubst $(KERNELS_DIR)/%,%,$(KERNELS_SRC)); do echo "#include \"$$f\""; done; } >$@.tmp
	@if cmp -s $@.tmp $@; then rm -f $@.tmp; else mv $@.tmp $@; fi

# ptxas -v goes to the log; on failure the log is shown. On success a
# one-line-per-kernel summary (sm_90) is printed, spills flagged.
$(KERNELS_FATBIN): $(KERNELS_UNITY) $(KERNELS_SRC) $(KERNELS_HDR)
	@echo "nvcc: $(NVCC)"
	$(NVCC) -fatbin $(KERNELS_NVCCFLAGS) $(KERNELS_GENCODE) -Xptxas -v -o $@.tmp $(KERNELS_UNITY) \
	  2>$(KERNELS_PTXAS_LOG) || { cat $(KERNELS_PTXAS_LOG) >&2; rm -f $@.tmp; exit 1; }
	@mv $@.tmp $@
	@awk -v q="'" '/Compiling entry function/ { name = $$7; gsub(q, "", name); arch = $$9; gsub(q, "", arch) } \
	  /bytes stack frame/ { stack = $$1; spill = $$5 + $$9 } \
	  /Used [0-9]+ registers/ && arch == "sm_90" { n++; \
	    printf "  %-32s sm_90 %3d regs %4d B stack  %s\n", name, $$5, stack, (spill ? "SPILLS " spill " B" : "no spills") } \
	  END { printf "%d kernels in $@ (ptxas report: $(KERNELS_PTXAS_LOG))\n", n }' $(KERNELS_PTXAS_LOG)

$(KERNELS_PTX): $(KERNELS_UNITY) $(KERNELS_SRC) $(KERNELS_HDR)
	$(NVCC) -ptx $(KERNELS_NVCCFLAGS) -arch=compute_90 -o $@ $(KERNELS_UNITY)

kernels-ptx: $(KERNELS_PTX)

# Each family file must compile alone (it includes what it uses), and all of
# them together (no clashes in the combined unit). kernels-check-alone does
# the first to PTX (the front end and NVVM; ptxas adds nothing a file alone
# could get wrong: 25 s for the 16 files on 2 cores, 45 s to cubins), and
# the host code of the selftest; kernels-check adds the combined unit to an
# sm_90 cubin. make test runs kernels-check-alone and then builds the fatbin
# (kernels-sass-check), which compiles the combined unit for every target
# with ptxas's warnings as errors, so the combined unit is not compiled
# twice there.
kernels-check-alone:
	@nvcc='$(NVCC)'; \
	if ! command -v "$$nvcc" >/dev/null 2>&1; then \
	  echo "kernels-check: no nvcc ($$nvcc); installing the pinned wheels" >&2; \
	  $(KERNELS_ROOT)/ci/install-nvcc.sh >&2 || exit 4; \
	  nvcc='$(KERNELS_TOOLS_NVCC)'; \
	fi; \
	mkdir -p $(KERNELS_BIN)/kernels-check; \
	for f in $(KERNELS_SRC); do \
	  echo "kernels-check: $$f alone (compute_90 PTX)"; \
	  "$$nvcc" -ptx $(KERNELS_NVCCFLAGS) -arch=compute_90 -o $(KERNELS_BIN)/kernels-check/$$(basename $$f .cu).ptx $$f || exit 1; \
	done; \
	echo "kernels-check: $(KERNELS_DIR)/selftest_test.cu (host, compile only)"; \
	"$$nvcc" -c -O2 -std=c++17 -Werror all-warnings -Xcompiler -Wall,-Wextra,-Werror -I$(KERNELS_DIR) \
	  -o $(KERNELS_BIN)/kernels-check/selftest.o $(KERNELS_DIR)/selftest_test.cu

kernels-check: kernels-check-alone $(KERNELS_UNITY)
	@nvcc='$(NVCC)'; command -v "$$nvcc" >/dev/null 2>&1 || nvcc='$(KERNELS_TOOLS_NVCC)'; \
	echo "kernels-check: $(KERNELS_UNITY) (sm_90)"; \
	"$$nvcc" -cubin $(KERNELS_NVCCFLAGS) -arch=sm_90 -o $(KERNELS_BIN)/kernels-check/artest_kernels.cubin $(KERNELS_UNITY)

# Compile-only: reads the fatbin with cuobjdump (the toolkit's, else the
# pinned wheels', installed when missing); nothing runs on a GPU.
kernels-sass-check: $(KERNELS_FATBIN)
	@if [ ! -x /usr/local/cuda/bin/cuobjdump ] && [ ! -x $(KERNELS_ROOT)/.tools/nvcc/nvidia/cu13/bin/nvdisasm ]; then \
	  echo "kernels-sass-check: no cuobjdump; installing the pinned wheels" >&2; \
	  $(KERNELS_ROOT)/ci/install-nvcc.sh >&2 || exit 4; \
	fi
	$(KERNELS_ROOT)/ci/check-multimem-sass.sh $(KERNELS_FATBIN)

# A host program (no device code of its own): it loads the fatbin by name.
# The -L is for the pip wheels, which keep libcudart_static.a in lib/.
$(KERNELS_SELFTEST): $(KERNELS_DIR)/selftest_test.cu $(KERNELS_HDR)
	@mkdir -p $(@D)
	$(NVCC) -O2 -std=c++17 -Werror all-warnings -Xcompiler -Wall,-Wextra,-Werror -I$(KERNELS_DIR) \
	  -L$(dir $(NVCC))../lib -o $@ $<

kernels-selftest: $(KERNELS_FATBIN) $(KERNELS_SELFTEST)
	$(KERNELS_SELFTEST) $(KERNELS_FATBIN) $(SELFTEST_RANKS)
