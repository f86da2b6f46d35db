// SPDX-License-Identifier: Apache-2.0
// fd.stdio-no-host-metadata (claims/fd.toml): the command gets the caller's stdio only as
// objects it cannot change on the host. A regular file or a terminal would let it fchmod,
// utime, setxattr or truncate the caller's inode (rootless, the sandbox uid is the caller's),
// so those come through pipes corral relays. Run as root and rootless; the rootless pass is
// the real attack (as root the sandbox uid owns nothing on the host).
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <string>

#include "harness.h"

namespace corral::testing {
namespace {

// Tries every metadata change through fds 0 and 1, then copies stdin to stdout.
const char kTamper[] = R"PY(
import os, sys
for fd in (0, 1):
    for what, f in (("fchmod", lambda: os.fchmod(fd, 0o777)),
                    ("utime", lambda: os.utime("/proc/self/fd/%d" % fd, (0, 0))),
                    ("setxattr", lambda: os.setxattr("/proc/self/fd/%d" % fd, "user.corral_evil", b"1")),
                    ("ftruncate", lambda: os.ftruncate(fd, 0) if fd == 1 else None)):
        try:
            f()
        except OSError:
            pass
sys.stdout.write("relayed:" + sys.stdin.read())
)PY";

struct HostFiles {
  TempDir dir{"stdio"};
  struct Fd {
    int fd = -1;
    ~Fd() {
      if (fd >= 0) ::close(fd);
    }
  } in, out;
  struct stat in_before {}, out_before {};
  HostFiles() {
    dir.write("in.txt", "hello\n", 0600);
    dir.write("out.txt", "old\n", 0600);
    in.fd = ::open((dir / "in.txt").c_str(), O_RDONLY | O_CLOEXEC);
    out.fd = ::open((dir / "out.txt").c_str(), O_WRONLY | O_APPEND | O_CLOEXEC);
    // A known old mtime, so a utime to 0 or to now is seen.
    const timespec old[2] = {{1'000'000'000, 0}, {1'000'000'000, 0}};
    ::utimensat(AT_FDCWD, (dir / "in.txt").c_str(), old, 0);
    ::utimensat(AT_FDCWD, (dir / "out.txt").c_str(), old, 0);
    ::stat((dir / "in.txt").c_str(), &in_before);
    ::stat((dir / "out.txt").c_str(), &out_before);
  }
  RunOptions stdio() const {
    RunOptions o;
    o.stdin_fd = in.fd;
    o.leak_fds = {{out.fd, 1}};
    return o;
  }
  // "" when unchanged, else what changed.
  std::string changes(const std::string& name, const struct stat& before) const {
    struct stat now {};
    if (::stat((dir / name).c_str(), &now) != 0) return name + " is gone";
    std::string what;
    if ((now.st_mode & 07777) != (before.st_mode & 07777)) what += " mode";
    if (now.st_mtim.tv_sec != before.st_mtim.tv_sec) what += " mtime";
    char v[8];
    if (::getxattr((dir / name).c_str(), "user.corral_evil", v, sizeof v) >= 0) what += " xattr";
    return what.empty() ? "" : name + ":" + what;
  }
};

TEST(FdStdioNoHostMetadata, FileStdioKeepsItsModeTimesXattrsAndContent) {
  HostFiles h;
  ASSERT_GE(h.in.fd, 0);
  ASSERT_GE(h.out.fd, 0);
  TempDir ws("ws");
  RunResult r = runCorral({"--workspace", ws.path()}, {"python3", "-c", kTamper}, h.stdio());
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_EQ(h.changes("in.txt", h.in_before), "") << claim("fd.stdio-no-host-metadata", "stdin's host file changed");
  // mtime of out.txt moves with the relayed write itself; mode and xattrs must not.
  std::string out_changes = h.changes("out.txt", h.out_before);
  EXPECT_EQ(out_changes.find("mode"), std::string::npos) << claim("fd.stdio-no-host-metadata", out_changes);
  EXPECT_EQ(out_changes.find("xattr"), std::string::npos) << claim("fd.stdio-no-host-metadata", out_changes);
  // Relayed in full, appended, never truncated.
  EXPECT_EQ(h.dir.read("out.txt"), "old\nrelayed:hello\n") << claim("fd.stdio-no-host-metadata", "stdout truncated or lost");
}

// Control: the same script run directly on the host with the same fds does change them, so
// the checks above can fail.
TEST(FdStdioNoHostMetadata, ControlTheScriptChangesTheFilesWhenHandedThemDirectly) {
  HostFiles h;
  RunResult r = run({"/usr/bin/python3", "-c", kTamper}, h.stdio());
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_NE(h.changes("in.txt", h.in_before).find("mode"), std::string::npos) << "control: fchmod had no effect";
  EXPECT_EQ(h.dir.read("out.txt"), "relayed:hello\n") << "control: ftruncate had no effect";
}

// Reopens stdin for writing and stdout for reading through /proc/self/fd. On a pipe the
// caller's uid owns (every pipe of a rootless caller: the sandbox uid is the caller's) the
// first feeds whatever host process reads that stdin after corral, the second takes bytes
// another writer meant for the real reader.
const char kReopen[] = R"PY(
import os, sys
got = []
try:
    w = os.open("/proc/self/fd/0", os.O_WRONLY | os.O_NONBLOCK)
    os.write(w, b"INJECTED\n")
    got.append("wrote-stdin")
except OSError:
    got.append("no-write")
try:
    r = os.open("/proc/self/fd/1", os.O_RDONLY | os.O_NONBLOCK)
    got.append("read-stdout:" + os.read(r, 100).decode(errors="replace"))
except OSError:
    got.append("no-read")
sys.stderr.write(" ".join(got) + "\n")
print("done")
)PY";

struct PipeStdio {
  int in[2] = {-1, -1}, out[2] = {-1, -1};
  PipeStdio() {
    if (::pipe2(in, O_CLOEXEC) != 0 || ::pipe2(out, O_CLOEXEC) != 0) return;
    (void)!::write(out[1], "HOSTDATA\n", 9);  // already in the pipe for the real reader
  }
  ~PipeStdio() {
    for (int fd : {in[0], in[1], out[0], out[1]})
      if (fd >= 0) ::close(fd);
  }
  RunOptions stdio() const {
    RunOptions o;
    o.stdin_fd = in[0];
    o.leak_fds = {{out[1], 1}};
    return o;
  }
  static std::string drain(int fd) {
    ::fcntl(fd, F_SETFL, O_NONBLOCK);
    std::string s;
    char buf[256];
    for (ssize_t n; (n = ::read(fd, buf, sizeof buf)) > 0;) s.append(buf, static_cast<size_t>(n));
    return s;
  }
  std::string leftInStdin() const { return drain(in[0]); }
  std::string stdoutSeen() {
    ::close(out[1]);
    out[1] = -1;
    return drain(out[0]);
  }
};

TEST(FdStdioNoHostMetadata, APipeIsNeverReopenedTheOtherWay) {
  PipeStdio p;
  ASSERT_GE(p.out[0], 0);
  TempDir ws("ws");
  RunResult r = runCorral({"--workspace", ws.path()}, {"python3", "-c", kReopen}, p.stdio());
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_EQ(p.leftInStdin(), "") << claim("fd.stdio-no-host-metadata", "the command wrote into the caller's stdin pipe");
  EXPECT_EQ(p.stdoutSeen(), "HOSTDATA\ndone\n")
      << claim("fd.stdio-no-host-metadata", "the command read the caller's stdout pipe") << r.describe();
}

// Control: handed the same pipes directly (as the caller's uid), the script does both.
TEST(FdStdioNoHostMetadata, ControlTheScriptReopensPipesHandedToItDirectly) {
  PipeStdio p;
  RunResult r = run({"/usr/bin/python3", "-c", kReopen}, p.stdio());
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_EQ(p.leftInStdin(), "INJECTED\n") << r.describe();
  EXPECT_EQ(p.stdoutSeen(), "done\n") << "control: HOSTDATA was not taken";
}

// A pipe handed over would share the caller's pipe with the command: O_NONBLOCK set inside
// stayed set on a shared open file description, so the next host writer lost data to EAGAIN,
// and F_SETPIPE_SZ resizes the pipe itself, for good. No pipe is handed over: the command sets
// both on corral's relay pipes (F_SETPIPE_SZ is allowed), and the caller's pipes stay as they were.
const char kPipeFlags[] = R"PY(
import fcntl, os, sys
got = []
for fd in (0, 1):
    fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) | os.O_NONBLOCK)
    try:
        got.append("resized-%d" % fcntl.fcntl(fd, 1031, 4096))
    except OSError as e:
        got.append("resize-errno-%d" % e.errno)
sys.stderr.write(" ".join(got) + "\n")
print("done")
)PY";

struct PipeState {
  int nonblocking_in, nonblocking_out, size_in, size_out;
  explicit PipeState(const PipeStdio& p)
      : nonblocking_in(::fcntl(p.in[0], F_GETFL) & O_NONBLOCK),
        nonblocking_out(::fcntl(p.out[1], F_GETFL) & O_NONBLOCK),
        size_in(::fcntl(p.in[0], F_GETPIPE_SZ)),
        size_out(::fcntl(p.out[1], F_GETPIPE_SZ)) {}
};

// The caller's pipes after a run of kPipeFlags: flags and sizes as before, resizing allowed
// inside, the output relayed.
void expectPipesUnchanged(PipeStdio& p, const PipeState& before, const RunResult& r) {
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  const PipeState after(p);
  EXPECT_EQ(after.nonblocking_in, 0) << claim("fd.stdio-no-host-metadata", "the caller's stdin pipe was left non-blocking")
                                     << r.describe();
  EXPECT_EQ(after.nonblocking_out, 0) << claim("fd.stdio-no-host-metadata", "the caller's stdout pipe was left non-blocking")
                                      << r.describe();
  EXPECT_EQ(after.size_in, before.size_in) << claim("fd.stdio-no-host-metadata", "the caller's stdin pipe was resized");
  EXPECT_EQ(after.size_out, before.size_out) << claim("fd.stdio-no-host-metadata", "the caller's stdout pipe was resized");
  EXPECT_NE(r.err.find("resized-4096 resized-4096"), std::string::npos)
      << "F_SETPIPE_SZ on the command's own (relay) pipes must work" << r.describe();
  EXPECT_EQ(p.stdoutSeen(), "HOSTDATA\ndone\n") << r.describe();
}

TEST(FdStdioNoHostMetadata, APipeKeepsItsBlockingModeAndSizeForTheHost) {
  PipeStdio p;
  ASSERT_GE(p.out[0], 0);
  const PipeState before(p);
  ASSERT_EQ(before.nonblocking_in | before.nonblocking_out, 0);
  TempDir ws("ws");
  RunResult r = runCorral({"--workspace", ws.path()}, {"python3", "-c", kPipeFlags}, p.stdio());
  expectPipesUnchanged(p, before, r);
}

// Rootless, corral may not reopen a pipe another user made, and used to hand it over as it
// was: the command then resized the other user's pipe. It is relayed like any other.
TEST(FdStdioNoHostMetadata, RootAnotherUsersPipeIsRelayedNotHandedOver) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to hand nobody a pipe of root's";
  PipeStdio p;
  ASSERT_GE(p.out[0], 0);
  const PipeState before(p);
  RunOptions o = p.stdio();
  o.as_user = kNobody;
  RunResult r = run(corralArgv({}, {"/usr/bin/python3", "-c", kPipeFlags}, false), o);
  expectPipesUnchanged(p, before, r);
}

// Control: handed the same pipes directly, the script leaves both non-blocking and resized.
TEST(FdStdioNoHostMetadata, ControlTheScriptChangesPipesHandedToItDirectly) {
  PipeStdio p;
  const PipeState before(p);
  RunResult r = run({"/usr/bin/python3", "-c", kPipeFlags}, p.stdio());
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  const PipeState after(p);
  EXPECT_NE(after.nonblocking_in, 0);
  EXPECT_NE(after.nonblocking_out, 0);
  EXPECT_NE(after.size_in, before.size_in);
  EXPECT_EQ(after.size_in, 4096);
}

TEST(FdStdioNoHostMetadata, ATerminalIsNeverHandedOver) {
  Pty pty;
  struct stat before {};
  ASSERT_EQ(::fstat(pty.slave, &before), 0);
  TempDir ws("ws");
  RunOptions o;
  o.stdin_fd = pty.slave;
  o.leak_fds = {{pty.slave, 1}};
  const char script[] =
      "import os, sys, fcntl, termios\n"
      "tty = [os.isatty(fd) for fd in (0, 1)]\n"
      "try:\n    os.fchmod(1, 0o666)\nexcept OSError:\n    pass\n"
      "try:\n    fcntl.ioctl(0, termios.TIOCSCTTY, 0)\nexcept OSError:\n    pass\n"
      "print('isatty', tty, file=sys.stderr)\n";
  RunResult r = runCorral({"--workspace", ws.path()}, {"python3", "-c", script}, o);
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  struct stat after {};
  ASSERT_EQ(::fstat(pty.slave, &after), 0);
  EXPECT_EQ(after.st_mode & 07777, before.st_mode & 07777) << claim("fd.stdio-no-host-metadata", "the caller's terminal was chmodded");
  EXPECT_NE(r.err.find("isatty [False, False]"), std::string::npos)
      << claim("fd.stdio-no-host-metadata", "the caller's terminal reached the command") << r.describe();
}

}  // namespace
}  // namespace corral::testing
