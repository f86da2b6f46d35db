// SPDX-License-Identifier: Apache-2.0
// The v1 freezer: one cgroup per session, its state written and read back.
#include "daemon/freezer.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <fstream>
#include <sstream>

#include "base/unique_fd.h"

namespace corral::daemon {
namespace {

constexpr char kParent[] = "corral-sessions";
constexpr int kSettleMs = 30'000;  // FREEZING -> FROZEN: every task must reach the freezer

std::string dirOf(const Freezer& f, const std::string& id) { return f.root + "/" + kParent + "/" + id; }

Result<void> writeFile(const std::string& path, const std::string& text) {
  UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CLOEXEC | O_NOFOLLOW));
  if (!fd.valid()) return sysError("open " + path);
  if (::write(fd.get(), text.data(), text.size()) != static_cast<ssize_t>(text.size())) return sysError("write " + path);
  return {};
}

std::string readFile(const std::string& path) {
  std::ifstream in(path);
  std::string s((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

// Polls a cgroup file for a condition: the kernel offers no notification for these.
template <class F>
bool waitFor(F done) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(kSettleMs);
  while (!done()) {
    if (std::chrono::steady_clock::now() > until) return false;
    ::poll(nullptr, 0, 5);
  }
  return true;
}

}  // namespace

Freezer findFreezer() {
  Freezer f;
  const std::string v1 = "/sys/fs/cgroup/freezer";
  struct stat st;
  if (::stat((v1 + "/cgroup.procs").c_str(), &st) != 0) {
    f.description = ::stat("/sys/fs/cgroup/cgroup.controllers", &st) == 0
                        ? "none: this host has cgroup v2 only and its cgroup.freeze is not implemented yet; pause is refused"
                        : "none: no cgroup v1 freezer is mounted at " + v1 + "; pause is refused";
    return f;
  }
  if (::access(v1.c_str(), W_OK) != 0) {
    f.description = "none for this daemon: the cgroup v1 freezer at " + v1 +
                    " is writable only by root (a non-root daemon has no delegated freezer); pause is refused";
    return f;
  }
  if (::mkdir((v1 + "/" + kParent).c_str(), 0755) != 0 && errno != EEXIST) {
    f.description = "none: cannot make " + v1 + "/" + kParent + ": " + std::strerror(errno) + "; pause is refused";
    return f;
  }
  f.usable = true;
  f.root = v1;
  f.description = "cgroup v1 freezer (" + v1 + "/" + kParent + "/ID)";
  return f;
}

Result<void> freezerAdopt(const Freezer& f, const std::string& id, pid_t init_pid) {
  if (!f.usable) return Error(Errc::kUnsupported, "pause: " + f.description);
  const std::string dir = dirOf(f, id);
  if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) return sysError("mkdir " + dir);
  return writeFile(dir + "/cgroup.procs", std::to_string(init_pid));
}

Result<void> freezerSet(const Freezer& f, const std::string& id, bool frozen) {
  if (!f.usable) return Error(Errc::kUnsupported, "pause: " + f.description);
  const std::string dir = dirOf(f, id);
  const char* want = frozen ? "FROZEN" : "THAWED";
  RETURN_IF_ERROR(writeFile(dir + "/freezer.state", want));
  if (!waitFor([&] { return readFile(dir + "/freezer.state") == want; }))
    return Error(Errc::kIo, std::string("the session's freezer did not reach ") + want);
  return {};
}

std::string freezerState(const Freezer& f, const std::string& id) {
  if (!f.usable) return "";
  return readFile(dirOf(f, id) + "/freezer.state");
}

std::vector<pid_t> freezerTasks(const Freezer& f, const std::string& id) {
  std::vector<pid_t> out;
  if (!f.usable) return out;
  std::istringstream in(readFile(dirOf(f, id) + "/cgroup.procs"));
  for (long pid; in >> pid;) out.push_back(static_cast<pid_t>(pid));
  return out;
}

void freezerRemove(const Freezer& f, const std::string& id) {
  if (!f.usable) return;
  const std::string dir = dirOf(f, id);
  struct stat st;
  if (::stat(dir.c_str(), &st) != 0) return;
  (void)writeFile(dir + "/freezer.state", "THAWED");
  (void)waitFor([&] { return ::rmdir(dir.c_str()) == 0 || errno == ENOENT; });
}

}  // namespace corral::daemon
