// SPDX-License-Identifier: Apache-2.0
// Claims env.no-caller-secrets, fd.no-inherited-fds, tty.no-injection: what the caller leaks in.
#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <map>

#include "harness.h"

namespace corral::testing {
namespace {

// --- env.no-caller-secrets ---

// Credential-shaped variables in corral's own environment, each with a unique value.
std::map<std::string, std::string> sentinels() {
  return {{"AWS_SECRET_ACCESS_KEY", uniqueName("corral-sentinel-aws")},
          {"ANTHROPIC_API_KEY", uniqueName("corral-sentinel-anthropic")},
          {"GITHUB_TOKEN", uniqueName("corral-sentinel-github")}};
}

RunOptions withSecrets(const std::map<std::string, std::string>& secrets) {
  RunOptions o;
  for (const auto& [k, v] : secrets) o.env_extra.push_back(k + "=" + v);
  return o;
}

TEST(EnvNoCallerSecrets, NoCallerVariableOrValueReachesTheEnvironment) {
  auto secrets = sentinels();
  RunOptions o = withSecrets(secrets);
  // Names the sandbox sets itself get caller values that must not win; one name it never sets.
  const std::string marker = uniqueName("caller-marker");
  for (const char* name : {"USER", "LOGNAME", "SHELL", "TMPDIR", "PWD", "HOME", "MAIL", "SSH_AUTH_SOCK"})
    o.env_extra.push_back(std::string(name) + "=/" + marker);
  o.env_extra.push_back("CORRAL_CALLER_ONLY=" + marker);
  RunResult r = runProbe({}, {"env"}, o);
  ASSERT_TRUE(probeDid(r));
  for (const auto& [name, value] : secrets) {
    EXPECT_EQ(r.out.find(value), std::string::npos) << claim("env.no-caller-secrets", name + "'s value visible in env") << r.describe();
    EXPECT_EQ(r.out.find(name + "="), std::string::npos) << claim("env.no-caller-secrets", name + " set inside") << r.describe();
  }
  EXPECT_EQ(r.out.find(marker), std::string::npos) << claim("env.no-caller-secrets", "a caller value reached the sandbox") << r.describe();
  EXPECT_EQ(r.out.find("CORRAL_CALLER_ONLY"), std::string::npos) << r.describe();
  EXPECT_NE(r.out.find("HOME=/workspace"), std::string::npos) << r.describe();
  EXPECT_NE(r.out.find("PATH=/usr/local/bin:/usr/bin:/bin:/usr/local/sbin:/usr/sbin:/sbin"), std::string::npos) << r.describe();
}

TEST(EnvNoCallerSecrets, SecretsAreInNoProcFileInside) {
  auto secrets = sentinels();
  for (const auto& [name, value] : secrets) {
    RunResult r = runProbe({}, {"find-in-proc", hex(value)}, withSecrets(secrets));
    EXPECT_TRUE(probeRefused(r)) << claim("env.no-caller-secrets", name + " found in /proc inside");
    EXPECT_GT(r.probe().num("readable"), 0) << "the scan read nothing, so it proves nothing" << r.describe();
  }
}

TEST(EnvNoCallerSecrets, InitEnvironAndCmdlineHoldNoSecret) {
  auto secrets = sentinels();
  for (const char* path : {"/proc/1/environ", "/proc/1/cmdline", "/proc/self/environ"}) {
    RunResult r = runProbe({}, {"read", path}, withSecrets(secrets));
    for (const auto& [name, value] : secrets)
      EXPECT_EQ(r.out.find(value), std::string::npos) << claim("env.no-caller-secrets", name + " in " + path) << r.describe();
  }
}

TEST(EnvNoCallerSecrets, ControlHostScanFindsTheSecret) {
  auto secrets = sentinels();
  const auto& [name, value] = *secrets.begin();
  EXPECT_TRUE(probeDid(runHostProbe({"find-in-proc", hex(value)}, withSecrets(secrets))))
      << "the scan misses " << name << " even where it is set";
}

TEST(EnvNoCallerSecrets, ControlExplicitEnvIsPassed) {
  std::string value = uniqueName("corral-granted");
  RunResult r = runProbe({"--env", "GITHUB_TOKEN=" + value}, {"env"});
  ASSERT_TRUE(probeDid(r));
  EXPECT_NE(r.out.find("GITHUB_TOKEN=" + value), std::string::npos) << "--env did not pass" << r.describe();
  EXPECT_NE(r.out.find("HOME=/workspace"), std::string::npos) << r.describe();
}

// --- fd.no-inherited-fds ---

// Host fds the caller forgot to mark close-on-exec (runc CVE-2024-21626): directories, a
// secret file, a socket, at low and high numbers.
struct LeakedFds {
  TempDir dir{"fds"};
  std::vector<int> owned;
  std::vector<std::pair<int, int>> leaks;
  LeakedFds() {
    dir.write("secret", "host-secret");
    int sp[2];
    socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp);
    const std::pair<int, int> fds[] = {{open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC), 5},
                                       {open("/etc", O_RDONLY | O_DIRECTORY | O_CLOEXEC), 6},
                                       {open((dir / "secret").c_str(), O_RDWR | O_CLOEXEC), 7},
                                       {sp[0], 8},
                                       {open(dir.path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC), 200}};
    for (auto [fd, target] : fds) {
      owned.push_back(fd);
      leaks.emplace_back(fd, target);
    }
    owned.push_back(sp[1]);
  }
  ~LeakedFds() {
    for (int fd : owned) close(fd);
  }
  RunOptions options() const {
    RunOptions o;
    o.leak_fds = leaks;
    return o;
  }
};

TEST(FdNoInheritedFds, OnlyStdioReachesTheCommand) {
  LeakedFds fds;
  RunResult r = runProbe({}, {"fd-list"}, fds.options());
  ASSERT_TRUE(probeDid(r));
  EXPECT_EQ(r.probe().get("fds"), "0,1,2") << claim("fd.no-inherited-fds", "fds beyond stdio inside") << r.describe();
}

TEST(FdNoInheritedFds, LeakedDirectoryCannotBeEntered) {
  LeakedFds fds;
  const std::vector<std::vector<std::string>> kAttempts{
      {"chdir-list", "/proc/self/fd/5"}, {"chdir-list", "/proc/self/fd/200"}, {"open-at-fd", "5", "."},
      {"open-at-fd", "6", ".."},         {"stat", "/proc/self/fd/7"},         {"fd-escape", "self"},
      {"fd-escape", "1"}};
  for (const auto& attempt : kAttempts) {
    RunResult r = runProbe({}, attempt, fds.options());
    EXPECT_TRUE(probeRefused(r)) << claim("fd.no-inherited-fds", attempt[0] + " " + attempt[1] + " reached a host fd");
  }
}

TEST(FdNoInheritedFds, ControlHostProbeSeesAndEntersTheLeakedFds) {
  LeakedFds fds;
  RunResult list = runHostProbe({"fd-list"}, fds.options());
  ASSERT_TRUE(probeDid(list));
  for (const char* fd : {"5", "6", "7", "8", "200"}) {
    auto got = list.probe().list("fds");
    EXPECT_NE(std::find(got.begin(), got.end(), fd), got.end()) << "fd " << fd << " was not leaked" << list.describe();
  }
  EXPECT_TRUE(probeDid(runHostProbe({"chdir-list", "/proc/self/fd/5"}, fds.options())));
  EXPECT_TRUE(probeDid(runHostProbe({"open-at-fd", "6", ".."}, fds.options())));
}

// stdio is the one channel of the caller's that crosses over; a directory there would be a
// handle on the host tree (CVE-2024-21626 through fd 0), so corral refuses it.
TEST(FdNoInheritedFds, DirectoryAsStdinIsRefused) {
  int dir = ::open("/etc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  ASSERT_GE(dir, 0);
  RunOptions o;
  o.stdin_fd = dir;
  RunResult r = runProbe({}, {"stat", "/proc/self/fd/0/passwd"}, o);
  ::close(dir);
  EXPECT_EQ(r.exit_code, 125) << claim("fd.no-inherited-fds", "a host directory as stdin reached the command") << r.describe();
  EXPECT_EQ(r.probe().status, "") << claim("fd.no-inherited-fds", "the command ran with a directory as stdin") << r.describe();
}

TEST(FdNoInheritedFds, ControlDirectoryAsStdinReachesAnUnsandboxedProbe) {
  int dir = ::open("/etc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  ASSERT_GE(dir, 0);
  RunOptions o;
  o.stdin_fd = dir;
  RunResult r = runHostProbe({"stat", "/proc/self/fd/0/passwd"}, o);
  ::close(dir);
  EXPECT_TRUE(probeDid(r)) << "the host probe could not stat through a directory stdin: the test cannot fail" << r.describe();
}

// --- tty.no-injection ---

TEST(TtyNoInjection, InjectingIntoTheCallersTerminalFails) {
  Pty pty;
  RunOptions o;
  o.stdin_fd = pty.slave;
  o.ctty = true;
  RunResult r = runProbe({}, {"tiocsti"}, o);
  EXPECT_TRUE(probeRefused(r)) << claim("tty.no-injection", "TIOCSTI pushed input into the caller's terminal");
  EXPECT_EQ(r.probe().get("fd0sid"), "ENOTTY") << claim("tty.no-injection", "the caller's terminal is the command's controlling tty") << r.describe();
  EXPECT_EQ(pty.drainSlaveInput(), "") << claim("tty.no-injection", "bytes appeared in the caller's terminal input");
}

TEST(TtyNoInjection, ControlInjectionWorksInTheCallersSession) {
  if (readHostFile("/proc/sys/dev/tty/legacy_tiocsti").starts_with("0"))
    GTEST_SKIP() << "dev.tty.legacy_tiocsti=0: the kernel refuses TIOCSTI for everyone";
  Pty pty;
  RunOptions o;
  o.stdin_fd = pty.slave;
  o.ctty = true;
  RunResult r = runHostProbe({"tiocsti"}, o);
  EXPECT_TRUE(probeDid(r)) << "the probe cannot inject even into its own controlling terminal";
  EXPECT_NE(pty.drainSlaveInput().find('Z'), std::string::npos) << "injected bytes not seen by the test";
}

TEST(TtyNoInjection, FilterRefusesTiocstiAndTioclinuxIncludingHighBits) {
  for (const char* cmd : {"tiocsti", "tioclinux"}) {
    for (bool high : {false, true}) {
      std::vector<std::string> args{"ioctl-badfd", cmd};
      if (high) args.emplace_back("high");
      // On fd -1 the kernel says EBADF; only the filter says EPERM (CVE-2019-10063 for "high").
      EXPECT_TRUE(probeRefused(runProbe({}, args), {"EPERM"}))
          << claim("tty.no-injection", std::string(cmd) + (high ? " with high bits" : "") + " passed the filter");
      EXPECT_TRUE(probeRefused(runHostProbe(args), {"EBADF"})) << "control: unfiltered gives EBADF";
    }
  }
}

TEST(TtyNoInjection, CommandLeadsItsOwnSession) {
  RunResult r = runProbe({}, {"ids"});
  ASSERT_TRUE(probeDid(r));
  // sid 0: the session leader is outside the sandbox's pid namespace, i.e. the caller's session.
  EXPECT_GT(r.probe().num("sid"), 0) << claim("tty.no-injection", "command is in a session led from outside") << r.describe();
}

}  // namespace
}  // namespace corral::testing
