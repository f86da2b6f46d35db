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
import json
import os
import ssl
import sys
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

SECRET = os.environ["LEASE_SECRET"]
counts = {}
lock = threading.Lock()


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def _body(self):
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            data = b""
            while True:
                size = int(self.rfile.readline().split(b";")[0], 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    return data
                data += self.rfile.read(size)
                self.rfile.readline()
        n = int(self.headers.get("Content-Length", "0"))
        return self.rfile.read(n) if n else b""

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

    def _send(self, status, body, headers=(), chunked_by=0):
        self.send_response(status)
        for k, v in headers:
            self.send_header(k, v)
        if chunked_by:
            self.send_header("Transfer-Encoding", "chunked")
        else:
            self.send_header("Content-Length", str(len(body)))
        self.send_header("Connection", "close")
        self.end_headers()
        if self.command == "HEAD":
            pass
        elif chunked_by:
            for i in range(0, len(body), chunked_by):
                part = body[i:i + chunked_by]
                self.wfile.write(b"%x\r\n%s\r\n" % (len(part), part))
                self.wfile.flush()
            self.wfile.write(b"0\r\n\r\n")
        else:
            self.wfile.write(body)
        self.close_connection = True

    def _serve(self):
        path = urllib.parse.urlsplit(self.path).path
        port = self.server.server_address[1]
        if path == "/__count":
            with lock:
                return self._send(200, str(counts.get(port, 0)).encode())
        body = self._body()
        with lock:
            counts[port] = counts.get(port, 0) + 1
        if path.startswith("/echo-secret"):
            s = SECRET.encode()
            text = (b"raw=" + s + b" b64=" + base64.b64encode(s) + b" url=" +
                    urllib.parse.quote(SECRET, safe="").encode() + b" end")
            hdrs = [("X-Echo", SECRET), ("Location", "https://example.test/?t=" + SECRET)]
            return self._send(200, text, hdrs, chunked_by=3 if path == "/echo-secret" else 0)
        if path == "/big":
            n = int(urllib.parse.parse_qs(urllib.parse.urlsplit(self.path).query)["n"][0])
            return self._send(200, b"x" * n)
        if path == "/gzip":
            return self._send(200, b"\x1f\x8b not really", [("Content-Encoding", "gzip")])
        out = f"ok {self._auth()} path={self.path} method={self.command} got={len(body)} sha={hashlib.sha256(body).hexdigest()}"
        self._send(200, out.encode())

    do_GET = do_POST = do_PUT = do_HEAD = _serve


def main():
    cert, key, bad_cert, bad_key = sys.argv[1:5]
    servers = {}
    for name in ("http", "http2", "https", "https_bad"):
        servers[name] = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    for name, (c, k) in {"https": (cert, key), "https_bad": (bad_cert, bad_key)}.items():
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(c, k)
        servers[name].socket = ctx.wrap_socket(servers[name].socket, server_side=True)
    for s in servers.values():
        s.daemon_threads = True
        threading.Thread(target=s.serve_forever, daemon=True).start()
    print(json.dumps({n: s.server_address[1] for n, s in servers.items()}), flush=True)
    sys.stdin.read()


if __name__ == "__main__":
    main()
