# quern -- the two commands a user needs:
#   make demo   installs what is missing, builds, runs the flagship example, shows its scalars
#   make test   installs what is missing, builds, runs every test (plain and ASan+UBSan builds,
#               and a few seconds of each libFuzzer target, docs/fuzzing.md)
#   make fuzz   runs each libFuzzer target for FUZZ_SECONDS (clang build in FUZZ_BUILD)

JOBS        ?= $(shell nproc 2>/dev/null || echo 2)
BUILD       ?= build
ASAN_BUILD  ?= build-asan
FUZZ_BUILD  ?= build-fuzz
FUZZ_SECONDS ?= 60
FUZZ_TARGETS = record_reader event_parser decode_csv queue_messages message_deserialize
CMAKE_FLAGS ?=

.PHONY: all deps build build-asan build-fuzz demo test test-plain test-asan test-fuzz \
        fuzz bench format clean

all: build

deps:
	@tools/install-deps.sh

$(BUILD)/CMakeCache.txt:
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo $(CMAKE_FLAGS)

build: deps $(BUILD)/CMakeCache.txt
	cmake --build $(BUILD) -j $(JOBS)

$(ASAN_BUILD)/CMakeCache.txt:
	cmake -S . -B $(ASAN_BUILD) -DCMAKE_BUILD_TYPE=Debug -DQUERN_SANITIZE=ON \
	  -DCMAKE_CXX_FLAGS_DEBUG="-O1 -g" $(CMAKE_FLAGS)

build-asan: deps $(ASAN_BUILD)/CMakeCache.txt
	cmake --build $(ASAN_BUILD) -j $(JOBS)

# libFuzzer needs clang; the fuzz build holds the libraries and tests/fuzz/ only.
$(FUZZ_BUILD)/CMakeCache.txt:
	CC=clang CXX=clang++ cmake -S . -B $(FUZZ_BUILD) -DCMAKE_BUILD_TYPE=Debug \
	  -DCMAKE_CXX_FLAGS_DEBUG="-O1 -g" -DQUERN_FUZZ=ON $(CMAKE_FLAGS)

build-fuzz: deps $(FUZZ_BUILD)/CMakeCache.txt
	cmake --build $(FUZZ_BUILD) -j $(JOBS)

demo: build
	tools/demo.sh $(BUILD)

test: test-plain test-asan test-fuzz

test-plain: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS) --timeout 300

test-asan: build-asan
	cd $(ASAN_BUILD) && \
	  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
	  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1:suppressions=$(CURDIR)/tests/ubsan.supp \
	  ctest --output-on-failure -j $(JOBS) --timeout 600

# A few seconds of each fuzz target over its checked-in corpus (a copy of it).
test-fuzz: build-fuzz
	cd $(FUZZ_BUILD) && ctest --output-on-failure -j $(JOBS) --timeout 300

# Each target for FUZZ_SECONDS; prints each one's final libFuzzer stats line.
# Logs and any crashing input: $(FUZZ_BUILD)/fuzz-artifacts/.
fuzz: build-fuzz
	@for t in $(FUZZ_TARGETS); do \
	  tests/fuzz/run_fuzzer.sh $(FUZZ_BUILD)/tests/fuzz/fuzz_$$t \
	    tests/fuzz/corpus/fuzz_$$t $(FUZZ_SECONDS) $(CURDIR)/$(FUZZ_BUILD)/fuzz-artifacts \
	    || exit 1; \
	done

bench: build
	@for b in $(BUILD)/bench/bench_*; do echo "== $$b"; $$b || exit 1; done

format:
	find messages actors logging examples tests tools bench \
	  \( -name '*.hpp' -o -name '*.cpp' \) -print0 | xargs -0 clang-format -i

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) $(FUZZ_BUILD)
