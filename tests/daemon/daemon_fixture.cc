// SPDX-License-Identifier: Apache-2.0
// The daemon test fixture: start, kill, restart, and talk to a real daemon.
#include "daemon_fixture.h"

#include <dirent.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
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
  // A paused session's processes cannot die while frozen: thaw what this test left paused.
  if (DIR* sessions = ::opendir((state_.path() + "/sessions").c_str())) {
    while (dirent* e = ::readdir(sessions)) {
      const std::string cg = std::string("/sys/fs/cgroup/freezer/corral-sessions/") + e->d_name;
      if (e->d_name[0] == '.' || !fileExists(cg)) continue;
      std::ofstream(cg + "/freezer.state") << "THAWED";
      eventually([&] { return ::rmdir(cg.c_str()) == 0 || errno == ENOENT; });
    }
    ::closedir(sessions);
  }
  // And their workspaces' mounts (root: loop-mounted images), so the directory can go.
  for (const std::string& m : mountsUnder(state_.path())) ::umount2(m.c_str(), MNT_DETACH);
}

bool Daemon::start() {
  // exec'd by sh so that the pid is the daemon's, stderr appended to a file.
  std::vector<std::string> argv = {"/bin/sh", "-c", "exec \"$0\" \"$@\" 2>>\"$CORRAL_TEST_DAEMON_LOG\"", corralCoreBin(),
                                   "daemon", "--state-dir", state_.path(), "--socket", socket_};
  argv.insert(argv.end(), extra_.begin(), extra_.end());
  RunOptions o;
  o.env_extra.push_back("CORRAL_TEST_DAEMON_LOG=" + logs_.path() + "/stderr");
  o.deadline = std::chrono::milliseconds(3'600'000);
  proc_.emplace(Process::start(argv, o));
  // Wait for the condition, not for a time: the health answer, polled, a minute at most.
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (std::chrono::steady_clock::now() < until) {
    if (proc_->exitedWithin(std::chrono::milliseconds(20))) {
      proc_->wait();
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
  proc_->wait();
  proc_.reset();
}

std::string Daemon::stderrText() const { return fileText(logs_.path() + "/stderr"); }

bool Daemon::stopTerm() {
  if (!proc_) return false;
  proc_->signal(SIGTERM);
  RunResult r = proc_->wait();
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

// A non-root daemon has nothing to cap a session's workspace with (workspace_disk.h).
std::vector<std::string> Daemon::hostSessionOptions() {
  if (::geteuid() != 0) return {"--allow-weaker", "workspace-size"};
  return {};
}

RunResult sessionExec(const Daemon& d, const std::string& id, const std::vector<std::string>& cmd,
                      const std::vector<std::string>& opts) {
  std::vector<std::string> args = {"session", "exec", id};
  args.insert(args.end(), opts.begin(), opts.end());
  args.push_back("--");
  args.insert(args.end(), cmd.begin(), cmd.end());
  return d.cli(args);
}

bool fileExists(const std::string& p) {
  struct stat st;
  return ::stat(p.c_str(), &st) == 0;
}

std::string fileText(const std::string& p) {
  return readHostFile(p);  // "" when unreadable; never throws
}

long rssKiB(pid_t pid) {
  std::istringstream in(readHostFile("/proc/" + std::to_string(pid) + "/status"));
  for (std::string l; std::getline(in, l);)
    if (l.rfind("VmRSS:", 0) == 0) return std::atol(l.c_str() + 6);
  return -1;
}

std::vector<std::string> mountsUnder(const std::string& dir) {
  std::vector<std::string> out;
  std::ifstream in("/proc/self/mountinfo");
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string f, point;
    for (int i = 0; i < 5 && fields >> f; ++i) point = f;
    if (point.rfind(dir + "/", 0) == 0) out.push_back(point);
  }
  return out;
}

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
    // readHostFile, not an istreambuf_iterator: a process that exits meanwhile makes read fail
    // (ESRCH), which libstdc++'s filebuf throws out of the iterator.
    const std::string cmdline = readHostFile(std::string("/proc/") + e->d_name + "/cmdline");
    if (cmdline.find(std::string("__session-shim") + '\0' + state_dir + "/") != std::string::npos) out.push_back(static_cast<pid_t>(pid));
  }
  ::closedir(d);
  return out;
}

}  // namespace corral::testing
