# SPDX-License-Identifier: Apache-2.0
# `make test-tsan`: the threaded code's tests under ThreadSanitizer (issue 5), in $(TSAN_BUILD).
#   make test-tsan                                   build and run every binary below
#   make test-tsan TSAN_TESTS="proxy_lease_test"     a subset (names from the lists below)
# Fails on the first report (halt_on_error=1) or on any failing test; the summary names each
# binary with its test count. Library false positives are suppressed in tsan.supp, each entry
# with its reason. gcc 12: -Wno-tsan because Asio's atomic_thread_fence trips -Werror.
#
# What is threaded, and the binaries that drive it:
#   src/net (Asio io thread, lease_workers.cc threads, proxy_splice.cc relay, proxy_server.cc)
#     every src/net/*_test and tests/net/proxy_{connect,forward,lease}_test (built in src/net/)
#   src/agent/output_capture.cc (reader thread)      output_capture_test
#   src/agent/stub_http_server_test_util.h (server)  http_client_test, provider_*_test users
#   src/agent/run_egress.cc (events from the proxy thread, flushed by the run thread)
#                                                     run_egress_test
#   src/sandbox/workspace_stage.cc (a second copier thread beside the walker)
#                                                     workspace_stage_test
#   src/agent/runner.cc (capture beside runLinux, RunEgress): no unit test; the security
#     test that drives `corral run` (TSAN_CLAIMS) runs the instrumented corral binary.

TSAN_BUILD ?= build-tsan
TSAN_CXX_FLAGS := -fsanitize=thread -Wno-tsan -O1 -g
TSAN_SUPP := $(CURDIR)/tsan.supp
TSAN_OPTIONS_RUN := halt_on_error=1:second_deadlock_stack=1:suppressions=$(TSAN_SUPP)

TSAN_NET := $(sort $(patsubst src/net/%.cc,%,$(wildcard src/net/*_test.cc))) \
            $(sort $(patsubst tests/net/%.cc,%,$(wildcard tests/net/*_test.cc)))
# The agent tests whose code has a second thread: the capture reader, or the stub server
# (StubHttpServer) the HTTP client and the providers talk to.
TSAN_AGENT := output_capture_test run_egress_test \
              $(sort $(patsubst src/agent/%.cc,%,$(shell grep -l stub_http_server_test_util src/agent/*_test.cc)))
# claims_runner_test drives `corral run` (runner, capture thread) with the binary built here.
# Not claims_run_egress_test: under TSan its 3 tests fail with no report (the commands'
# connections never reach the proxy: the sandbox's init is an instrumented clone3 child the
# TSan runtime knows nothing of, and its connection relay does not work there), while they
# pass in the normal build. RunEgress's threading is covered by run_egress_test instead.
TSAN_CLAIMS := claims_runner_test
TSAN_SANDBOX := workspace_stage_test
TSAN_TESTS ?= $(TSAN_NET) $(TSAN_AGENT) $(TSAN_SANDBOX) $(TSAN_CLAIMS)

.PHONY: test-tsan tsan-build

# Mirrors test-sanitize (Debug, so asserts stay on) with TSan's flags. The C++ link gets
# -fsanitize=thread from CMAKE_CXX_FLAGS (CMake passes them to the link driver);
# CMAKE_EXE_LINKER_FLAGS stays empty because it would also reach corral-probe, a static C
# program (tests/probe), and gcc refuses -static with -fsanitize=thread.
$(TSAN_BUILD)/build.ninja:
	cmake -S . -B $(TSAN_BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Debug \
	  -DCMAKE_CXX_FLAGS="$(TSAN_CXX_FLAGS)" -DCMAKE_EXE_LINKER_FLAGS=

tsan-build: bootstrap $(TSAN_BUILD)/build.ninja
	cmake --build $(TSAN_BUILD) -j $(JOBS) --target $(TSAN_TESTS)

# Each binary alone, so a report names its binary; every binary runs even after a failure,
# so one pass shows them all, and the exit status says whether any failed.
test-tsan: tsan-build
	@status=0; total=0; \
	 for t in $(TSAN_TESTS); do \
	   bin=$$(find $(TSAN_BUILD) -type f -name $$t -perm -u+x | head -1); \
	   [ -n "$$bin" ] || { echo "tsan: $$t: no binary in $(TSAN_BUILD)"; status=1; continue; }; \
	   log=$(TSAN_BUILD)/tsan-logs/$$t.log; mkdir -p $(TSAN_BUILD)/tsan-logs; \
	   if TSAN_OPTIONS=$(TSAN_OPTIONS_RUN) $$bin > $$log 2>&1; then \
	     n=$$(sed -n 's/^\[  PASSED  \] \([0-9]*\) tests\{0,1\}\..*/\1/p' $$log | tail -1); total=$$((total + $${n:-0})); \
	     echo "tsan: $$t: $${n:-?} tests passed, no reports"; \
	   else \
	     rc=$$?; status=1; \
	     if grep -q '^WARNING: ThreadSanitizer' $$log; then \
	       echo "tsan: $$t: REPORT (exit $$rc):"; sed -n '/^WARNING: ThreadSanitizer/,/^SUMMARY: ThreadSanitizer/p' $$log | sed 's/^/  /'; \
	     else echo "tsan: $$t: FAILED (exit $$rc, no TSan report):"; grep -E '^\[  FAILED  \]|^FATAL|ThreadSanitizer' $$log | sed 's/^/  /'; fi; \
	     echo "  full log: $$log"; \
	   fi; \
	 done; \
	 echo "tsan: $$total tests passed in $(words $(TSAN_TESTS)) binaries"; exit $$status
