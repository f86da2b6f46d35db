#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# The claim ledger: validates claims/*.toml, runs the security tests, renders SECURITY.md.
"""corral claim ledger.

  scripts/claims.py --check
  scripts/claims.py --build BUILD [--junit [MODE=]FILE ...] [--run] [--render SECURITY.md]
  scripts/claims.py --self-test

A claim reads Verified only when its mechanism exists and every adversarial test it names
ran and passed in this run; the status rules are above evaluate(), the format is in
claims/README.md.
Exit status: 0 ok; 1 a test failed, a test pass could not run, or --check found problems;
2 usage error or an invalid ledger.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import datetime
import fnmatch
import html
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import tomllib
import xml.etree.ElementTree as ET
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

VERIFIED = "Verified"
QUALIFIED = "Qualified"
NOT_VERIFIED = "Implemented-not-verified"
PLANNED = "Planned"
NOT_CLAIMED = "Not claimed"
STATUS_ORDER = [VERIFIED, QUALIFIED, NOT_VERIFIED, PLANNED, NOT_CLAIMED]

MODES = ("root", "rootless")
NOBODY = 65534  # the rootless pass's uid and gid, as in scripts/run-rootless-tests.sh
PASSED, FAILED, SKIPPED = "passed", "failed", "skipped"

ID_RE = re.compile(r"^[a-z][a-z0-9]*\.[a-z0-9]+(-[a-z0-9]+)*$")
# A gtest pattern "Suite.TestGlob": a literal suite (the claim id in PascalCase) and a test
# name that may use * and ?. No ':' lists or '-' negations: one pattern, one meaning.
PATTERN_RE = re.compile(r"^([A-Za-z][A-Za-z0-9_]*)\.([A-Za-z0-9_*?]+)$")

# Fields allowed per kind of entry; unknown fields are errors (a typo must not silently
# drop a boundary or a cap).
KIND_FIELDS = {
    "implemented": {
        "required": {"id", "statement", "mechanism", "tests", "boundary"},
        "optional": {"status_cap", "qualification", "requires"},
    },
    PLANNED: {
        "required": {"id", "status", "issue", "statement", "mechanism", "boundary"},
        "optional": {"tests", "requires"},
    },
    NOT_CLAIMED: {
        "required": {"id", "status", "statement", "reason"},
        "optional": set(),
    },
}


# ---------------------------------------------------------------------------------------
# Ledger


@dataclasses.dataclass
class Claim:
    id: str
    statement: str
    source: str  # "claims/fs.toml"
    status: str | None = None  # None: implemented, status computed from tests
    mechanism: str = ""
    tests: list[str] = dataclasses.field(default_factory=list)
    boundary: str = ""
    status_cap: str | None = None
    qualification: str = ""
    requires: list[str] = dataclasses.field(default_factory=list)
    issue: int | None = None
    reason: str = ""

    @property
    def implemented(self) -> bool:
        return self.status is None


def pascal(claim_id: str) -> str:
    """userns.no-capabilities -> UsernsNoCapabilities (the test suite of a claim)."""
    return "".join(p[:1].upper() + p[1:] for p in re.split(r"[.\-]", claim_id) if p)


def load_ledger(claims_dir: Path) -> tuple[list[Claim], list[str], list[tuple[str, str]]]:
    """Valid claims, one error line per problem, and (id, file) of every entry, valid or not."""
    claims: list[Claim] = []
    errors: list[str] = []
    seen: list[tuple[str, str]] = []
    files = sorted(claims_dir.glob("*.toml"))
    if not files:
        errors.append(f"{claims_dir}: no *.toml files")
    for path in files:
        rel = _rel(path)
        try:
            data = tomllib.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as e:
            errors.append(f"{rel}: cannot parse: {e}")
            continue
        extra = set(data) - {"claim"}
        if extra:
            errors.append(f"{rel}: unknown top-level keys {sorted(extra)} (use [[claim]] tables)")
        entries = data.get("claim", [])
        if not isinstance(entries, list) or not entries:
            errors.append(f"{rel}: no [[claim]] tables")
            continue
        for n, entry in enumerate(entries, 1):
            if isinstance(entry, dict) and isinstance(entry.get("id"), str):
                seen.append((entry["id"], rel))
            claim, errs = _parse_entry(entry, rel, n, path.stem)
            errors.extend(errs)
            if claim:
                claims.append(claim)
    return claims, errors, seen


def _parse_entry(entry: dict, rel: str, n: int, stem: str) -> tuple[Claim | None, list[str]]:
    cid = entry.get("id")
    where = f"{rel}: {cid}" if isinstance(cid, str) and cid else f"{rel}: claim #{n}"
    errs: list[str] = []
    status = entry.get("status")
    if status is not None and status not in (PLANNED, NOT_CLAIMED):
        errs.append(f"{where}: status must be '{PLANNED}' or '{NOT_CLAIMED}' "
                    f"(others are computed), got {status!r}")
        return None, errs
    kind = KIND_FIELDS["implemented" if status is None else status]
    for f in sorted(kind["required"] - set(entry)):
        errs.append(f"{where}: missing field '{f}'")
    for f in sorted(set(entry) - kind["required"] - kind["optional"]):
        errs.append(f"{where}: field '{f}' not allowed here")
    for f in ("id", "statement", "mechanism", "boundary", "qualification", "reason"):
        if f in entry and (not isinstance(entry[f], str) or not entry[f].strip()):
            errs.append(f"{where}: '{f}' must be a non-empty string")
    for f in ("tests", "requires"):
        if f in entry and (not isinstance(entry[f], list)
                           or not all(isinstance(x, str) and x.strip() for x in entry[f])):
            errs.append(f"{where}: '{f}' must be a list of non-empty strings")
    if "issue" in entry and (not isinstance(entry["issue"], int) or entry["issue"] <= 0):
        errs.append(f"{where}: 'issue' must be a positive integer")
    if errs:
        return None, errs
    if not ID_RE.match(cid):
        errs.append(f"{where}: id must look like area.kebab-name")
    elif cid.split(".")[0] != stem:
        errs.append(f"{where}: id's area '{cid.split('.')[0]}' does not match file {stem}.toml")
    claim = Claim(id=cid, statement=entry["statement"].strip(), source=rel, status=status,
                  mechanism=entry.get("mechanism", "").strip(), tests=list(entry.get("tests", [])),
                  boundary=entry.get("boundary", "").strip(),
                  status_cap=entry.get("status_cap"),
                  qualification=entry.get("qualification", "").strip(),
                  requires=list(entry.get("requires", [])), issue=entry.get("issue"),
                  reason=entry.get("reason", "").strip())
    if claim.status_cap is not None and claim.status_cap != QUALIFIED:
        errs.append(f"{where}: status_cap can only be '{QUALIFIED}'")
    if (claim.status_cap is None) != (not claim.qualification):
        errs.append(f"{where}: status_cap and qualification go together "
                    "(say within which limits the claim holds)")
    if claim.implemented and not claim.tests:
        errs.append(f"{where}: an implemented claim needs at least one test pattern")
    for pat in claim.tests:
        if not PATTERN_RE.match(pat):
            errs.append(f"{where}: test pattern {pat!r} is not Suite.TestGlob "
                        f"(e.g. '{pascal(cid)}.*')")
    if claim.tests and ID_RE.match(cid):
        suites = {m.group(1) for m in map(PATTERN_RE.match, claim.tests) if m}
        if pascal(cid) not in suites:
            errs.append(f"{where}: no test pattern names the claim's suite '{pascal(cid)}'")
    return (None if errs else claim), errs


def read_claim_ids(path: Path) -> tuple[dict[str, str], list[str]]:
    """The id -> statement table of docs/claim-ids.md."""
    ids: dict[str, str] = {}
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as e:
        return ids, [f"{_rel(path)}: cannot read: {e.strerror}"]
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")] if line.startswith("|") else []
        if len(cells) >= 2 and ID_RE.match(cells[0]):
            ids[cells[0]] = "|".join(cells[1:]).strip()
    if not ids:
        return ids, [f"{_rel(path)}: no claim ids found in its table"]
    return ids, []


def check_ledger(claims: list[Claim], doc_ids: dict[str, str],
                 entries: list[tuple[str, str]] | None = None) -> list[str]:
    """Cross-entry checks. entries: (id, file) of every entry, including invalid ones, so a
    duplicate or a present-but-broken entry is reported once, as what it is."""
    errors: list[str] = []
    first: dict[str, str] = {}
    for cid, source in entries if entries is not None else [(c.id, c.source) for c in claims]:
        if cid in first:
            errors.append(f"{source}: {cid}: duplicate id (also in {first[cid]})")
        first.setdefault(cid, source)
    by_id = {c.id: c for c in claims}
    for cid, statement in doc_ids.items():
        c = by_id.get(cid)
        if c is None:
            if cid not in first:
                errors.append(f"docs/claim-ids.md: {cid}: no ledger entry in claims/")
        elif not c.implemented:
            errors.append(f"{c.source}: {cid}: listed in docs/claim-ids.md but marked {c.status}")
        elif " ".join(c.statement.split()) != " ".join(statement.split()):
            errors.append(f"{c.source}: {cid}: statement differs from docs/claim-ids.md")
    for c in claims:
        if c.implemented and c.id not in doc_ids:
            errors.append(f"{c.source}: {c.id}: implemented claim not in docs/claim-ids.md")
    return errors


def order_claims(claims: list[Claim], doc_ids: dict[str, str]) -> list[Claim]:
    """docs/claim-ids.md's order (launch order, roughly), then Planned, then Not claimed."""
    rank = {cid: i for i, cid in enumerate(doc_ids)}
    kind = {None: 0, PLANNED: 1, NOT_CLAIMED: 2}
    return sorted(claims, key=lambda c: (kind[c.status], rank.get(c.id, len(rank))))


# ---------------------------------------------------------------------------------------
# Test results


@dataclasses.dataclass
class TestResult:
    outcome: str  # PASSED, FAILED or SKIPPED
    reason: str = ""  # skip reason or failure message, one line


@dataclasses.dataclass
class Run:
    mode: str  # "root" or "rootless"
    sources: list[str]
    results: dict[str, TestResult]
    timestamp: str = ""
    error: str = ""  # the pass could not run or its junit could not be read


_WORSE = {PASSED: 0, SKIPPED: 1, FAILED: 2}


def parse_junit(text: str) -> tuple[dict[str, TestResult], str]:
    """Reads ctest --output-junit or gtest --gtest_output=xml. Returns (results, timestamp)."""
    root = ET.fromstring(text)
    results: dict[str, TestResult] = {}
    for tc in root.iter("testcase"):
        name = tc.get("name", "")
        cls = tc.get("classname", "")
        if "." not in name and cls and cls != name:
            name = f"{cls}.{name}"  # gtest's own XML splits suite and test
        # gtest_discover_tests appends "  # GetParam() = ..." to parameterized names.
        name = re.sub(r"\s+# (GetParam\(\)|TypeParam) = .*$", "", name, flags=re.S)
        out = tc.findtext("system-out") or ""
        failure = tc.find("failure")
        if failure is None:
            failure = tc.find("error")
        skipped = tc.find("skipped")
        status = tc.get("status", "")
        if failure is not None or status == "fail":
            msg = (failure.get("message") if failure is not None else "") or _gtest_failure(out)
            res = TestResult(FAILED, _one_line(msg or "failed"))
        elif skipped is not None or status in ("notrun", "disabled") or tc.get("result") == "skipped":
            msg = skipped.get("message", "") if skipped is not None else ""
            if msg == "SKIP_REGULAR_EXPRESSION_MATCHED" or "[  SKIPPED ]" in out:
                res = TestResult(SKIPPED, _one_line(_gtest_skip_reason(out)))
            elif status == "notrun" and msg not in ("Disabled", ""):
                # ctest "Not Run" (executable missing, fixture failed): ctest counts it as a
                # failure and so do we.
                res = TestResult(FAILED, _one_line(f"not run: {msg}"))
            elif msg == "Disabled" or status == "disabled":
                res = TestResult(SKIPPED, "")  # disabled states no facility reason
            else:
                res = TestResult(SKIPPED, _one_line(msg))
        elif "[  SKIPPED ]" in out:
            # A GTEST_SKIP that ctest reported as passed (no SKIP_REGULAR_EXPRESSION on a
            # hand-written add_test): a skip is never a pass.
            res = TestResult(SKIPPED, _one_line(_gtest_skip_reason(out)))
        else:
            res = TestResult(PASSED)
        prev = results.get(name)
        if prev is None or _WORSE[res.outcome] > _WORSE[prev.outcome]:
            results[name] = res
    return results, root.get("timestamp", "")


def _gtest_skip_reason(out: str) -> str:
    # ctest may cut long output; the reason comes right after "Skipped", so keep what is left.
    m = re.search(r": Skipped\n(.*?)(?:\n*\[  SKIPPED \]|\Z)", out, re.S)
    return m.group(1).strip() if m else ""


def _gtest_failure(out: str) -> str:
    m = re.search(r": Failure\n(.*?)\n\[  FAILED  \]", out, re.S)
    return m.group(1).strip() if m else ""


def _one_line(text: str, limit: int = 200) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _normalize_test_name(name: str) -> str:
    """Inst/Suite.Test/3, Suite/0.Test, Inst/Suite/0.Test -> Suite.Test."""
    suite, dot, test = name.partition(".")
    if not dot:
        return name
    parts = [p for p in suite.split("/") if not p.isdigit()]
    suite = parts[-1] if parts else suite
    return f"{suite}.{re.sub(r'/[0-9]+$', '', test)}"


def matches(pattern: str, name: str) -> bool:
    return fnmatch.fnmatchcase(name, pattern) or fnmatch.fnmatchcase(_normalize_test_name(name), pattern)


# ---------------------------------------------------------------------------------------
# Status rules
#
# Implemented claims only (Planned and Not claimed are taken from the ledger as they are):
#   Verified   every pattern matched >= 1 test in every mode that ran, and every matched
#              test ran and passed in every mode. Skips do not count as passes.
#   Qualified  the same with status_cap = "Qualified"; or every other outcome is a skip
#              that states a reason (a missing host facility in that privilege mode, or a
#              case this host cannot exercise at all, such as a syscall its kernel lacks),
#              and every pattern still has a test that passed; the skips are listed.
#   Implemented-not-verified   anything else: no results, a pass that was attempted but
#              wrote no JUnit, a pattern that matched nothing, a test absent from a mode, a
#              skip without a reason, a skip in every mode without one shared stated reason,
#              a pattern none of whose tests passed anywhere, or any failure (including a
#              failing test of the claim's own suite that no pattern selects, and ctest's
#              "Not Run"). Any failed test, claimed or not, also makes the script exit 1.
#   Suite.Root* tests are root-only: skipped in the rootless pass they are not applicable,
#   but they must pass in a root pass, so without one their claim is not verified.


@dataclasses.dataclass
class Evaluation:
    status: str
    counts: dict[str, tuple[int, int, int, int, int]]  # mode -> passed, skipped, failed,
    #                                                   total, root-only not applicable
    problems: list[str]
    notes: list[str]  # skip reasons that made a claim Qualified
    failed: bool = False


def root_only(name: str) -> bool:
    """Tests named Suite.Root* exercise corral run as root (tests/security/CMakeLists.txt
    labels them `root`); skipped as nobody they are not applicable, not a qualification."""
    return _normalize_test_name(name).partition(".")[2].startswith("Root")


def evaluate(claim: Claim, runs: list[Run]) -> Evaluation:
    if not claim.implemented:
        return Evaluation(claim.status, {}, [], [])
    if not runs:
        return Evaluation(NOT_VERIFIED, {}, ["no test results in this run"], [])
    broken = [f"the {r.mode} pass did not run: {r.error}" for r in runs if r.error]
    if broken:  # a pass that was attempted and produced nothing proves nothing either way
        return Evaluation(NOT_VERIFIED, {}, broken, [])
    problems: list[str] = []
    notes: list[str] = []
    counts: dict[str, tuple[int, int, int, int, int]] = {}
    per_test: dict[str, dict[str, TestResult]] = {}
    own = pascal(claim.id)
    for run in runs:
        matched: dict[str, TestResult] = {}
        for pat in claim.tests:
            names = [n for n in run.results if matches(pat, n)]
            if not names:
                problems.append(f"{pat}: no test matched ({run.mode})")
            matched.update({n: run.results[n] for n in names})
        # A failing test of the claim's own suite counts even if no pattern selects it: a
        # narrow pattern must not hide a failing sibling.
        matched.update({n: r for n, r in run.results.items() if r.outcome == FAILED
                        and _normalize_test_name(n).partition(".")[0] == own})
        not_applicable = {n for n, r in matched.items()
                          if run.mode == "rootless" and root_only(n) and r.outcome == SKIPPED}
        outcomes = [r.outcome for n, r in matched.items() if n not in not_applicable]
        counts[run.mode] = (outcomes.count(PASSED), outcomes.count(SKIPPED),
                            outcomes.count(FAILED), len(outcomes), len(not_applicable))
        for n, r in matched.items():
            if n not in not_applicable:
                per_test.setdefault(n, {})[run.mode] = r
            elif "root" not in {x.mode for x in runs}:
                per_test.setdefault(n, {})  # must still pass as root: see below
    failed = False
    for name in sorted(per_test):
        for run in runs:
            r = per_test[name].get(run.mode)
            if r is None and not (run.mode == "rootless" and root_only(name)):
                problems.append(f"{name}: absent from the {run.mode} pass")
            elif r is not None and r.outcome == FAILED:
                failed = True
                problems.append(f"{name}: FAILED ({run.mode}): {r.reason}")
        if not per_test[name]:
            problems.append(f"{name}: a root-only test, and this run had no root pass")
    if problems:
        return Evaluation(NOT_VERIFIED, counts, problems, notes, failed)
    if all(r.outcome == PASSED for modes in per_test.values() for r in modes.values()):
        return Evaluation(QUALIFIED if claim.status_cap else VERIFIED, counts, [], notes)
    # Every pattern must have real evidence: an attack (not a control) that passed somewhere.
    def is_control(n: str) -> bool:
        return _normalize_test_name(n).partition(".")[2].startswith(("Control", "RootControl"))
    for pat in claim.tests:
        if not any(matches(pat, n) and not is_control(n) and any(r.outcome == PASSED for r in modes.values())
                   for n, modes in per_test.items()):
            problems.append(f"{pat}: no adversarial test passed in any mode")
    for name in sorted(per_test):
        modes = per_test[name]
        if not any(r.outcome == PASSED for r in modes.values()):
            reasons = sorted({r.reason for r in modes.values() if r.reason})
            if len(reasons) != 1 or any(not r.reason for r in modes.values()):
                problems.append(f"{name}: skipped in every mode ({'; '.join(reasons) or 'no reason given'})")
            else:  # a case this host cannot exercise (e.g. a syscall its kernel lacks)
                notes.append(f"{name} not exercised on this host: {reasons[0]}")
            continue
        for mode, r in sorted(modes.items()):
            if r.outcome != SKIPPED:
                continue
            if r.reason:
                notes.append(f"{name} skipped {mode}: {r.reason}")
            else:
                problems.append(f"{name}: skipped {mode} without a stated reason")
    if problems:
        return Evaluation(NOT_VERIFIED, counts, problems, [])
    return Evaluation(QUALIFIED, counts, [], notes)


# ---------------------------------------------------------------------------------------
# Running the security tests


def current_mode() -> str:
    return "root" if os.geteuid() == 0 else "rootless"


def run_passes(build: Path) -> list[Run]:
    """ctest -L security as the caller, and when root again as nobody (like
    scripts/run-rootless-tests.sh). JUnit files are kept in BUILD/claims/."""
    if shutil.which("ctest") is None:
        return [Run(current_mode(), [], {}, error="ctest not found in PATH")]
    out_dir = build / "claims"
    out_dir.mkdir(exist_ok=True)
    runs = []
    jobs = str(os.cpu_count() or 1)
    ctest = ["ctest", "-L", "security", "--output-on-failure", "--timeout", "300",
             "-j", jobs, "--no-tests=ignore"]
    mode = current_mode()
    junit = out_dir / f"junit-{mode}.xml"
    junit.unlink(missing_ok=True)
    _log(f"claims: running security tests ({mode})")
    subprocess.run(ctest + ["--output-junit", str(junit)], cwd=build, stdout=sys.stderr)
    runs.append(_read_run(mode, junit))
    if mode == "root":
        if shutil.which("setpriv") is None:
            runs.append(Run("rootless", [], {}, error="setpriv not found: rootless pass not run"))
            return runs
        with tempfile.TemporaryDirectory(prefix="corral-claims.") as tmp, _lent_to_nobody(build):
            os.chmod(tmp, 0o1777)  # nobody makes its temp dirs and junit file here; sticky, like /tmp (corral
            # passes over a TMPDIR where others could rename its files, and skips git under one)
            tmp_junit = Path(tmp) / "junit-rootless.xml"
            _log("claims: running security tests (rootless, as nobody)")
            subprocess.run(
                ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups",
                 "--reset-env", "env", f"TMPDIR={tmp}", f"HOME={tmp}", "PATH=/usr/bin:/bin",
                 "CORRAL_TEST_MODE=rootless"] + ctest + ["--output-junit", str(tmp_junit)],
                cwd=build, stdout=sys.stderr)
            junit = out_dir / "junit-rootless.xml"
            junit.unlink(missing_ok=True)
            if tmp_junit.exists():
                shutil.copyfile(tmp_junit, junit)
        runs.append(_read_run("rootless", junit))
    return runs


@contextlib.contextmanager
def _lent_to_nobody(build: Path):
    """ctest aborts unless it can write BUILD/Testing/Temporary/LastTest.log. Lend that one
    directory to nobody for the pass and take it back after, rather than making it
    world-writable or copying the build tree."""
    tmpdir = build / "Testing" / "Temporary"
    tmpdir.mkdir(parents=True, exist_ok=True)
    st = tmpdir.stat()
    os.chown(tmpdir, NOBODY, NOBODY)
    try:
        yield
    finally:
        for f in tmpdir.iterdir():
            if f.lstat().st_uid == NOBODY:
                os.chown(f, st.st_uid, st.st_gid, follow_symlinks=False)
        os.chown(tmpdir, st.st_uid, st.st_gid)


def _read_run(mode: str, path: Path) -> Run:
    try:
        results, stamp = parse_junit(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return Run(mode, [_rel(path)], {}, error=f"{_rel(path)}: no JUnit written (pass did not run)")
    except (OSError, ET.ParseError, UnicodeDecodeError) as e:
        return Run(mode, [_rel(path)], {}, error=f"{_rel(path)}: unreadable JUnit: {e}")
    return Run(mode, [_rel(path)], results, stamp)


def load_junit_args(specs: list[str]) -> list[Run]:
    """--junit [MODE=]FILE. Without MODE: 'rootless' if the file name says so, else the
    caller's mode."""
    runs = []
    for spec in specs:
        mode, eq, file = spec.partition("=")
        if not eq or mode not in MODES:
            file = spec
            mode = "rootless" if "rootless" in Path(spec).name else current_mode()
        runs.append(_read_run(mode, Path(file)))
    return runs


def merge_runs(runs: list[Run]) -> list[Run]:
    """One Run per mode; for a test reported twice in one mode the worse outcome wins."""
    by_mode: dict[str, Run] = {}
    for run in runs:
        mode = run.mode
        have = by_mode.get(mode)
        if have is None:
            by_mode[mode] = dataclasses.replace(run, sources=list(run.sources),
                                                results=dict(run.results))
            continue
        have.sources += run.sources
        have.error = have.error or run.error
        have.timestamp = max(have.timestamp, run.timestamp)
        for name, r in run.results.items():
            prev = have.results.get(name)
            if prev is None or _WORSE[r.outcome] > _WORSE[prev.outcome]:
                have.results[name] = r
    return [by_mode[m] for m in MODES if m in by_mode]


# ---------------------------------------------------------------------------------------
# Rendering


LEGEND = [
    (VERIFIED, "the mechanism is in place and every adversarial test the claim names ran and "
               "passed, in every privilege mode of this run."),
    (QUALIFIED, "as Verified, but true only within the limits stated with the claim, or a test "
                "was skipped in one privilege mode for a stated missing host facility and passed "
                "in the other."),
    (NOT_VERIFIED, "the mechanism is implemented, but its tests are missing, were skipped, "
                   "failed, or were not run here. Treat it as unproven."),
    (PLANNED, "not implemented yet; the issue that brings it is named."),
    (NOT_CLAIMED, "outside what corral defends against; see Limitations."),
]


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def _counts_text(ev: Evaluation, runs: list[Run]) -> str:
    if not ev.counts:
        return "not run"
    parts = []
    for run in runs:
        if run.mode not in ev.counts:
            continue
        p, s, f, t, na = ev.counts[run.mode]
        extra = [x for x in (f"{s} skipped" if s else "", f"{f} failed" if f else "",
                             f"{na} root-only n/a" if na else "") if x]
        parts.append(f"{run.mode} {p}/{t}" + (f" ({', '.join(extra)})" if extra else ""))
    return "; ".join(parts)


def render(claims: list[Claim], evals: dict[str, Evaluation], runs: list[Run],
           meta: dict[str, str]) -> str:
    implemented = [c for c in claims if c.implemented]
    planned = [c for c in claims if c.status == PLANNED]
    not_claimed = [c for c in claims if c.status == NOT_CLAIMED]
    tally = {s: 0 for s in STATUS_ORDER}
    for c in claims:
        tally[evals[c.id].status] += 1
    out: list[str] = []
    w = out.append
    w("# corral security claims")
    w("")
    w("<!-- GENERATED FILE: do not edit. Source: claims/*.toml and test results. "
      "Regenerate with `make claims`. -->")
    w("")
    w(f"> **Generated, not written.** This file was produced by `{meta['command']}` "
      f"from commit {meta['commit']} on {meta['date']} (host kernel {meta['kernel']}). "
      "Edit the ledger in [claims/](claims/) or the tests, never this file: a claim reads "
      "Verified only when its mechanism exists and its adversarial tests passed in the run "
      "that produced this file.")
    w("")
    if not runs:
        w("**No test results were given to this run**, so every implemented claim reads "
          f"{NOT_VERIFIED}. Run `make claims` to run the security tests and regenerate.")
    else:
        w("Test passes used:")
        w("")
        for run in runs:
            if run.error:
                w(f"- {run.mode}: **did not run**: {run.error}")
            else:
                stamp = f", at {run.timestamp}" if run.timestamp else ""
                w(f"- {run.mode}: {len(run.results)} tests from "
                  f"{', '.join(f'`{s}`' for s in run.sources)}{stamp}")
    w("")
    w("Tally: " + ", ".join(f"{tally[s]} {s}" for s in STATUS_ORDER) + ".")
    w("")
    w("## What the statuses mean")
    w("")
    for status, text in LEGEND:
        w(f"- **{status}**: {text}")
    w("")
    w("A threat model and the order of the layers are in "
      "[docs/security-model.md](docs/security-model.md).")
    w("")
    w("## Summary")
    w("")
    w("| id | statement | status | mechanism | tests passed/total |")
    w("|---|---|---|---|---|")
    for c in claims:
        ev = evals[c.id]
        if c.implemented:
            tests = _counts_text(ev, runs)
            mech = c.mechanism
        elif c.status == PLANNED:
            tests, mech = "-", f"planned (#{c.issue}): {c.mechanism}"
        else:
            tests, mech = "-", "-"
        w(f"| `{c.id}` | {_cell(c.statement)} | **{ev.status}** | {_cell(mech)} | {_cell(tests)} |")
    w("")
    w("## Claims")
    w("")
    for c in implemented:
        ev = evals[c.id]
        w(f"### `{c.id}`: {ev.status}")
        w("")
        w(f"**Statement.** {c.statement}")
        w("")
        w(f"**Mechanism.** {c.mechanism}")
        w("")
        if c.requires:
            w(f"**Requires.** {'; '.join(c.requires)}.")
            w("")
        if c.qualification:
            w(f"**Holds only within these limits.** {c.qualification}")
            w("")
        if ev.notes:
            w("**Qualified by skips in one privilege mode.** "
              + " ".join(f"{n}." for n in ev.notes))
            w("")
        w(f"**Tests.** {', '.join(f'`{t}`' for t in c.tests)}: {_counts_text(ev, runs)}.")
        for p in ev.problems:
            w(f"- {p}")
        w("")
        w(f"**Not claimed.** {c.boundary}")
        w("")
    w("## Planned")
    w("")
    w("Not enforced by anything today; listed so nobody mistakes them for present.")
    w("")
    for c in planned:
        w(f"### `{c.id}`: {PLANNED} (issue #{c.issue})")
        w("")
        w(f"**Statement.** {c.statement}")
        w("")
        w(f"**Intended mechanism.** {c.mechanism}")
        w("")
        w(f"**Will not claim.** {c.boundary}")
        w("")
    w("## Limitations (not claimed)")
    w("")
    w("In plain words, what corral does not protect against. Each claim above also states "
      "its own boundary.")
    w("")
    for c in not_claimed:
        w(f"- **{c.statement}** {c.reason}")
    w("- **Anything not listed as Verified or Qualified above.** An "
      f"{NOT_VERIFIED} claim describes code that exists, not a property anyone has "
      "shown to hold on this host.")
    w("")
    w("## How to reproduce")
    w("")
    w("```sh")
    w("make claims                    # build, run the security tests (as root: also as nobody),")
    w("                               # regenerate this file")
    w("scripts/claims.py --check      # validate the ledger only")
    w("scripts/claims.py --self-test  # test the status rules on synthetic results")
    w("corral doctor                  # which host facilities and limit mechanisms exist here")
    w("```")
    w("")
    w("Statuses depend on the host: kernel version, Landlock, cgroup delegation and whether "
      "the run was as root. A claim Verified here is Verified for this host and commit.")
    return "\n".join(out) + "\n"


def _meta(argv: list[str]) -> dict[str, str]:
    def git(*args: str) -> str:
        try:
            return subprocess.run(["git", "-C", str(ROOT), *args], capture_output=True,
                                  text=True, check=True).stdout.strip()
        except (OSError, subprocess.CalledProcessError):
            return ""
    commit = f'`{git("rev-parse", "--short", "HEAD") or "unknown"}`'
    if git("status", "--porcelain", "--untracked-files=no"):
        commit += " (with uncommitted changes)"
    epoch = os.environ.get("SOURCE_DATE_EPOCH")
    now = (datetime.datetime.fromtimestamp(int(epoch), datetime.timezone.utc) if epoch and epoch.isdigit()
           else datetime.datetime.now(datetime.timezone.utc))
    return {"command": shlex.join(["scripts/claims.py", *argv]), "commit": commit,
            "date": now.strftime("%Y-%m-%d %H:%M UTC"), "kernel": os.uname().release}


# ---------------------------------------------------------------------------------------
# Self-test: the status rules on synthetic JUnit, no ctest needed.


def _junit(cases: list[tuple[str, str, str]]) -> str:
    """cases: (name, outcome, message) in ctest's JUnit shape."""
    body = []
    for raw, outcome, msg in cases:
        name, msg = html.escape(raw, quote=True), html.escape(msg)
        if outcome == PASSED:
            body.append(f'<testcase name="{name}" classname="{name}" status="run">'
                        "<system-out>[       OK ]</system-out></testcase>")
        elif outcome == FAILED:
            body.append(f'<testcase name="{name}" classname="{name}" status="fail">'
                        f'<failure message=""/><system-out>x.cc:4: Failure\n{msg}\n'
                        f"[  FAILED  ] {name}</system-out></testcase>")
        elif outcome == SKIPPED:
            body.append(f'<testcase name="{name}" classname="{name}" status="notrun">'
                        '<skipped message="SKIP_REGULAR_EXPRESSION_MATCHED"/>'
                        f"<system-out>[ RUN      ] {name}\nx.cc:9: Skipped\n{msg}\n\n"
                        f"[  SKIPPED ] {name} (0 ms)</system-out></testcase>")
        else:  # ctest "Not Run"
            body.append(f'<testcase name="{name}" classname="{name}" status="notrun">'
                        '<skipped message="Unable to find executable"/></testcase>')
    return ('<?xml version="1.0"?><testsuite name="t" timestamp="2026-01-01T00:00:00">'
            + "".join(body) + "</testsuite>")


def self_test() -> int:
    checks = 0
    failures: list[str] = []

    def expect(cond: bool, what: str) -> None:
        nonlocal checks
        checks += 1
        if not cond:
            failures.append(what)

    def run(mode: str, cases: list[tuple[str, str, str]]) -> Run:
        results, stamp = parse_junit(_junit(cases))
        return Run(mode, ["synthetic"], results, stamp)

    def claim(cid: str, **kw) -> Claim:
        return Claim(id=cid, statement="s", source="t", mechanism="m",
                     tests=kw.pop("tests", [pascal(cid) + ".*"]), boundary="b", **kw)

    A = claim("a.one")
    ok = [("AOne.Attack", PASSED, ""), ("AOne.Control", PASSED, "")]
    root, rootless = run("root", ok), run("rootless", ok)

    # Parsing both JUnit dialects.
    expect(pascal("seccomp.dangerous-syscalls-denied") == "SeccompDangerousSyscallsDenied", "pascal")
    r, _ = parse_junit(_junit([("S.T", SKIPPED, "no delegated cgroup v2 subtree")]))
    expect(r["S.T"] == TestResult(SKIPPED, "no delegated cgroup v2 subtree"), f"skip reason {r}")
    r, _ = parse_junit('<testsuite><testcase name="S.T" status="run"><system-out>x.cc:1: Skipped\n'
                       'no landlock\n[  SKIPPED ] S.T</system-out></testcase></testsuite>')
    expect(r["S.T"] == TestResult(SKIPPED, "no landlock"), f"skip reported as run {r}")
    r, _ = parse_junit('<testsuite><testcase name="S.T" status="notrun"><skipped message='
                       '"SKIP_REGULAR_EXPRESSION_MATCHED"/><system-out>x.cc:1: Skipped\nno cgroup'
                       '</system-out></testcase></testsuite>')
    expect(r["S.T"] == TestResult(SKIPPED, "no cgroup"), f"truncated skip output {r}")
    r, _ = parse_junit(_junit([("S.T", "notrun", "")]))
    expect(r["S.T"].outcome == FAILED, "ctest Not Run counts as failed")
    r, _ = parse_junit(_junit([("S.T", FAILED, "fs.x broken: wrote /etc")]))
    expect(r["S.T"].outcome == FAILED and "fs.x broken" in r["S.T"].reason, f"failure msg {r}")
    r, _ = parse_junit('<testsuites><testsuite name="S"><testcase name="T" classname="S" '
                       'status="run" result="completed"/><testcase name="U" classname="S" '
                       'status="run" result="skipped"><skipped message="no landlock"/>'
                       '</testcase></testsuite></testsuites>')
    expect(r.get("S.T") == TestResult(PASSED) and r.get("S.U") == TestResult(SKIPPED, "no landlock"),
           f"gtest xml {r}")
    r, _ = parse_junit(_junit([('AOne.Ns/clone_user  # GetParam() = ("clone-ns", "user")', PASSED, "")]))
    expect(list(r) == ["AOne.Ns/clone_user"], f"GetParam suffix {r}")
    expect(matches("AOne.*", "Inst/AOne.Attack/2") and matches("AOne.*", "AOne/1.Attack")
           and not matches("AOne.*", "AOneX.Attack"), "pattern matching")

    # The status rules.
    expect(evaluate(A, [root, rootless]).status == VERIFIED, "all pass both modes -> Verified")
    expect(evaluate(A, [rootless]).status == VERIFIED, "all pass, single mode -> Verified")
    expect(evaluate(A, []).status == NOT_VERIFIED, "no results -> not verified")
    capped = claim("a.one", status_cap=QUALIFIED, qualification="q")
    expect(evaluate(capped, [root, rootless]).status == QUALIFIED, "status_cap -> Qualified")
    skip_rl = run("rootless", [("AOne.Attack", SKIPPED, "needs a delegated cgroup"),
                               ("AOne.Control", PASSED, "")])
    ev = evaluate(A, [root, skip_rl])
    expect(ev.status == QUALIFIED and ev.notes and "delegated cgroup" in ev.notes[0],
           f"pass root + stated skip rootless -> Qualified {ev}")
    bare = run("rootless", [("AOne.Attack", SKIPPED, ""), ("AOne.Control", PASSED, "")])
    expect(evaluate(A, [root, bare]).status == NOT_VERIFIED, "unstated skip -> not verified")
    expect(evaluate(A, [skip_rl]).status == NOT_VERIFIED, "skip in the only mode -> not verified")
    partial = run("root", [("AOne.Attack/x", PASSED, ""), ("AOne.Attack/y", SKIPPED, "kernel lacks y"),
                           ("AOne.Control", PASSED, "")])
    ev = evaluate(A, [partial])
    expect(ev.status == QUALIFIED and any("not exercised" in n for n in ev.notes),
           f"one case the host cannot exercise, others pass -> Qualified {ev}")
    skip_root = run("root", [("AOne.Attack", SKIPPED, "x"), ("AOne.Control", PASSED, "")])
    expect(evaluate(A, [skip_root, skip_rl]).status == NOT_VERIFIED, "skipped everywhere")
    fail = run("rootless", [("AOne.Attack", FAILED, "broken"), ("AOne.Control", PASSED, "")])
    ev = evaluate(capped, [root, fail])
    expect(ev.status == NOT_VERIFIED and ev.failed, "failure -> not verified + failed")
    two = claim("a.one", tests=["AOne.*", "AOne.Missing"])
    expect(evaluate(two, [root]).status == NOT_VERIFIED, "a pattern matching nothing")
    narrow = claim("a.one", tests=["AOne.Control"])
    expect(evaluate(narrow, [root, fail]).status == NOT_VERIFIED, "failing sibling in the suite")
    other = run("root", [("BTwo.X", PASSED, "")])
    expect(evaluate(A, [other]).status == NOT_VERIFIED, "no test of the claim ran")
    absent = run("rootless", [("AOne.Attack", PASSED, "")])
    expect(evaluate(A, [root, absent]).status == NOT_VERIFIED, "test absent from one mode")
    broken_run = Run("rootless", [], {}, error="no JUnit")
    expect(evaluate(A, [root, broken_run]).status == NOT_VERIFIED, "a pass that did not run")
    for st in (PLANNED, NOT_CLAIMED):
        c = Claim(id="a.two", statement="s", source="t", status=st)
        expect(evaluate(c, [root]).status == st, f"{st} stays {st}")

    merged = merge_runs([root, fail, run("rootless", [("BTwo.X", PASSED, "")])])
    expect([r.mode for r in merged] == ["root", "rootless"]
           and merged[1].results["AOne.Attack"].outcome == FAILED and "BTwo.X" in merged[1].results
           and root.results["AOne.Attack"].outcome == PASSED, f"merge_runs {merged}")

    # Root-only tests (Suite.Root*): skipped as nobody they are not applicable.
    with_root = [("AOne.Attack", PASSED, ""), ("AOne.RootNeverUid0", PASSED, "")]
    rl_skip = [("AOne.Attack", PASSED, ""), ("AOne.RootNeverUid0", SKIPPED, "needs root")]
    ev = evaluate(A, [run("root", with_root), run("rootless", rl_skip)])
    expect(ev.status == VERIFIED and ev.counts["rootless"] == (1, 0, 0, 1, 1), f"root-only n/a {ev}")
    expect(evaluate(A, [run("rootless", rl_skip)]).status == NOT_VERIFIED,
           "root-only test with no root pass")
    rl_fail = [("AOne.Attack", PASSED, ""), ("AOne.RootNeverUid0", FAILED, "uid 0")]
    expect(evaluate(A, [run("root", with_root), run("rootless", rl_fail)]).status == NOT_VERIFIED,
           "root-only test failing rootless still fails")
    expect(evaluate(A, [run("root", with_root), run("rootless", [("AOne.Attack", PASSED, "")])]).status
           == VERIFIED, "root-only test absent from the rootless pass")

    # Exit status: a failed test anywhere makes the run fail.
    expect(_exit_code([root, fail], {}) == 1 and _exit_code([root, rootless], {}) == 0, "exit code")
    expect(_exit_code([root, broken_run], {}) == 1, "a pass that did not run fails the run")

    # Ledger validation.
    good = {"id": "a.one", "statement": "s", "mechanism": "m", "tests": ["AOne.*"], "boundary": "b"}
    expect(_parse_entry(good, "t", 1, "a")[0] is not None, "valid entry")
    for bad, what in [({**good, "tests": ["AOne"]}, "pattern without test part"),
                      ({**good, "tests": ["Other.*"]}, "suite not named after id"),
                      ({**good, "tests": ["AOne.*:B.*"]}, "filter list"),
                      ({**good, "status_cap": QUALIFIED}, "cap without qualification"),
                      ({**good, "status": VERIFIED}, "computed status written by hand"),
                      ({**good, "extra": 1}, "unknown field"),
                      ({k: v for k, v in good.items() if k != "boundary"}, "missing boundary"),
                      ({**good, "tests": []}, "no tests"),
                      ({**good, "id": "Bad Id"}, "bad id")]:
        expect(_parse_entry(bad, "t", 1, "a")[0] is None, f"rejects: {what}")
    expect(_parse_entry(good, "t", 1, "b")[0] is None, "rejects id in the wrong file")
    c1 = Claim(id="a.one", statement="s", source="x", mechanism="m", tests=["AOne.*"], boundary="b")
    errs = check_ledger([c1, dataclasses.replace(c1, source="y")], {"a.one": "s", "a.two": "t"})
    expect(any("duplicate" in e for e in errs) and any("a.two" in e for e in errs),
           f"duplicate and missing ids {errs}")
    expect(check_ledger([c1], {"a.one": "other"}) != [], "statement drift")

    # Rendering: a failure is shown, the header says generated.
    claims = [A, Claim(id="a.two", statement="s2", source="t", status=NOT_CLAIMED, reason="r")]
    evals = {c.id: evaluate(c, [root, fail]) for c in claims}
    text = render(claims, evals, [root, fail], {"command": "c", "commit": "`abc`", "date": "d",
                                                "kernel": "k"})
    expect("Generated" in text and "FAILED (rootless)" in text and "## Limitations" in text
           and NOT_VERIFIED in text, "render")

    for f in failures:
        print(f"self-test FAILED: {f}", file=sys.stderr)
    print(f"self-test: {checks - len(failures)}/{checks} checks passed")
    return 1 if failures else 0


# ---------------------------------------------------------------------------------------
# Command line


def _exit_code(runs: list[Run], evals: dict[str, Evaluation]) -> int:
    failed = any(r.outcome == FAILED for run in runs for r in run.results.values())
    return 1 if failed or any(run.error for run in runs) or any(e.failed for e in evals.values()) else 0


def _rel(path: Path) -> str:
    try:
        return str(Path(path).resolve().relative_to(ROOT))
    except ValueError:
        return str(path)


def _log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="scripts/claims.py", description=__doc__.splitlines()[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", type=Path, help="configured build dir (holds the ctest tests)")
    ap.add_argument("--junit", action="append", default=[], metavar="[MODE=]FILE",
                    help="ctest or gtest JUnit results; MODE is root or rootless")
    ap.add_argument("--run", action="store_true",
                    help="run ctest -L security in BUILD (as root: also as nobody)")
    ap.add_argument("--render", type=Path, metavar="FILE", help="write SECURITY.md here")
    ap.add_argument("--check", action="store_true", help="validate the ledger and exit")
    ap.add_argument("--self-test", action="store_true", help="test the status rules and exit")
    ap.add_argument("--claims-dir", type=Path, default=ROOT / "claims", help=argparse.SUPPRESS)
    ap.add_argument("--ids", type=Path, default=ROOT / "docs" / "claim-ids.md", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)

    if args.self_test:
        return self_test()
    claims, errors, entries = load_ledger(args.claims_dir)
    doc_ids, id_errors = read_claim_ids(args.ids)
    errors += id_errors + check_ledger(claims, doc_ids, entries)
    for e in errors:
        print(f"claims: {e}", file=sys.stderr)
    if args.check:
        if not errors:
            print(f"claims: ledger ok: {len(claims)} entries, {len(doc_ids)} ids of docs/claim-ids.md covered")
        return 1 if errors else 0
    if errors:
        return 2
    claims = order_claims(claims, doc_ids)
    if args.run and args.build is None:
        ap.error("--run needs --build")
    if args.build is not None and not (args.build / "CTestTestfile.cmake").is_file():
        print(f"claims: {args.build}: not a configured build dir (run `make build`)", file=sys.stderr)
        return 2

    runs = load_junit_args(args.junit)
    if args.run:
        runs += run_passes(args.build.resolve())
    runs = merge_runs(runs)
    for run in runs:
        if run.error:
            print(f"claims: {run.mode} pass: {run.error}", file=sys.stderr)
    evals = {c.id: evaluate(c, runs) for c in claims}

    claimed = re.compile("|".join(re.escape(pascal(c.id)) for c in claims))
    for run in runs:
        for name in sorted(run.results):
            suite = _normalize_test_name(name).partition(".")[0]
            if not claimed.fullmatch(suite):
                print(f"claims: warning: {name} ({run.mode}) belongs to no claim", file=sys.stderr)
            if run.results[name].outcome == FAILED:
                print(f"claims: FAILED {name} ({run.mode}): {run.results[name].reason}", file=sys.stderr)

    for c in claims:
        print(f"{evals[c.id].status:<26} {c.id}")
    tally = [sum(evals[c.id].status == s for c in claims) for s in STATUS_ORDER]
    print(", ".join(f"{n} {s}" for n, s in zip(tally, STATUS_ORDER)))

    if args.render is not None:
        text = render(claims, evals, runs, _meta(argv))
        tmp = args.render.with_name(args.render.name + ".tmp")
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, args.render)
        print(f"claims: wrote {args.render}", file=sys.stderr)
    return _exit_code(runs, evals)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
