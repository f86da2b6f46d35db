# SPDX-License-Identifier: Apache-2.0
"""Re-attaching a session terminal (docs/api.md, Terminals: re-attaching): raw frames over the
daemon's UNIX socket, connections dropped and opened again.

    terminal_reattach.py SOCKET SESSION MODE [ARGS]

Modes (each prints one JSON line on stdout):
  shell            `sh -i`: its pid, a command typed, the connection dropped while it writes,
                   re-attached: {"pid1", "pid2", "state_detached", "scrollback", "replayed",
                   "second", "first_alive", "control", "size", "exit"}
  flood DAEMON_PID S   `yes` detached for S seconds while the daemon's RSS is sampled, then
                   re-attached: {"rss_before", "rss_peak", "dropped", "scrollback"}
  exited           the command ends while detached: {"scrollback", "replayed", "exit", "after"}
  cli CORRAL       a shell detached here, re-attached by `corral session attach ID --command N` on
                   a python pty: {"pid1", "pid2", "replayed", "status", "listed"}
  restart-attached / restart-detached
                   the daemon is killed (kill -9) and restarted by the caller while a shell is
                   attached, or detached: this prints "KILL", the caller kills the daemon, waits,
                   starts it again and then closes this script's stdin. The shell writes while no
                   daemon runs; a new attach gets it: {"pid1", "pid2", "old_closed", "seen",
                   "second_status", "second", "exit"}
  restart-ended    a command that ends while no daemon runs: its first attach after the restart
                   gets the saved scrollback and the report, the next is refused:
                   {"first_status", "first_exit", "after_status", "after", "report"}
  restart-scrollback / restart-flood / restart-hostile K
                   a detached terminal's scrollback across a kill -9 (the caller kills on
                   "KILL N...", may spoil or remove cmds/N/terminal.ring, creates
                   /workspace/go-down, restarts, closes stdin): scrollback: a line read by the old
                   daemon and one written while none ran {"scrollback", "replayed", "live_before",
                   "seen", "exit"}; flood: 560,012 bytes detached, the last 64 KiB exactly
                   {"info_before", "scrollback", "exact", "exit"}; hostile: K+1 shells, the caller
                   spoils the first K rings {"terms": [{"n", "first_status", "first", "replayed",
                   "alive"}]}
"""
import json
import os
import pty
import re
import select
import socket
import struct
import sys
import time

sock_path, session, mode = sys.argv[1], sys.argv[2], sys.argv[3]
DATA, RESIZE, EXIT, ERROR, SCROLLBACK = 1, 2, 3, 4, 5
UPGRADE = b"Connection: Upgrade\r\nUpgrade: corral-terminal.v1\r\n"


def http(method, path, body=None, extra=b""):
    """(status, head, rest, socket): the response head read, the socket left open."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(sock_path)
    data = json.dumps(body).encode() if body is not None else b""
    head = f"{method} {path} HTTP/1.1\r\nHost: corral\r\n".encode() + extra
    if body is not None:
        head += f"Content-Type: application/json\r\nContent-Length: {len(data)}\r\n".encode()
    s.sendall(head + b"\r\n" + data)
    buf = b""
    while b"\r\n\r\n" not in buf:
        got = s.recv(4096)
        if not got:
            raise SystemExit(f"{method} {path}: closed before the head: {buf!r}")
        buf += got
    h, rest = buf.split(b"\r\n\r\n", 1)
    return int(h.split(b" ")[1]), h.decode(), rest, s


def call(method, path, body=None):
    status, head, rest, s = http(method, path, body)
    length = int(re.search(r"(?i)content-length: *(\d+)", head).group(1))
    while len(rest) < length:
        rest += s.recv(4096)
    s.close()
    return status, json.loads(rest)


def start(argv):
    status, j = call("POST", f"/v1/sessions/{session}/commands", {"argv": argv, "tty": {"rows": 24, "cols": 80}})
    if status != 201:
        raise SystemExit(f"start: {status} {j}")
    return j["id"]


def command(n):
    return call("GET", f"/v1/sessions/{session}/commands/{n}")[1]


def attach(n):
    """A Reader on a 101, or (status, body) of a refusal."""
    status, head, rest, s = http("GET", f"/v1/sessions/{session}/commands/{n}/terminal", extra=UPGRADE)
    if status == 101:
        return Reader(s, rest)
    length = int(re.search(r"(?i)content-length: *(\d+)", head).group(1))
    while len(rest) < length:
        rest += s.recv(4096)
    s.close()
    return status, json.loads(rest)


def frame(t, payload=b""):
    return struct.pack(">BI", t, len(payload)) + payload


def wait_for(pred, what, limit=60):
    until = time.monotonic() + limit
    while time.monotonic() < until:
        got = pred()
        if got:
            return got
        time.sleep(0.05)
    raise SystemExit("never: " + what)


class Reader:
    def __init__(self, s, early):
        self.s, self.buf, self.out = s, early, b""

    def send(self, data):
        self.s.sendall(frame(DATA, data))

    def next(self, timeout=60):
        self.s.settimeout(timeout)
        while True:
            if len(self.buf) >= 5:
                t, n = struct.unpack(">BI", self.buf[:5])
                if len(self.buf) >= 5 + n:
                    p, self.buf = self.buf[5:5 + n], self.buf[5 + n:]
                    return t, p
            got = self.s.recv(65536)
            if not got:
                return None
            self.buf += got

    def until(self, pattern):
        """Data frames until the output so far matches pattern: the match."""
        while True:
            m = re.search(pattern, self.out)
            if m:
                self.out = self.out[m.end():]
                return m
            f = self.next()
            if f is None or f[0] != DATA:
                raise SystemExit(f"until {pattern!r}: {f!r} after {self.out!r}")
            self.out += f[1]

    def replay(self):
        """A re-attach's scrollback frame and the data frame after it: (info, bytes)."""
        f = self.next()
        if f is None or f[0] != SCROLLBACK:
            raise SystemExit(f"no scrollback frame first: {f!r}")
        info = json.loads(f[1])
        data = b""
        if info["scrollback_bytes"]:
            g = self.next()
            if g is None or g[0] != DATA:
                raise SystemExit(f"no scrollback data: {g!r}")
            data = g[1]
        return info, data

    def until_exit(self):
        while True:
            f = self.next()
            if f is None:
                return None
            if f[0] == DATA:
                self.out += f[1]
            elif f[0] in (EXIT, ERROR):
                return json.loads(f[1])

    def close(self):
        self.s.close()


def detached(n, extra=lambda t: True):
    def check():
        t = command(n).get("terminal")
        return t if t and t["state"] == "detached" and extra(t) else None
    return check


def reattach(b):
    """The first frames of an attach: (scrollback info or None, replayed bytes). After a restart
    a terminal that was detached begins with the old daemon's saved scrollback; one that was
    attached (or whose ring file is gone) with live output."""
    f = b.next()
    if f is not None and f[0] == SCROLLBACK:
        info = json.loads(f[1])
        return info, (b.next()[1] if info["scrollback_bytes"] else b"")
    if f is not None and f[0] == DATA:
        b.out += f[1]
    return None, b""


def go(path):
    """Creates path in the session's /tmp by a command of its own (no terminal)."""
    status, j = call("POST", f"/v1/sessions/{session}/commands", {"argv": ["touch", path]})
    if status != 201:
        raise SystemExit(f"go: {status} {j}")


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        return int(re.search(r"VmRSS:\s+(\d+)", f.read()).group(1))


SHELL = ["sh", "-c", "PS1='$ ' exec sh -i"]


def attached_shell():
    """An interactive shell started on a terminal and attached: (command, Reader, its pid)."""
    n = start(SHELL)
    a = attach(n)
    a.send(b"echo pid=$$\n")
    return n, a, a.until(rb"pid=(\d+)\r\n").group(1).decode()

if mode == "shell":
    n, a, pid1 = attached_shell()
    # Output written after the connection closed (once /tmp/go-shell exists): the scrollback's.
    a.send(b"while [ ! -e /tmp/go-shell ]; do sleep 0.05; done; echo written-while-$((6*7))-detached\n")
    a.until(rb"-detached\r\n")  # the line's echo
    a.close()
    state = wait_for(detached(n), "the terminal detached")
    go("/tmp/go-shell")
    wait_for(detached(n, lambda t: t["scrollback_bytes"] >= 25), "the detached shell wrote")
    b = attach(n)
    info, replayed = b.replay()
    # A second client while b is attached: refused, b unharmed.
    second = attach(n)
    b.send(b"echo first-still-$((1+1))\n")
    first_alive = bool(b.until(rb"first-still-2\r\n"))
    b.send(b"echo pid=$$\n")
    pid2 = b.until(rb"pid=(\d+)\r\n").group(1).decode()
    # Resize works again after a re-attach.
    b.s.sendall(frame(RESIZE, struct.pack(">HH", 40, 120)))
    b.send(b"stty size\n")
    # The echo of what is typed may come before or after the last command's prompt: the answer
    # follows one or the other.
    size = b.until(rb"(?:\r\n|\$ )(\d+ \d+)\r\n").group(1).decode()
    b.close()
    # Control: once b has gone, an attach succeeds (so the refusal above was the one-client rule).
    wait_for(detached(n), "the terminal detached again")
    c = attach(n)
    control = isinstance(c, Reader)
    if control:
        c.replay()
        c.send(b"exit 3\n")
        end = c.until_exit()
    else:
        end = None
    print(json.dumps({"pid1": pid1, "pid2": pid2, "state_detached": state, "scrollback": info,
                      "replayed": replayed.decode(errors="replace"),
                      "second": second[1] if isinstance(second, tuple) else "attached",
                      "second_status": second[0] if isinstance(second, tuple) else 101,
                      "first_alive": first_alive, "control": control, "size": size, "exit": end}))
elif mode == "flood":
    daemon_pid, seconds = int(sys.argv[4]), float(sys.argv[5])
    n = start(["yes", "corral-terminal-flood-0123456789"])
    a = attach(n)
    a.until(rb"flood")
    a.close()
    wait_for(detached(n), "the flood detached")
    rss_before = rss_kib(daemon_pid)
    peak, d0 = rss_before, command(n)["terminal"]["dropped_bytes"]
    t0 = time.monotonic()
    while time.monotonic() - t0 < seconds:
        time.sleep(0.1)
        peak = max(peak, rss_kib(daemon_pid))
    dropped = command(n)["terminal"]["dropped_bytes"] - d0
    b = attach(n)
    info, data = b.replay()
    call("POST", f"/v1/sessions/{session}/commands/{n}/signal", {"signal": 9})
    end = b.until_exit()
    print(json.dumps({"rss_before": rss_before, "rss_peak": peak, "dropped": dropped, "scrollback": info,
                      "data_len": len(data), "exit": end}))
elif mode == "exited":
    n = start(["sh", "-c", "while [ ! -e /tmp/go-exited ]; do sleep 0.05; done; echo ended-while-detached-$((3+4)); exit 9"])
    a = attach(n)
    a.close()
    wait_for(detached(n), "the terminal detached")
    go("/tmp/go-exited")
    wait_for(detached(n, lambda t: t["ended"]), "the command ended while detached")
    c = attach(n)
    info, replayed = c.replay()
    end = c.until_exit()
    after = attach(n)
    print(json.dumps({"scrollback": info, "replayed": replayed.decode(errors="replace"), "exit": end,
                      "after_status": after[0] if isinstance(after, tuple) else 101,
                      "after": after[1] if isinstance(after, tuple) else None}))
elif mode in ("restart-attached", "restart-detached"):
    n, a, pid1 = attached_shell()
    # Written 2 s on: after the kill, before the restart (the caller waits longer than that).
    a.send(b"sleep 2; echo written-while-$((6*7))-no-daemon\n")
    a.until(rb"-no-daemon\r\n")  # the line's echo
    if mode == "restart-detached":
        a.close()
        wait_for(detached(n), "the terminal detached")
    print("KILL", flush=True)
    sys.stdin.read()  # the daemon was killed and started again
    old_closed = True
    if mode == "restart-attached":
        try:
            old_closed = a.next(timeout=10) is None
        except OSError:
            pass
        a.close()
    b = attach(n)
    if not isinstance(b, Reader):
        raise SystemExit(f"no attach after the restart: {b!r}")
    _, replayed = reattach(b)
    b.out = replayed + b.out  # written while no daemon ran: live (or saved, had the old one read it)
    seen = b.until(rb"written-while-42-no-daemon").group(0).decode()
    second = attach(n)  # one client at a time, across the restart too
    b.send(b"echo pid=$$\n")
    pid2 = b.until(rb"pid=(\d+)\r\n").group(1).decode()
    b.send(b"exit 5\n")
    end = b.until_exit()
    print(json.dumps({"pid1": pid1, "pid2": pid2, "old_closed": old_closed, "seen": seen,
                      "second_status": second[0] if isinstance(second, tuple) else 101,
                      "second": second[1] if isinstance(second, tuple) else "attached", "exit": end}))
elif mode == "restart-ended":
    n = start(["sh", "-c", "sleep 1; exit 6"])
    a = attach(n)
    a.close()
    wait_for(detached(n), "the terminal detached")
    print("KILL", flush=True)
    sys.stdin.read()
    first, first_exit = attach(n), None
    if isinstance(first, Reader):  # the saved (empty) scrollback, then the report
        first.replay()
        first_exit = first.until_exit()
        first.close()
    after = attach(n)
    print(json.dumps({"first_status": first[0] if isinstance(first, tuple) else 101, "first_exit": first_exit,
                      "after_status": after[0] if isinstance(after, tuple) else 101,
                      "after": after[1] if isinstance(after, tuple) else None, "report": command(n)}))
elif mode in ("restart-scrollback", "restart-hostile"):
    count = int(sys.argv[4]) + 1 if mode == "restart-hostile" else 1
    shells = []
    for i in range(count):
        n, a, _ = attached_shell()
        # A line read by the old daemon while detached; one written once it was killed.
        a.send(b"while [ ! -e /tmp/go-sb ]; do sleep 0.05; done; echo before-the-$((6*7))-kill-%d; " % i +
               b"while [ ! -e /workspace/go-down ]; do sleep 0.05; done; echo written-while-$((6*7))-no-daemon\n")
        a.until(rb"-no-daemon\r\n")  # the line's echo
        a.close()
        shells.append(n)
    for n in shells:
        wait_for(detached(n), "the terminal detached")
    go("/tmp/go-sb")
    for n in shells:
        wait_for(detached(n, lambda t: t["scrollback_bytes"] >= len(b"before-the-42-kill-0\r\n")), "the old daemon read the line")
    print("KILL " + " ".join(map(str, shells)), flush=True)
    sys.stdin.read()  # killed, spoilt or not, restarted

    terms = []
    for i, n in enumerate(shells):
        b = attach(n)
        t = {"n": n, "first_status": 101, "first": None}
        if not isinstance(b, Reader):
            t["first_status"], t["first"] = b
            b = attach(n)  # the next attach has the terminal, without the refused file
            if not isinstance(b, Reader):
                raise SystemExit(f"no attach after a refused ring: {b!r}")
        info, replayed = reattach(b)
        t["scrollback"], t["replayed"] = info, replayed.decode(errors="replace")
        m = b.until(rb"written-while-42-no-daemon")
        t["seen"] = m.group(0).decode()
        t["live_before"] = b"before-the-42-kill" in m.string[:m.start()]
        b.send(b"echo alive-$((40+%d))\n" % i)
        t["alive"] = bool(b.until(b"alive-%d\r\n" % (40 + i)))
        b.send(b"exit 5\n")
        t["exit"] = b.until_exit()
        terms.append(t)
    if mode == "restart-scrollback":
        print(json.dumps(terms[0]))
    else:
        print(json.dumps({"terms": terms}))
elif mode == "restart-flood":
    # Gated until detached, so every byte goes through the old daemon's ring.
    n = start(["sh", "-c", "while [ ! -e /tmp/go-flood ]; do sleep 0.05; done; seq -f 'flood-%06g' 1 40000; echo flood-done; "
                           "while [ ! -e /workspace/go-down ]; do sleep 0.05; done"])
    attach(n).close()
    wait_for(detached(n), "the flood detached")
    go("/tmp/go-flood")
    expected = b"".join(b"flood-%06d\r\n" % i for i in range(1, 40001)) + b"flood-done\r\n"
    info_before = wait_for(detached(n, lambda t: t["scrollback_bytes"] + t["dropped_bytes"] >= len(expected)), "the flood was read")
    print(f"KILL {n}", flush=True)
    sys.stdin.read()
    b = attach(n)
    if not isinstance(b, Reader):
        raise SystemExit(f"no attach after the restart: {b!r}")
    info, data = b.replay()
    end = b.until_exit()  # the caller's go-down ends it
    print(json.dumps({"info_before": info_before, "scrollback": info, "data_len": len(data),
                      "expected_len": len(expected), "exact": data == expected[-len(data):] and len(data) == 65536,
                      "tail": data[-40:].decode(errors="replace"), "exit": end}))
elif mode == "cli":
    corral = sys.argv[4]
    n, a, pid1 = attached_shell()
    a.send(b"while [ ! -e /tmp/go-cli ]; do sleep 0.05; done; echo after-the-$((2*3))-drop\n")
    a.until(rb"-drop\r\n")  # the line's echo
    a.close()
    wait_for(detached(n), "the terminal detached")
    go("/tmp/go-cli")
    wait_for(detached(n, lambda t: t["scrollback_bytes"] >= 16), "the detached shell wrote")
    import subprocess
    shown = json.loads(subprocess.run([corral, "session", "show", session, "--json"], capture_output=True, check=True).stdout)
    listed = [t for t in shown.get("terminals", []) if t["command"] == n]
    pid, fd = pty.fork()
    if pid == 0:
        os.execv(corral, [corral, "session", "attach", session, "--command", str(n)])
    screen = b""

    def read_until(pattern):
        global screen
        until = time.monotonic() + 60
        while time.monotonic() < until:
            m = re.search(pattern, screen)
            if m:
                return m
            r, _, _ = select.select([fd], [], [], 1)
            if r:
                try:
                    screen += os.read(fd, 65536)
                except OSError:
                    break
        raise SystemExit(f"cli: never {pattern!r}: {screen!r}")

    read_until(rb"after-the-6-drop")
    replayed = True
    os.write(fd, b"echo pid=$$\n")
    pid2 = read_until(rb"(?:\n|\$ )pid=(\d+)").group(1).decode()  # after the echo, or the prompt that followed it
    os.write(fd, b"exit 4\n")
    _, st = os.waitpid(pid, 0)
    print(json.dumps({"pid1": pid1, "pid2": pid2, "replayed": replayed, "status": os.waitstatus_to_exitcode(st), "listed": listed}))
