# SPDX-License-Identifier: Apache-2.0
# The two commands for a fresh Debian 12 machine: `make demo` and `make test`.
BUILD ?= build
SAN_BUILD ?= build-sanitize
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?=
# With debug information ccache would key each object on its build folder too: off, so that
# build-sanitize reuses the plain build's test objects (and worktrees share objects).
export CCACHE_NOHASHDIR ?= 1

.PHONY: all bootstrap configure build test test-unit test-security test-rootless sanitize-build test-sanitize demo demo-exec claims bench bench-daemon bench-proxy clean

all: build

# NO_BOOTSTRAP=1: the packages are known to be there (.ci/run's background builds, which must
# not run apt-get beside a foreground step that might).
bootstrap:
	@$(if $(NO_BOOTSTRAP),true,scripts/bootstrap.sh)

$(BUILD)/build.ninja:
	cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo $(CMAKE_FLAGS)

configure: bootstrap $(BUILD)/build.ninja

build: configure
	cmake --build $(BUILD) -j $(JOBS)

# Every test as root (or as the caller), then the security tests again as an unprivileged
# user: corral must hold its claims rootless too.
test: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS) --timeout 300
	@scripts/run-rootless-tests.sh $(BUILD)

# The build type is the plain build's, so its test objects come from ccache (CMakeLists.txt:
# the code under test is instrumented at -O0, test code is not).
sanitize-build: bootstrap
	cmake -S . -B $(SAN_BUILD) -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCORRAL_SANITIZE=ON
	cmake --build $(SAN_BUILD) -j $(JOBS)

test-sanitize: sanitize-build
	cd $(SAN_BUILD) && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
	  ctest --output-on-failure -j $(JOBS) --timeout 300

demo: build
	@scripts/demo.sh $(BUILD)/corral

# A tour of `corral exec`: each isolation layer at work.
demo-exec: build
	@scripts/demo-exec.sh $(BUILD)/corral

claims: build
	@scripts/claims.py --build $(BUILD) --run --render SECURITY.md

bench: build
	@python3 bench/exec_bench.py --corral $(BUILD)/corral --out docs/benchmarks.md

bench-daemon: build
	@python3 bench/daemon_bench.py --corral $(BUILD)/corral --out docs/benchmarks-daemon.md

bench-proxy: build
	@python3 bench/proxy_bench.py --proxy $(BUILD)/corral-proxy-bench --relay $(BUILD)/corral-splice-relay --repeat 2 --out docs/benchmarks-proxy.md

clean:
	rm -rf $(BUILD) $(SAN_BUILD)

# Feature makefiles (fuzzing, lint, ...) add their own targets here.
-include mk/*.mk
