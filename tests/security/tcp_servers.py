#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Non-HTTP servers for the tcp-grant and SOCKS5 claim tests (claims_egress_tcp_test.cc), on
an address the test put on its private network namespace's loopback, each on its own fixed
port (nothing else runs in that namespace, so no port can be taken):
  - sshd (Debian openssh-server) with its own host key and config, run unprivileged as the
    current user, key authentication only, serving a bare git repository;
  - PostgreSQL 15: a private cluster (initdb) listening on ADDRESS only, trust auth;
  - an HTTP server answering "tcp ok <path>";
  - a UDP server that records every datagram in DIR/udp (a UDP attempt must leave it empty).
Usage: tcp_servers.py DIR ADDRESS SERVICE... (ssh, pg, http, udp: initdb alone takes seconds, so
a test starts what it uses). Writes DIR/client_key (the sandbox's key) and DIR/known_hosts for
ssh, prints {"ssh": P, "pg": P, "http": P, "udp": P, "user": NAME, "repo": PATH}, serves until
stdin closes."""
import json
import os
import pwd
import shutil
import socket
import subprocess
import sys
import threading
import time
from http.server import ThreadingHTTPServer

# The proxy tests' quiet handler and its reply() (tests/net/upstream_common.py).
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "net"))
import upstream_common  # noqa: E402

DIR, ADDRESS, SERVICES = sys.argv[1], sys.argv[2], set(sys.argv[3:])
PORTS = {"ssh": 2222, "pg": 5432, "http": 8080, "udp": 5353}
PG_BIN = "/usr/lib/postgresql/15/bin"
USER = pwd.getpwuid(os.getuid()).pw_name


def run(*argv, **kw):
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, **kw)


def start_sshd():
    run("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", f"{DIR}/host_key")
    run("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "corral-test", "-f", f"{DIR}/client_key")
    shutil.copy(f"{DIR}/client_key.pub", f"{DIR}/authorized_keys")
    host_pub = open(f"{DIR}/host_key.pub").read().split()
    with open(f"{DIR}/known_hosts", "w") as f:
        f.write(f"[git.corp.test]:{PORTS['ssh']} {host_pub[0]} {host_pub[1]}\n")
    with open(f"{DIR}/sshd_config", "w") as f:
        f.write(f"""ListenAddress {ADDRESS}:{PORTS['ssh']}
HostKey {DIR}/host_key
AuthorizedKeysFile {DIR}/authorized_keys
AllowUsers {USER}
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
PermitRootLogin prohibit-password
PidFile {DIR}/sshd.pid
LogLevel INFO
""")
    # -D: stays in the foreground as our child; -e: its log on stderr, into DIR/sshd.log.
    log = open(f"{DIR}/sshd.log", "w")
    return subprocess.Popen(["/usr/sbin/sshd", "-D", "-e", "-f", f"{DIR}/sshd_config"], stdout=log, stderr=log)


def wait_listening(port, what, proc):
    """sshd binds after it starts: connect until it accepts (or has died)."""
    for _ in range(2000):
        if proc.poll() is not None:
            sys.exit(f"{what} exited: see {DIR}/{what}.log")
        try:
            socket.create_connection((ADDRESS, port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.005)
    sys.exit(f"{what} is not listening on {ADDRESS}:{port}")


def make_repo():
    env = dict(os.environ, GIT_CONFIG_NOSYSTEM="1", HOME=DIR, GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@t",
               GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@t")
    work = f"{DIR}/work"
    run("git", "init", "-q", "-b", "main", work, env=env)
    with open(f"{work}/README", "w") as f:
        f.write("cloned over ssh through corral\n")
    run("git", "-C", work, "add", "README", env=env)
    run("git", "-C", work, "commit", "-q", "-m", "first", env=env)
    run("git", "clone", "-q", "--bare", work, f"{DIR}/repo.git", env=env)


def start_pg():
    data = f"{DIR}/pg"
    run(f"{PG_BIN}/initdb", "-D", data, "-U", "corral", "--auth=trust", "--no-sync", "-E", "UTF8")
    with open(f"{data}/pg_hba.conf", "a") as f:
        f.write(f"host all all {ADDRESS}/32 trust\n")
    run(f"{PG_BIN}/pg_ctl", "-D", data, "-w", "-t", "120", "-l", f"{DIR}/pg.log", "-o",
        f"-k {DIR} -c listen_addresses={ADDRESS} -c port={PORTS['pg']} -c fsync=off", "start")


def stop_pg():
    subprocess.run([f"{PG_BIN}/pg_ctl", "-D", f"{DIR}/pg", "-m", "immediate", "-w", "stop"],
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


class Http(upstream_common.Handler):
    def do_GET(self):
        self.reply(200, f"tcp ok {self.path}".encode())


def serve_udp(sock):
    while True:
        data, peer = sock.recvfrom(65535)
        with open(f"{DIR}/udp", "a") as f:
            f.write(f"{peer[0]} {len(data)}\n")


def main():
    open(f"{DIR}/udp", "w").close()
    sshd = None
    if "ssh" in SERVICES:
        make_repo()
        sshd = start_sshd()
        wait_listening(PORTS["ssh"], "sshd", sshd)
    if "pg" in SERVICES:
        start_pg()
    if "http" in SERVICES:
        http = ThreadingHTTPServer((ADDRESS, PORTS["http"]), Http)
        threading.Thread(target=http.serve_forever, daemon=True).start()
    if "udp" in SERVICES:
        udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        udp.bind((ADDRESS, PORTS["udp"]))
        threading.Thread(target=serve_udp, args=(udp,), daemon=True).start()
    print(json.dumps(dict(PORTS, user=USER, repo=f"{DIR}/repo.git")), flush=True)
    try:
        sys.stdin.read()
    finally:
        if sshd:
            sshd.terminate()
            sshd.wait()
        if "pg" in SERVICES:
            stop_pg()


main()
