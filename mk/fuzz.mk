# SPDX-License-Identifier: Apache-2.0
# libFuzzer targets (fuzz/), built with clang-14 into build-fuzz/ apart from the main build.
#   make fuzz-smoke                      every target 6 s (20 targets: ~2.5 min, CI), fails on any crash
#   make fuzz TARGET=paths SECONDS=600   one long run; FUZZ_ARGS="-jobs=2" passes flags on
#   make fuzz-repro TARGET=paths FILE=build-fuzz/artifacts/paths/crash-...

FUZZ_BUILD ?= build-fuzz
FUZZ_CXX ?= clang++-14
FUZZ_SMOKE_SECONDS ?= 6
FUZZ_TARGETS ?= $(sort $(patsubst fuzz/fuzz_%.cc,%,$(wildcard fuzz/fuzz_*.cc)))
FUZZ_ARGS ?=
SECONDS ?= 300
# Fuzzing shares the machine with builds: lowest priority unless told otherwise (FUZZ_NICE=).
FUZZ_NICE ?= nice -n 19
# libclang-rt-14-dev holds libFuzzer and the sanitizer runtimes (clang-14 only recommends
# it, and bootstrap installs without recommends); llvm-14 holds llvm-symbolizer.
FUZZ_DEBS := clang-14 libclang-rt-14-dev llvm-14 cmake ninja-build nlohmann-json3-dev


.PHONY: fuzz-deps fuzz-build fuzz-smoke fuzz fuzz-repro fuzz-clean

fuzz-deps:  # bootstrap installs $(FUZZ_DEBS) among the project's packages (NO_BOOTSTRAP: Makefile)
	@$(if $(NO_BOOTSTRAP),true,scripts/bootstrap.sh)

$(FUZZ_BUILD)/build.ninja: | fuzz-deps
	cmake -S fuzz -B $(FUZZ_BUILD) -G Ninja -DCMAKE_CXX_COMPILER=$(FUZZ_CXX) -DCMAKE_BUILD_TYPE=

# Only the targets asked for: TARGET=paths (make fuzz, fuzz-repro) or FUZZ_TARGETS=... builds
# those alone; with neither, every target.
fuzz-build: fuzz-deps $(FUZZ_BUILD)/build.ninja
	cmake --build $(FUZZ_BUILD) -j $(JOBS) --target $(addprefix fuzz_,$(or $(TARGET),$(FUZZ_TARGETS)))

fuzz-smoke: fuzz-build
	@FUZZ_BUILD=$(FUZZ_BUILD) FUZZ_NICE="$(FUZZ_NICE)" fuzz/run.sh smoke $(FUZZ_SMOKE_SECONDS) $(FUZZ_TARGETS)

fuzz: fuzz-build
	@test -n "$(TARGET)" || { echo "usage: make fuzz TARGET=<$(FUZZ_TARGETS)> [SECONDS=n] [FUZZ_ARGS=...]" >&2; exit 2; }
	@FUZZ_BUILD=$(FUZZ_BUILD) FUZZ_NICE="$(FUZZ_NICE)" fuzz/run.sh fuzz $(TARGET) $(SECONDS) $(FUZZ_ARGS)

fuzz-repro: fuzz-build
	@test -n "$(TARGET)" -a -n "$(FILE)" || { echo "usage: make fuzz-repro TARGET=x FILE=input" >&2; exit 2; }
	FUZZ_BUILD=$(FUZZ_BUILD) FUZZ_NICE= fuzz/run.sh repro $(TARGET) $(FILE)

fuzz-clean:
	rm -rf $(FUZZ_BUILD)
