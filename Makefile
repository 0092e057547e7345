# gptmuon: a GPT + Muon trainer in C/CUDA with verification and benchmark harnesses.
# `make help` lists the targets. Every target first runs `make deps` (a stamp file), so on a
# fresh Debian machine `make verify` alone installs what it needs, builds and tests.

SHELL := /bin/bash
# Quiet by default: one short line per file compiled, nothing when there is nothing to do; V=1
# shows every command.
ifeq ($(V),1)
  Q :=
  say :=
else
  Q := @
  say = @printf '  %-5s %s\n' '$(1)' '$(2)'
endif
# CUDA_ARCH: what nvcc compiles the .cu files for. sm_XX[a] (default sm_90a, the H100): machine code
# for that GPU plus compute_XX PTX; compute_XX: PTX only, for an older GPU's driver to compile or a
# CUDA runtime that executes PTX itself (a functional simulator). Below compute_80 the tensor-core
# attention (mma.sync, bf16) is compiled out and the scalar kernels take over. A build for another
# architecture goes to its own folder, build-<arch>, so it never mixes with the default build.
CUDA_ARCH ?= sm_90a
comma := ,
BUILD ?= $(if $(filter sm_90a,$(CUDA_ARCH)),build,build-$(CUDA_ARCH))
CC ?= gcc
JOBS ?= $(shell nproc 2>/dev/null || echo 2)

# ---- toolchains ------------------------------------------------------------------------------
NVCC ?= $(shell command -v nvcc 2>/dev/null || { test -x /usr/local/cuda/bin/nvcc && echo /usr/local/cuda/bin/nvcc; })
CUDA_HOME ?= $(if $(NVCC),$(patsubst %/bin/nvcc,%,$(NVCC)),/usr/local/cuda)

WARN := -Wall -Wextra -Werror
# -fno-math-errno, -fno-trapping-math: nothing here reads errno after a math function or tests
# floating-point exception flags, and either one keeps loops from vectorizing (a sqrtf that may set
# errno in the Adam update; a compare-and-select that may raise a flag in ReLU^2, and the exp/tanh
# loops of attention and the softcapped cross-entropy). Values are
# unchanged: a vector lane computes what the scalar code did, and -std=c11 keeps FMA contraction
# off (no flag here lets the compiler reassociate).
CFLAGS_COMMON = -std=c11 -D_DEFAULT_SOURCE -Iimpl -g $(WARN) -fopenmp -fno-math-errno -fno-trapping-math $(MPI_CFLAGS)
CFLAGS ?= -O2 -march=x86-64-v2
# Open MPI's flags come from its wrapper (the build sub-make parses this after `make deps`).
MPI_CFLAGS := $(shell mpicc --showme:compile 2>/dev/null)
MPI_LIBS := $(shell mpicc --showme:link 2>/dev/null)
LDLIBS_COMMON = -lopenblas -llapacke -lz -lm -fopenmp $(MPI_LIBS) -lpthread

# Release build: CUDA sources included when nvcc exists. Sanitizer build: CPU code only.
ifneq ($(NVCC),)
  CUDA_DEFS := -DGM_HAVE_CUDA -I$(CUDA_HOME)/include
  CU_SRC := $(shell find impl -name '*.cu' | sort)
  CUDA_ARCH_NUM := $(patsubst sm_%,%,$(patsubst compute_%,%,$(patsubst %a,%,$(CUDA_ARCH))))
  GENCODE_PTX := -gencode=arch=compute_$(CUDA_ARCH_NUM)$(comma)code=compute_$(CUDA_ARCH_NUM)
  CUDA_GENCODE := $(if $(filter compute_%,$(CUDA_ARCH)),$(GENCODE_PTX),\
    -gencode=arch=compute_$(patsubst sm_%,%,$(CUDA_ARCH))$(comma)code=$(CUDA_ARCH) $(GENCODE_PTX))
  # cuDNN's headers: with them, cuda/attention_cudnn.cu builds cuDNN's fused attention (the library
  # itself is loaded at run time); without them that file says so where cuDNN is asked for.
  CUDNN_H := $(firstword $(wildcard $(CUDA_HOME)/include/cudnn.h /usr/include/cudnn.h /usr/include/$(shell uname -m)-linux-gnu/cudnn.h))
  NVCCFLAGS := -std=c++17 -O3 -Iimpl -I$(CUDA_HOME)/include -DGM_HAVE_CUDA -DGM_CUDA_ARCH=$(CUDA_ARCH_NUM)0 \
    $(if $(CUDNN_H),-DGM_HAVE_CUDNN_H=1 -I$(dir $(CUDNN_H))) $(CUDA_GENCODE) -Xcompiler -Wall,-Wextra,-Werror -lineinfo
  # -lineinfo: compute-sanitizer and Nsight name the source line of a device fault.
  # --as-needed: a program gets only the CUDA libraries its objects call (make_data none). cuSOLVER
  # (the SVD orthogonalizer, cuda/svd_polar.cu), cuDNN (plain causal attention, cuda/attention_cudnn.cu)
  # and NCCL (--comm=nccl, dist/comm_nccl.c) are loaded at run time where used, so no program needs
  # them to start.
  CUDA_LIBS := -L$(CUDA_HOME)/lib64 -Wl,-rpath,$(CUDA_HOME)/lib64 -Wl,--as-needed -lcublas -lcublasLt -lcudart \
    -lstdc++ -Wl,--no-as-needed
  CUDA_NOTE := CUDA: nvcc is $(NVCC): the build compiles the $(words $(CU_SRC)) .cu files for $(CUDA_ARCH)$(if $(filter sm_%,$(CUDA_ARCH)), + compute_$(CUDA_ARCH_NUM) PTX)
else
  CU_SRC :=
  CUDA_NOTE := CUDA: nvcc not found (PATH, /usr/local/cuda/bin): building the CPU backend only
endif

# The tensor-core attention's device code run on the CPU (verify/emu/: the CUDA execution model and
# the PTX instructions emulated on the host; g++ with CUDA's headers, linked with the release library
# for the CPU backend's dense attention reference), for verify/test_attn_emulated.c.
ATTN_EMU := $(if $(and $(NVCC),$(wildcard verify/emu/attn_emu.cc)),$(BUILD)/verify/prog/attn_emu)
ATTN_EMU_FLAGS := -std=c++20 -O2 -g -Wall -Wextra -Werror -Wno-unknown-pragmas -DGM_HAVE_CUDA -DGM_CUDA_ARCH=900 \
  -DGM_ATTN_HOST_EMULATION -Iverify/emu/shim -Iverify/emu -Iimpl -I$(CUDA_HOME)/include

LIB_SRC := $(shell find impl -name '*.c' -not -path 'impl/bin/*' | sort)
BIN_SRC := $(wildcard impl/bin/*.c)
# verify/both/*.c run in both builds (fp32 and fp64), each asserting its own precision's bar.
TEST_SRC := $(wildcard verify/*.c) $(wildcard verify/both/*.c)
# Programs that only tests run (e.g. under mpirun): verify/prog/*.c -> build/verify/prog/<name>.
TESTPROG_SRC := $(wildcard verify/prog/*.c)
TEST64_SRC := $(wildcard verify/fp64/*.c) $(wildcard verify/both/*.c) verify/helpers.c verify/gpu_summary.c
BENCH_SRC := $(wildcard bench/*.c)
BINS := $(patsubst impl/bin/%.c,$(BUILD)/%,$(BIN_SRC))
BENCH_BINS := $(patsubst bench/%.c,$(BUILD)/bench/%,$(BENCH_SRC))

REL := $(BUILD)/rel
REL64 := $(BUILD)/rel64
SAN := $(BUILD)/san
SANFLAGS := -O1 -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer
# The builds without CUDA by design say so where a GPU test or --backend=cuda asks (backend/cuda/device.h).
SAN_NO_CUDA := -DGM_NO_CUDA_WHY='"the sanitizer build is CPU only by design (ASan/UBSan check the host code; the release build runs the GPU tests)"'
REL64_NO_CUDA := -DGM_NO_CUDA_WHY='"the fp64 build is CPU only by design (the GPU kernels are fp32/bf16; the release build runs the GPU tests)"'

DEPS_STAMP := $(BUILD)/.deps-ok
# Objects of the programs are kept (not deleted as intermediates), so an unchanged program is
# neither relinked nor announced.
.SECONDARY:

.PHONY: help deps build verify gpu-check gpu-report-check bench refdata repro repro-frontier train data clean bundle bundle-check FORCE
.DEFAULT_GOAL := help

help:
	@echo "gptmuon - GPT + Muon trainer with verification and benchmark harnesses"
	@echo ""
	@echo "  make verify     install dependencies, build, run every test (Criterion; also under ASan/UBSan)"
	@echo "  make repro      train every preset, 3 seeds, and write the table with its statistics and the curves:"
	@echo "                  SCALE=tiny (default; 100 steps, ~13 min on 2 cores), SCALE=small (150 steps of 2048 tokens,"
	@echo "                  ~37 min on 2 quiet cores) -> runs/repro-SCALE/report/, or REPORT=folder (REPORT=reports/repro"
	@echo "                  rewrites the committed sample); an interrupted repro continues, reusing its finished runs"
	@echo "                  SEEDS=, BUDGET= (steps), PRESETS=, OVERLAY='label=log.txt[@tokens_per_step] ...' (PyTorch logs)"
	@echo "                  a PRESETS word LABEL=PRESET:--flag=v[,--flag=v] is a variant, compared with its preset"
	@echo "  make repro-frontier  softcap, normuon and each of record #43's optimizer changes alone on softcap"
	@echo "                  (Polar Express, NorMuon, cautious weight decay, its lrs and schedules) -> runs/repro-SCALE/frontier/"
	@echo "                  (sample: reports/frontier-small/, SCALE=small SEEDS=5)"
	@echo "  make build      build the library, programs and test binaries"
	@echo "  make data       build the embedded dataset: dict-gcide -> BPE tokenizer -> shards under data/gcide"
	@echo "                  (replaces only a dataset make_data wrote: data/gcide/make_data.txt lists its files)"
	@echo "  make deps       install missing Debian packages (apt-get), once; stamp in $(DEPS_STAMP)"
	@echo "  make bench      timing and numerics harnesses -> reports/ (bench/run.sh; BENCH_SECTIONS=, KARGS=, MARGS=,"
	@echo "                  LLMC_BIN=/path/to/your/train_gpt2 adds llm.c's CPU trainer to the peers section)"
	@echo "  make train      one run into runs/PRESET-SCALE: PRESET=softcap SCALE=tiny ARGS='--steps=100' (build/train --help);"
	@echo "                  a second run there needs ARGS='--overwrite=1' (replace) or '--resume=runs/softcap-tiny/ckpt.bin'"
	@echo "  make refdata    regenerate the PyTorch reference data (needs python3-torch)"
	@echo "  make gpu-check  the GPU suites on another CUDA runtime: CUDA_ARCH=compute_75 CUDA_RUNTIME_DIR=dir"
	@echo "                  [GPU_WORKDIR=dir] [GPU_TESTS='cuda_*/*']; GM_CUDA_LIBS=ref keeps cuBLAS/cuSOLVER out"
	@echo "  make gpu-report-check  the GPU report of a node (ci/bundle/run_gpu_report.sh) from this build into a"
	@echo "                  folder under /tmp; without a GPU every stage but info is skipped [GPU_REPORT_ARGS=--budget-s=N]"
	@echo "  make bundle     relocatable folder for a bare GPU node -> $(BUILD)/bundle (ci/bundle/README.txt);"
	@echo "                  BASELINE=REV adds REV's attention and step benches (the report's attention-ab, kernels-ab);"
	@echo "                  BASELINE_BENCHES=attention_gpu or kernels only one of them"
	@echo "  make bundle-check  run the CPU suite from the bundle with this machine's libraries hidden"
	@echo "  make clean      remove $(BUILD)/ (data/ is kept)"
	@echo "  V=1             show every command (quiet by default)"
	@echo ""
	@echo "  $(CUDA_NOTE)"

deps: $(DEPS_STAMP)
$(DEPS_STAMP): ci/deps.sh
	@bash ci/deps.sh
	@mkdir -p $(BUILD) && touch $@

# ---- objects -----------------------------------------------------------------------------------
$(REL)/%.o: %.c $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(call say,CC,$<)
	$(Q)$(CC) $(CFLAGS_COMMON) $(CFLAGS) $(CUDA_DEFS) -MMD -MP -c $< -o $@

$(REL)/%.cu.o: %.cu $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(call say,CUDA,$< (nvcc: $(CUDA_ARCH)$(if $(filter sm_%,$(CUDA_ARCH)), + compute_$(CUDA_ARCH_NUM) PTX)))
	$(Q)$(NVCC) $(NVCCFLAGS) -MMD -MP -c $< -o $@

# The same sources with gm_real = double (-DGM_FP64): the CPU backend, model and optimizers in
# fp64, for gradient checks and the fp64 equivalence bars. CPU only.
$(REL64)/%.o: %.c $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(call say,CC64,$<)
	$(Q)$(CC) $(CFLAGS_COMMON) $(CFLAGS) -DGM_FP64 $(REL64_NO_CUDA) -MMD -MP -c $< -o $@

$(SAN)/%.o: %.c $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(call say,CCSAN,$<)
	$(Q)$(CC) $(CFLAGS_COMMON) $(SANFLAGS) $(SAN_NO_CUDA) -MMD -MP -c $< -o $@

# Commit and source snapshot embedded in every binary (impl/base/build_info.h).
BUILD_INFO := $(BUILD)/gen/build_info.c
$(BUILD_INFO): FORCE $(DEPS_STAMP)
	@python3 ci/build_info.py $@
FORCE:
LIB_SRC += $(BUILD_INFO)

REL_LIB_OBJ := $(patsubst %.c,$(REL)/%.o,$(LIB_SRC)) $(patsubst %.cu,$(REL)/%.cu.o,$(CU_SRC))
REL64_LIB_OBJ := $(patsubst %.c,$(REL64)/%.o,$(LIB_SRC))
SAN_LIB_OBJ := $(patsubst %.c,$(SAN)/%.o,$(LIB_SRC))

$(BUILD)/libgptmuon.a: $(REL_LIB_OBJ)
	@rm -f $@
	$(if $(NVCC),,@echo "$(CUDA_NOTE)")
	$(call say,AR,$@)
	$(Q)ar rcs $@ $^
$(BUILD)/libgptmuon64.a: $(REL64_LIB_OBJ)
	@rm -f $@
	$(call say,AR,$@)
	$(Q)ar rcs $@ $^
$(SAN)/libgptmuon.a: $(SAN_LIB_OBJ)
	@rm -f $@
	$(call say,AR,$@)
	$(Q)ar rcs $@ $^

$(BUILD)/%: $(REL)/impl/bin/%.o $(BUILD)/libgptmuon.a
	$(call say,LD,$@)
	$(Q)$(CC) $< $(BUILD)/libgptmuon.a $(LDLIBS_COMMON) $(CUDA_LIBS) -o $@
$(BUILD)/bench/%: $(REL)/bench/%.o $(BUILD)/libgptmuon.a
	@mkdir -p $(dir $@)
	$(call say,LD,$@)
	$(Q)$(CC) $< $(BUILD)/libgptmuon.a $(LDLIBS_COMMON) $(CUDA_LIBS) -o $@
$(BUILD)/verify/prog/%: $(REL)/verify/prog/%.o $(BUILD)/libgptmuon.a
	@mkdir -p $(dir $@)
	$(call say,LD,$@)
	$(Q)$(CC) $< $(BUILD)/libgptmuon.a $(LDLIBS_COMMON) $(CUDA_LIBS) -o $@
$(BUILD)/verify/prog/attn_emu: verify/emu/attn_emu.cc $(BUILD)/libgptmuon.a
	@mkdir -p $(dir $@)
	$(call say,CXX,$@)
	$(Q)$(CXX) $(ATTN_EMU_FLAGS) -MMD -MP -MF $@.d $< $(BUILD)/libgptmuon.a $(LDLIBS_COMMON) -o $@
$(SAN)/bin/%: $(SAN)/verify/prog/%.o $(SAN)/libgptmuon.a
	@mkdir -p $(dir $@)
	$(call say,LD,$@)
	$(Q)$(CC) $(SANFLAGS) $< $(SAN)/libgptmuon.a $(LDLIBS_COMMON) -o $@
$(SAN)/bin/%: $(SAN)/impl/bin/%.o $(SAN)/libgptmuon.a
	@mkdir -p $(dir $@)
	$(call say,LD,$@)
	$(Q)$(CC) $(SANFLAGS) $< $(SAN)/libgptmuon.a $(LDLIBS_COMMON) -o $@
# The benches the tests run (test_bench_kernels, test_model_report, test_backend_compare, test_ckpt_diff), under the
# sanitizers too.
SAN_BENCH_BINS := $(SAN)/bin/bench/kernels $(SAN)/bin/bench/model_report $(SAN)/bin/bench/backend_compare $(SAN)/bin/bench/ckpt_diff
$(SAN)/bin/bench/%: $(SAN)/bench/%.o $(SAN)/libgptmuon.a
	@mkdir -p $(dir $@)
	$(call say,LD,$@)
	$(Q)$(CC) $(SANFLAGS) $< $(SAN)/libgptmuon.a $(LDLIBS_COMMON) -o $@

# All Criterion suites link into one binary per build, so one summary line covers them all.
$(BUILD)/verify/gm_verify: $(patsubst %.c,$(REL)/%.o,$(TEST_SRC)) $(BUILD)/libgptmuon.a
	@mkdir -p $(dir $@)
	$(call say,LD,$@)
	$(Q)$(CC) $(filter %.o,$^) $(BUILD)/libgptmuon.a -lcriterion $(LDLIBS_COMMON) $(CUDA_LIBS) -o $@
$(BUILD)/verify/gm_verify64: $(patsubst %.c,$(REL64)/%.o,$(TEST64_SRC)) $(BUILD)/libgptmuon64.a
	@mkdir -p $(dir $@)
	$(call say,LD,$@)
	$(Q)$(CC) $(filter %.o,$^) $(BUILD)/libgptmuon64.a -lcriterion $(LDLIBS_COMMON) -o $@
$(SAN)/verify/gm_verify: $(patsubst %.c,$(SAN)/%.o,$(TEST_SRC)) $(SAN)/libgptmuon.a
	@mkdir -p $(dir $@)
	$(call say,LD,$@)
	$(Q)$(CC) $(SANFLAGS) $(filter %.o,$^) $(SAN)/libgptmuon.a -lcriterion $(LDLIBS_COMMON) -o $@

build: $(DEPS_STAMP)
	@$(MAKE) --no-print-directory -j$(JOBS) build-all
# The sub-make's one goal: named targets that are up to date would each print "... is up to date".
.PHONY: build-all
build-all: $(BUILD)/libgptmuon.a $(BINS) $(BENCH_BINS) $(BUILD)/verify/gm_verify $(ATTN_EMU) \
	  $(patsubst verify/prog/%.c,$(BUILD)/verify/prog/%,$(TESTPROG_SRC)) $(patsubst verify/prog/%.c,$(SAN)/bin/%,$(TESTPROG_SRC)) \
	  $(if $(wildcard verify/fp64/*.c),$(BUILD)/verify/gm_verify64) \
	  $(SAN)/verify/gm_verify $(patsubst impl/bin/%.c,$(SAN)/bin/%,$(BIN_SRC)) $(SAN_BENCH_BINS)
	@:

# Tests find programs through GM_BIN (release or sanitizer build) and fixtures through GM_ROOT.
REL_TEST_ENV = OMP_WAIT_POLICY=passive GM_ROOT=$(CURDIR) GM_BIN=$(CURDIR)/$(BUILD) GM_TESTPROG=$(CURDIR)/$(BUILD)/verify/prog
verify: build
	@echo "== tests (release build$(if $(NVCC), with CUDA,)) =="
	$(Q)$(REL_TEST_ENV) $(BUILD)/verify/gm_verify --jobs $(JOBS)
	@if [ -x $(BUILD)/verify/gm_verify64 ]; then echo "== tests (fp64 build) =="; \
	  OMP_WAIT_POLICY=passive GM_ROOT=$(CURDIR) GM_BIN=$(CURDIR)/$(BUILD) $(BUILD)/verify/gm_verify64 --jobs $(JOBS); fi
	@echo "== tests (AddressSanitizer + UBSan build, CPU code) =="
	$(Q)ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
	  OMP_WAIT_POLICY=passive LSAN_OPTIONS=suppressions=$(CURDIR)/verify/lsan.supp GM_ROOT=$(CURDIR) GM_BIN=$(CURDIR)/$(SAN)/bin GM_TESTPROG=$(CURDIR)/$(SAN)/bin $(SAN)/verify/gm_verify --jobs $(JOBS)

data: build
	$(Q)$(BUILD)/make_data --out=data/gcide

# Timing harnesses: bench/run.sh runs every program built from bench/*.c and writes reports/.
bench: build
	$(Q)bash bench/run.sh $(BUILD)

# Regenerate the committed PyTorch reference data (needs Debian's python3-torch; CI only reads).
refdata: build
	$(Q)bash refdata/gen/make_refdata.sh $(BUILD)

# One run: make train PRESET=softcap SCALE=tiny ARGS="--steps=100"
PRESET ?= softcap
SCALE ?= tiny
ARGS ?=
train: build $(if $(filter tiny small,$(SCALE)),data/gcide/val_000000.bin)
	$(Q)OMP_WAIT_POLICY=passive $(BUILD)/train --preset=$(PRESET) --scale=$(SCALE) $(ARGS)

# Every preset, SEEDS seeds, BUDGET steps each (empty: bench/repro.sh's defaults for the scale):
# runs/repro-<scale>/report/ (table with statistics, curves, README), or the folder REPORT names
# (REPORT=reports/repro rewrites the committed tiny sample). An interrupted repro continues.
PRESETS ?= adamw muon-v1 muon-v2 untied value-embed softcap normuon
SEEDS ?=
BUDGET ?=
OVERLAY ?=
# REPORT reaches bench/repro.sh from the environment (make puts a command line's variables there),
# so that a path holding a quote or a $ is never spelled inside the recipe's shell command.
REPORT ?=
repro: build $(if $(filter tiny small,$(SCALE)),data/gcide/val_000000.bin)
	$(Q)bash bench/repro.sh $(BUILD) "$(PRESETS)" "$(SEEDS)" "$(BUDGET)" $(SCALE) "$(OVERLAY)" "$${REPORT:-}"

# The optimizer frontier (issue 23): softcap, normuon (record #43's optimizer on softcap), and each of
# #43's optimizer changes alone on softcap, as variants LABEL=PRESET:FLAG[,FLAG...] (bench/repro.sh):
# Polar Express, NorMuon, cautious weight decay, and the rest of what the normuon preset changes (its
# Muon lr, Adam beta1, lr cooldown and floor, momentum cooldown: 50/1390 of the steps; PRESETS.md §9).
# Report: runs/repro-<scale>/frontier/ unless REPORT names a folder (the sample: reports/frontier-small/).
FRONTIER := softcap normuon softcap+polar-express=softcap:--ns_coeffs=polar-express softcap+normuon=softcap:--normuon=1 \
            softcap+cautious-wd=softcap:--muon_wd=1.2,--cautious_wd=1 \
            softcap+hyperparams=softcap:--lr_matrix=0.03,--adam_beta1=0.65,--cooldown_frac=0.5,--lr_floor=0.1,--muon_momentum_cooldown_frac=0.03597122302158273
repro-frontier: build $(if $(filter tiny small,$(SCALE)),data/gcide/val_000000.bin)
	$(Q)bash bench/repro.sh $(BUILD) "$(FRONTIER)" "$(SEEDS)" "$(BUDGET)" $(SCALE) "$(OVERLAY)" "$${REPORT:-runs/repro-$(SCALE)/frontier}"

data/gcide/val_000000.bin: | build
	@$(MAKE) --no-print-directory data

# ---- the GPU suites on another CUDA runtime library (README "The CUDA backend without a GPU") ----
# CUDA_RUNTIME_DIR: the folder of the libcudart.so.13 to run with (it goes first on LD_LIBRARY_PATH);
# GPU_WORKDIR: the working directory of the tests (a runtime that reads its configuration from
# there); GPU_TESTS: Criterion's --filter (default every cuda_* suite). GM_CUDA_LIBS=ref in the
# environment keeps cuBLAS and cuSOLVER out (gemm.h). GM_REQUIRE_GPU=1: a runtime that finds no
# device fails the run instead of skipping it.
CUDA_RUNTIME_DIR ?=
GPU_WORKDIR ?= $(CURDIR)
GPU_TESTS ?= cuda_*/*
gpu-check: $(DEPS_STAMP)
	@test -n "$(NVCC)" || { echo "gpu-check: error: nvcc not found (PATH, /usr/local/cuda/bin)"; exit 1; }
	@test -z "$(CUDA_RUNTIME_DIR)" || test -d "$(CUDA_RUNTIME_DIR)" || \
	  { echo "gpu-check: error: CUDA_RUNTIME_DIR=$(CUDA_RUNTIME_DIR): no such folder"; exit 1; }
	@$(MAKE) --no-print-directory -j$(JOBS) gpu-check-build
	cd "$(GPU_WORKDIR)" && GM_REQUIRE_GPU=1 $(REL_TEST_ENV) $(if $(CUDA_RUNTIME_DIR),LD_LIBRARY_PATH=$(CUDA_RUNTIME_DIR)$${LD_LIBRARY_PATH:+:$$LD_LIBRARY_PATH}) \
	  $(CURDIR)/$(BUILD)/verify/gm_verify --filter '$(GPU_TESTS)' --jobs 1

.PHONY: gpu-check-build
gpu-check-build: $(BUILD)/verify/gm_verify $(BINS) $(BENCH_BINS)

# ---- the GPU report (ci/bundle/run_gpu_report.sh; README "Running on a GPU node") from this build ----
# The bundle runs the same script; here the programs are $(BUILD)'s. Into a fresh folder under
# TMPDIR (the script refuses a folder with files in it), named at the end whatever the outcome.
GPU_REPORT_ARGS ?=
gpu-report-check: $(DEPS_STAMP)
	@$(MAKE) --no-print-directory -j$(JOBS) gpu-check-build
	$(Q)d=$$(mktemp -d "$${TMPDIR:-/tmp}/gm-gpu-report.XXXXXX") && { $(REL_TEST_ENV) bash ci/bundle/run_gpu_report.sh \
	  "$$d/report" $(GPU_REPORT_ARGS); rc=$$?; echo "gpu-report-check: $$d/report/, $$d/report.tar.gz"; exit $$rc; }

# ---- relocatable folder for bare GPU nodes (ci/bundle.sh; README "Running on a GPU node") ----
BUNDLE ?= $(BUILD)/bundle
bundle: build
	$(Q)NVCC=$(NVCC) CUDA_HOME=$(CUDA_HOME) CUDA_ARCH=$(CUDA_ARCH) BASELINE=$(BASELINE) BASELINE_BENCHES="$(BASELINE_BENCHES)" bash ci/bundle.sh $(BUILD) $(BUNDLE)
bundle-check: bundle
	$(Q)bash ci/bundle_check.sh $(BUNDLE)

clean:
	rm -rf $(BUILD)

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)
