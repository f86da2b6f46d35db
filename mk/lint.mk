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


# The compilation database restricted to src/ minus unit tests (or to LINT_FILES), so both
# tools see exactly the flags the build uses and nothing generated or third-party.
define lint_select_db
import json, os, sys
db = json.load(open(sys.argv[1]))
want = {os.path.abspath(f) for f in sys.argv[3].split()}
src = os.path.abspath("src") + "/"
keep, seen = [], set()
for e in db:
    f = os.path.join(e["directory"], e["file"])
    if f in seen or not f.startswith(src) or f.endswith("_test.cc"): continue
    if want and f not in want: continue
    seen.add(f); keep.append(e)
json.dump(keep, open(sys.argv[2] + "/compile_commands.json", "w"), indent=1)
open(sys.argv[2] + "/files.txt", "w").write("".join(f + "\n" for f in sorted(seen)))
endef
export lint_select_db

.PHONY: lint lint-deps lint-db lint-tidy lint-cppcheck

lint-deps:
	@scripts/bootstrap.sh  # installs $(LINT_DEBS) among the project's packages

lint-db: lint-deps $(BUILD)/build.ninja
	@mkdir -p $(LINT_OUT)
	@python3 -c "$$lint_select_db" $(BUILD)/compile_commands.json $(LINT_OUT) "$(LINT_FILES)"
	@n=$$(wc -l < $(LINT_OUT)/files.txt); echo "lint: $$n files from $(BUILD)/compile_commands.json"; \
	 [ $$n -gt 0 ] || { echo "lint: nothing to lint (LINT_FILES=\"$(LINT_FILES)\" matches no src/ file of the build)"; exit 1; }

# One clang-tidy per file, $(JOBS) at a time; a finding is a unique "file:line:col: warning/error".
# -Wno-error: the build's -Werror would turn clang's own warnings (clang-diagnostic-*) into
# errors, which NOLINT cannot silence; as warnings they are still findings.
# clang-tidy exits non-zero on a compiler error (a finding, listed) but also when it cannot
# run at all (no binary, a crash): that must fail too, not read as "clean".
lint-tidy: lint-db
	@status=0; xargs -a $(LINT_OUT)/files.txt -P $(JOBS) -n 1 $(LINT_TIDY) -p $(LINT_OUT) --quiet --extra-arg=-Wno-error \
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
	@cppcheck --project=$(LINT_OUT)/compile_commands.json --std=c++20 --quiet -j $(JOBS) \
	  --enable=warning,style,performance,portability --inline-suppr \
	  $(addprefix --suppress=,$(LINT_CPPCHECK_SUPPRESS)) \
	  --cppcheck-build-dir=$(LINT_OUT)/cppcheck-cache \
	  --template='{file}:{line}:{column}: {severity}: {message} [{id}]' 2> $(LINT_OUT)/cppcheck.raw \
	  || { echo "lint: cppcheck failed to run ($(LINT_OUT)/cppcheck.raw)"; exit 1; }
	@sed "s|^$(CURDIR)/||" $(LINT_OUT)/cppcheck.raw | grep -E '^[^ ]+:[0-9]+:[0-9]+: ' | sort -u > $(LINT_OUT)/cppcheck.txt || true
	@n=$$(wc -l < $(LINT_OUT)/cppcheck.txt); \
	 if [ $$n -gt 0 ]; then sed 's/^/  /' $(LINT_OUT)/cppcheck.txt; \
	   echo "lint: cppcheck: $$n findings ($(LINT_OUT)/cppcheck.txt)"; exit 1; fi; echo "lint: cppcheck: clean"

# Both always run, so one report shows every finding; the exit status says whether any.
lint:
	@status=0; $(MAKE) --no-print-directory lint-cppcheck || status=1; \
	 $(MAKE) --no-print-directory lint-tidy || status=1; exit $$status
