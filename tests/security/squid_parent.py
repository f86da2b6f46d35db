#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""A parent proxy and a destination for the --upstream-proxy claim tests
(claims_egress_upstream_test.cc), in the test's private network namespace:
  - Debian's squid on PARENT:3128, run unprivileged in the foreground (-N) with a config of its
    own; with USER:PASSWORD it requires Basic auth (basic_ncsa_auth, an htpasswd made by
    apache2-utils' htpasswd here); its access log is DIR/access.log;
  - an HTTP server on DEST:8080 answering "dest ok <path>" and appending each request's path
    and headers to DIR/requests (so a test can tell a parent's credential never got there).
Usage: squid_parent.py DIR PARENT DEST [USER:PASSWORD]. Prints {"parent": P, "dest": P}, serves
until stdin closes."""
import json
import os
import socket
import subprocess
import sys
import threading
import time
from http.server import ThreadingHTTPServer

# The proxy tests' quiet handler and its reply() (tests/net/upstream_common.py).
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "net"))
import upstream_common  # noqa: E402

DIR, PARENT, DEST = sys.argv[1], sys.argv[2], sys.argv[3]
AUTH = sys.argv[4] if len(sys.argv) > 4 else ""
PARENT_PORT, DEST_PORT = 3128, 8080


class Dest(upstream_common.Handler):
    def do_GET(self):
        with open(f"{DIR}/requests", "a") as f:
            f.write(f"{self.path}\n{self.headers}")
        self.reply(200, f"dest ok {self.path}".encode())


def squid_config():
    access = "http_access allow all\n"
    if AUTH:
        user, password = AUTH.split(":", 1)
        subprocess.run(["/usr/bin/htpasswd", "-bc", f"{DIR}/htpasswd", user, password], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        access = (f"auth_param basic program /usr/lib/squid/basic_ncsa_auth {DIR}/htpasswd\n"
                  "auth_param basic realm corral-test\n"
                  "acl authed proxy_auth REQUIRED\n"
                  "http_access allow authed\n"
                  "http_access deny all\n")
    with open(f"{DIR}/squid.conf", "w") as f:
        f.write(f"""http_port {PARENT}:{PARENT_PORT}
pid_filename {DIR}/squid.pid
cache_log {DIR}/cache.log
access_log stdio:{DIR}/access.log
coredump_dir {DIR}
cache deny all
cache_mem 8 MB
pinger_enable off
shutdown_lifetime 0 seconds
logfile_rotate 0
visible_hostname corral-test-parent
acl CONNECT method CONNECT
{access}""")


def wait_listening(proc):
    for _ in range(4000):
        if proc.poll() is not None:
            sys.exit(f"squid exited: see {DIR}/cache.log")
        try:
            socket.create_connection((PARENT, PARENT_PORT), timeout=1).close()
            return
        except OSError:
            time.sleep(0.005)
    sys.exit("squid is not listening")


def main():
    open(f"{DIR}/requests", "w").close()
    dest = ThreadingHTTPServer((DEST, DEST_PORT), Dest)
    threading.Thread(target=dest.serve_forever, daemon=True).start()
    squid_config()
    out = open(f"{DIR}/squid.out", "w")
    squid = subprocess.Popen(["/usr/sbin/squid", "-N", "-f", f"{DIR}/squid.conf"], stdout=out, stderr=out)
    wait_listening(squid)
    print(json.dumps({"parent": PARENT_PORT, "dest": DEST_PORT}), flush=True)
    try:
        sys.stdin.read()
    finally:
        squid.terminate()
        squid.wait()


main()
