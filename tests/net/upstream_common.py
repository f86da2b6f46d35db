# SPDX-License-Identifier: Apache-2.0
"""What the upstream helpers of the proxy integration tests (upstream.py, lease_upstream.py,
internal_servers.py, and tests/security/tcp_servers.py and squid_parent.py)
share: a quiet HTTP/1.1 handler that reads Content-Length and chunked bodies and answers with
either framing, HTTP(S) servers on 127.0.0.1 port 0, and the helper protocol the C++ fixture
expects (one JSON line of ports on stdout, then serve until stdin closes). Imported from the
helpers' own directory, which python puts first on sys.path."""
import json
import ssl
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def read_body(self):
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

    def reply(self, status, body, headers=(), chunked_by=0):
        """Answers and closes the connection; chunked_by > 0 sends the body in chunks of that
        many bytes, else with a Content-Length. A HEAD request gets the head only."""
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


def server(handler, cert=None, key=None):
    """A threading HTTP server on 127.0.0.1, port 0; HTTPS when cert and key are given."""
    s = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    s.daemon_threads = True
    if cert:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(cert, key)
        s.socket = ctx.wrap_socket(s.socket, server_side=True)
    return s


def serve_until_stdin_closes(servers, ports):
    """Serves each server from a daemon thread, prints ports as one JSON line and returns
    when stdin closes (the test closing its end stops the helper)."""
    for s in servers:
        threading.Thread(target=s.serve_forever, daemon=True).start()
    print(json.dumps(ports), flush=True)
    sys.stdin.read()
