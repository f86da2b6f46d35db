#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Servers for the proxy-client tests (claims_egress_clients_test.cc), on an address the test
put on its private network namespace's loopback, each on a port the kernel picks:
  http   answers "clients ok <path>" to GET (also to a raw HTTP/1.0 request over a tcp tunnel)
  https  the same over TLS, with a certificate for registry.corp.test and web.corp.test from a
         fresh test CA (DIR/ca.pem), and a minimal npm registry: GET /corral-left-pad is the
         package document, GET /corral-left-pad/-/corral-left-pad-1.0.0.tgz its tarball
Every request is appended to DIR/requests as "<http|https> <path>", so a test proves that a
refused attempt never arrived. Usage: client_servers.py DIR ADDRESS. Prints
{"http": P, "https": P}, serves until stdin closes."""
import base64
import hashlib
import io
import json
import os
import ssl
import subprocess
import sys
import tarfile
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

DIR, ADDRESS = sys.argv[1], sys.argv[2]
PACKAGE = "corral-left-pad"
MARKER = "corral-left-pad installed through the proxy"
lock = threading.Lock()


def make_ca():
    with open(os.path.join(DIR, "ext.cnf"), "w") as f:
        f.write("subjectAltName=DNS:registry.corp.test,DNS:web.corp.test\n")
    for c in ("openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=corral-clients-test-ca -keyout ca.key -out ca.pem",
              "openssl req -newkey rsa:2048 -nodes -subj /CN=registry.corp.test -keyout server.key -out server.csr",
              "openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 2 -out server.pem -extfile ext.cnf"):
        subprocess.run(c, shell=True, cwd=DIR, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def make_tarball():
    files = {"package/package.json": json.dumps({"name": PACKAGE, "version": "1.0.0", "main": "index.js"}),
             "package/index.js": "module.exports = " + json.dumps(MARKER) + ";\n"}
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as t:
        for name, text in files.items():
            data = text.encode()
            info = tarfile.TarInfo(name)
            info.size, info.mode, info.mtime = len(data), 0o644, 1700000000
            t.addfile(info, io.BytesIO(data))
    return buf.getvalue()


TARBALL = make_tarball()


def packument(host):
    tgz = f"https://{host}/{PACKAGE}/-/{PACKAGE}-1.0.0.tgz"
    integrity = "sha512-" + base64.b64encode(hashlib.sha512(TARBALL).digest()).decode()
    version = {"name": PACKAGE, "version": "1.0.0", "main": "index.js",
               "dist": {"tarball": tgz, "shasum": hashlib.sha1(TARBALL).hexdigest(), "integrity": integrity}}
    return json.dumps({"name": PACKAGE, "dist-tags": {"latest": "1.0.0"}, "versions": {"1.0.0": version}}).encode()


def handler(kind):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):
            pass

        def do_GET(self):
            with lock, open(os.path.join(DIR, "requests"), "a") as f:
                f.write(f"{kind} {self.path}\n")
            ctype = "text/plain"
            if kind == "https" and self.path == "/" + PACKAGE:
                body, ctype = packument(self.headers.get("Host", "")), "application/json"
            elif kind == "https" and self.path == f"/{PACKAGE}/-/{PACKAGE}-1.0.0.tgz":
                body, ctype = TARBALL, "application/octet-stream"
            else:
                body = ("clients ok " + self.path).encode()
            self.send_response(200)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Connection", "close")
            self.end_headers()
            self.wfile.write(body)
            self.close_connection = True

    return Handler


def serve(server):
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server.server_address[1]


def main():
    make_ca()
    open(os.path.join(DIR, "requests"), "w").close()
    http = ThreadingHTTPServer((ADDRESS, 0), handler("http"))
    https = ThreadingHTTPServer((ADDRESS, 0), handler("https"))
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(os.path.join(DIR, "server.pem"), os.path.join(DIR, "server.key"))
    https.socket = ctx.wrap_socket(https.socket, server_side=True)
    print(json.dumps({"http": serve(http), "https": serve(https)}), flush=True)
    sys.stdin.read()


main()
