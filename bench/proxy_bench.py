#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Egress proxy peer benchmark (issues #4 and #24): in one interleaved run, CONNECT-tunnel
throughput of a large transfer and the added latency of small requests, for corral's proxy
against Debian's squid and tinyproxy as plain CONNECT proxies, a bare splice(2) relay (the
floor for one extra hop) and a direct connection; and SOCKS5 through corral against a plain
`ssh -D` SOCKS proxy. Also corral's memory per idle tunnel.

  bench/proxy_bench.py --proxy build/corral-proxy-bench --relay build/corral-splice-relay
                       [--gib 1] [--rounds 5] [--requests 2000] [--tunnels 1000] [--repeat 1]

Starts everything itself on 127.0.0.1: the upstreams (a byte source in its own process, an
HTTP responder and an echo server), corral-proxy-bench, squid and tinyproxy with private
configs on their own ports, the splice relay, and a private sshd (throwaway host and client
keys) with `ssh -N -D` in front of it. Tunnels open with a real TLS ClientHello (corral checks
SNI on https grants); the latency requests go through tcp:// grants. Prints markdown tables.
Not part of `make test`: `make bench-proxy` runs it."""
import argparse
import asyncio
import os
import random
import resource
import shutil
import socket
import ssl
import statistics
import struct
import subprocess
import sys
import tempfile
import threading
import time

CHUNK = 1 << 20


def client_hello():
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    inc, out = ssl.MemoryBIO(), ssl.MemoryBIO()
    obj = ctx.wrap_bio(inc, out, server_hostname=None)
    try:
        obj.do_handshake()
    except ssl.SSLWantReadError:
        pass
    return out.read()


HELLO = client_hello()


def start_source(total):
    """The byte source runs in its own process: as a thread beside the measuring client it
    shared that client's GIL, and the tunnel's extra wake-ups turned into GIL hand-offs that
    the benchmark then charged to the proxy. Returns (port, process)."""
    proc = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--serve-source", str(total)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    return int(proc.stdout.readline()), proc


def serve_source(total):
    # Blocking threads, not asyncio: the byte source must be faster than what it measures.
    # Per connection: read the client's hello, send `total` bytes, close. Runs until stdin closes.
    lsock = socket.create_server(("127.0.0.1", 0), backlog=16)

    def serve(conn):
        with conn:
            got = 0
            while got < len(HELLO):
                got += len(conn.recv(len(HELLO) - got))
            block = memoryview(bytearray(4 * CHUNK))
            left = total
            while left > 0:
                n = min(len(block), left)
                conn.sendall(block[:n])
                left -= n

    def accept():
        while True:
            conn, _ = lsock.accept()
            threading.Thread(target=serve, args=(conn,), daemon=True).start()

    threading.Thread(target=accept, daemon=True).start()
    print(lsock.getsockname()[1], flush=True)
    sys.stdin.read()


async def responder(reader, writer):
    await reader.readuntil(b"\r\n\r\n")
    writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok")
    await writer.drain()
    writer.close()


async def echo(reader, writer):
    while data := await reader.read(65536):
        writer.write(data)
        await writer.drain()
    writer.close()


def serve_small():
    """The HTTP responder and the echo server, in a process of their own like the byte
    source: in the measuring client's process they shared its GIL, and a direct request
    (client and responder both in that process) came out slower than one through a proxy.
    Prints the two ports and serves until stdin closes."""
    loop = asyncio.new_event_loop()
    ports = []

    async def setup():
        for handler in (responder, echo):
            srv = await asyncio.start_server(handler, "127.0.0.1", 0, backlog=4096)
            ports.append(srv.sockets[0].getsockname()[1])

    loop.run_until_complete(setup())
    threading.Thread(target=loop.run_forever, daemon=True).start()
    print(*ports, flush=True)
    sys.stdin.read()


def start_upstreams(total):
    """Returns the upstreams' ports and their processes."""
    small = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--serve-small"],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    http, echo_port = (int(x) for x in small.stdout.readline().split())
    ports = {"http": http, "echo": echo_port}
    ports["source"], source_proc = start_source(total)
    return ports, [source_proc, small]


def recv_all(sock, expect=None):
    buf = bytearray(CHUNK)
    got = 0
    while True:
        n = sock.recv_into(buf)
        if n == 0:
            return got
        got += n
        if expect is not None and got >= expect:
            return got


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(port, proc, what, log=None):
    for _ in range(6000):
        if proc.poll() is not None:
            sys.exit(f"{what} exited" + (f": {open(log).read()[-2000:]}" if log else ""))
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.005)
    sys.exit(f"{what} is not listening on {port}")


def read_port_line(proc):
    line = proc.stdout.readline().strip()
    assert line.startswith("port="), line
    return int(line[5:])


class Peers:
    """Every proxy of the run, each started with a private config on its own port. `pids`
    names the processes whose CPU each mode is charged (with their live descendants)."""

    def __init__(self, args, ports, work):
        self.procs, self.port, self.pids = [], {}, {}
        grants = [f"https://127.0.0.1:{ports['source']}", f"https://127.0.0.1:{ports['echo']}",
                  f"tcp://127.0.0.1:{ports['http']}"]
        p = self.spawn([args.proxy, *grants], stdout=subprocess.PIPE)
        self.port["corral"] = self.port["corral-socks5"] = read_port_line(p)
        self.pids["corral"] = self.pids["corral-socks5"] = [p.pid]
        self.corral = p
        # The splice relay is one target per process: one for the source, one for the responder.
        for name, target in (("splice", ports["source"]), ("splice-http", ports["http"])):
            p = self.spawn([args.relay, str(target)], stdout=subprocess.PIPE)
            self.port[name] = read_port_line(p)
            self.pids[name] = [p.pid]
        self.start_squid(work)
        self.start_tinyproxy(work)
        self.start_ssh_socks(work)

    def spawn(self, argv, **kw):
        p = subprocess.Popen(argv, stdin=subprocess.PIPE, text=True, **kw)
        self.procs.append(p)
        return p

    def start_squid(self, work):
        port = free_port()
        with open(f"{work}/squid.conf", "w") as f:
            f.write(f"""http_port 127.0.0.1:{port}
pid_filename {work}/squid.pid
cache_log {work}/squid-cache.log
access_log none
coredump_dir {work}
cache deny all
cache_mem 8 MB
pinger_enable off
shutdown_lifetime 0 seconds
logfile_rotate 0
visible_hostname corral-bench
http_access allow all
""")
        if os.getuid() == 0:
            shutil.chown(work, "proxy")
        p = self.spawn(["/usr/sbin/squid", "-N", "-f", f"{work}/squid.conf"],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_port(port, p, "squid", f"{work}/squid-cache.log")
        self.port["squid"], self.pids["squid"] = port, [p.pid]

    def start_tinyproxy(self, work):
        port = free_port()
        user = "User nobody\nGroup nogroup\n" if os.getuid() == 0 else ""
        # No ConnectPort line: CONNECT to any port (tinyproxy.conf(5)).
        with open(f"{work}/tinyproxy.conf", "w") as f:
            f.write(f"""{user}Port {port}
Listen 127.0.0.1
Timeout 600
MaxClients 2000
LogLevel Critical
Allow 127.0.0.1
DisableViaHeader Yes
""")
        p = self.spawn(["/usr/bin/tinyproxy", "-d", "-c", f"{work}/tinyproxy.conf"],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_port(port, p, "tinyproxy")
        self.port["tinyproxy"], self.pids["tinyproxy"] = port, [p.pid]

    def start_ssh_socks(self, work):
        """A private sshd on loopback (throwaway keys, key authentication only) and `ssh -N -D`
        in front of it, with OpenSSH's default cipher (chacha20-poly1305 here): the plain SOCKS
        proxy a user would reach for. Both are charged to the mode."""
        for name in ("host_key", "client_key"):
            subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", f"{work}/{name}"], check=True)
        shutil.copy(f"{work}/client_key.pub", f"{work}/authorized_keys")
        sport, dport = free_port(), free_port()
        user = os.environ.get("USER") or __import__("pwd").getpwuid(os.getuid()).pw_name
        with open(f"{work}/sshd_config", "w") as f:
            f.write(f"""ListenAddress 127.0.0.1:{sport}
HostKey {work}/host_key
AuthorizedKeysFile {work}/authorized_keys
PasswordAuthentication no
UsePAM no
StrictModes no
PermitRootLogin prohibit-password
PidFile {work}/sshd.pid
AllowTcpForwarding yes
LogLevel ERROR
""")
        if os.getuid() == 0:  # sshd as root wants its privilege separation directory (tmpfiles.d makes it at boot)
            os.makedirs("/run/sshd", mode=0o755, exist_ok=True)
        sshd = self.spawn(["/usr/sbin/sshd", "-D", "-e", "-f", f"{work}/sshd_config"],
                          stdout=subprocess.DEVNULL, stderr=open(f"{work}/sshd.log", "w"))
        wait_port(sport, sshd, "sshd", f"{work}/sshd.log")
        ssh = self.spawn(["ssh", "-F", "/dev/null", "-N", "-D", f"127.0.0.1:{dport}", "-i", f"{work}/client_key",
                          "-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null",
                          "-o", "LogLevel=ERROR", "-p", str(sport), f"{user}@127.0.0.1"],
                         stdout=subprocess.DEVNULL)
        wait_port(dport, ssh, "ssh -D")
        self.port["ssh-socks5"], self.pids["ssh-socks5"] = dport, [ssh.pid, sshd.pid]

    def stop(self):
        for p in self.procs:
            if p.stdin:
                p.stdin.close()
            if p.poll() is None:
                p.terminate()
        for p in self.procs:
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                p.kill()


def descendants(pid):
    out = [pid]
    try:
        for task in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task}/children") as f:
                for c in f.read().split():
                    out += descendants(int(c))
    except OSError:
        pass
    return out


def cpu_seconds(pids):
    total = 0.0
    for root in pids:
        for pid in descendants(root):
            try:
                fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return total


def read_head(s):
    head = b""
    while b"\r\n\r\n" not in head:
        chunk = s.recv(4096)
        assert chunk, head
        head += chunk
    assert head.split(b"\r\n", 1)[0].split(b" ")[1] == b"200", head
    return head


def connect_tunnel(proxy_port, target_port):
    s = socket.create_connection(("127.0.0.1", proxy_port))
    a = f"127.0.0.1:{target_port}"
    s.sendall(f"CONNECT {a} HTTP/1.1\r\nHost: {a}\r\n\r\n".encode())
    read_head(s)
    return s


def socks_tunnel(proxy_port, target_port):
    """RFC 1928: no-auth greeting, CONNECT to an IPv4 address; the reply's length follows
    its address type."""
    s = socket.create_connection(("127.0.0.1", proxy_port))
    s.sendall(b"\x05\x01\x00")
    assert s.recv(2) == b"\x05\x00"
    s.sendall(b"\x05\x01\x00\x01" + socket.inet_aton("127.0.0.1") + struct.pack(">H", target_port))
    rep = b""
    while len(rep) < 5:
        rep += s.recv(5 - len(rep))
    assert rep[1] == 0, rep
    left = {1: 4, 4: 16, 3: rep[4] + 1}[rep[3]] + 2 - 1
    while left > 0:
        left -= len(s.recv(left))
    return s


# mode -> how a client reaches upstream port P through it.
CONNECT_MODES = ("corral", "squid", "tinyproxy")
SOCKS_MODES = ("corral-socks5", "ssh-socks5")
MODES = ("direct", *CONNECT_MODES, "splice", *SOCKS_MODES)


def open_to(peers, ports, mode, upstream):
    target = ports[upstream]
    if mode == "direct":
        return socket.create_connection(("127.0.0.1", target))
    if mode == "splice":  # one relay per target
        return socket.create_connection(("127.0.0.1", peers.port["splice" if upstream == "source" else "splice-http"]))
    if mode in SOCKS_MODES:
        return socks_tunnel(peers.port[mode], target)
    return connect_tunnel(peers.port[mode], target)


def throughput(peers, ports, total, source_pid, rounds):
    """Median MiB/s of each mode over interleaved rounds, the order rotating each round: a
    shared host's noise moves single transfers by 2x, and it hits every mode alike only when
    they alternate. Also the CPU seconds per GiB of the relay (the proxy's processes) in each
    mode, which stay steadier than MiB/s, and of the two endpoints."""
    samples = {m: [] for m in MODES}
    cpu = {m: {"relay": 0.0, "ends": 0.0} for m in MODES}
    for r in range(rounds):
        order = MODES[r % len(MODES):] + MODES[:r % len(MODES)]
        for mode in order:
            relay_pids = peers.pids.get(mode, [])
            before = (cpu_seconds(relay_pids), cpu_seconds([source_pid, os.getpid()]))
            samples[mode].append(throughput_once(peers, ports, total, mode))
            cpu[mode]["relay"] += cpu_seconds(relay_pids) - before[0]
            cpu[mode]["ends"] += cpu_seconds([source_pid, os.getpid()]) - before[1]
    gib = rounds * total / (1 << 30)
    return {m: {"mibs": statistics.median(samples[m]), "samples": samples[m],
                "relay_cpu": cpu[m]["relay"] / gib, "ends_cpu": cpu[m]["ends"] / gib} for m in MODES}


def throughput_once(peers, ports, total, mode):
    s = open_to(peers, ports, mode, "source")
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
    t0 = time.perf_counter()
    s.sendall(HELLO)
    got = recv_all(s)
    dt = time.perf_counter() - t0
    s.close()
    assert got == total, (mode, got)
    return total / dt / (1 << 20)


def latency(peers, ports, n):
    """One small GET per connection, through each mode in turn, interleaved per request in an
    order shuffled each time (seeded): a rotation keeps neighbours, and the mode after ssh -D
    (whose channel close goes on for tens of milliseconds after its reply) measured 5x slower
    than alone. Connect, open the tunnel (CONNECT or SOCKS5), send the request, read to the
    close. p50 and p99 in microseconds."""
    req = f"GET /x HTTP/1.1\r\nHost: 127.0.0.1:{ports['http']}\r\nConnection: close\r\n\r\n".encode()
    out = {m: [] for m in MODES}
    rng = random.Random(24)
    for _ in range(n):
        order = list(MODES)
        rng.shuffle(order)
        for mode in order:
            t0 = time.perf_counter()
            s = open_to(peers, ports, mode, "http")
            s.sendall(req)
            data = b""
            while chunk := s.recv(4096):
                data += chunk
            out[mode].append((time.perf_counter() - t0) * 1e6)
            s.close()
            assert data.startswith(b"HTTP/1.1 200"), (mode, data[:100])
    q = lambda xs, p: statistics.quantiles(xs, n=100)[p - 1]
    return {m: (q(v, 50), q(v, 99)) for m, v in out.items()}


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def idle_tunnels(peers, echo_port, n):
    pid = peers.corral.pid
    before = rss_kib(pid)
    socks = []
    for i in range(n):
        s = connect_tunnel(peers.port["corral"], echo_port)
        s.sendall(HELLO + b"x")
        socks.append(s)
    for s in socks:
        recv_all(s, expect=len(HELLO) + 1)
    time.sleep(0.2)
    after = rss_kib(pid)
    for s in socks:
        s.close()
    return before, after


def run_once(args, total):
    ports, upstreams = start_upstreams(total)
    source_proc = upstreams[0]
    work = tempfile.mkdtemp(prefix="corral-proxy-bench-")
    os.chmod(work, 0o755)
    peers = None
    try:
        peers = Peers(args, ports, work)
        tp = throughput(peers, ports, total, source_proc.pid, args.rounds)
        lat = latency(peers, ports, args.requests)
        idle = idle_tunnels(peers, ports["echo"], args.tunnels)
    finally:
        if peers:
            peers.stop()
        for p in upstreams:
            p.stdin.close()
            p.wait(timeout=30)
        shutil.rmtree(work, ignore_errors=True)
    return tp, lat, idle


LABEL = {"direct": "direct", "corral": "corral (CONNECT)", "squid": "squid 5.7 (CONNECT)",
         "tinyproxy": "tinyproxy 1.11 (CONNECT)", "splice": "bare splice relay",
         "corral-socks5": "corral (SOCKS5)", "ssh-socks5": "ssh -D (SOCKS5)"}


def goals(tp, lat):
    """The issue #24 goals, each as (text, met)."""
    c, sq, sp = tp["corral"]["mibs"], tp["squid"]["mibs"], tp["splice"]["mibs"]
    added = lambda m: lat[m][0] - lat["direct"][0]
    return [
        (f"CONNECT throughput >= 1.5x squid: {c / sq:.2f}x", c >= 1.5 * sq),
        (f"CONNECT throughput >= 0.9x the bare splice relay: {c / sp:.2f}x", c >= 0.9 * sp),
        (f"added p50 latency no worse than squid's: {added('corral'):+.0f} us against {added('squid'):+.0f} us",
         added("corral") <= added("squid")),
        (f"SOCKS5 throughput against ssh -D: {tp['corral-socks5']['mibs'] / tp['ssh-socks5']['mibs']:.2f}x; "
         f"added p50 {added('corral-socks5'):+.0f} us against {added('ssh-socks5'):+.0f} us", None),
    ]


def table(args, tp, lat, idle):
    d = tp["direct"]["mibs"]
    rows = [
        f"| mode | {args.gib:g} GiB, MiB/s (median of {args.rounds}) | of direct | relay CPU s/GiB | endpoints CPU s/GiB "
        "| small GET p50 us (added) | p99 us |",
        "|---|---|---|---|---|---|---|",
    ]
    for m in MODES:
        t = tp[m]
        relay = "" if m == "direct" else f"{t['relay_cpu']:.2f}"
        added = "" if m == "direct" else f" ({lat[m][0] - lat['direct'][0]:+.0f})"
        rows.append(f"| {LABEL[m]} | {t['mibs']:.0f} | {t['mibs'] / d * 100:.0f}% | {relay} | {t['ends_cpu']:.2f} "
                    f"| {lat[m][0]:.0f}{added} | {lat[m][1]:.0f} |")
    rows.append("")
    c = tp["corral"]["mibs"]
    rows.append("Ratios: corral CONNECT / squid " + f"{c / tp['squid']['mibs']:.2f}, / tinyproxy {c / tp['tinyproxy']['mibs']:.2f}, "
                f"/ splice relay {c / tp['splice']['mibs']:.2f}; corral SOCKS5 / ssh -D "
                f"{tp['corral-socks5']['mibs'] / tp['ssh-socks5']['mibs']:.2f}.")
    rows.append("")
    for text, met in goals(tp, lat):
        rows.append(f"- {text}" + ("" if met is None else (": **met**" if met else ": **not met**")))
    before, after = idle
    rows.append(f"- {args.tunnels} idle corral tunnels held: proxy RSS {before} -> {after} KiB "
                f"({(after - before) / args.tunnels:.1f} KiB per tunnel)")
    rows.append("")
    rows.append("Samples, MiB/s: " + "; ".join(f"{m} " + " ".join(f"{x:.0f}" for x in tp[m]["samples"]) for m in MODES))
    return "\n".join(rows)


# The report's prose: what the numbers mean, from the run of 2026-12-03 (docs/benchmarks-proxy.md).
READING = """\
Reading the numbers (the run below, 2026-12-03, one `bench/proxy_bench.py --rounds 5`):

- **The old goal, at least 80% of a direct connection, is retired** (issue 24). On two cores a
  tunnel adds a second loopback hop and a third busy party beside source and sink, so it is not
  reachable by any relay: here corral reached 57% of direct and the bare splice relay, which
  decides nothing at all, 51%. The floor for one extra hop is the splice relay, and the peers
  are squid, tinyproxy and `ssh -D`.
- **This run shared the machine**: load average 5.0 at the start and 6.7 at the end on 2 cores
  (other sessions' builds and a CI timing run), the benchmark at nice 19. Single transfers
  moved 1.7x within a mode (corral 539-895 MiB/s, squid 491-899), so the MiB/s medians are the
  scheduler's share as much as the relays' cost, and the CPU each relay spends per GiB is the
  steadier comparison.
- **Throughput goals**: corral CONNECT / bare splice relay **1.13x** (goal >= 0.9x: met);
  corral / squid **1.01x** (goal >= 1.5x: **not met in this run**); corral / tinyproxy 2.47x.
  Per GiB relayed, squid spent 0.53 s of CPU against corral's 0.31 s (**1.7x**), tinyproxy
  1.69 s (5.5x), and the splice relay 0.26 s (corral spends 1.19x the floor: its relay is
  splice(2) too, plus its event loop). The issue's reference run on this machine type
  (2026-12-01, quiet) read corral 1614 MiB/s, squid 1030 (1.57x). Whether corral holds 1.5x
  squid's throughput takes a run on a quiet machine; under load the two were level.
- **Latency goal** (added p50 no worse than squid's): corral **+204 us** against squid's
  +516 us (**0.40x**: met); tinyproxy +372 us; the splice relay +571 us (a thread pair, two
  pipes and a 1 MiB pipe resize per connection: a throughput floor, not a latency one).
  p99 under this load is scheduling noise (4-41 ms for the relays other than `ssh -D`).
- **SOCKS5**: corral / `ssh -D` throughput **2.59x** (591 against 229 MiB/s; per GiB 0.28 s of
  CPU against 2.69 s for ssh and sshd together, **9.6x**: ssh encrypts every byte). Added p50
  +236 us against +43398 us: every small request through `ssh -D` took about 43 ms, the
  signature of Nagle's algorithm meeting a delayed ACK (OpenSSH sets TCP_NODELAY only for
  interactive sessions, and `ssh -N -D` is not one); not investigated further.
- 1000 idle corral tunnels: 3.3 KiB of RSS each.
- Latency requests run in an order shuffled per request (seeded): with a fixed rotation the
  mode after `ssh -D` (direct) always followed it and measured 5x slower than alone (800 us
  against 145 us). The HTTP responder and the echo server run in a process of their own, as
  the byte source does, so they share no GIL with the measuring client.
"""


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "--serve-source":
        return serve_source(int(sys.argv[2]))
    if len(sys.argv) == 2 and sys.argv[1] == "--serve-small":
        return serve_small()
    ap = argparse.ArgumentParser()
    ap.add_argument("--proxy", required=True, help="path to corral-proxy-bench")
    ap.add_argument("--relay", required=True, help="path to corral-splice-relay")
    ap.add_argument("--gib", type=float, default=1.0)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--requests", type=int, default=2000)
    ap.add_argument("--tunnels", type=int, default=1000)
    ap.add_argument("--repeat", type=int, default=1, help="independent runs, each its own table")
    ap.add_argument("--out", help="write a markdown report here instead of printing tables only")
    args = ap.parse_args()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, max(soft, 4 * args.tunnels + 256)), hard))
    total = int(args.gib * (1 << 30))
    tables = []
    # The machine may be shared: the report says how busy it was.
    load = [open("/proc/loadavg").read().split()[0]]
    for _ in range(args.repeat):
        tables.append(table(args, *run_once(args, total)))
        print(tables[-1] + "\n", flush=True)
    load.append(open("/proc/loadavg").read().split()[0])
    if args.out:
        uname = os.uname()
        commit = subprocess.run(["git", "rev-parse", "--short=12", "HEAD"], capture_output=True, text=True).stdout.strip()
        head = [
            "<!-- Generated by bench/proxy_bench.py; rerun `make bench-proxy` instead of editing. -->",
            "# Egress proxy benchmark: corral against its peers",
            "",
            "One interleaved run (bench/proxy_bench.py) of every way out a client could take on 127.0.0.1:",
            "direct; corral's host-side proxy (`corral-proxy-bench`: the same `net::ProxyServer` that",
            "`corral exec --net proxy` uses, on a TCP port) as an HTTP CONNECT proxy; Debian's squid and",
            "tinyproxy as plain CONNECT proxies (private configs, own ports, started by the bench); a bare",
            "splice(2) relay that decides nothing (bench/splice_relay.c: the floor for one extra hop); and",
            "SOCKS5 through corral against a plain `ssh -D` SOCKS proxy (a private sshd on loopback with",
            "throwaway keys, OpenSSH's default cipher). Throughput: a download of",
            f"{args.gib:g} GiB per tunnel after a real TLS ClientHello (corral's SNI rule runs), median of",
            f"{args.rounds} rounds whose order rotates. Latency: {args.requests} small GETs per mode, one new",
            "connection and tunnel each (CONNECT or SOCKS5 handshake included; the relay has none),",
            "interleaved request by request in a shuffled order; through corral they use a tcp:// grant.",
            "'relay CPU' is the CPU of the proxy's processes per GiB (ssh -D: the ssh client and the sshd",
            "together).",
            "",
            READING,
            "## Machine",
            "",
            f"- Date: {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; commit `{commit}`",
            f"- Kernel {uname.release}, {os.cpu_count()} cores; run as uid {os.getuid()}",
            f"- Load average (1 min): {load[0]} at the start, {load[1]} at the end",
            "",
            f"## Results ({args.repeat} independent run{'s' if args.repeat != 1 else ''})",
            "",
            "",
        ]
        with open(args.out, "w") as f:
            f.write("\n".join(head) + "\n\n".join(tables) + "\n")


if __name__ == "__main__":
    sys.exit(main())
