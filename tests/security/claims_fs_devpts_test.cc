// SPDX-License-Identifier: Apache-2.0
// fs.dev-minimal and tty.no-injection for the sandbox's own pseudo-terminals: openpty works
// inside, on a devpts instance of the sandbox's own, which never reaches the host's terminals,
// cannot push input into the caller's terminal and cannot keep a process past the run.
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <string>

#include "harness.h"

namespace corral::testing {
namespace {

using std::chrono::seconds;

const char kPython[] = "/usr/bin/python3";

// A terminal of the sandbox's own: openpty, a round trip through it, and who owns it.
const char kOpenpty[] = R"PY(
import os, stat
m, s = os.openpty()
os.write(m, b"ping\n")
got = os.read(s, 100)
st = os.fstat(s)
pm = os.stat("/dev/pts/ptmx")
print("ok name=%s echo=%s uid=%d gid=%d mode=%o major=%d same_instance=%d ptmx_mode=%o pts_dev=%d" % (
    os.ttyname(s), got.strip().decode(), st.st_uid, st.st_gid, stat.S_IMODE(st.st_mode),
    os.major(st.st_rdev), int(os.stat(os.path.dirname(os.ttyname(s))).st_dev == os.stat("/dev/pts").st_dev),
    stat.S_IMODE(pm.st_mode), os.stat("/dev/pts").st_dev))
)PY";

TEST(FsDevMinimal, OpenptyWorksOnAPrivateDevptsOwnedByTheSandbox) {
  RunResult r = runCorral({}, {kPython, "-c", kOpenpty});
  ASSERT_TRUE(probeDid(r)) << claim("fs.dev-minimal", "openpty fails inside") << r.describe();
  const ProbeLine p = r.probe();
  EXPECT_EQ(p.get("name"), "/dev/pts/0") << "the first terminal of a fresh instance" << r.describe();
  EXPECT_EQ(p.get("echo"), "ping") << r.describe();
  EXPECT_EQ(p.get("uid"), "1000") << r.describe();
  EXPECT_EQ(p.get("gid"), "1000") << r.describe();
  EXPECT_EQ(p.get("mode"), "620") << r.describe();
  EXPECT_EQ(p.get("major"), "136") << "a real pty slave" << r.describe();
  EXPECT_EQ(p.get("ptmx_mode"), "666") << r.describe();
  struct stat host {};
  ASSERT_EQ(::stat("/dev/pts", &host), 0) << "the host has no /dev/pts to compare with";
  EXPECT_NE(p.num("pts_dev"), static_cast<long long>(host.st_dev))
      << claim("fs.dev-minimal", "/dev/pts inside is the host's devpts instance") << r.describe();
}

// The host's terminals: a pty the test holds open is /dev/pts/N on the host; inside, that
// name does not exist, the instance lists nothing but ptmx, and even the host's /dev/pts
// bound in by an operator (--ro-bind) hands out no terminal (the bind is nodev).
const char kHostPts[] = R"PY(
import os, sys
n = sys.argv[1]
out = ["ok", "entries=" + ",".join(sorted(os.listdir("/dev/pts")))]
for tag, path in (("byname", "/dev/pts/" + n), ("bound", "/opt/hostpts/" + n), ("boundptmx", "/opt/hostpts/ptmx")):
    try:
        os.close(os.open(path, os.O_RDWR | os.O_NOCTTY))
        out.append(tag + "=opened")
    except OSError as e:
        out.append("%s=%d" % (tag, e.errno))
print(" ".join(out))
)PY";

std::string ptsNumber(int slave) {
  char name[64];
  if (::ttyname_r(slave, name, sizeof name) != 0) return "";
  std::string s = name;
  return s.rfind("/dev/pts/", 0) == 0 ? s.substr(9) : "";
}

TEST(FsDevMinimal, TheHostsTerminalsAreUnreachable) {
  Pty pty;
  const std::string n = ptsNumber(pty.slave);
  if (n.empty()) GTEST_SKIP() << "the host's pty is not under /dev/pts";
  RunResult r = runCorral({"--ro-bind", "/dev/pts:/opt/hostpts"}, {kPython, "-c", kHostPts, n});
  ASSERT_TRUE(probeDid(r)) << r.describe();
  const ProbeLine p = r.probe();
  EXPECT_EQ(p.get("entries"), "ptmx") << claim("fs.dev-minimal", "the sandbox's /dev/pts lists host terminals") << r.describe();
  EXPECT_EQ(p.get("byname"), std::to_string(ENOENT)) << claim("fs.dev-minimal", "/dev/pts/" + n + " reached inside") << r.describe();
  EXPECT_EQ(p.get("bound"), std::to_string(EACCES)) << claim("fs.dev-minimal", "the host's pty opened through a bind") << r.describe();
  EXPECT_EQ(p.get("boundptmx"), std::to_string(EACCES)) << claim("fs.dev-minimal", "the host's ptmx opened through a bind")
                                                         << r.describe();
}

// Control: the same script on the host opens the host's terminal by name.
TEST(FsDevMinimal, ControlTheHostsTerminalOpensOnTheHost) {
  Pty pty;
  const std::string n = ptsNumber(pty.slave);
  if (n.empty()) GTEST_SKIP() << "the host's pty is not under /dev/pts";
  RunResult r = run({kPython, "-c", kHostPts, n});
  ASSERT_TRUE(probeDid(r)) << r.describe();
  EXPECT_EQ(r.probe().get("byname"), "opened") << r.describe();
  EXPECT_NE(r.probe().get("entries"), "ptmx") << r.describe();
}

// TIOCSTI on a terminal the command made and took as its controlling terminal, on its own
// slave, and on stdin (the caller's terminal, as the harness passes it): every one refused,
// and nothing reaches the caller's terminal.
const char kInject[] = R"PY(
import fcntl, os, termios, tty
m, s = os.openpty()
tty.setraw(s)  # an injected byte is readable at once, without a newline
out = ["ok"]
for tag, fd in (("slave", s), ("stdin", 0)):
    try:
        fcntl.ioctl(fd, termios.TIOCSTI, b"Z")
        out.append(tag + "=injected")
    except OSError as e:
        out.append("%s=%d" % (tag, e.errno))
pid = os.fork()
if pid == 0:
    os.setsid()
    fcntl.ioctl(s, termios.TIOCSCTTY, 0)
    try:
        fcntl.ioctl(s, termios.TIOCSTI, b"Z")
        os._exit(0)
    except OSError as e:
        os._exit(e.errno)
out.append("ctty=%d" % os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]))
os.set_blocking(s, False)
try:
    out.append("queued=%d" % len(os.read(s, 100)))
except BlockingIOError:
    out.append("queued=0")
print(" ".join(out))
)PY";

TEST(TtyNoInjection, APtyInsideCannotInjectIntoItselfOrTheCallersTerminal) {
  Pty pty;
  RunOptions o;
  o.stdin_fd = pty.slave;
  o.ctty = true;
  RunResult r = runCorral({}, {kPython, "-c", kInject}, o);
  ASSERT_TRUE(probeDid(r)) << r.describe();
  const ProbeLine p = r.probe();
  const std::string eperm = std::to_string(EPERM);
  EXPECT_EQ(p.get("ctty"), eperm) << claim("tty.no-injection", "TIOCSTI on the sandbox's own controlling pty") << r.describe();
  EXPECT_EQ(p.get("slave"), eperm) << r.describe();
  EXPECT_NE(p.get("stdin"), "injected") << claim("tty.no-injection", "TIOCSTI on stdin") << r.describe();
  EXPECT_EQ(p.get("queued"), "0") << claim("tty.no-injection", "bytes were queued on the sandbox's pty") << r.describe();
  EXPECT_EQ(pty.drainSlaveInput(), "") << claim("tty.no-injection", "bytes appeared in the caller's terminal input");
}

// Control: unsandboxed, the controlling-terminal injection goes through (the kernel allows
// TIOCSTI on one's own controlling terminal unless dev.tty.legacy_tiocsti=0).
TEST(TtyNoInjection, ControlAPtyOnTheHostTakesInjectedInput) {
  if (readHostFile("/proc/sys/dev/tty/legacy_tiocsti").starts_with("0"))
    GTEST_SKIP() << "dev.tty.legacy_tiocsti=0: the kernel refuses TIOCSTI for everyone";
  RunResult r = run({kPython, "-c", kInject});
  ASSERT_TRUE(probeDid(r)) << r.describe();
  EXPECT_EQ(r.probe().get("ctty"), "0") << r.describe();
  EXPECT_NE(r.probe().get("queued"), "0") << r.describe();
}

// A new session on a pty of the sandbox's own, with a daemonised tree under it that ignores
// SIGHUP and SIGTERM: nothing of it outlives the run (the pty is no way out of the sandbox's
// pid namespace).
std::string escapeScript(const std::string& probe) {
  return R"PY(
import fcntl, os, sys, termios
m, s = os.openpty()
pid = os.fork()
if pid == 0:
    os.setsid()
    fcntl.ioctl(s, termios.TIOCSCTTY, 0)
    for fd in (0, 1, 2):
        os.dup2(s, fd)
    os.execv(")PY" + probe + R"PY(", [")PY" + probe + R"PY(", "sleep-forever-tree", sys.argv[1]])
buf = b""
while b"ready" not in buf:
    chunk = os.read(m, 4096)
    if not chunk:
        break
    buf += chunk
print("ok " + ("ready" if b"ready" in buf else "noready"))
)PY";
}

std::string pids(const std::vector<pid_t>& list) {
  std::string s;
  for (pid_t p : list) s += (s.empty() ? "" : ",") + std::to_string(p);
  return s;
}

TEST(TtyNoInjection, ASessionOnAPtyInsideDoesNotOutliveTheRun) {
  const std::string marker = uniqueName("pty-marker");
  std::vector<std::string> opts = probeBind();
  opts.insert(opts.end(), {"--timeout", "30s"});
  RunResult r = runCorral(opts, {kPython, "-c", escapeScript(kProbe), marker});
  ASSERT_TRUE(r.probe().word("ready")) << "the tree was never built" << r.describe();
  EXPECT_EQ(r.exit_code, 0) << claim("tty.no-injection", "corral did not end with the command") << r.describe();
  auto left = waitForNoMarker(marker, seconds(5));
  EXPECT_TRUE(left.empty()) << claim("tty.no-injection", "a session on a sandbox pty outlived the run: pids " + pids(left));
}

// Control: the same script on the host leaves the tree running (then the test kills it).
TEST(TtyNoInjection, ControlTheSameSessionOnTheHostSurvives) {
  const std::string marker = uniqueName("pty-marker");
  RunResult r = run({kPython, "-c", escapeScript(probeHostPath()), marker});
  ASSERT_TRUE(r.probe().word("ready")) << r.describe();
  auto left = probeProcessesWithMarker(marker);
  for (pid_t p : left) ::kill(p, SIGKILL);
  EXPECT_FALSE(left.empty()) << "the daemonised tree did not survive even on the host";
}

}  // namespace
}  // namespace corral::testing
