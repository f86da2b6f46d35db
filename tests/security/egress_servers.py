#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Host-side servers for the egress claim tests, all on 127.0.0.1, port 0:
  http   counts requests and answers "upstream ok <path>"; GET /__count (asked directly) is not counted
  https  the same over TLS, with a certificate for 127.0.0.1 and localhost from a fresh test CA
  git    `git http-backend` (smart HTTP) serving DIR/repo.git, read-only
GET /lease-check (http and https) reports whether the Authorization header is "Bearer " +
$CORRAL_TEST_LEASE_SECRET and echoes the header back raw, base64- and URL-encoded, split over
many small writes: the lease claims check injection and redaction with it. GET /__last
(asked directly) returns the previous request's headers.
Usage: egress_servers.py DIR. Writes DIR/ca.pem, prints one JSON line with the ports, serves
until stdin closes."""
import base64
import json
import os
import urllib.parse
import ssl
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

DIR = sys.argv[1]
counts = {"http": 0, "https": 0}
last = {"http": "", "https": ""}
SECRET = os.environ.get("CORRAL_TEST_LEASE_SECRET", "")
lock = threading.Lock()


def make_ca():
    ext = os.path.join(DIR, "ext.cnf")
    with open(ext, "w") as f:
        f.write("subjectAltName=IP:127.0.0.1,DNS:localhost\n")
    cmds = [
        "openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=corral-egress-test-ca -keyout ca.key -out ca.pem",
        "openssl req -newkey rsa:2048 -nodes -subj /CN=127.0.0.1 -keyout server.key -out server.csr",
        "openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 2 -out server.pem -extfile ext.cnf",
    ]
    for c in cmds:
        subprocess.run(c, shell=True, cwd=DIR, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def make_repo():
    repo = os.path.join(DIR, "work")
    env = dict(os.environ, GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@t", GIT_COMMITTER_NAME="t",
               GIT_COMMITTER_EMAIL="t@t", HOME=DIR, GIT_CONFIG_NOSYSTEM="1")
    for c in (["git", "init", "-q", repo],
              ["git", "-C", repo, "commit", "-q", "--allow-empty", "-m", "corral-egress-git-marker"],
              ["git", "clone", "-q", "--bare", repo, os.path.join(DIR, "repo.git")]):
        subprocess.run(c, check=True, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def counting_handler(kind):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):
            pass

        def do_GET(self):
            if self.path == "/__count":
                with lock:
                    out = str(counts[kind])
            elif self.path == "/__last":
                with lock:
                    out = last[kind]
            else:
                with lock:
                    counts[kind] += 1
                    last[kind] = "".join(f"{k}: {v}\n" for k, v in self.headers.items())
                if self.path == "/lease-check":
                    return self.lease_check()
                out = "upstream ok " + self.path
            data = out.encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(data)))
            self.send_header("Connection", "close")
            self.end_headers()
            self.wfile.write(data)
            self.close_connection = True

        def lease_check(self):
            got = self.headers.get("Authorization", "")
            ok = SECRET != "" and got == "Bearer " + SECRET
            body = ("auth=" + ("ok" if ok else "bad") + "\nraw=" + got + "\nb64=" +
                    base64.b64encode(got.encode()).decode() + "\nurl=" + urllib.parse.quote(got, safe="") + "\n").encode()
            self.send_response(200)
            self.send_header("Transfer-Encoding", "chunked")
            self.send_header("Connection", "close")
            self.end_headers()
            for i in range(0, len(body), 5):  # small chunks: a secret always spans several
                piece = body[i:i + 5]
                self.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
                self.wfile.flush()
            self.wfile.write(b"0\r\n\r\n")
            self.close_connection = True

    return Handler


class GitHandler(BaseHTTPRequestHandler):
    """A minimal CGI gateway for git http-backend."""
    protocol_version = "HTTP/1.0"

    def log_message(self, *args):
        pass

    def _cgi(self):
        path, _, query = self.path.partition("?")
        body = self.rfile.read(int(self.headers.get("Content-Length", "0") or 0))
        env = {"GIT_PROJECT_ROOT": DIR, "GIT_HTTP_EXPORT_ALL": "1", "PATH_INFO": path, "QUERY_STRING": query,
               "REQUEST_METHOD": self.command, "CONTENT_TYPE": self.headers.get("Content-Type", ""),
               "CONTENT_LENGTH": str(len(body)), "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
               "HOME": DIR, "GIT_CONFIG_NOSYSTEM": "1", "REMOTE_ADDR": "127.0.0.1"}
        if self.headers.get("Git-Protocol"):
            env["GIT_PROTOCOL"] = self.headers["Git-Protocol"]
        out = subprocess.run(["git", "http-backend"], input=body, env=env, stdout=subprocess.PIPE).stdout
        head, _, payload = out.partition(b"\r\n\r\n")
        status = 200
        headers = []
        for line in head.split(b"\r\n"):
            name, _, value = line.decode("latin-1").partition(":")
            if name.lower() == "status":
                status = int(value.strip().split()[0])
            elif name:
                headers.append((name, value.strip()))
        self.send_response(status)
        for name, value in headers:
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    do_GET = do_POST = _cgi


def serve(server):
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server.server_address[1]


def main():
    make_ca()
    make_repo()
    http = ThreadingHTTPServer(("127.0.0.1", 0), counting_handler("http"))
    https = ThreadingHTTPServer(("127.0.0.1", 0), counting_handler("https"))
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(os.path.join(DIR, "server.pem"), os.path.join(DIR, "server.key"))
    https.socket = ctx.wrap_socket(https.socket, server_side=True)
    git = ThreadingHTTPServer(("127.0.0.1", 0), GitHandler)
    # The same plain HTTP server under a second port (shared state): one upstream reachable
    # through two grants, as a wildcard or an IP literal can make it.
    http_alias = ThreadingHTTPServer(("127.0.0.1", 0), counting_handler("http"))
    ports = {"http": serve(http), "https": serve(https), "git": serve(git), "http_alias": serve(http_alias)}
    print(json.dumps(ports), flush=True)
    sys.stdin.read()


main()
