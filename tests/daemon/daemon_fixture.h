// SPDX-License-Identifier: Apache-2.0
// A real `corral daemon` on a temporary state directory, and real clients of it: the corral
// CLI, curl --unix-socket, python's http.client over AF_UNIX.
#pragma once

#include <chrono>
#include <optional>
#include <thread>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "harness.h"
#include "process.h"

namespace corral::testing {

std::string corralCoreBin();  // corral-core beside the build's corral

class Daemon {
 public:
  // extra: more daemon options. The socket sits in the state directory's own "run" dir.
  explicit Daemon(std::vector<std::string> extra = {});
  ~Daemon();
  Daemon(const Daemon&) = delete;
  Daemon& operator=(const Daemon&) = delete;

  const std::string& stateDir() const { return state_.path(); }
  const std::string& socket() const { return socket_; }
  // Starts it and waits (up to a minute) until it answers /v1/health; false if it did not.
  bool start();
  void kill9();              // SIGKILL, reaped; what it wrote to stderr is kept
  bool stopTerm();           // SIGTERM; true when it exited 0
  // What its runs wrote to stderr (a file, not a pipe: a busy daemon must never block on its log).
  std::string stderrText() const;
  RunResult startSecond();   // another daemon on the same state directory, waited for
  pid_t pid() const { return proc_ ? proc_->pid() : -1; }

  // `corral ARGS...` with CORRAL_SOCKET pointing here.
  RunResult cli(const std::vector<std::string>& args, RunOptions opts = {}) const;
  // curl --unix-socket: the HTTP status and the body.
  struct Http {
    int status = 0;
    std::string body;
    nlohmann::json json() const;
  };
  Http curl(const std::string& method, const std::string& path, const std::string& body = "",
            const std::vector<std::string>& extra = {}) const;
  // A session made through the CLI; "" when creation failed (the test then fails on it).
  std::string createSession(const std::vector<std::string>& opts = {}) const;
  // Options every session needs on this host: cgroup-less rootless runs accept weaker limits.
  static std::vector<std::string> hostSessionOptions();

 private:
  TempDir state_;
  std::string socket_;
  std::vector<std::string> extra_;
  std::optional<Process> proc_;
  TempDir logs_{"daemonlog"};
};

// A suite sharing one daemon and one session (made once per suite): its tests start their
// own commands in it.
class SharedSessionSuite : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    d_ = new Daemon();
    if (d_->start()) id_ = d_->createSession();
  }
  static void TearDownTestSuite() {
    delete d_;
    d_ = nullptr;
    id_.clear();
  }
  void SetUp() override { ASSERT_FALSE(id_.empty()) << "no session: " << d_->stderrText(); }
  static inline Daemon* d_ = nullptr;
  static inline std::string id_;
};

// The shims of sessions on the host: processes whose cmdline is corral-core __session-shim DIR
// under state_dir.
std::vector<pid_t> shimProcesses(const std::string& state_dir);
// `corral session exec ID [opts] -- cmd` against d.
RunResult sessionExec(const Daemon& d, const std::string& id, const std::vector<std::string>& cmd,
                      const std::vector<std::string>& opts = {});
bool fileExists(const std::string& p);
std::string fileText(const std::string& p);

// Polls for a condition (never a fixed sleep as synchronisation), a minute at most.
template <class F>
bool eventually(F f) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (std::chrono::steady_clock::now() < until) {
    if (f()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return f();
}

// A process's resident memory (VmRSS), or -1 once it is gone.
long rssKiB(pid_t pid);

// Mount points below dir (this process's view: the host's).
std::vector<std::string> mountsUnder(const std::string& dir);

}  // namespace corral::testing
