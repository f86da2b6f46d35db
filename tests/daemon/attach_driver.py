# SPDX-License-Identifier: Apache-2.0
"""Drives `corral session attach` as a person at a terminal would: on a pseudo-terminal of
python's pty module, typing, resizing it (TIOCSWINSZ on the master: the CLI gets SIGWINCH)
and reading the screen.

    attach_driver.py CORRAL SESSION MODE

  shell   types `echo $((6*7))`, `stty size` (30 90), resizes to 50x132, `stty size` again,
          `exit 5`; prints {"answer", "sizes", "status", "restored"}
  signal  SIGTERM to the CLI while the shell runs; prints {"status", "restored"}
"""
import fcntl
import json
import os
import pty
import re
import select
import signal
import struct
import sys
import termios
import time

corral, session, mode = sys.argv[1], sys.argv[2], sys.argv[3]


def set_size(fd, rows, cols):
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))


master, slave = pty.openpty()
set_size(master, 30, 90)
before = termios.tcgetattr(slave)
pid = os.fork()
if pid == 0:
    os.setsid()
    fcntl.ioctl(slave, termios.TIOCSCTTY, 0)
    for fd in (0, 1, 2):
        os.dup2(slave, fd)
    os.close(master)
    os.execv(corral, [corral, "session", "attach", session])

screen = b""


def read_until(pattern, timeout=60):
    """Reads the screen until pattern (bytes regex) matches what came after the last call."""
    global screen
    start = len(screen)
    until = time.monotonic() + timeout
    while time.monotonic() < until:
        m = re.search(pattern, screen[start:])
        if m:
            return m
        r, _, _ = select.select([master], [], [], 0.2)
        if r:
            try:
                screen += os.read(master, 65536)
            except OSError:
                break
    return None


# An answer starts a line, or follows the prompt: the echo of a line typed ahead may come before
# the previous command's prompt ("stty size\r\n$ 24 80").
AFTER_LINE = rb"(?:\n|[#$] )"


def type_line(text):
    os.write(master, text.encode() + b"\r")


def restored():
    now = termios.tcgetattr(slave)
    return now[3] == before[3] and now[0] == before[0] and now[1] == before[1]


def wait_status(timeout=60):
    until = time.monotonic() + timeout
    while time.monotonic() < until:
        got, st = os.waitpid(pid, os.WNOHANG)
        if got:
            return os.waitstatus_to_exitcode(st)
        read_until(rb"$^", 0.2)  # keep the screen drained
    os.kill(pid, signal.SIGKILL)
    return None


if mode == "shell":
    type_line("echo $((6*7))")
    answer = read_until(AFTER_LINE + rb"(42)\r?\n")
    type_line("stty size")
    sizes = []
    m = read_until(AFTER_LINE + rb"(\d+ \d+)\r?\n")
    sizes.append(m.group(1).decode() if m else None)
    set_size(master, 50, 132)
    os.kill(pid, signal.SIGWINCH)  # as the kernel does for a foreground job; sent again to be sure
    seen = None
    for _ in range(50):
        type_line("stty size")
        m = read_until(AFTER_LINE + rb"(\d+ \d+)\r?\n", 2)
        if m and m.group(1) == b"50 132":
            seen = "50 132"
            break
    sizes.append(seen)
    type_line("exit 5")
    status = wait_status()
    print(json.dumps({"answer": answer.group(1).decode() if answer else None, "sizes": sizes, "status": status,
                      "restored": restored(), "screen_tail": screen[-300:].decode(errors="replace")}))
elif mode == "signal":
    type_line("echo ready-$((2+3))")
    ok = read_until(rb"ready-5")
    raw_meanwhile = not restored()
    os.kill(pid, signal.SIGTERM)
    status = wait_status()
    print(json.dumps({"ready": bool(ok), "raw_meanwhile": raw_meanwhile, "status": status, "restored": restored()}))
