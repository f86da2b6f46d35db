#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# Interop test: records made by the real corral (keygen + audit API) pass the independent
# verifier, and every damaged copy fails both it and `corral verify`, with the same message.
"""audit_interop_test.py --corral BIN --testwriter BIN

Exit 0 all checks passed, 1 a check failed, 77 skipped (no openssl CLI).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import verify_audit as va  # noqa: E402  (the independent verifier; no corral code)

FAILURES: list[str] = []


def check(cond: bool, what: str) -> None:
    print(("ok   " if cond else "FAIL ") + what, flush=True)
    if not cond:
        FAILURES.append(what)


def run(*cmd: str, env: dict | None = None) -> subprocess.CompletedProcess:
    full_env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin")}
    full_env.update(env or {})
    return subprocess.run(list(cmd), capture_output=True, text=True, env=full_env, check=False)


def py_verify(ws: str, pub: str | None = None, trusted: str | None = None, fp: str | None = None):
    """(ok, message) from the independent verifier."""
    try:
        va.verify(ws, pub, trusted, fp)
        return True, ""
    except va.Failed as e:
        return False, str(e)


class Ctx:
    def __init__(self, corral: str, writer: str, tmp: str):
        self.corral, self.writer, self.tmp = corral, writer, tmp
        self.n = 0

    def fresh(self, src: str) -> str:
        self.n += 1
        dst = os.path.join(self.tmp, f"case{self.n}")
        shutil.copytree(src, dst, symlinks=True)
        return dst

    def corral_verify(self, ws: str, pub: str | None = None, trusted: str | None = None, *extra: str):
        cmd = [self.corral, "verify", ws, *extra]
        if pub:
            cmd += ["--public-key", pub]
        if trusted:
            cmd += ["--trusted-head", trusted]
        return run(*cmd)


def lines_of(ws: str) -> list[bytes]:
    with open(os.path.join(ws, ".corral", "trace.jsonl"), "rb") as f:
        return f.read().split(b"\n")[:-1]


def write_lines(ws: str, lines: list[bytes]) -> None:
    with open(os.path.join(ws, ".corral", "trace.jsonl"), "wb") as f:
        f.write(b"".join(l + b"\n" for l in lines))


def result_of(ws: str) -> dict:
    with open(os.path.join(ws, ".corral", "result.json"), "rb") as f:
        return json.loads(f.read())


def write_result(ws: str, doc: dict) -> None:
    with open(os.path.join(ws, ".corral", "result.json"), "wb") as f:
        f.write(va.canonical_bytes(doc) + b"\n")


def forged(seq: int, after: bytes) -> bytes:
    """A line that chains perfectly after `after` (what a forger without the result can make)."""
    return va.canonical_bytes({"data": {"argv": ["rm", "-rf", "/"], "tool": "run"},
                               "prev": va.sha256_hex(after), "seq": seq, "ts_ms": 1,
                               "type": "tool_call", "v": 1})


def recommit_unsigned(ws: str) -> None:
    count, head = va.verify_trace(b"".join(l + b"\n" for l in lines_of(ws)))
    doc = result_of(ws)
    doc.pop("signature", None)
    doc["commitments"]["trace_count"], doc["commitments"]["trace_head"] = count, head
    write_result(ws, doc)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--corral", required=True)
    ap.add_argument("--testwriter", required=True)
    # Every k-th byte's bit flip instead of every byte's: for the sanitizer build, where each
    # `corral verify` costs ~10x and the full sweep (thousands of runs) takes ~15 minutes. A
    # stride prime to 8 still flips every bit position (bit i%8 of byte i). The plain build
    # runs the full sweep; AuditChainTamperEvident.EveryBitFlipInTheTraceIsDetected covers the
    # trace in-process in both.
    ap.add_argument("--bit-flip-stride", type=int, default=1)
    a = ap.parse_args()
    if shutil.which("openssl") is None:
        print("SKIP: the openssl command line is not installed; the independent verifier needs it")
        return 77
    with tempfile.TemporaryDirectory(prefix="corral-audit-interop.") as tmp:
        ctx = Ctx(a.corral, a.testwriter, tmp)
        keys, other_keys = os.path.join(tmp, "keys"), os.path.join(tmp, "other")

        # keygen: real binary, mode 0600, refuses to overwrite.
        r = run(a.corral, "keygen", "--out", keys)
        keygen_out = r.stdout
        check(r.returncode == 0, f"corral keygen --out DIR exits 0 (got {r.returncode}: {r.stderr.strip()})")
        if r.returncode != 0:
            print("cannot continue without keys (is `keygen` wired into src/cli/main.cc?)")
            return 1
        priv = os.path.join(keys, "audit-ed25519-private.pem")
        pub = os.path.join(keys, "audit-ed25519-public.pem")
        check(stat.S_IMODE(os.stat(priv).st_mode) == 0o600, "private key file is mode 0600")
        with open(priv, "rb") as f:
            priv_pem = f.read()
        check(priv_pem.startswith(b"-----BEGIN PRIVATE KEY-----\n"), "private key is PKCS#8 PEM")
        r = run(a.corral, "keygen", "--out", keys)
        with open(priv, "rb") as f:
            check(r.returncode == 125 and f.read() == priv_pem, "second keygen is refused (125), key unchanged")
        check(run(a.corral, "keygen", "--out", other_keys).returncode == 0, "a second, unrelated key pair")
        other_pub = os.path.join(other_keys, "audit-ed25519-public.pem")
        fp = va.public_key_fingerprint(pub)
        check(fp in keygen_out, "keygen prints the fingerprint that openssl computes for the public key")

        # A signed record, two sessions (the second reopens, verifies and appends).
        good = os.path.join(tmp, "good")
        os.mkdir(good)
        env = {"CORRAL_AUDIT_PRIVATE_KEY": priv_pem.decode()}
        for _ in range(2):
            r = run(a.testwriter, good, "--entries", "4", env=env)
            check(r.returncode == 0, f"testwriter session (rc {r.returncode}: {r.stderr.strip()})")
        head = va.sha256_hex(lines_of(good)[-1])
        ok, msg = py_verify(good, pub, head, fp)
        check(ok, f"independent verifier accepts corral's signed record ({msg})")
        r = ctx.corral_verify(good, pub, head)
        check(r.returncode == 0, f"corral verify accepts it ({r.stderr.strip()})")
        j = json.loads(ctx.corral_verify(good, pub, None, "--json").stdout)
        check(j["ok"] and j["trace_head"] == head and j["trace_count"] == 8 and j["signature"] == "valid",
              "corral verify --json agrees with the independent verifier on head, count, signature")
        check(result_of(good)["signature"]["public_key_spki_sha256"] == fp,
              "result.json names the key by its SPKI SHA-256 as openssl computes it")

        # An unsigned record verifies without a key, and fails when a key is demanded.
        plain = os.path.join(tmp, "plain")
        os.mkdir(plain)
        check(run(a.testwriter, plain).returncode == 0, "testwriter writes an unsigned record")
        check(py_verify(plain)[0] and ctx.corral_verify(plain).returncode == 0, "unsigned record verifies without a key")

        # The key never comes from the workspace.
        inside = os.path.join(tmp, "inside")
        os.mkdir(inside)
        shutil.copy(priv, os.path.join(inside, "k.pem"))
        r = run(a.testwriter, inside, "--signing-key", os.path.join(inside, "k.pem"))
        check(r.returncode != 0 and "inside the workspace" in r.stderr, "a signing key inside the workspace is refused")

        # A record made by a whole `corral run` (the fix-a-bug example, signed, contents kept
        # as blobs), not only by the test writer: the independent verifier must accept it and
        # agree with corral verify, and each blob must hold the bytes its name hashes.
        example = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples", "fix-a-bug")
        real = os.path.join(tmp, "real-run")
        shutil.copytree(example, real)
        env_run = dict(env, TMPDIR=tmp)
        r = run(a.corral, "run", os.path.join(real, "manifest.json"), "--workspace", real, "--apply",
                "--trace-content", "full", env=env_run)
        if r.returncode != 0:  # no namespaces here: a dry run still writes a whole record
            shutil.rmtree(real)
            shutil.copytree(example, real)
            r = run(a.corral, "run", os.path.join(real, "manifest.json"), "--workspace", real,
                    "--trace-content", "full", env=env_run)
        check(r.returncode == 0, f"corral run of examples/fix-a-bug (rc {r.returncode}: {r.stderr.strip()[:200]})")
        real_head = va.sha256_hex(lines_of(real)[-1])
        ok, msg = py_verify(real, pub, real_head, fp)
        check(ok, f"independent verifier accepts a real corral run's signed record ({msg})")
        j = json.loads(ctx.corral_verify(real, pub, None, "--json").stdout)
        check(j["ok"] and j["trace_head"] == real_head and j["trace_count"] == len(lines_of(real)),
              "corral verify agrees on the real run's head and count")
        blobs = os.path.join(real, ".corral", "blobs")
        names = sorted(os.listdir(blobs)) if os.path.isdir(blobs) else []
        check(len(names) > 0, "--trace-content full kept blobs")
        bad = [n for n in names if va.sha256_hex(open(os.path.join(blobs, n), "rb").read()) != n]
        check(not bad, f"every blob holds the bytes its name hashes ({bad[:3]})")
        damaged = ctx.fresh(real)
        lines = lines_of(damaged)
        lines[len(lines) // 2] = lines[len(lines) // 2].replace(b'"seq":', b'"seq" :', 1)
        write_lines(damaged, lines)
        check(not py_verify(damaged, pub)[0] and ctx.corral_verify(damaged, pub).returncode == 1,
              "both verifiers reject the real record with one line changed")

        # Bad usage is 125, not 1.
        for args in ([], [good, "--trusted-head", "xyz"], [good, "--public-key", os.path.join(tmp, "none.pem")],
                     [good, "--public-key", priv], [os.path.join(tmp, "no-such-dir")], [good, "--bogus"]):
            r = run(a.corral, "verify", *args)
            check(r.returncode == 125, f"corral verify {' '.join(args) or '(no args)'} is bad usage (125), got {r.returncode}")

        # Damage cases: both verifiers reject, with the same message.
        def edit_line(i, old, new):
            def f(ws):
                l = lines_of(ws)
                assert old in l[i], old
                l[i] = l[i].replace(old, new, 1)
                write_lines(ws, l)
            return f

        def drop(i):
            return lambda ws: write_lines(ws, [x for k, x in enumerate(lines_of(ws)) if k != i])

        def insert_forged(ws):
            l = lines_of(ws)
            write_lines(ws, l[:2] + [forged(2, l[1])] + l[2:])

        def swap(ws):
            l = lines_of(ws)
            l[4], l[5] = l[5], l[4]
            write_lines(ws, l)

        def truncate_tail(ws):
            write_lines(ws, lines_of(ws)[:-2])

        def truncate_mid(ws):
            p = os.path.join(ws, ".corral", "trace.jsonl")
            with open(p, "rb") as f:
                data = f.read()
            with open(p, "wb") as f:
                f.write(data[:-10])

        def append_forged(ws):
            l = lines_of(ws)
            write_lines(ws, l + [forged(len(l), l[-1])])

        def result_edit(fn):
            def f(ws):
                doc = result_of(ws)
                fn(doc)
                write_result(ws, doc)
            return f

        def body_swap(doc):
            doc["body"]["status"] = "failed"

        def body_swap_rehash(doc):
            doc["body"] = {"status": "failed"}
            doc["commitments"]["result_body_sha256"] = va.sha256_hex(va.canonical_bytes(doc["body"]))

        def unsign(doc):
            del doc["signature"]

        def rewrite_consistently(ws):
            write_lines(ws, lines_of(ws)[:5])
            recommit_unsigned(ws)

        other_fp = va.public_key_fingerprint(other_pub)
        last = len(lines_of(good))
        cases = [
            ("EditedEntry", edit_line(2, b'"exit":', b'"exit":1'), pub, None,
             "trace line 4: prev does not match line 3"),
            ("EditedLastEntry", edit_line(last - 1, b'"finished"', b'"aborted"'), pub, None,
             f"trace line {last} (the last): its hash does not match commitments.trace_head"),
            ("DeletedEntry", drop(3), pub, None,
             "trace line 4: prev does not match line 3 (seq is 4, expected 3: a line was removed, inserted or moved)"),
            ("InsertedEntry", insert_forged, pub, None,
             "trace line 4: prev does not match line 3 (seq is 2, expected 3: a line was removed, inserted or moved)"),
            ("ReorderedEntries", swap, pub, None,
             "trace line 5: prev does not match line 4 (seq is 5, expected 4: a line was removed, inserted or moved)"),
            ("TruncatedTail", truncate_tail, pub, None,
             f"trace has {last - 2} lines but result.json commits {last}: the tail was truncated"),
            ("TruncatedMidLine", truncate_mid, pub, None,
             f"trace line {last}: no newline at the end (truncated mid-line?)"),
            ("AppendedEntry", append_forged, pub, None,
             f"trace has {last + 1} lines but result.json commits {last}: lines were appended after the result"),
            ("SwappedResultBody", result_edit(body_swap), pub, None,
             "result.json: body does not match commitments.result_body_sha256 (the body was changed or swapped)"),
            ("SwappedBodyRehashed", result_edit(body_swap_rehash), pub, None,
             "result.json: the signature does not verify over the commitments with the given public key"),
            ("WrongKey", lambda ws: None, other_pub, None,
             f"result.json is signed by key {fp}, not by the given public key {other_fp}"),
            ("MissingSignature", result_edit(unsign), pub, None,
             "result.json is not signed, but --public-key requires a signature"),
            ("TrustedHeadMismatch", rewrite_consistently, None, head,
             f"trace head {{}} differs from the trusted head {head}"),
        ]
        for name, damage, key, trusted, want in cases:
            ws = ctx.fresh(good)
            damage(ws)
            if name == "TrustedHeadMismatch":
                want = want.format(va.sha256_hex(lines_of(ws)[-1]))
                check(py_verify(ws)[0] and ctx.corral_verify(ws).returncode == 0,
                      "TrustedHeadMismatch (control): a consistent unsigned rewrite passes without an anchor")
            ok, msg = py_verify(ws, key, trusted)
            check(not ok and msg == want, f"{name}: independent verifier rejects: {msg!r}")
            r = ctx.corral_verify(ws, key, trusted)
            check(r.returncode == 1 and r.stderr == f"corral: verify: {want}\n",
                  f"{name}: corral verify rejects with the same message (rc {r.returncode}: {r.stderr.strip()!r})")

        # The points an implementer working from docs/audit-format.md alone once disagreed on
        # (issue #19): each record is unsigned and consistent (anyone can make one), and both
        # verifiers must give the same verdict, with the same message where one is named.
        def rebody(ws, body):
            doc = result_of(ws)
            doc.pop("signature", None)
            doc["body"] = body
            doc["commitments"]["result_body_sha256"] = va.sha256_hex(va.canonical_bytes(body))
            write_result(ws, doc)

        hello = va.sha256_hex(b"hello\n")
        def copied(path, **extra):
            return dict({"applied": "copied", "bytes": 6, "path": path, "sha256": hello}, **extra)
        body_cases = [
            ("OutputsNull", None, "result.json: body.outputs is not an array"),
            ("OutputsAnObject", {"path": "out.txt"}, "result.json: body.outputs is not an array"),
            ("OutputEntryNotAnObject", [7], "result.json: body.outputs[0] is not an object"),
            ("AppliedNotAString", [dict(copied("out.txt"), applied=5)],
             "result.json: body.outputs[0].applied is not one of copied, refused, withheld, missing"),
            ("PathNotAString", [dict(copied("out.txt"), path=7)],
             "result.json: body.outputs[0].path is not a relative path in normal form"),
            ("Sha256NotAString", [dict(copied("out.txt"), sha256=[1])],
             "result.json: body.outputs[0].sha256 is not \"\" or 64 lowercase hex digits"),
            ("BytesTrueIsNotAnInteger", [dict(copied("out.txt"), bytes=True)],
             "result.json: body.outputs[0].bytes is not a non-negative integer"),
            ("UnknownOutputField", [dict(copied("out.txt"), mode=420)],
             "result.json: body.outputs[0] has an unknown field (allowed: applied bytes changed path sha256)"),
            ("RepeatedOutputPath", [copied("out.txt"), copied("out.txt")],
             "result.json: body.outputs[1].path repeats an earlier entry's path"),
            ("CopiedWithoutHash", [dict(copied("out.txt"), sha256="")],
             "result.json: body.outputs[0] was copied but has no sha256"),
            ("OutputChangedAfterTheRun", [dict(copied("out.txt"), sha256=va.sha256_hex(b"other"))],
             f"output \"out.txt\" differs from what the run wrote (sha256 {va.sha256_hex(b'other')}, now {hello}): "
             "changed after the run (--record-only checks the record alone)"),
            ("OutputMissing", [copied("gone.txt")],
             f"output \"gone.txt\" is missing from the workspace (the run wrote sha256 {hello})"),
        ]
        for spelling in ("./out.txt", "d/../out.txt", "d//out.txt", "d/", "/out.txt", ".corral/x", "a\x7fb"):
            body_cases.append((f"PathNotNormal {spelling!r}", [copied(spelling)],
                               "result.json: body.outputs[0].path is not a relative path in normal form"))
        for name, outputs, want in body_cases:
            ws = ctx.fresh(good)
            with open(os.path.join(ws, "out.txt"), "wb") as f:
                f.write(b"hello\n")
            rebody(ws, {"status": "finished", "outputs": outputs})
            ok, msg = py_verify(ws)
            check(not ok and msg == want, f"{name}: independent verifier rejects: {msg!r}")
            r = ctx.corral_verify(ws)
            check(r.returncode == 1 and r.stderr == f"corral: verify: {want}\n",
                  f"{name}: corral verify rejects with the same message (rc {r.returncode}: {r.stderr.strip()!r})")
        # Controls: a well-formed applied output passes both and is counted; without outputs
        # the body needs none.
        for outputs, n in (([copied("out.txt", changed=True), {"path": "d/never.txt", "sha256": ""}], 1), (None, 0)):
            ws = ctx.fresh(good)
            with open(os.path.join(ws, "out.txt"), "wb") as f:
                f.write(b"hello\n")
            rebody(ws, {"status": "finished"} if outputs is None else {"status": "finished", "outputs": outputs})
            try:
                got = va.verify(ws)["outputs_checked"]
            except va.Failed as e:
                got = str(e)
            r = ctx.corral_verify(ws, None, None, "--json")
            j = json.loads(r.stdout) if r.stdout else {}
            check(got == n and r.returncode == 0 and j.get("outputs_checked") == n,
                  f"control: outputs {outputs!r:.60} verify in both, {n} compared (py {got!r}, corral rc {r.returncode})")

        # Nesting: a level is an array or object; the result's top level is level 1 and its body
        # level 2, so 30 more levels inside the body pass and 31 fail, whatever the innermost holds.
        for levels, inner, accept in ((30, b"", True), (30, b"1", True), (31, b"", False), (31, b"1", False)):
            ws = ctx.fresh(good)
            deep = b"[" * levels + inner + b"]" * levels
            doc = result_of(ws)
            doc.pop("signature", None)
            doc["body"] = {"status": "finished", "x": "PLACEHOLDER"}
            body_bytes = va.canonical_bytes(doc["body"]).replace(b'"PLACEHOLDER"', deep)
            doc["commitments"]["result_body_sha256"] = va.sha256_hex(body_bytes)
            with open(os.path.join(ws, ".corral", "result.json"), "wb") as f:
                f.write(va.canonical_bytes(doc).replace(b'"PLACEHOLDER"', deep) + b"\n")
            ok, msg = py_verify(ws, None, None, None)
            r = ctx.corral_verify(ws)
            what = f"{levels} levels in the body holding {inner.decode() or 'nothing'}"
            check(ok == accept and (r.returncode == 0) == accept,
                  f"nesting, {what}: both {'accept' if accept else 'reject'} (py {msg!r}, corral {r.stderr.strip()!r})")

        # The 4 MiB cap on result.json, newline included, in both.
        for pad, accept in ((4 * 1024 * 1024 - 1000, True), (4 * 1024 * 1024, False)):
            ws = ctx.fresh(good)
            rebody(ws, {"status": "finished", "pad": "a" * pad})
            size = os.path.getsize(os.path.join(ws, ".corral", "result.json"))
            ok, msg = py_verify(ws)
            r = ctx.corral_verify(ws)
            want = f"result.json is {size} bytes (limit {4 * 1024 * 1024})"
            if accept:
                check(ok and r.returncode == 0, f"a result.json of {size} bytes passes both ({msg!r}, {r.stderr.strip()!r})")
            else:
                check(not ok and msg == want and r.stderr == f"corral: verify: {want}\n",
                      f"a result.json of {size} bytes fails both with {want!r} (py {msg!r}, corral {r.stderr.strip()!r})")

        # An integer is never true or false (Python's True == 1).
        ws = ctx.fresh(good)
        doc = result_of(ws)
        doc.pop("signature", None)
        doc["commitments"]["trace_count"] = True
        write_result(ws, doc)
        want = "result.json: commitments.trace_count is not a non-negative integer"
        ok, msg = py_verify(ws)
        r = ctx.corral_verify(ws)
        check(not ok and msg == want and r.stderr == f"corral: verify: {want}\n",
              f"trace_count true: both reject with {want!r} (py {msg!r}, corral {r.stderr.strip()!r})")

        # Non-canonical spellings: both reject (the messages name different parser details).
        for name, damage in [("DuplicateKey", edit_line(1, b'{"data":{', b'{"data":{"a":1,"a":1,')),
                             ("WhitespaceInLine", edit_line(1, b'"seq":1', b'"seq": 1')),
                             ("EscapedNonAscii", edit_line(2, "caf\u00e9".encode(), b"caf\\u00e9")),
                             ("FloatInResult", result_edit(lambda d: d["body"].update(turns=None)))]:
            ws = ctx.fresh(good)
            damage(ws)
            if name == "FloatInResult":  # json cannot produce 8.0 canonically; write it by hand
                p = os.path.join(ws, ".corral", "result.json")
                with open(p, "rb") as f:
                    data = f.read()
                with open(p, "wb") as f:
                    f.write(data.replace(b'"turns":null', b'"turns":8.0'))
            ok, _ = py_verify(ws, pub)
            r = ctx.corral_verify(ws, pub)
            check(not ok and r.returncode == 1, f"{name}: both verifiers reject ({r.stderr.strip()!r})")

        # Every single-bit flip (bit i%8 of byte i) of both files fails both verifiers.
        for fname in ("trace.jsonl", "result.json"):
            ws = ctx.fresh(good)
            p = os.path.join(ws, ".corral", fname)
            with open(p, "rb") as f:
                original = f.read()
            py_accepted, corral_accepted = [], []
            for i in range(0, len(original), a.bit_flip_stride):
                damaged = bytearray(original)
                damaged[i] ^= 1 << (i % 8)
                with open(p, "r+b") as f:
                    f.write(damaged)
                if py_verify(ws, pub, None, fp)[0]:
                    py_accepted.append(i)
                if ctx.corral_verify(ws, pub).returncode != 1:
                    corral_accepted.append(i)
            with open(p, "r+b") as f:
                f.write(original)
            tried = len(range(0, len(original), a.bit_flip_stride))
            check(not py_accepted, f"{fname}: independent verifier rejects all {tried} bit flips "
                                   f"(accepted at bytes {py_accepted[:10]})")
            check(not corral_accepted, f"{fname}: corral verify rejects all {tried} bit flips "
                                       f"(accepted at bytes {corral_accepted[:10]})")
            check(py_verify(ws, pub, None, fp)[0], f"{fname}: control: restored copy verifies")

    if FAILURES:
        print(f"{len(FAILURES)} check(s) failed")
        return 1
    print("all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
