#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# An independent verifier of corral audit records, written from docs/audit-format.md alone.
"""Verify WORKSPACE/.corral (trace.jsonl + result.json) without corral's code.

  verify_audit.py WORKSPACE [--public-key PEM] [--trusted-head HEX] [--record-only]

Python 3 standard library plus the `openssl` command line (for Ed25519). Exit 0 verified,
1 verification failed, 2 bad usage. Messages follow docs/audit-format.md section 5.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import json
import os
import stat
import subprocess
import sys
import tempfile

ZERO = "0" * 64
MAX_LINE = 65536
MAX_STRING = 4096
MAX_DEPTH = 32
MAX_RESULT = 4 * 1024 * 1024
APPLIED = {"copied", "refused", "withheld", "missing"}
OUTPUT_FIELDS = {"applied", "bytes", "changed", "path", "sha256"}
MAX_INT = 2**53 - 1
TRACE_FIELDS = {"data", "prev", "seq", "ts_ms", "type", "v"}


class Failed(Exception):
    """Verification failed; the message says what and where."""


# ---------------------------------------------------------------------------------------
# Canonical JSON (section 1)


def canonical(v, depth: int = 0) -> str:
    """depth: the arrays and objects around v. A container is one level; scalars add none."""
    if isinstance(v, (list, dict)) and depth >= MAX_DEPTH:
        raise ValueError(f"more than {MAX_DEPTH} levels of nested arrays and objects")
    if v is None:
        return "null"
    if v is True:
        return "true"
    if v is False:
        return "false"
    if type(v) is int:  # never bool (True == 1), never a subclass
        if not -MAX_INT <= v <= MAX_INT:
            raise ValueError("integer out of range")
        return str(v)
    if isinstance(v, str):
        return json.dumps(v, ensure_ascii=False)
    if isinstance(v, list):
        return "[" + ",".join(canonical(x, depth + 1) for x in v) + "]"
    if isinstance(v, dict):
        keys = sorted(v, key=lambda k: k.encode("utf-16-be", "surrogatepass"))
        return "{" + ",".join(json.dumps(k, ensure_ascii=False) + ":" + canonical(v[k], depth + 1)
                              for k in keys) + "}"
    raise ValueError("value not allowed")


def canonical_bytes(v) -> bytes:
    return canonical(v).encode("utf-8")  # strict: a lone surrogate raises


def _no_duplicates(pairs):
    d = {}
    for k, val in pairs:
        if k in d:
            raise ValueError("duplicate object key")
        d[k] = val
    return d


def _refuse(what):
    def f(_s):
        raise ValueError(what)
    return f


def parse_strict(raw: bytes):
    """Parse raw, which must be canonical JSON. Raises ValueError."""
    text = raw.decode("utf-8")  # strict
    value = json.loads(text, object_pairs_hook=_no_duplicates, parse_float=_refuse("float"),
                       parse_constant=_refuse("NaN/Infinity"))
    if canonical_bytes(value) != raw:
        raise ValueError("not in canonical form")
    return value


def sha256_hex(b: bytes) -> str:
    return hashlib.sha256(b).hexdigest()


def is_hash(v) -> bool:
    return isinstance(v, str) and len(v) == 64 and all(c in "0123456789abcdef" for c in v)


def is_int(v) -> bool:
    return type(v) is int  # json gives bool for true/false, and True == 1 in Python


def is_normal_path(p) -> bool:
    """Section 3.1: one spelling per path."""
    if not isinstance(p, str) or not p:
        return False
    try:
        b = p.encode("utf-8")
    except UnicodeEncodeError:
        return False
    if len(b) > 4096 or any(c < 0x20 or c == 0x7F for c in b):
        return False
    parts = p.split("/")
    if parts[0] == ".corral":
        return False
    return all(x not in ("", ".", "..") and len(x.encode("utf-8")) <= 255 for x in parts)


def check_body_outputs(body: dict) -> list:
    """Section 3.1. Returns the entries; raises Failed."""
    if "outputs" not in body:
        return []
    outs = body["outputs"]
    if not isinstance(outs, list):
        raise Failed("result.json: body.outputs is not an array")
    seen = set()
    for i, o in enumerate(outs):
        w = f"result.json: body.outputs[{i}]"
        if not isinstance(o, dict):
            raise Failed(f"{w} is not an object")
        if not set(o) <= OUTPUT_FIELDS:
            raise Failed(f"{w} has an unknown field (allowed: applied bytes changed path sha256)")
        if not is_normal_path(o.get("path")):
            raise Failed(f"{w}.path is not a relative path in normal form")
        if o["path"] in seen:
            raise Failed(f"{w}.path repeats an earlier entry's path")
        seen.add(o["path"])
        sha = o.get("sha256")
        if not isinstance(sha, str) or not (sha == "" or is_hash(sha)):
            raise Failed(f"{w}.sha256 is not \"\" or 64 lowercase hex digits")
        if "applied" in o and (not isinstance(o["applied"], str) or o["applied"] not in APPLIED):
            raise Failed(f"{w}.applied is not one of copied, refused, withheld, missing")
        if "changed" in o and not isinstance(o["changed"], bool):
            raise Failed(f"{w}.changed is not true or false")
        if "bytes" in o and not (is_int(o["bytes"]) and o["bytes"] >= 0):
            raise Failed(f"{w}.bytes is not a non-negative integer")
        if o.get("applied") == "copied" and sha == "":
            raise Failed(f"{w} was copied but has no sha256")
    return outs


def open_beneath(workspace: str, path: str) -> int:
    """Opens path beneath workspace, never through a symlink; O_NONBLOCK so a FIFO is not waited on."""
    parts = path.split("/")
    d = os.open(workspace, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for comp in parts[:-1]:
            nd = os.open(comp, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=d)
            os.close(d)
            d = nd
        return os.open(parts[-1], os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY, dir_fd=d)
    finally:
        os.close(d)


def check_outputs_in_workspace(workspace: str, outs: list) -> int:
    """Section 5, step 10. Returns how many applied outputs matched; raises Failed."""
    matched = 0
    for o in outs:
        if o.get("applied") != "copied":
            continue
        what = "output " + canonical(o["path"])
        try:
            fd = open_beneath(workspace, o["path"])
        except FileNotFoundError:
            raise Failed(f"{what} is missing from the workspace (the run wrote sha256 {o['sha256']})") from None
        except OSError:  # ELOOP, ENOTDIR: a symlink on the way, or a file where a directory was
            raise Failed(f"{what} resolves outside the workspace or through a symlink") from None
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                raise Failed(f"{what} is not a regular file")
            if "bytes" in o and st.st_size != o["bytes"]:
                raise Failed(f"{what} differs from what the run wrote ({o['bytes']} bytes, now {st.st_size}): "
                             "changed after the run (--record-only checks the record alone)")
            h = hashlib.sha256()
            while chunk := os.read(fd, 1 << 16):
                h.update(chunk)
        finally:
            os.close(fd)
        if h.hexdigest() != o["sha256"]:
            raise Failed(f"{what} differs from what the run wrote (sha256 {o['sha256']}, now {h.hexdigest()}): "
                         "changed after the run (--record-only checks the record alone)")
        matched += 1
    return matched


def long_string(v, path: str):
    """The first string (value or key) longer than MAX_STRING bytes, as (path, size)."""
    if isinstance(v, str):
        n = len(v.encode("utf-8"))
        return (path, n) if n > MAX_STRING else None
    if isinstance(v, dict):
        for k, x in v.items():
            if len(k.encode("utf-8")) > MAX_STRING:
                return (f"a key in {path}", len(k.encode("utf-8")))
            hit = long_string(x, f"{path}.{k}")
            if hit:
                return hit
    if isinstance(v, list):
        for i, x in enumerate(v):
            hit = long_string(x, f"{path}[{i}]")
            if hit:
                return hit
    return None


def is_type(t) -> bool:
    return (isinstance(t, str) and 1 <= len(t) <= 32 and "a" <= t[0] <= "z"
            and all(c.isascii() and (c.islower() or c.isdigit() or c == "_") for c in t))


# ---------------------------------------------------------------------------------------
# trace.jsonl (section 2)


def verify_trace(raw: bytes) -> tuple[int, str]:
    """Returns (count, head)."""
    head, count = ZERO, 0
    if not raw:
        return 0, ZERO
    lines = raw.split(b"\n")
    tail = lines.pop()  # b"" when the file ends with a newline
    for line in lines:
        n = count + 1
        where = f"trace line {n}"
        if not line:
            raise Failed(f"{where}: empty line")
        if len(line) > MAX_LINE:
            raise Failed(f"{where}: longer than {MAX_LINE} bytes")
        try:
            e = parse_strict(line)
        except (ValueError, UnicodeDecodeError, RecursionError) as ex:
            raise Failed(f"{where}: not canonical JSON ({type(ex).__name__})") from None
        if not isinstance(e, dict):
            raise Failed(f"{where}: not a JSON object")
        if set(e) != TRACE_FIELDS:
            raise Failed(f"{where}: fields are {sorted(e)}, expected {sorted(TRACE_FIELDS)}")
        if e["v"] != 1 or not is_int(e["v"]):
            raise Failed(f"{where}: \"v\" is not 1 (unknown format version)")
        if not is_hash(e["prev"]):
            raise Failed(f"{where}: \"prev\" is not 64 lowercase hex digits")
        if not is_int(e["seq"]) or e["seq"] < 0:
            raise Failed(f"{where}: \"seq\" is not a non-negative integer")
        if not is_int(e["ts_ms"]) or e["ts_ms"] < 0:
            raise Failed(f"{where}: \"ts_ms\" is not a non-negative integer")
        if not is_type(e["type"]):
            raise Failed(f"{where}: \"type\" does not match [a-z][a-z0-9_]{{0,31}}")
        if not isinstance(e["data"], dict):
            raise Failed(f"{where}: data is not a JSON object")
        hit = long_string(e["data"], "data")
        if hit:
            raise Failed(f"{where}: {hit[0]} is {hit[1]} bytes (limit {MAX_STRING}): "
                         "trace ids, sizes and hashes, not contents")
        seq_note = "" if e["seq"] == count else (
            f" (seq is {e['seq']}, expected {count}: a line was removed, inserted or moved)")
        if e["prev"] != head:
            if n == 1:
                raise Failed(f"{where}: prev is not the genesis hash (64 zeros){seq_note}")
            raise Failed(f"{where}: prev does not match line {n - 1}{seq_note}")
        if seq_note:
            raise Failed(f"{where}: seq is {e['seq']}, expected {count}")
        head, count = sha256_hex(line), n
    if tail:
        raise Failed(f"trace line {count + 1}: no newline at the end (truncated mid-line?)")
    return count, head


# ---------------------------------------------------------------------------------------
# result.json (section 3) and Ed25519 with the OpenSSL CLI (sections 4, 5)


def parse_result(raw: bytes) -> dict:
    if len(raw) > MAX_RESULT:
        raise Failed(f"result.json is {len(raw)} bytes (limit {MAX_RESULT})")
    if not raw.endswith(b"\n"):
        raise Failed("result.json: does not end in a newline (truncated?)")
    try:
        doc = parse_strict(raw[:-1])
    except (ValueError, UnicodeDecodeError, RecursionError) as ex:
        raise Failed(f"result.json: not canonical JSON ({type(ex).__name__})") from None
    if not isinstance(doc, dict) or not {"v", "commitments", "body"} <= set(doc) <= {
            "v", "commitments", "body", "signature"}:
        raise Failed("result.json: wrong top-level fields")
    if doc["v"] != 1 or not is_int(doc["v"]):
        raise Failed("result.json: \"v\" is not 1")
    c = doc["commitments"]
    if not isinstance(c, dict) or set(c) != {"manifest_sha256", "trace_head", "trace_count",
                                             "result_body_sha256"}:
        raise Failed("result.json: wrong commitments fields")
    for k in ("manifest_sha256", "trace_head", "result_body_sha256"):
        if not is_hash(c[k]):
            raise Failed(f"result.json: commitments.{k} is not 64 lowercase hex digits")
    if not is_int(c["trace_count"]) or c["trace_count"] < 0:
        raise Failed("result.json: commitments.trace_count is not a non-negative integer")
    if not isinstance(doc["body"], dict):
        raise Failed("result.json: body is not an object")
    if "signature" in doc:
        s = doc["signature"]
        if not isinstance(s, dict) or set(s) != {"alg", "public_key_spki_sha256", "sig"}:
            raise Failed("result.json: wrong signature fields")
        if s["alg"] != "ed25519":
            raise Failed("result.json: signature.alg is not \"ed25519\"")
        if not is_hash(s["public_key_spki_sha256"]):
            raise Failed("result.json: signature.public_key_spki_sha256 is not 64 lowercase hex digits")
        sig = None
        if isinstance(s["sig"], str):
            try:
                sig = base64.b64decode(s["sig"], validate=True)
            except ValueError:
                sig = None
        # One spelling only: re-encoding must give the same text.
        if sig is None or len(sig) != 64 or base64.b64encode(sig).decode() != s["sig"]:
            raise Failed("result.json: signature.sig is not the base64 of a 64-byte Ed25519 signature")
    return doc


def openssl(*args: str, data: bytes | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(["openssl", *args], input=data, capture_output=True, check=False)


def public_key_fingerprint(pem_path: str) -> str:
    text = openssl("pkey", "-pubin", "-in", pem_path, "-noout", "-text")
    if text.returncode != 0 or not text.stdout.startswith(b"ED25519 Public-Key"):
        raise ValueError(f"--public-key {pem_path}: not an Ed25519 SPKI PEM public key")
    der = openssl("pkey", "-pubin", "-in", pem_path, "-outform", "DER")
    if der.returncode != 0:
        raise ValueError(f"--public-key {pem_path}: openssl cannot read it")
    return sha256_hex(der.stdout)


def ed25519_verify(pem_path: str, message: bytes, sig: bytes) -> bool:
    with tempfile.TemporaryDirectory(prefix="verify-audit.") as d:
        msg, sg = os.path.join(d, "msg.bin"), os.path.join(d, "sig.bin")
        with open(msg, "wb") as f:
            f.write(message)
        with open(sg, "wb") as f:
            f.write(sig)
        r = openssl("pkeyutl", "-verify", "-pubin", "-inkey", pem_path, "-rawin", "-in", msg,
                    "-sigfile", sg)
        return r.returncode == 0 and b"Signature Verified Successfully" in r.stdout


# ---------------------------------------------------------------------------------------
# The steps of section 5


def read_regular(path: str, name: str) -> bytes:
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        if name == "result.json":
            raise Failed("no result.json (the run did not finish?)") from None
        raise Failed(f"no {name} in .corral/") from None
    if stat.S_ISLNK(st.st_mode):
        raise Failed(f"{name} is a symlink")
    if not stat.S_ISREG(st.st_mode):
        raise Failed(f"{name} is not a regular file")
    with open(path, "rb") as f:
        return f.read()


def verify(workspace: str, public_key: str | None = None, trusted_head: str | None = None,
           fingerprint: str | None = None, check_outputs: bool = True) -> dict:
    """Raises Failed. Returns what was established."""
    rec = os.path.join(workspace, ".corral")
    if not os.path.lexists(rec):
        raise Failed("no .corral/ directory in the workspace")
    if os.path.islink(rec) or not os.path.isdir(rec):
        raise Failed(".corral is not a directory (a symlink or file?)")
    count, head = verify_trace(read_regular(os.path.join(rec, "trace.jsonl"), "trace.jsonl"))
    doc = parse_result(read_regular(os.path.join(rec, "result.json"), "result.json"))
    c = doc["commitments"]
    if c["trace_count"] > count:
        raise Failed(f"trace has {count} lines but result.json commits {c['trace_count']}: "
                     "the tail was truncated")
    if c["trace_count"] < count:
        raise Failed(f"trace has {count} lines but result.json commits {c['trace_count']}: "
                     "lines were appended after the result")
    if c["trace_head"] != head:
        if count == 0:
            raise Failed("trace is empty but commitments.trace_head is not the genesis hash (64 zeros)")
        raise Failed(f"trace line {count} (the last): its hash does not match commitments.trace_head")
    if sha256_hex(canonical_bytes(doc["body"])) != c["result_body_sha256"]:
        raise Failed("result.json: body does not match commitments.result_body_sha256 "
                     "(the body was changed or swapped)")
    outs = check_body_outputs(doc["body"])
    signature = "not_checked" if "signature" in doc else "absent"
    if public_key is not None:
        if "signature" not in doc:
            raise Failed("result.json is not signed, but --public-key requires a signature")
        s = doc["signature"]
        fp = fingerprint or public_key_fingerprint(public_key)
        if s["public_key_spki_sha256"] != fp:
            raise Failed(f"result.json is signed by key {s['public_key_spki_sha256']}, "
                         f"not by the given public key {fp}")
        if not ed25519_verify(public_key, canonical_bytes(c), base64.b64decode(s["sig"])):
            raise Failed("result.json: the signature does not verify over the commitments "
                         "with the given public key")
        signature = "valid"
    if trusted_head is not None and trusted_head != head:
        raise Failed(f"trace head {head} differs from the trusted head {trusted_head}")
    matched = check_outputs_in_workspace(workspace, outs) if check_outputs else 0
    return {"trace_count": count, "trace_head": head, "signature": signature,
            "manifest_sha256": c["manifest_sha256"], "outputs_checked": matched}


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("workspace")
    ap.add_argument("--public-key")
    ap.add_argument("--trusted-head")
    ap.add_argument("--record-only", action="store_true")
    a = ap.parse_args(argv)
    if not os.path.isdir(a.workspace):
        print(f"verify_audit: workspace {a.workspace} is not a directory", file=sys.stderr)
        return 2
    if a.trusted_head is not None and not is_hash(a.trusted_head.lower()):
        print("verify_audit: --trusted-head is not 64 hex digits", file=sys.stderr)
        return 2
    fingerprint = None
    if a.public_key is not None:
        try:
            fingerprint = public_key_fingerprint(a.public_key)
        except ValueError as e:
            print(f"verify_audit: {e}", file=sys.stderr)
            return 2
    try:
        r = verify(a.workspace, a.public_key, a.trusted_head and a.trusted_head.lower(), fingerprint,
                   not a.record_only)
    except Failed as e:
        print(f"verify_audit: {e}", file=sys.stderr)
        return 1
    print(f"verify_audit: ok: {r['trace_count']} trace lines, head {r['trace_head']}, "
          f"signature {r['signature']}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
