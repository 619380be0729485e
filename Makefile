# quern -- the two commands a user needs:
#   make demo   installs what is missing, builds what the demo runs (the flagship example and
#               quern-board), runs the flagship, shows its scalars and writes their charts
#               (one HTML page)
#   make test   installs what is missing, then make check, the sanitizer build (ASan+UBSan)
#               with every test a sanitizer adds to, and quern as a sub-project of a user's
#               project: what CI runs (docs/testing.md)
# and the one a change needs:
#   make check  the plain build and every test once (the fuzz targets' corpora replayed), and
#               the README's programs built against the install (find_package, pkg-config)
#   make examples   builds every example program of the README in build/examples/
#   make fuzz   runs each libFuzzer target for FUZZ_SECONDS (clang build in FUZZ_BUILD)
#   make tsan   builds the library and its tests with ThreadSanitizer and runs them
#   make soak   runs quern_soak for SOAK_SECONDS (a pipeline under random failures and stops)
#   make bench-peers   the reading pipeline beside numpy.loadtxt and PyTorch's DataLoader
#               (bench/peers.py; installs python3-numpy; PyTorch only where installed)
#   make install PREFIX=P   builds the libraries and quern-board and installs them in P as a
#               CMake package (find_package(quern)) and a pkg-config module (quern.pc)

JOBS        ?= $(shell nproc 2>/dev/null || echo 2)
# ctest runs one test more than there are cores: most tests wait on child
# processes, timers and sockets (at -j2 the plain suite kept 0.75 of 2 cores
# busy), so the extra one fills the idle core. On 2 cores -j3 took the plain
# suite from 123 s to 93-97 s and the sanitizer suite from 201 s to 148 s.
TEST_JOBS   ?= $(shell expr $(JOBS) + 1)
BUILD       ?= build
ASAN_BUILD  ?= build-asan
FUZZ_BUILD  ?= build-fuzz
FUZZ_SECONDS ?= 60
TSAN_BUILD  ?= build-tsan
SOAK_SECONDS ?= 300
FUZZ_TARGETS = record_reader event_parser decode_csv queue_messages message_deserialize
CMAKE_FLAGS ?=
PREFIX      ?= /usr/local
# What make demo and make install build (CMake target names).
DEMO_TARGETS    = quern_example_csv_pipeline quern-board
INSTALL_TARGETS = quern_messages quern_runtime quern_queues quern_logging quern_coordination \
                  quern_input quern_net quern-board quern-node

.PHONY: all examples deps deps-fuzz deps-peers bench-peers build build-asan build-fuzz build-tsan demo install test test-plain \
        check test-consumer test-consumer-install test-subproject test-asan fuzz tsan soak stress bench format clean

all: build

deps:
	@tools/install-deps.sh

deps-fuzz:
	@tools/install-deps.sh --fuzz

deps-peers:
	@tools/install-deps.sh --peers

# -g1 (line tables: stack traces, profiles, gdb's line stepping): full debug
# info made the build a third slower, for variables in gdb only.
$(BUILD)/CMakeCache.txt:
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -g1 -DNDEBUG" $(CMAKE_FLAGS)

build: deps $(BUILD)/CMakeCache.txt
	cmake --build $(BUILD) -j $(JOBS)

# -O0 -g1: ASan and UBSan at -O1 with full debug info took 38 s for one test
# file, -Og with line tables 13 s. -O0 builds in 7 min 16 s against 8 min 59 s
# for -Og, and its tests take as long (201 s against 196 s: they wait more
# than they compute); the reports keep their file:line stacks.
# No benchmarks: their tests (command lines, a short remote run) run in the
# plain build, and a timing under ASan means nothing.
$(ASAN_BUILD)/CMakeCache.txt:
	cmake -S . -B $(ASAN_BUILD) -DCMAKE_BUILD_TYPE=Debug -DQUERN_SANITIZE=ON \
	  -DQUERN_BUILD_BENCHMARKS=OFF -DCMAKE_CXX_FLAGS_DEBUG="-O0 -g1" $(CMAKE_FLAGS)

build-asan: deps $(ASAN_BUILD)/CMakeCache.txt
	cmake --build $(ASAN_BUILD) -j $(JOBS)

# libFuzzer needs clang; the fuzz build holds the libraries and tests/fuzz/ only.
# (Every other build links the fuzz targets with a replay main and runs their
# corpora as tests: tests/fuzz/sources.cmake.)
$(FUZZ_BUILD)/CMakeCache.txt:
	CC=clang CXX=clang++ cmake -S . -B $(FUZZ_BUILD) -DCMAKE_BUILD_TYPE=Debug \
	  -DCMAKE_CXX_FLAGS_DEBUG="-O1 -g" -DQUERN_FUZZ=ON $(CMAKE_FLAGS)

build-fuzz: deps-fuzz $(FUZZ_BUILD)/CMakeCache.txt
	cmake --build $(FUZZ_BUILD) -j $(JOBS)

$(TSAN_BUILD)/CMakeCache.txt:
	cmake -S . -B $(TSAN_BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DQUERN_TSAN=ON $(CMAKE_FLAGS)

build-tsan: deps $(TSAN_BUILD)/CMakeCache.txt
	cmake --build $(TSAN_BUILD) -j $(JOBS)

# The package and build output goes to a log of its own; the terminal shows
# the demo (and the log's end, if something failed).
DEMO_LOG = $(BUILD)/demo.log
demo:
	@mkdir -p $(BUILD)
	@echo "== installing what is missing, building the flagship and quern-board (log: $(DEMO_LOG))"
	@{ tools/install-deps.sh && $(MAKE) --no-print-directory $(BUILD)/CMakeCache.txt && \
	   cmake --build $(BUILD) -j $(JOBS) --target $(DEMO_TARGETS); } >$(DEMO_LOG) 2>&1 || \
	 { tail -n 30 $(DEMO_LOG); echo "make demo: failed; the whole log: $(DEMO_LOG)"; exit 1; }
	@tools/demo.sh $(BUILD)

# Every example program of the README's table, in $(BUILD)/examples/.
examples: deps $(BUILD)/CMakeCache.txt
	cmake --build $(BUILD) -j $(JOBS) --target quern_examples

install: deps $(BUILD)/CMakeCache.txt
	cmake --build $(BUILD) -j $(JOBS) --target $(INSTALL_TARGETS)
	cmake --install $(BUILD) --prefix $(PREFIX)

# The every-change gate: one build, every test once.
check: test-plain test-consumer-install

# CI's: the gate, then what a second compile adds.
test: check test-asan test-subproject

test-plain: build
	cd $(BUILD) && ctest --output-on-failure -j $(TEST_JOBS) --timeout 300

# A user's project (tests/consumer/) built against quern: an install prefix
# with find_package and pkg-config (reusing BUILD), and quern as a sub-project
# (add_subdirectory in a parent that found quern's dependencies first, built;
# FetchContent, configured).
test-consumer-install: build
	tests/consumer/run.sh $(BUILD) $(BUILD)/consumer $(JOBS) install

test-subproject: deps
	tests/consumer/run.sh . $(BUILD)-subproject $(JOBS) subproject

test-consumer: test-consumer-install test-subproject

# What a sanitizer can add to: not the checks that read the source tree
# (docs, style) nor the pages in a browser (browser).
ASAN_SKIP_LABELS = docs|style|browser
test-asan: build-asan
	cd $(ASAN_BUILD) && \
	  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
	  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1:suppressions=$(CURDIR)/tests/ubsan.supp \
	  ctest --output-on-failure -j $(TEST_JOBS) --timeout 600 -LE '$(ASAN_SKIP_LABELS)'

# Each target for FUZZ_SECONDS; prints each one's final libFuzzer stats line.
# Logs and any crashing input: $(FUZZ_BUILD)/fuzz-artifacts/.
fuzz: build-fuzz
	@for t in $(FUZZ_TARGETS); do \
	  tests/fuzz/run_fuzzer.sh $(FUZZ_BUILD)/fuzz_$$t \
	    tests/fuzz/corpus/fuzz_$$t $(FUZZ_SECONDS) $(CURDIR)/$(FUZZ_BUILD)/fuzz-artifacts \
	    || exit 1; \
	done

# Every test under ThreadSanitizer; each suppression in tests/tsan.supp says why.
tsan: build-tsan
	cd $(TSAN_BUILD) && \
	  TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1:suppressions=$(CURDIR)/tests/tsan.supp \
	  ctest --output-on-failure -j $(JOBS) --timeout 900

soak: build
	$(BUILD)/tests/quern_soak --seconds $(SOAK_SECONDS)

stress: build
	node tests/board/board_stress.js --board $(BUILD)/tools/quern-board --helper $(BUILD)/tests/quern_test_board_logdir --out $(BUILD)/stress

bench: build
	@for b in $(BUILD)/bench/bench_*; do echo "== $$b"; $$b || exit 1; done

bench-peers: build deps-peers
	/usr/bin/python3 bench/peers.py $(BUILD)   # Debian's python, where python3-numpy is

format:
	find messages runtime queues logging coordination input net examples tests tools bench \
	  \( -name '*.hpp' -o -name '*.cpp' \) -print0 | xargs -0 clang-format -i

clean:
	rm -rf $(BUILD) $(BUILD)-subproject $(ASAN_BUILD) $(FUZZ_BUILD) $(TSAN_BUILD)
