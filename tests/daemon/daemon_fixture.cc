// SPDX-License-Identifier: Apache-2.0
// The daemon test fixture: start, kill, restart, and talk to a real daemon.
#include "daemon_fixture.h"

#include <dirent.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>

namespace corral::testing {

std::string corralCoreBin() {
  std::string c = corralBin();
  return c.substr(0, c.rfind('/') + 1) + "corral-core";
}

Daemon::Daemon(std::vector<std::string> extra) : state_("daemon"), extra_(std::move(extra)) {
  socket_ = state_.path() + "/run/api.sock";
}

Daemon::~Daemon() {
  if (proc_) kill9();
  // Sessions this test left behind: end their shims, so nothing outlives the test.
  for (pid_t pid : shimProcesses(state_.path())) ::kill(pid, SIGKILL);
}

bool Daemon::start() {
  std::vector<std::string> argv = {corralCoreBin(), "daemon", "--state-dir", state_.path(), "--socket", socket_};
  argv.insert(argv.end(), extra_.begin(), extra_.end());
  RunOptions o;
  o.deadline = std::chrono::milliseconds(3'600'000);
  proc_.emplace(Process::start(argv, o));
  // Wait for the condition, not for a time: the health answer, polled, a minute at most.
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (std::chrono::steady_clock::now() < until) {
    if (proc_->exitedWithin(std::chrono::milliseconds(20))) {
      RunResult r = proc_->wait();
      log_ += r.err;
      proc_.reset();
      return false;
    }
    if (curl("GET", "/v1/health").status == 200) return true;
  }
  return false;
}

void Daemon::kill9() {
  if (!proc_) return;
  proc_->signal(SIGKILL);
  RunResult r = proc_->wait();
  log_ += r.err;
  proc_.reset();
}

bool Daemon::stopTerm() {
  if (!proc_) return false;
  proc_->signal(SIGTERM);
  RunResult r = proc_->wait();
  log_ += r.err;
  proc_.reset();
  return r.exit_code == 0;
}


RunResult Daemon::startSecond() {
  std::vector<std::string> argv = {corralCoreBin(), "daemon", "--state-dir", state_.path(), "--socket", socket_ + "2"};
  return run(argv);
}

RunResult Daemon::cli(const std::vector<std::string>& args, RunOptions opts) const {
  std::vector<std::string> argv = {corralBin()};
  argv.insert(argv.end(), args.begin(), args.end());
  opts.env_extra.push_back("CORRAL_SOCKET=" + socket_);
  return run(argv, opts);
}

nlohmann::json Daemon::Http::json() const {
  return nlohmann::json::parse(body, nullptr, false);
}

Daemon::Http Daemon::curl(const std::string& method, const std::string& path, const std::string& body,
                          const std::vector<std::string>& extra) const {
  std::vector<std::string> argv = {"/usr/bin/curl", "-sS", "--max-time", "120", "--unix-socket", socket_, "-X", method,
                                   "-o", "-", "-w", "\n%{http_code}"};
  if (!body.empty()) {
    argv.push_back("-H");
    argv.push_back("Content-Type: application/json");
    argv.push_back("--data-binary");
    argv.push_back(body);
  }
  argv.insert(argv.end(), extra.begin(), extra.end());
  argv.push_back("http://corral" + path);
  RunResult r = run(argv);
  Http h;
  const size_t nl = r.out.rfind('\n');
  if (nl == std::string::npos) return h;
  h.status = std::atoi(r.out.c_str() + nl + 1);
  h.body = r.out.substr(0, nl);
  return h;
}

std::vector<std::string> Daemon::hostSessionOptions() { return {}; }

std::string Daemon::createSession(const std::vector<std::string>& opts) const {
  std::vector<std::string> args = {"session", "create"};
  for (const std::string& o : hostSessionOptions()) args.push_back(o);
  args.insert(args.end(), opts.begin(), opts.end());
  RunResult r = cli(args);
  if (r.exit_code != 0) {
    ADD_FAILURE() << "session create failed: " << r.describe();
    return "";
  }
  std::string id = r.out;
  while (!id.empty() && id.back() == '\n') id.pop_back();
  return id;
}

std::vector<pid_t> shimProcesses(const std::string& state_dir) {
  std::vector<pid_t> out;
  DIR* d = ::opendir("/proc");
  if (!d) return out;
  while (dirent* e = ::readdir(d)) {
    char* end = nullptr;
    const long pid = std::strtol(e->d_name, &end, 10);
    if (*end != '\0' || pid <= 0) continue;
    std::ifstream in(std::string("/proc/") + e->d_name + "/cmdline");
    std::string cmdline((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (cmdline.find(std::string("__session-shim") + '\0' + state_dir + "/") != std::string::npos) out.push_back(static_cast<pid_t>(pid));
  }
  ::closedir(d);
  return out;
}

}  // namespace corral::testing
