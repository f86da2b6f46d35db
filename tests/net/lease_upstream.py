#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Upstream servers for the credential-lease tests, all on 127.0.0.1, port 0: two HTTP
servers, an HTTPS server (cert and key from argv 1-2) and an HTTPS server whose certificate
names another host (argv 3-4). The secret they expect is in LEASE_SECRET. Each response says
how the request's Authorization looked ("auth=secret", "auth=placeholder", "auth=none",
"auth=other") and how many Authorization fields came, never the value. /echo-secret* send
the secret back raw, base64 and URL-encoded, split over tiny chunks. Prints one JSON line
with the ports, then serves until stdin closes."""
import base64
import hashlib
import os
import sys
import threading
import urllib.parse

import upstream_common

SECRET = os.environ["LEASE_SECRET"]
counts = {}
lock = threading.Lock()


class Handler(upstream_common.Handler):
    def _auth(self):
        values = self.headers.get_all("Authorization") or []
        if not values:
            kind = "none"
        elif values == ["Bearer " + SECRET]:
            kind = "secret"
        elif any("corral-lease-" in v for v in values):
            kind = "placeholder"
        else:
            kind = "other"
        return f"auth={kind} n={len(values)} ae={self.headers.get('Accept-Encoding', '-')}"

    def _serve(self):
        path = urllib.parse.urlsplit(self.path).path
        port = self.server.server_address[1]
        if path == "/__count":
            with lock:
                return self.reply(200, str(counts.get(port, 0)).encode())
        body = self.read_body()
        with lock:
            counts[port] = counts.get(port, 0) + 1
        if path.startswith("/echo-secret"):
            s = SECRET.encode()
            text = (b"raw=" + s + b" b64=" + base64.b64encode(s) + b" url=" +
                    urllib.parse.quote(SECRET, safe="").encode() + b" end")
            hdrs = [("X-Echo", SECRET), ("Location", "https://example.test/?t=" + SECRET)]
            return self.reply(200, text, hdrs, chunked_by=3 if path == "/echo-secret" else 0)
        if path == "/big":
            n = int(urllib.parse.parse_qs(urllib.parse.urlsplit(self.path).query)["n"][0])
            return self.reply(200, b"x" * n)
        if path == "/gzip":
            return self.reply(200, b"\x1f\x8b not really", [("Content-Encoding", "gzip")])
        out = f"ok {self._auth()} path={self.path} method={self.command} got={len(body)} sha={hashlib.sha256(body).hexdigest()}"
        self.reply(200, out.encode())

    do_GET = do_POST = do_PUT = do_HEAD = _serve


def main():
    cert, key, bad_cert, bad_key = sys.argv[1:5]
    servers = {
        "http": upstream_common.server(Handler),
        "http2": upstream_common.server(Handler),
        "https": upstream_common.server(Handler, cert, key),
        "https_bad": upstream_common.server(Handler, bad_cert, bad_key),
    }
    upstream_common.serve_until_stdin_closes(servers.values(), {n: s.server_address[1] for n, s in servers.items()})


if __name__ == "__main__":
    main()
