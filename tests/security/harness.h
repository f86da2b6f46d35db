// SPDX-License-Identifier: Apache-2.0
// Security/integration test harness: run `corral exec` and corral-probe, temp dirs, host checks.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "process.h"

namespace corral::testing {

// Where the probe appears inside every sandbox the harness starts (a read-only bind).
inline constexpr char kProbeDir[] = "/opt/corral-probe";
inline constexpr char kProbe[] = "/opt/corral-probe/corral-probe";
inline constexpr uid_t kNobody = 65534;

std::string corralBin();  // $CORRAL_BIN, else the build's corral
// A host directory holding only a private copy of the probe (0755), bound at kProbeDir.
const std::string& probeHostDir();
std::string probeHostPath();

bool isRoot();
bool rootlessMode();  // CORRAL_TEST_MODE=rootless, or simply not root

// `corral exec [--json] OPTS -- COMMAND...`
std::vector<std::string> corralArgv(const std::vector<std::string>& opts, const std::vector<std::string>& command,
                                    bool json = true);
RunResult runCorral(const std::vector<std::string>& opts, const std::vector<std::string>& command,
                    const RunOptions& run_opts = {});
std::vector<std::string> probeBind();  // {"--ro-bind", "<probeHostDir>:/opt/corral-probe"}
// The probe inside a sandbox: OPTS plus the probe's bind, then `corral-probe ARGS...`.
std::vector<std::string> probeArgv(std::vector<std::string> opts, const std::vector<std::string>& probe_args);
RunResult runProbe(const std::vector<std::string>& opts, const std::vector<std::string>& probe_args,
                   const RunOptions& run_opts = {});
// The same probe run directly on the host: the unsandboxed control.
RunResult runHostProbe(const std::vector<std::string>& probe_args, const RunOptions& run_opts = {});

// A directory under $TMPDIR (0755), removed with its contents on destruction.
class TempDir {
 public:
  explicit TempDir(std::string_view tag);
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  std::string operator/(std::string_view rel) const { return path_ + "/" + std::string(rel); }
  void write(std::string_view rel, std::string_view content, mode_t mode = 0644) const;
  std::string read(std::string_view rel) const;  // "" when unreadable
  bool exists(std::string_view rel) const;       // lstat: a dangling link exists
  std::vector<std::string> entries() const;      // names directly inside, sorted

 private:
  std::string path_;
};

std::string uniqueName(std::string_view tag);  // tag-<pid>-<counter>-<random>
std::string hex(std::string_view bytes);
std::string readHostFile(const std::string& path);  // "" when unreadable

// Host processes running the probe with `marker` in their argv (the sandbox's, seen from outside).
std::vector<pid_t> probeProcessesWithMarker(const std::string& marker);
// Polls until none is left or the timeout passes; returns those still there.
std::vector<pid_t> waitForNoMarker(const std::string& marker, std::chrono::milliseconds timeout);
uid_t hostUidOf(pid_t pid);  // from /proc/PID/status; (uid_t)-1 when gone

// Host listeners for the network claims (127.0.0.1 or ::1 :<ephemeral>, abstract "\0name").
class TcpListener {
 public:
  explicit TcpListener(const char* addr = "127.0.0.1");  // IPv4 or IPv6 literal
  ~TcpListener();
  int port() const { return port_; }  // -1 when the address cannot be bound here
  int fd() const { return fd_; }
  // Answers every connection with a fixed HTTP 200 body, on a thread, until destroyed.
  void serveHttp(std::string body);

 private:
  int fd_ = -1, port_ = 0, stop_[2] = {-1, -1};
  std::vector<std::thread> threads_;
};

class AbstractListener {
 public:
  AbstractListener();
  ~AbstractListener();
  const std::string& name() const { return name_; }

 private:
  int fd_ = -1;
  std::string name_;
};

std::string hostIPv4NonLoopback();  // "" when the host has none

// The first failure message of a claim test: "claim <id> broken: <what>".
std::string claim(std::string_view id, std::string_view what);

// The probe ran (corral passed its exit status 1 through) and was refused, with one of
// `errnos` when given. Never true when corral itself failed (125) or the probe did not run.
::testing::AssertionResult probeRefused(const RunResult& r, const std::vector<std::string>& errnos = {});
// The probe ran and did what it tried (exit 0, "ok ...").
::testing::AssertionResult probeDid(const RunResult& r);
// corral refused before running anything: exit 125, exactly one stderr line starting
// "corral: ", and nothing on stdout (the command, which would print, never ran).
::testing::AssertionResult refusedBeforeRun(const RunResult& r);

}  // namespace corral::testing

// Root-only tests are named Root*, so ctest labels them `root`; elsewhere they skip loudly.
#define CORRAL_REQUIRE_ROOT(why)                                                  \
  do {                                                                            \
    if (!::corral::testing::isRoot()) GTEST_SKIP() << "needs root on the host: " << why; \
  } while (0)
