#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Chooses the translation units `make lint` checks and writes their compilation database.

    lint_select.py BUILD OUT [--files "a.cc b.cc"] [--since-list FILE]
    lint_select.py --record FILE          (after a clean lint: the list of what was clean)

Always: src/ minus unit tests (*_test.cc), with the build's exact flags, so clang-tidy and
cppcheck see what the compiler sees and nothing generated or third-party.

--files narrows to the named files. --since-list FILE narrows to what can have changed since a
state at which the whole of src/ was lint-clean. FILE (.ci/lint-clean.sha256, written by
--record after a clean lint) holds the SHA-256 of every file of src/ and of .clang-tidy then;
"changed" means a different hash or a file not in it, so no git history is needed (a shallow or
copied checkout narrows the same way). Selected: every .cc that changed, and every .cc whose
object, by the build's own dependency log (`ninja -t deps`), includes a header that changed (a
.cc the build has not compiled yet is checked). A change to .clang-tidy, or a list that cannot
be read, selects everything: the narrowing is never a guess.
"""
import argparse
import hashlib
import json
import os
import subprocess
import sys

# The checks themselves. (A change to cppcheck's flags in mk/lint.mk needs a full `make lint`
# by hand and `make lint-record`; so does a new clang-tidy or cppcheck version.)
FULL_TRIGGERS = (".clang-tidy",)


def tracked_files(root):
    """src/ and the trigger files, as paths relative to root."""
    out = [t for t in FULL_TRIGGERS if os.path.isfile(os.path.join(root, t))]
    for d, _, names in os.walk(os.path.join(root, "src")):
        out += [os.path.relpath(os.path.join(d, n), root) for n in names]
    return sorted(out)


def file_hash(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def changed_since_list(root, listing):
    """Paths whose content differs from a lint-clean list, or None when it cannot be read."""
    try:
        clean = {}
        for line in open(listing, encoding="utf-8"):
            digest, path = line.rstrip("\n").split("  ", 1)
            clean[path] = digest
    except (OSError, ValueError):
        return None
    return {p for p in tracked_files(root) if clean.get(p) != file_hash(os.path.join(root, p))}


def object_deps(build):
    """{absolute source path: set of absolute paths it was compiled from} from ninja's log."""
    out = subprocess.run(["ninja", "-C", build, "-t", "deps"], check=True, capture_output=True,
                         text=True).stdout
    deps, current = {}, None
    for line in out.splitlines():
        if not line.strip():
            current = None
        elif not line.startswith(" "):
            current = set()
            deps[line.split(":", 1)[0]] = current
        elif current is not None:
            current.add(os.path.normpath(os.path.join(build, line.strip())))
    by_source = {}
    for paths in deps.values():
        for p in paths:
            if p.endswith(".cc"):
                by_source.setdefault(p, set()).update(paths)
    return by_source


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build", nargs="?")
    ap.add_argument("out", nargs="?")
    ap.add_argument("--files", default="")
    ap.add_argument("--since-list", default="")
    ap.add_argument("--record", default="")
    a = ap.parse_args()
    if a.record:
        root = os.path.abspath(".")
        with open(a.record, "w", encoding="utf-8") as f:
            f.write("".join(f"{file_hash(os.path.join(root, p))}  {p}\n" for p in tracked_files(root)))
        print(f"lint: recorded {a.record} as lint-clean")
        return 0
    if not a.build or not a.out:
        ap.error("BUILD and OUT are required")
    root = os.path.abspath(".")
    a.build = os.path.abspath(a.build)
    src = os.path.join(root, "src") + "/"
    db = json.load(open(os.path.join(a.build, "compile_commands.json")))
    want = {os.path.abspath(f) for f in a.files.split()}

    changed, reason = None, "all of src/"
    if a.since_list:
        changed = changed_since_list(root, a.since_list)
        if changed is None:
            reason = f"all of src/ ({a.since_list} cannot be read here)"
        elif any(t in changed for t in FULL_TRIGGERS):
            changed, reason = None, "all of src/ (the lint configuration changed)"
        else:
            changed = {os.path.join(root, p) for p in changed}
            reason = f"what changed since {a.since_list}"
    deps = object_deps(a.build) if changed is not None else {}

    keep, seen = [], set()
    for e in db:
        f = os.path.normpath(os.path.join(e["directory"], e["file"]))
        if f in seen or not f.startswith(src) or f.endswith("_test.cc"):
            continue
        if want and f not in want:
            continue
        # A file the build has not compiled yet has no dependency record: checked.
        if changed is not None and f not in changed and f in deps and not deps[f] & changed:
            continue
        seen.add(f)
        keep.append(e)
    json.dump(keep, open(os.path.join(a.out, "compile_commands.json"), "w"), indent=1)
    open(os.path.join(a.out, "files.txt"), "w").write("".join(f + "\n" for f in sorted(seen)))
    print(f"lint: {len(seen)} files ({reason}) from {a.build}/compile_commands.json")
    # An empty list is a clean result only when nothing changed; otherwise the tools could
    # not run, which must not read as clean.
    if not seen and changed is None:
        print(f'lint: nothing to lint (LINT_FILES="{a.files}" matches no src/ file of the build)')
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
