# artest: the two commands a new user needs are `make run` and `make test`.
#
#   make run      install what is missing, build, run the default matrix
#                 (on the GPUs when there are some, else the host backend)
#   make test     install what is missing, go vet, go test -short, the kernels'
#                 compile gate and SASS check, and the mpirun integration tests
#   make test-busy  make test beside 2 CPU hogs per core (RUNS=N repeats it)
#   make test-exhaustive  the tests -short skips: every one of the 2^32
#                 float32 inputs through each 16-bit conversion (reference/,
#                 and the device checker's port in kernels/), and the device
#                 checker's full agreement sweep
#   make build    bin/artest
#   make kernels  bin/artest.fatbin (nvcc: the CUDA toolkit's, else the
#                 pinned wheels of ci/install-nvcc.sh)
#   make plugins-host, plugins-check  the example plugin (plugin/plugin.mk)
#   make plugins  the adapter plugins (bin/plugins/vllm.so, trtllm.so,
#                 trtllm_fusion.so, pcie_ipc.so: allreduces from the pinned
#                 flashinfer-python wheel's headers)
#   make image    the OCI image (docker/Containerfile) with podman, from a
#                 Debian base made here: no container registry
#   make repro-image BUNDLE=path  the command that reruns a bundle in it
#   make test-image  CI's container step: --quick and a bundle's rerun inside

SHELL := /bin/bash
GO ?= go
REV := $(shell git describe --always --dirty 2>/dev/null || echo unknown)
NP ?= 4
MPIRUN_FLAGS ?= --oversubscribe
# Open MPI refuses to run as root unless told; CI containers run as root.
export OMPI_ALLOW_RUN_AS_ROOT := 1
export OMPI_ALLOW_RUN_AS_ROOT_CONFIRM := 1
# Never let NCCL create NVLS multicast objects from artest's own runs.
export NCCL_NVLS_ENABLE ?= 0

include kernels/kernels.mk
include plugin/plugin.mk

.PHONY: all deps build run test test-busy test-go test-kernels test-exhaustive vet unit cxx integration image repro-image test-image clean

all: build

# Open MPI from Debian packages when mpirun or mpi.h is missing.
deps:
	@ci/install-deps.sh

build: deps
	$(GO) build -ldflags "-X github.com/artest/artest/internal/cli.BuildRevision=$(REV)" -o bin/artest ./cmd/artest

# On a GPU machine: kernels, then one rank per GPU; with one GPU (or NP=N
# given above the GPU count), NP ranks share the GPUs under a private MPS
# daemon (artest mps --): protocol coverage, times mean nothing. Elsewhere:
# the host backend with NP ranks, every case of the default matrix checked
# once and not timed (host times are not speed; timing it all took 5 min on
# 2 cores, checking it takes about a minute).
run: build
	@if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then \
	  $(MAKE) --no-print-directory kernels || exit $$?; \
	  n=$$(nvidia-smi -L | wc -l); np=$$n; \
	  if [ "$(origin NP)" != file ] || [ $$n -lt 2 ]; then np=$(NP); fi; \
	  if [ $$np -le $$n ]; then \
	    echo "make run: $$n GPUs, cuda backend, $$np ranks"; \
	    mpirun -np $$np bin/artest --json bin/artest-report.json --junit bin/artest-report.xml; \
	  else \
	    echo "make run: $$n GPU(s) for $$np ranks: shared under a private MPS daemon (times mean nothing)"; \
	    bin/artest mps -- mpirun -np $$np $(MPIRUN_FLAGS) bin/artest --share-gpus --json bin/artest-report.json --junit bin/artest-report.xml; \
	  fi; \
	else \
	  echo "make run: no GPU, host backend with $(NP) ranks: the default matrix, each case checked once (--iters 0: host times are not speed)"; \
	  mpirun -np $(NP) $(MPIRUN_FLAGS) bin/artest --backend host --iters 0 --json bin/artest-report.json --junit bin/artest-report.xml; \
	fi

vet: deps
	$(GO) vet ./...
	@test -z "$$(gofmt -l .)" || { echo "gofmt needed:"; gofmt -l .; exit 1; }

# -short skips the exhaustive conversion tests; make test-exhaustive runs them.
# The device checker's agreement with the Go reference (kernels/check_test.go)
# builds kernels/harness/check.cuh with g++; here a missing compiler fails the target
# instead of skipping the test.
unit: deps cxx
	ARTEST_REQUIRE_CXX=1 $(GO) test -short ./...

cxx:
	@command -v g++ >/dev/null 2>&1 || { echo "make: g++ not found: the device checker's agreement test (kernels/check_test.go) needs a host C++ compiler (apt-get install g++)" >&2; exit 4; }

# The tests run 4 at a time (every one calls t.Parallel): one by one they
# kept 2 cores only 40 % busy (mpirun start-up, ranks waiting for each
# other), 161 s; 4 at a time took 100 s on the same machine.
integration: build plugins-host
	$(GO) test -tags integration -count=1 -parallel 4 ./test/integration/

# After vet, two lanes run side by side: the Go tests (unit, then the mpirun
# integration tests) and the kernels' checks (nvcc and cuobjdump, and the
# example plugin's nvcc compile; about a minute of one core). Each target's
# output is printed as a block when it ends.
test: vet
	@$(MAKE) --no-print-directory -j2 --output-sync=target test-go test-kernels

test-go: unit
	@$(MAKE) --no-print-directory integration

test-kernels: kernels-check-alone
	@$(MAKE) --no-print-directory kernels-sass-check plugins-check kernels-mutants-check

# make test beside 2 CPU hogs per core (ci/busy.sh), as a shared CI
# machine runs it: make test-busy [RUNS=5].
RUNS ?= 1
test-busy:
	ci/busy.sh --runs $(RUNS) -- $(MAKE) --no-print-directory test

# What -short skips (testing.Short): reference/'s TestFromF32AllInputs, all
# 2^32 float32 inputs per 16-bit format, tens of seconds each on 2 cores;
# kernels/' TestDeviceCheckerConversionsAllInputs (the same inputs through
# check.cuh's port) and the full agreement sweep of the device checker. The
# whole packages run, so a new exhaustive test there is picked up. CI runs
# this after make test.
test-exhaustive: deps cxx
	ARTEST_REQUIRE_CXX=1 $(GO) test -count=1 -timeout 30m ./reference/ ./kernels/

# The OCI image of docker/Containerfile, built with podman (installed from
# Debian packages when missing) on a Debian base made here from Debian
# packages: nothing comes from a container registry. ci/build-image.sh.
image: build
	@ci/install-podman.sh
	ci/build-image.sh

# The one command that reruns a repro bundle inside the image (built when
# missing): make repro-image BUNDLE=path [OUT=dir] [RUN=1 runs it too].
# With RUN=1 a verdict line ends it: 0 when the bundle's failure reproduced,
# 1 when it did not, the container's status when the rerun reached no verdict.
repro-image: build
	@test -n "$(BUNDLE)" || { echo "make repro-image: BUNDLE=path of a repro bundle needed" >&2; exit 2; }
	@ci/install-podman.sh
	ci/repro-in-image.sh $(if $(RUN),--run) "$(BUNDLE)" $(OUT)

# CI's container step (.ci/run, after make test): the image, --quick inside
# it, a host-backend bundle made outside reproduced inside. Skipped, with a
# "skipped:" line, where no container engine can run.
test-image: build
	ci/image-test.sh

clean:
	rm -rf bin
