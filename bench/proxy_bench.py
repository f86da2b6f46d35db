#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Egress proxy benchmark (issue #4): CONNECT-tunnel throughput against a direct loopback
connection, added latency of small forward requests, and memory per idle tunnel.

  bench/proxy_bench.py --proxy build/corral-proxy-bench [--gib 1] [--requests 2000] [--tunnels 1000]

Starts its own upstreams (a byte source, an HTTP responder and an echo server, asyncio on
127.0.0.1) and one corral-proxy-bench, and prints a markdown table. Tunnels must open with a
TLS ClientHello (the proxy checks SNI), so every tunnel client sends a real one first."""
import argparse
import asyncio
import os
import resource
import socket
import ssl
import statistics
import subprocess
import sys
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


def start_upstreams(total):
    loop = asyncio.new_event_loop()
    ports = {}

    async def setup():
        for name, handler in (("http", responder), ("echo", echo)):
            srv = await asyncio.start_server(handler, "127.0.0.1", 0, backlog=4096)
            ports[name] = srv.sockets[0].getsockname()[1]

    loop.run_until_complete(setup())
    threading.Thread(target=loop.run_forever, daemon=True).start()
    ports["source"], source_proc = start_source(total)
    return ports, source_proc


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


def tunnel(proxy_port, authority):
    s = socket.create_connection(("127.0.0.1", proxy_port))
    s.sendall(f"CONNECT {authority} HTTP/1.1\r\nHost: {authority}\r\n\r\n".encode())
    head = b""
    while b"\r\n\r\n" not in head:
        head += s.recv(4096)
    assert head.startswith(b"HTTP/1.1 200"), head
    return s


def cpu_seconds(pid):
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def throughput(proxy_port, source_port, total, proxy_pid, source_pid, rounds=5):
    """Median MiB/s of each mode over interleaved rounds (the order alternates): a shared host's
    noise moves single transfers by 2x, and it hits both modes alike only when they alternate.
    Also the CPU seconds per GiB of each party in each mode, which stay steadier than MiB/s."""
    samples = {"direct": [], "tunnel": []}
    cpu = {mode: {"source": 0.0, "sink": 0.0, "proxy": 0.0} for mode in samples}
    for r in range(rounds):
        order = ("direct", "tunnel") if r % 2 == 0 else ("tunnel", "direct")
        for mode in order:
            before = {"source": cpu_seconds(source_pid), "sink": cpu_seconds(os.getpid()),
                      "proxy": cpu_seconds(proxy_pid)}
            samples[mode].append(throughput_once(proxy_port, source_port, total, mode))
            cpu[mode]["source"] += cpu_seconds(source_pid) - before["source"]
            cpu[mode]["sink"] += cpu_seconds(os.getpid()) - before["sink"]
            cpu[mode]["proxy"] += cpu_seconds(proxy_pid) - before["proxy"]
    result = {mode: statistics.median(v) for mode, v in samples.items()}
    gib = rounds * total / (1 << 30)
    result["cpu_per_gib"] = {mode: {k: v / gib for k, v in parts.items()} for mode, parts in cpu.items()}
    result["proxy_cpu_per_gib"] = result["cpu_per_gib"]["tunnel"]["proxy"]
    return result


def throughput_once(proxy_port, source_port, total, mode):
    if mode == "direct":
        s = socket.create_connection(("127.0.0.1", source_port))
    else:
        s = tunnel(proxy_port, f"127.0.0.1:{source_port}")
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
    t0 = time.perf_counter()
    s.sendall(HELLO)
    got = recv_all(s)
    dt = time.perf_counter() - t0
    s.close()
    assert got == total, (mode, got)
    return total / dt / (1 << 20)


def latency(proxy_port, http_port, n):
    direct, proxied = [], []
    req_direct = b"GET /x HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
    a = f"127.0.0.1:{http_port}"
    req_proxy = f"GET http://{a}/x HTTP/1.1\r\nHost: {a}\r\n\r\n".encode()
    for i in range(n):
        for port, req, out in ((http_port, req_direct, direct), (proxy_port, req_proxy, proxied)):
            t0 = time.perf_counter()
            s = socket.create_connection(("127.0.0.1", port))
            s.sendall(req)
            data = b""
            while chunk := s.recv(4096):
                data += chunk
            out.append((time.perf_counter() - t0) * 1e6)
            s.close()
            assert data.startswith(b"HTTP/1.1 200"), data[:100]
    q = lambda xs, p: statistics.quantiles(xs, n=100)[p - 1]
    return {k: (q(v, 50), q(v, 99)) for k, v in (("direct", direct), ("proxied", proxied))}


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def idle_tunnels(proc, proxy_port, echo_port, n):
    before = rss_kib(proc.pid)
    socks = []
    for i in range(n):
        s = tunnel(proxy_port, f"127.0.0.1:{echo_port}")
        s.sendall(HELLO + b"x")
        socks.append(s)
    for s in socks:
        recv_all(s, expect=len(HELLO) + 1)
    time.sleep(0.2)
    after = rss_kib(proc.pid)
    for s in socks:
        s.close()
    return before, after


def run_once(args, total):
    ports, source_proc = start_upstreams(total)
    grants = [f"https://127.0.0.1:{ports['source']}", f"https://127.0.0.1:{ports['echo']}", f"http://127.0.0.1:{ports['http']}"]
    proc = subprocess.Popen([args.proxy, *grants], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline().strip()
        assert line.startswith("port="), line
        pport = int(line[5:])
        tp = throughput(pport, ports["source"], total, proc.pid, source_proc.pid)
        lat = latency(pport, ports["http"], args.requests)
        before, after = idle_tunnels(proc, pport, ports["echo"], args.tunnels)
    finally:
        proc.stdin.close()
        proc.wait(timeout=30)
        source_proc.stdin.close()
        source_proc.wait(timeout=30)
    return tp, lat, before, after


def table(args, tp, lat, before, after):
    ratio = tp["tunnel"] / tp["direct"] * 100
    c = tp["cpu_per_gib"]
    per = (after - before) / args.tunnels
    return "\n".join([
        "| metric | direct | through corral proxy | goal |",
        "|---|---|---|---|",
        f"| {args.gib:g} GiB download, MiB/s (median of 5 interleaved) | {tp['direct']:.0f} | {tp['tunnel']:.0f} ({ratio:.0f}%) | >= 80% |",
        f"| proxy CPU per GiB tunnelled, s | | {tp['proxy_cpu_per_gib']:.2f} | |",
        f"| source + sink CPU per GiB, s | {c['direct']['source']:.2f} + {c['direct']['sink']:.2f} "
        f"| {c['tunnel']['source']:.2f} + {c['tunnel']['sink']:.2f} | |",
        f"| all parties' CPU per GiB, s | {sum(c['direct'].values()):.2f} | {sum(c['tunnel'].values()):.2f} | |",
        f"| small GET p50, us | {lat['direct'][0]:.0f} | {lat['proxied'][0]:.0f} (+{lat['proxied'][0] - lat['direct'][0]:.0f}) | added < 200 |",
        f"| small GET p99, us | {lat['direct'][1]:.0f} | {lat['proxied'][1]:.0f} (+{lat['proxied'][1] - lat['direct'][1]:.0f}) | |",
        f"| {args.tunnels} idle tunnels held, proxy RSS KiB | | {before} -> {after} ({per:.1f} KiB/tunnel) | |",
    ])


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "--serve-source":
        return serve_source(int(sys.argv[2]))
    ap = argparse.ArgumentParser()
    ap.add_argument("--proxy", required=True, help="path to corral-proxy-bench")
    ap.add_argument("--gib", type=float, default=1.0)
    ap.add_argument("--requests", type=int, default=2000)
    ap.add_argument("--tunnels", type=int, default=1000)
    ap.add_argument("--repeat", type=int, default=1, help="independent runs, each its own table")
    ap.add_argument("--out", help="write a markdown report here instead of printing tables only")
    args = ap.parse_args()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, max(soft, 4 * args.tunnels + 256)), hard))
    total = int(args.gib * (1 << 30))
    tables = []
    for _ in range(args.repeat):
        tables.append(table(args, *run_once(args, total)))
        print(tables[-1] + "\n", flush=True)
    if args.out:
        uname = os.uname()
        commit = subprocess.run(["git", "rev-parse", "--short=12", "HEAD"], capture_output=True, text=True).stdout.strip()
        head = [
            "<!-- Generated by bench/proxy_bench.py; rerun `make bench-proxy` instead of editing. -->",
            "# Egress proxy benchmark",
            "",
            "The host-side egress proxy (`corral-proxy-bench`: the same `net::ProxyServer` that `corral exec --net proxy`",
            "uses, on a TCP port) against a direct loopback connection, in one run: CONNECT-tunnel throughput",
            f"({args.gib:g} GiB from a byte source, after a real TLS ClientHello so the SNI rule runs), added latency",
            f"of {args.requests} small plain-HTTP GETs (one connection each), and proxy RSS with {args.tunnels} idle tunnels open.",
            "Clients and servers are Python on 127.0.0.1 (bench/proxy_bench.py). Tunnels are relayed with splice(2)",
            "(src/net/proxy_splice.cc): bytes never enter user memory.",
            "",
            "Reading the numbers (measured 2026-11-29 and 2026-11-30 on this host):",
            "",
            "- The proxy's CPU per GiB tunnelled is the steady number: 0.24-0.28 s with splice, of which 99% is",
            "  system time: the kernel's TCP work for the second loopback hop (the proxy's sends run the",
            "  client socket's receive path). The buffered 64 KiB read/write relay this replaced cost",
            "  0.46-0.54 s per GiB. Segments on the second hop are full-sized (nstat: about 18 k per GiB per",
            "  hop, as direct), so corking or bigger pipes have nothing left to save.",
            "- The throughput goal (>= 80% of direct) is **not reliably met on this host**: nine runs on",
            "  2026-11-30 (three `make bench-proxy`) gave 61-98%, five of them below 80%; fifteen more that",
            "  afternoon (direct at 2.2-4.3 GiB/s) gave 39-76%, and seven in session 10 (direct at 3.0-4.7",
            "  GiB/s) 37-77%. A `perf` profile of the proxy in a tunnel shows only kernel TCP work (softirq",
            "  and loopback receive processing for the sink, charged to the sender; `skb_splice_from_iter`).",
            "  The tunnel itself is steady (1.6-2.3 GiB/s); the direct transfer swings widely (from 1.7 to over",
            "  4.7 GiB/s) with how the scheduler",
            "  places source and sink on the 2 cores. A tunnel has three busy parties (source, proxy, sink)",
            "  where a direct transfer has two, so when direct runs fast the ratio tends to (direct CPU per",
            "  GiB) / (tunnel CPU per GiB), the 'all parties' row: about 0.55-0.80 s against 0.76-1.01 s.",
            "  On a host with a core to spare the proxy's work runs beside the endpoints instead.",
            "- Until 2026-11-30 the byte source was a thread of the measuring client and shared its GIL;",
            "  the tunnel's extra wake-ups became GIL hand-offs, charged to the proxy (44-62% then). The",
            "  source now runs in its own process.",
            "- Single transfers vary 2-3x between runs here (direct 960-3880 MiB/s), hence medians of 5",
            "  interleaved rounds. Latency: each request is a new connection through the proxy (no keep-alive).",
            "",
            "## Machine",
            "",
            f"- Date: {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; commit `{commit}`",
            f"- Kernel {uname.release}, {os.cpu_count()} cores; run as uid {os.getuid()}",
            "",
            f"## Results ({args.repeat} independent runs)",
            "",
        ]
        Path_text = "\n".join(head) + "\n\n".join(tables) + "\n"
        with open(args.out, "w") as f:
            f.write(Path_text)


if __name__ == "__main__":
    sys.exit(main())
