# SPDX-License-Identifier: Apache-2.0
"""Drives a real corral daemon through every operation of docs/openapi.json and validates each
real response (status, content type, body; every NDJSON line) against the document with
jsonschema (Draft 2020-12). Fails on a response the document does not describe, on an
operation never exercised, and when the control (a response altered to break the schema)
passes validation.

    openapi_check.py SOCKET DOCS/openapi.json [--weaker]
"""
import http.client
import json
import re
import socket
import sys

import jsonschema

sock_path, doc_path = sys.argv[1], sys.argv[2]
weaker = "--weaker" in sys.argv[3:]
doc = json.load(open(doc_path))
validator_cls = jsonschema.Draft202012Validator


class C(http.client.HTTPConnection):
    def connect(self):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.connect(sock_path)


def template_of(method, path):
    """The document's path template and operation for a real request path."""
    for tmpl, item in doc["paths"].items():
        pattern = "^" + re.sub(r"\\{path\\}", "(.+)", re.sub(r"\\{(id|n|name)\\}", "([^/]+)", re.escape(tmpl))) + "$"
        if re.match(pattern, path) and method.lower() in item:
            return tmpl, item[method.lower()]
    return None, None


failures, seen = [], set()


def check(method, path, status, ctype, body):
    tmpl, op = template_of(method, path)
    if op is None:
        # A method a documented path does not take: 405, with the error body.
        path_known = any(template_of(m, path)[0] for m in ("GET", "POST", "PUT", "DELETE"))
        if status != 405 or not path_known:
            failures.append(f"{method} {path}: not in the document (status {status})")
        elif list(validator_cls({**doc, "$ref": "#/components/schemas/Error"}).iter_errors(json.loads(body))):
            failures.append(f"{method} {path}: a 405 without the error body")
        return
    seen.add((method.lower(), tmpl))
    r = op["responses"].get(str(status))
    if r is None:
        failures.append(f"{method} {tmpl}: status {status} not documented")
        return
    ctype = ctype.split(";")[0].strip()
    if ctype not in r.get("content", {}):
        failures.append(f"{method} {tmpl} {status}: content type {ctype} not documented")
        return
    schema = r["content"][ctype]["schema"]
    if ctype == "application/octet-stream":
        return
    docs = [json.loads(l) for l in body.splitlines() if l.strip()] if ctype == "application/x-ndjson" else [json.loads(body)]
    for value in docs:
        errors = list(validator_cls({**doc, **schema}).iter_errors(value))
        if errors:
            failures.append(f"{method} {tmpl} {status}: {errors[0].message} in {json.dumps(value)[:200]}")


def call(method, path, body=None, raw=None, headers=None):
    c = C("corral", timeout=300)
    data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
    h = dict(headers or {})
    if body is not None:
        h["Content-Type"] = "application/json"
    c.request(method, path, body=data, headers=h)
    r = c.getresponse()
    text = r.read()
    c.close()
    ctype = r.getheader("Content-Type", "")
    check(method, path, r.status, ctype, text.decode(errors="replace") if "octet" not in ctype else "")
    return r.status, (json.loads(text) if ctype.startswith("application/json") else text)


def events_start():
    """GET /v1/events on a connection of its own: the head and the stream's first frame."""
    c = C("corral", timeout=60)
    c.request("GET", "/v1/events")
    r = c.getresponse()
    seen.add(("get", "/v1/events"))
    ctype = r.getheader("Content-Type", "").split(";")[0]
    if r.status != 200 or ctype not in doc["paths"]["/v1/events"]["get"]["responses"]["200"]["content"]:
        failures.append(f"GET /v1/events: {r.status} {ctype}")
    return c, r


def events_check(r, until):
    """Reads frames until one whose event is `until`; validates each data line as an Event."""
    schema = doc["paths"]["/v1/events"]["get"]["responses"]["200"]["content"]["text/event-stream"]["schema"]
    while True:
        line = r.fp.readline().decode().rstrip("\r\n")
        if not line:
            continue
        if line.startswith("data: "):
            value = json.loads(line[6:])
            errors = list(validator_cls({**doc, **schema}).iter_errors(value))
            if errors:
                failures.append(f"GET /v1/events: {errors[0].message} in {line[:200]}")
            if value.get("event") == until:
                return


limits = {"allow_weaker": ["workspace-size"]} if weaker else {}
ev_conn, ev = events_start()
call("GET", "/v1/events", raw=b"x")
call("GET", "/v1/health")
call("GET", "/v1/version")
call("GET", "/v1/pool")
call("POST", "/v1/pool")
call("POST", "/v1/health")
call("GET", "/v1/health", raw=b"x")
st, s = call("POST", "/v1/sessions", {"name": "openapi", "limits": {**limits, "pids": 128}, "env": ["A=b"], "ttl": "1h"})
assert st == 201, s
sid = s["id"]
call("POST", "/v1/sessions", {"bogus": 1})
call("POST", "/v1/sessions", {"limits": {"memory": "1G", "allow_weaker": []}} if weaker else {"limits": {"workspace_size": "1"}})
call("GET", "/v1/sessions")
call("GET", "/v1/sessions/" + sid)
call("GET", "/v1/sessions/0000000000000000")
st, started = call("POST", f"/v1/sessions/{sid}/commands", {"argv": ["sh", "-c", "echo out; echo err >&2; exit 3"], "timeout": "60s"})
n = started["id"]
call("GET", f"/v1/sessions/{sid}/commands/{n}/output")
call("GET", f"/v1/sessions/{sid}/commands/{n}")
call("GET", f"/v1/sessions/{sid}/commands/999")
call("POST", f"/v1/sessions/{sid}/commands", {"argv": []})
call("GET", f"/v1/sessions/{sid}/commands")
st, bg = call("POST", f"/v1/sessions/{sid}/commands", {"argv": ["sleep", "1000"]})
call("POST", f"/v1/sessions/{sid}/commands/{bg['id']}/signal", {"signal": 15})
call("GET", f"/v1/sessions/{sid}/commands/{bg['id']}/output")
call("POST", f"/v1/sessions/{sid}/commands/{bg['id']}/signal", {})
# stdin: written while open, closed, then refused.
st, fed = call("POST", f"/v1/sessions/{sid}/commands", {"argv": ["cat"], "stdin": True})
fn = fed["id"]
call("POST", f"/v1/sessions/{sid}/commands/{fn}/stdin", raw=b"fed\n", headers={"Content-Type": "application/octet-stream"})
call("DELETE", f"/v1/sessions/{sid}/commands/{fn}/stdin")
call("DELETE", f"/v1/sessions/{sid}/commands/{fn}/stdin")  # 409: closed
call("POST", f"/v1/sessions/{sid}/commands/{fn}/stdin", raw=b"late")  # 409
call("GET", f"/v1/sessions/{sid}/commands/{fn}/output")
call("POST", f"/v1/sessions/{sid}/commands", {"argv": ["true"], "tty": {"rows": 0, "cols": 80}})  # 400


def terminal(n, frames):
    """GET .../terminal upgraded: the 101 checked against the document, then frames until the end."""
    path = f"/v1/sessions/{sid}/commands/{n}/terminal"
    tmpl, op = template_of("GET", path)
    seen.add(("get", tmpl))
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(sock_path)
    s.sendall(f"GET {path} HTTP/1.1\r\nHost: corral\r\nConnection: Upgrade\r\nUpgrade: corral-terminal.v1\r\n\r\n".encode() + frames)
    buf = b""
    while b"\r\n\r\n" not in buf:
        buf += s.recv(4096)
    head, rest = buf.split(b"\r\n\r\n", 1)
    status = int(head.split(b" ")[1])
    if str(status) not in op["responses"] or b"upgrade: corral-terminal.v1" not in head.lower():
        failures.append(f"GET {tmpl}: {status} {head[:200]!r}")
    while True:
        got = s.recv(65536)
        if not got:
            break
        rest += got
    s.close()
    last = None
    while len(rest) >= 5:  # the frames: the last one is exit (3) or error (4), a JSON payload
        t, length = rest[0], int.from_bytes(rest[1:5], "big")
        last, rest = (t, rest[5:5 + length]), rest[5 + length:]
    return last


st, tty = call("POST", f"/v1/sessions/{sid}/commands", {"argv": ["sh", "-c", "read x; echo got $x; exit 4"], "tty": {"rows": 24, "cols": 80}})
last = terminal(tty["id"], bytes([1, 0, 0, 0, 3]) + b"hi\n")
if not last or last[0] != 3 or json.loads(last[1]).get("exit_code") != 4:
    failures.append(f"terminal: no exit frame with exit code 4: {last!r}")
else:
    errors = list(validator_cls({**doc, "$ref": "#/components/schemas/Report"}).iter_errors(json.loads(last[1])))
    if errors:
        failures.append(f"terminal: the exit frame's report: {errors[0].message}")
call("GET", f"/v1/sessions/{sid}/commands/{tty['id']}/terminal")  # 426: not an upgrade
st, tty2 = call("POST", f"/v1/sessions/{sid}/commands", {"argv": ["sleep", "30"], "tty": {"rows": 24, "cols": 80}})
last = terminal(tty2["id"], bytes([2, 0, 0, 0, 4, 0, 0, 0, 0]))  # resize 0x0: refused
if not last or last[0] != 4 or list(validator_cls({**doc, "$ref": "#/components/schemas/Error"}).iter_errors(json.loads(last[1]))):
    failures.append(f"terminal: no error frame for a 0x0 resize: {last!r}")
call("GET", f"/v1/sessions/{sid}/commands/{fn}/terminal", headers={"Connection": "Upgrade", "Upgrade": "corral-terminal.v1"})  # 409

call("PUT", f"/v1/sessions/{sid}/files/a%20b.txt", raw=b"hello\n", headers={"Content-Type": "application/octet-stream"})
call("PUT", f"/v1/sessions/{sid}/files/no/such/dir", raw=b"x")
call("GET", f"/v1/sessions/{sid}/files/a%20b.txt")
call("GET", f"/v1/sessions/{sid}/files/missing")
call("GET", f"/v1/sessions/{sid}/files/../x")
call("GET", f"/v1/sessions/{sid}/stat")
call("GET", f"/v1/sessions/{sid}/stat/a%20b.txt")
call("DELETE", f"/v1/sessions/{sid}/files/a%20b.txt")
st, _ = call("POST", f"/v1/sessions/{sid}/pause")
if st == 200:
    call("POST", f"/v1/sessions/{sid}/commands", {"argv": ["true"]})  # 409 while paused
    call("POST", f"/v1/sessions/{sid}/resume")
else:
    call("POST", f"/v1/sessions/{sid}/resume")  # refused the same way
    seen.add(("post", "/v1/sessions/{id}/resume"))
call("POST", f"/v1/sessions/{sid}/pause", raw=b"[1]")
call("POST", f"/v1/sessions/{sid}/recover", {"env": ["A=b"]})  # 409: not lost
call("POST", f"/v1/sessions/{sid}/recover", {"bogus": 1})
call("DELETE", f"/v1/sessions/{sid}", {"keep": True})
call("DELETE", f"/v1/sessions/{sid}", {"keep_workspace": True})
call("DELETE", f"/v1/sessions/{sid}")

# Credentials: write-only records; a session leases one through its proxy.
cred = {"name": "oapi", "host": "https://api.example.com", "header": "X-Api-Key: {}", "value": "openapi-check-value-1"}
assert call("POST", "/v1/credentials", cred)[0] == 201
call("POST", "/v1/credentials", cred)  # 409: exists
call("POST", "/v1/credentials", {**cred, "name": "Bad"})
call("GET", "/v1/credentials")
call("GET", "/v1/credentials/oapi")
call("GET", "/v1/credentials/nope")
call("POST", "/v1/credentials/oapi/rotate", {"value": "openapi-check-value-2"})
call("POST", "/v1/credentials/nope/rotate", {"value": "openapi-check-value-2"})
st, leased = call("POST", "/v1/sessions", {"limits": limits, "net": "proxy", "allow": ["https://example.com"], "credentials": ["oapi"]})
assert st == 201, leased
call("DELETE", "/v1/credentials/oapi")  # 409: leased
call("DELETE", "/v1/sessions/" + leased["id"])
call("DELETE", "/v1/credentials/oapi")
call("DELETE", "/v1/credentials/oapi")  # 404

# Profiles: documents (docs/profile.schema.json), versions, sessions made from one.
prof = {"name": "oprof", "description": "openapi", "session": {"limits": {**limits, "pids": 64}, "env": ["P=1"]},
        "startup": {"argv": ["true"], "ready": {"argv": ["true"], "interval": "50ms", "timeout": "30s"}}}
assert call("POST", "/v1/profiles", prof)[0] == 201
call("POST", "/v1/profiles", {**prof, "session": {"limits": {**limits, "pids": 32}}})
call("POST", "/v1/profiles", {"name": "oprof", "bogus": 1})
call("POST", "/v1/profiles", {"name": "oprof", "warm": 65})
call("GET", "/v1/profiles")
call("GET", "/v1/profiles/oprof")
call("GET", "/v1/profiles/nope")
call("GET", "/v1/profiles/oprof/versions/1")
call("GET", "/v1/profiles/oprof/versions/9")
st, made = call("POST", "/v1/sessions", {"profile": "oprof", "profile_version": 1, "limits": {**limits, "pids": 16}})
assert st == 201, made
call("POST", "/v1/sessions", {"profile": "oprof", "limits": {**limits, "pids": 1000}})  # 422: widens
call("DELETE", "/v1/sessions/" + made["id"])
call("DELETE", "/v1/profiles/oprof")
call("DELETE", "/v1/profiles/oprof")  # 404

events_check(ev, "profile_removed")
ev_conn.close()

# Every operation in the document was exercised.
for tmpl, item in doc["paths"].items():
    for method in item:
        if method != "parameters" and (method, tmpl) not in seen:
            failures.append(f"{method.upper()} {tmpl}: documented but never exercised")

# Control: the validator does fail a body that breaks the document.
bad = {"id": "not-an-id", "state": "running"}
schema = doc["paths"]["/v1/sessions/{id}"]["get"]["responses"]["200"]["content"]["application/json"]["schema"]
if not list(validator_cls({**doc, **schema}).iter_errors(bad)):
    failures.append("control: a session without name/owner_uid/created_at validated")

for f in failures:
    print("FAIL", f)
print("checked", len(seen), "operations,", len(failures), "failures")
sys.exit(1 if failures else 0)
