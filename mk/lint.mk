# SPDX-License-Identifier: Apache-2.0
# `make lint`: clang-tidy (.clang-tidy) and cppcheck over src/, from $(BUILD)/compile_commands.json.
#   make lint                                 both; non-zero exit on any finding
#   make lint-tidy LINT_FILES="src/policy/units.cc src/cli/exec.cc"   a subset
# Reports land in $(LINT_OUT)/clang-tidy.txt and cppcheck.txt. Unit tests (*_test.cc) are
# not linted: gtest's macros trip cert-err58-cpp and friends on every TEST. The file list is
# the build's as of its last configure: run `make build` first after adding files.

LINT_OUT ?= $(BUILD)/lint
LINT_TIDY ?= clang-tidy-14
LINT_FILES ?=
LINT_DEBS := clang-tidy-14 cppcheck python3
# cppcheck checks off, and why (clang-tidy's are documented in .clang-tidy):
#   noExplicitConstructor  Result<T>/Error convert implicitly by design, like std::expected.
#   useStlAlgorithm        a style opinion ("use std::any_of"), not a defect.
#   unusedStructMember     kernel ABI structs (clone_args, landlock attrs) mirror the UAPI
#                          layout; their unused fields must stay.
#   missingIncludeSystem   cppcheck does not parse the system headers; the compiler does.
LINT_CPPCHECK_SUPPRESS := noExplicitConstructor useStlAlgorithm unusedStructMember missingIncludeSystem \
                          unmatchedSuppression


# The compilation database restricted to src/ minus unit tests (scripts/lint_select.py), to
# LINT_FILES, or with LINT_SINCE_LIST=FILE to what can have changed since a lint-clean state
# recorded as a list of hashes (CI passes .ci/lint-clean.sha256: a full lint of src/
# no longer fits CI's time on 2 cores). After a clean lint of all that changed, record the new
# state with `make lint-record`.
LINT_SINCE_LIST ?=

.PHONY: lint lint-deps lint-db lint-tidy lint-cppcheck lint-record

lint-deps:
	@scripts/bootstrap.sh  # installs $(LINT_DEBS) among the project's packages

lint-db: lint-deps $(BUILD)/build.ninja
	@mkdir -p $(LINT_OUT)
	@python3 scripts/lint_select.py $(BUILD) $(LINT_OUT) --files "$(LINT_FILES)" --since-list "$(LINT_SINCE_LIST)"

# One clang-tidy per file, $(JOBS) at a time; a finding is a unique "file:line:col: warning/error".
# -Wno-error: the build's -Werror would turn clang's own warnings (clang-diagnostic-*) into
# errors, which NOLINT cannot silence; as warnings they are still findings.
# clang-tidy exits non-zero on a compiler error (a finding, listed) but also when it cannot
# run at all (no binary, a crash): that must fail too, not read as "clean".
lint-tidy: lint-db
	@status=0; xargs -r -a $(LINT_OUT)/files.txt -P $(JOBS) -n 1 $(LINT_TIDY) -p $(LINT_OUT) --quiet --extra-arg=-Wno-error \
	  > $(LINT_OUT)/clang-tidy.raw 2> $(LINT_OUT)/clang-tidy.stderr || status=$$?; \
	 { grep -E '^/.*:[0-9]+:[0-9]+: (warning|error): ' $(LINT_OUT)/clang-tidy.raw || true; } \
	  | sed "s|^$(CURDIR)/||" | sort -u > $(LINT_OUT)/clang-tidy.txt; \
	 n=$$(wc -l < $(LINT_OUT)/clang-tidy.txt); \
	 if [ $$n -gt 0 ]; then \
	   sed 's/.*\[\([^]]*\)\]$$/\1/' $(LINT_OUT)/clang-tidy.txt | sort | uniq -c | sort -rn | sed 's/^/  /'; \
	   echo "lint: clang-tidy: $$n findings (list: $(LINT_OUT)/clang-tidy.txt, context: clang-tidy.raw)"; exit 1; \
	 fi; \
	 if [ $$status -ne 0 ]; then \
	   tail -5 $(LINT_OUT)/clang-tidy.stderr | sed 's/^/  /'; \
	   echo "lint: clang-tidy failed to run (exit $$status; $(LINT_OUT)/clang-tidy.stderr)"; exit 1; \
	 fi; echo "lint: clang-tidy: clean"

lint-cppcheck: lint-db
	@mkdir -p $(LINT_OUT)/cppcheck-cache
	@if [ ! -s $(LINT_OUT)/files.txt ]; then : > $(LINT_OUT)/cppcheck.raw; else cppcheck --project=$(LINT_OUT)/compile_commands.json --std=c++20 --quiet -j $(JOBS) \
	  --enable=warning,style,performance,portability --inline-suppr \
	  $(addprefix --suppress=,$(LINT_CPPCHECK_SUPPRESS)) \
	  --cppcheck-build-dir=$(LINT_OUT)/cppcheck-cache \
	  --template='{file}:{line}:{column}: {severity}: {message} [{id}]' 2> $(LINT_OUT)/cppcheck.raw \
	  || { echo "lint: cppcheck failed to run ($(LINT_OUT)/cppcheck.raw)"; exit 1; }; fi
	@sed "s|^$(CURDIR)/||" $(LINT_OUT)/cppcheck.raw | grep -E '^[^ ]+:[0-9]+:[0-9]+: ' | sort -u > $(LINT_OUT)/cppcheck.txt || true
	@n=$$(wc -l < $(LINT_OUT)/cppcheck.txt); \
	 if [ $$n -gt 0 ]; then sed 's/^/  /' $(LINT_OUT)/cppcheck.txt; \
	   echo "lint: cppcheck: $$n findings ($(LINT_OUT)/cppcheck.txt)"; exit 1; fi; echo "lint: cppcheck: clean"

# Both always run, so one report shows every finding; the exit status says whether any.
lint:
	@status=0; $(MAKE) --no-print-directory lint-cppcheck || status=1; \
	 $(MAKE) --no-print-directory lint-tidy || status=1; exit $$status

# Only after `make lint` (or a LINT_SINCE_LIST lint from a recorded state) came out
# clean on this tree: CI then checks only what changes after it.
lint-record:
	@python3 scripts/lint_select.py --record .ci/lint-clean.sha256
