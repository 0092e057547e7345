# gptmuon: a GPT + Muon trainer in C/CUDA with verification and benchmark harnesses.
# `make help` lists the targets. Every target first runs `make deps` (a stamp file), so on a
# fresh Debian machine `make verify` alone installs what it needs, builds and tests.

SHELL := /bin/bash
BUILD ?= build
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
  NVCCFLAGS := -std=c++17 -O3 -Iimpl -I$(CUDA_HOME)/include -DGM_HAVE_CUDA \
    -gencode=arch=compute_90a,code=sm_90a -gencode=arch=compute_90,code=compute_90 \
    -Xcompiler -Wall,-Wextra,-Werror -lineinfo
  # -lineinfo: compute-sanitizer and Nsight name the source line of a device fault.
  # --as-needed: a program gets only the CUDA libraries its objects call (make_data none). cuSOLVER
  # (the SVD orthogonalizer, cuda/svd_polar.cu) and NCCL (--comm=nccl, dist/comm_nccl.c) are loaded
  # at run time where used, so no program needs them to start.
  CUDA_LIBS := -L$(CUDA_HOME)/lib64 -Wl,-rpath,$(CUDA_HOME)/lib64 -Wl,--as-needed -lcublas -lcublasLt -lcudart \
    -lstdc++ -Wl,--no-as-needed
  CUDA_NOTE := CUDA: compiling $(words $(CU_SRC)) .cu files with $(NVCC) (sm_90a + compute_90 PTX)
else
  CU_SRC :=
  CUDA_NOTE := CUDA: nvcc not found (PATH, /usr/local/cuda/bin): building the CPU backend only
endif

LIB_SRC := $(shell find impl -name '*.c' -not -path 'impl/bin/*' | sort)
BIN_SRC := $(wildcard impl/bin/*.c)
# verify/both/*.c run in both builds (fp32 and fp64), each asserting its own precision's bar.
TEST_SRC := $(wildcard verify/*.c) $(wildcard verify/both/*.c)
# Programs that only tests run (e.g. under mpirun): verify/prog/*.c -> build/verify/prog/<name>.
TESTPROG_SRC := $(wildcard verify/prog/*.c)
TEST64_SRC := $(wildcard verify/fp64/*.c) $(wildcard verify/both/*.c) verify/helpers.c
BENCH_SRC := $(wildcard bench/*.c)
BINS := $(patsubst impl/bin/%.c,$(BUILD)/%,$(BIN_SRC))
BENCH_BINS := $(patsubst bench/%.c,$(BUILD)/bench/%,$(BENCH_SRC))

REL := $(BUILD)/rel
REL64 := $(BUILD)/rel64
SAN := $(BUILD)/san
SANFLAGS := -O1 -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer

DEPS_STAMP := $(BUILD)/.deps-ok

.PHONY: help deps build verify bench refdata repro train data clean bundle bundle-check FORCE
.DEFAULT_GOAL := help

help:
	@echo "gptmuon - GPT + Muon trainer with verification and benchmark harnesses"
	@echo ""
	@echo "  make verify     install dependencies, build, run every test (Criterion; also under ASan/UBSan)"
	@echo "  make repro      train every preset, 3 seeds, and write the table with its statistics and the curves:"
	@echo "                  SCALE=tiny (default; 100 steps, ~13 min on 2 cores) -> reports/repro/"
	@echo "                  SCALE=small (150 steps of 2048 tokens, ~37 min on 2 quiet cores) -> reports/repro-small/"
	@echo "                  SEEDS=, BUDGET= (steps), PRESETS=, OVERLAY='label=log.txt[@tokens_per_step] ...' (PyTorch logs)"
	@echo "  make build      build the library, programs and test binaries"
	@echo "  make data       build the embedded dataset: dict-gcide -> BPE tokenizer -> shards under data/gcide"
	@echo "                  (replaces only a dataset make_data wrote: data/gcide/make_data.txt lists its files)"
	@echo "  make deps       install missing Debian packages (apt-get), once; stamp in $(DEPS_STAMP)"
	@echo "  make bench      timing and numerics harnesses -> reports/ (bench/run.sh)"
	@echo "  make train      one run into runs/PRESET-SCALE: PRESET=softcap SCALE=tiny ARGS='--steps=100' (build/train --help);"
	@echo "                  a second run there needs ARGS='--overwrite=1' (replace) or '--resume=runs/softcap-tiny/ckpt.bin'"
	@echo "  make refdata    regenerate the PyTorch reference data (needs python3-torch)"
	@echo "  make bundle     relocatable folder for a bare GPU node -> $(BUILD)/bundle (ci/bundle/README.txt)"
	@echo "  make bundle-check  run the CPU suite from the bundle with this machine's libraries hidden"
	@echo "  make clean      remove $(BUILD)/ (data/ is kept)"
	@echo ""
	@echo "  $(CUDA_NOTE)"

deps: $(DEPS_STAMP)
$(DEPS_STAMP): ci/deps.sh
	@bash ci/deps.sh
	@mkdir -p $(BUILD) && touch $@

# ---- objects -----------------------------------------------------------------------------------
$(REL)/%.o: %.c $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_COMMON) $(CFLAGS) $(CUDA_DEFS) -MMD -MP -c $< -o $@

$(REL)/%.cu.o: %.cu $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(NVCC) $(NVCCFLAGS) -MMD -MP -c $< -o $@

# The same sources with gm_real = double (-DGM_FP64): the CPU backend, model and optimizers in
# fp64, for gradient checks and the fp64 equivalence bars. CPU only.
$(REL64)/%.o: %.c $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_COMMON) $(CFLAGS) -DGM_FP64 -MMD -MP -c $< -o $@

$(SAN)/%.o: %.c $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_COMMON) $(SANFLAGS) -MMD -MP -c $< -o $@

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
	ar rcs $@ $^
$(BUILD)/libgptmuon64.a: $(REL64_LIB_OBJ)
	@rm -f $@
	ar rcs $@ $^
$(SAN)/libgptmuon.a: $(SAN_LIB_OBJ)
	@rm -f $@
	ar rcs $@ $^

$(BUILD)/%: $(REL)/impl/bin/%.o $(BUILD)/libgptmuon.a
	$(CC) $< $(BUILD)/libgptmuon.a $(LDLIBS_COMMON) $(CUDA_LIBS) -o $@
$(BUILD)/bench/%: $(REL)/bench/%.o $(BUILD)/libgptmuon.a
	@mkdir -p $(dir $@)
	$(CC) $< $(BUILD)/libgptmuon.a $(LDLIBS_COMMON) $(CUDA_LIBS) -o $@
$(BUILD)/verify/prog/%: $(REL)/verify/prog/%.o $(BUILD)/libgptmuon.a
	@mkdir -p $(dir $@)
	$(CC) $< $(BUILD)/libgptmuon.a $(LDLIBS_COMMON) $(CUDA_LIBS) -o $@
$(SAN)/bin/%: $(SAN)/verify/prog/%.o $(SAN)/libgptmuon.a
	@mkdir -p $(dir $@)
	$(CC) $(SANFLAGS) $< $(SAN)/libgptmuon.a $(LDLIBS_COMMON) -o $@
$(SAN)/bin/%: $(SAN)/impl/bin/%.o $(SAN)/libgptmuon.a
	@mkdir -p $(dir $@)
	$(CC) $(SANFLAGS) $< $(SAN)/libgptmuon.a $(LDLIBS_COMMON) -o $@
# The benches the tests run (test_bench_kernels, test_model_report), under the sanitizers too.
SAN_BENCH_BINS := $(SAN)/bin/bench/kernels $(SAN)/bin/bench/model_report
$(SAN)/bin/bench/%: $(SAN)/bench/%.o $(SAN)/libgptmuon.a
	@mkdir -p $(dir $@)
	$(CC) $(SANFLAGS) $< $(SAN)/libgptmuon.a $(LDLIBS_COMMON) -o $@

# All Criterion suites link into one binary per build, so one summary line covers them all.
$(BUILD)/verify/gm_verify: $(patsubst %.c,$(REL)/%.o,$(TEST_SRC)) $(BUILD)/libgptmuon.a
	@mkdir -p $(dir $@)
	$(CC) $(filter %.o,$^) $(BUILD)/libgptmuon.a -lcriterion $(LDLIBS_COMMON) $(CUDA_LIBS) -o $@
$(BUILD)/verify/gm_verify64: $(patsubst %.c,$(REL64)/%.o,$(TEST64_SRC)) $(BUILD)/libgptmuon64.a
	@mkdir -p $(dir $@)
	$(CC) $(filter %.o,$^) $(BUILD)/libgptmuon64.a -lcriterion $(LDLIBS_COMMON) -o $@
$(SAN)/verify/gm_verify: $(patsubst %.c,$(SAN)/%.o,$(TEST_SRC)) $(SAN)/libgptmuon.a
	@mkdir -p $(dir $@)
	$(CC) $(SANFLAGS) $(filter %.o,$^) $(SAN)/libgptmuon.a -lcriterion $(LDLIBS_COMMON) -o $@

build: $(DEPS_STAMP)
	@echo "$(CUDA_NOTE)"
	@$(MAKE) --no-print-directory -j$(JOBS) $(BUILD)/libgptmuon.a $(BINS) $(BENCH_BINS) $(BUILD)/verify/gm_verify \
	  $(patsubst verify/prog/%.c,$(BUILD)/verify/prog/%,$(TESTPROG_SRC)) $(patsubst verify/prog/%.c,$(SAN)/bin/%,$(TESTPROG_SRC)) \
	  $(if $(wildcard verify/fp64/*.c),$(BUILD)/verify/gm_verify64) \
	  $(SAN)/verify/gm_verify $(patsubst impl/bin/%.c,$(SAN)/bin/%,$(BIN_SRC)) $(SAN_BENCH_BINS)

# Tests find programs through GM_BIN (release or sanitizer build) and fixtures through GM_ROOT.
verify: build
	@echo "== tests (release build$(if $(NVCC), with CUDA,)) =="
	OMP_WAIT_POLICY=passive GM_ROOT=$(CURDIR) GM_BIN=$(CURDIR)/$(BUILD) GM_TESTPROG=$(CURDIR)/$(BUILD)/verify/prog $(BUILD)/verify/gm_verify --jobs $(JOBS)
	@if [ -x $(BUILD)/verify/gm_verify64 ]; then echo "== tests (fp64 build) =="; \
	  OMP_WAIT_POLICY=passive GM_ROOT=$(CURDIR) GM_BIN=$(CURDIR)/$(BUILD) $(BUILD)/verify/gm_verify64 --jobs $(JOBS); fi
	@echo "== tests (AddressSanitizer + UBSan build, CPU code) =="
	ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
	  OMP_WAIT_POLICY=passive LSAN_OPTIONS=suppressions=$(CURDIR)/verify/lsan.supp GM_ROOT=$(CURDIR) GM_BIN=$(CURDIR)/$(SAN)/bin GM_TESTPROG=$(CURDIR)/$(SAN)/bin $(SAN)/verify/gm_verify --jobs $(JOBS)

data: build
	$(BUILD)/make_data --out=data/gcide

# Timing harnesses: bench/run.sh runs every program built from bench/*.c and writes reports/.
bench: build
	bash bench/run.sh $(BUILD)

# Regenerate the committed PyTorch reference data (needs Debian's python3-torch; CI only reads).
refdata: build
	bash refdata/gen/make_refdata.sh $(BUILD)

# One run: make train PRESET=softcap SCALE=tiny ARGS="--steps=100"
PRESET ?= softcap
SCALE ?= tiny
ARGS ?=
train: build $(if $(filter tiny small,$(SCALE)),data/gcide/val_000000.bin)
	OMP_WAIT_POLICY=passive $(BUILD)/train --preset=$(PRESET) --scale=$(SCALE) $(ARGS)

# Every preset, SEEDS seeds, BUDGET steps each (empty: bench/repro.sh's defaults for the scale):
# reports/repro/ (tiny) or reports/repro-<scale>/ (table with statistics, curves, README).
PRESETS ?= adamw muon-v1 muon-v2 untied value-embed softcap
SEEDS ?=
BUDGET ?=
OVERLAY ?=
repro: build $(if $(filter tiny small,$(SCALE)),data/gcide/val_000000.bin)
	bash bench/repro.sh $(BUILD) "$(PRESETS)" "$(SEEDS)" "$(BUDGET)" $(SCALE) "$(OVERLAY)"

data/gcide/val_000000.bin: | build
	$(MAKE) --no-print-directory data

# ---- relocatable folder for bare GPU nodes (ci/bundle.sh; README "Running on a GPU node") ----
BUNDLE ?= $(BUILD)/bundle
bundle: build
	NVCC=$(NVCC) CUDA_HOME=$(CUDA_HOME) bash ci/bundle.sh $(BUILD) $(BUNDLE)
bundle-check: bundle
	bash ci/bundle_check.sh $(BUNDLE)

clean:
	rm -rf $(BUILD)

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)
