// SPDX-License-Identifier: Apache-2.0
// The freezers: one cgroup per session, its state written and read back. v1 writes
// freezer.state (FROZEN/THAWED, read back as FREEZING until every task stopped); v2 writes
// cgroup.freeze (1/0) and the kernel reports "frozen 1" in cgroup.events once it holds.
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

std::string dirOf(const Freezer& f, const std::string& id) { return f.root + "/" + id; }

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

// Polls a cgroup file for a condition (v1 offers no notification; v2's cgroup.events does,
// but one loop for both keeps them alike, and 5 ms is well under what a pause is allowed).
template <class F>
bool waitFor(F done) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(kSettleMs);
  while (!done()) {
    if (std::chrono::steady_clock::now() > until) return false;
    ::poll(nullptr, 0, 5);
  }
  return true;
}

// "frozen 1" in a v2 cgroup.events.
bool v2Frozen(const std::string& dir) {
  std::istringstream in(readFile(dir + "/cgroup.events"));
  for (std::string key, value; in >> key >> value;)
    if (key == "frozen") return value == "1";
  return false;
}

Freezer findV1() {
  Freezer f;
  const std::string v1 = "/sys/fs/cgroup/freezer";
  struct stat st;
  if (::stat((v1 + "/cgroup.procs").c_str(), &st) != 0) {
    f.description = "none: no cgroup v1 freezer is mounted at " + v1;
    return f;
  }
  if (::access(v1.c_str(), W_OK) != 0) {
    f.description = "none for this daemon: the cgroup v1 freezer at " + v1 +
                    " is writable only by root (a non-root daemon has no delegated freezer)";
    return f;
  }
  if (::mkdir((v1 + "/" + kParent).c_str(), 0755) != 0 && errno != EEXIST) {
    f.description = "none: cannot make " + v1 + "/" + kParent + ": " + std::strerror(errno);
    return f;
  }
  f.usable = true;
  f.version = 1;
  f.root = v1 + "/" + kParent;
  f.description = "cgroup v1 freezer (" + f.root + "/ID)";
  return f;
}

// The mount point of a cgroup2 hierarchy ("" when none is mounted).
std::string v2Mount() {
  std::ifstream in("/proc/self/mountinfo");
  for (std::string line; std::getline(in, line);) {
    const size_t dash = line.find(" - ");
    if (dash == std::string::npos || line.compare(dash + 3, 8, "cgroup2 ") != 0) continue;
    std::istringstream fields(line);
    std::string f, point;
    for (int i = 0; i < 5 && fields >> f; ++i) point = f;
    return point;
  }
  return "";
}

Freezer findV2() {
  Freezer f;
  const std::string mount = v2Mount();
  if (mount.empty()) {
    f.description = "none: no cgroup v2 hierarchy is mounted";
    return f;
  }
  // Where this daemon may make children: the hierarchy's root (root), else its own cgroup
  // when it was delegated to it ("0::/PATH" in /proc/self/cgroup).
  std::string own;
  {
    std::ifstream in("/proc/self/cgroup");
    for (std::string line; std::getline(in, line);)
      if (line.rfind("0::", 0) == 0) own = line.substr(3);
  }
  for (const std::string& base : {mount, own.empty() || own == "/" ? std::string() : mount + own}) {
    if (base.empty()) continue;
    struct stat st;
    if (::access(base.c_str(), W_OK) != 0 || ::stat((base + "/cgroup.procs").c_str(), &st) != 0) continue;
    const std::string parent = base + "/" + kParent;
    if (::mkdir(parent.c_str(), 0755) != 0 && errno != EEXIST) continue;
    if (::stat((parent + "/cgroup.freeze").c_str(), &st) != 0) {
      f.description = "none: " + parent + " has no cgroup.freeze (a kernel before 5.2)";
      return f;
    }
    f.usable = true;
    f.version = 2;
    f.root = parent;
    f.description = "cgroup v2 freezer (" + f.root + "/ID/cgroup.freeze)";
    return f;
  }
  f.description = "none for this daemon: the cgroup v2 hierarchy at " + mount +
                  " is not writable by it and its own cgroup is not delegated to it";
  return f;
}

}  // namespace

Freezer findFreezer(FreezerChoice choice) {
  if (choice == FreezerChoice::kV1 || choice == FreezerChoice::kV2) {
    Freezer f = choice == FreezerChoice::kV1 ? findV1() : findV2();
    if (!f.usable) f.description += "; pause is refused";
    return f;
  }
  Freezer v1 = findV1();
  if (v1.usable) return v1;
  Freezer v2 = findV2();
  if (v2.usable) return v2;
  v2.description = v1.description + "; " + v2.description + "; pause is refused";
  return v2;
}

Result<void> freezerAdopt(const Freezer& f, const std::string& id, pid_t init_pid) {
  if (!f.usable) return Error(Errc::kUnsupported, "pause: " + f.description);
  if (f.version == 2) {
    // Moving init would take it out of a v2 limits cgroup the sandbox put it in (a v2-only
    // host with --memory or --pids): freezing that cgroup in place is not done yet.
    std::ifstream in("/proc/" + std::to_string(init_pid) + "/cgroup");
    for (std::string line; std::getline(in, line);)
      if (line.rfind("0::", 0) == 0 && line.find("/corral-", 3) != std::string::npos && line.find(kParent) == std::string::npos)
        return Error(Errc::kUnsupported, "pause: the session's init is in a cgroup v2 limits cgroup; freezing it there is not implemented");
  }
  const std::string dir = dirOf(f, id);
  if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) return sysError("mkdir " + dir);
  return writeFile(dir + "/cgroup.procs", std::to_string(init_pid));
}

Result<void> freezerSet(const Freezer& f, const std::string& id, bool frozen) {
  if (!f.usable) return Error(Errc::kUnsupported, "pause: " + f.description);
  const std::string dir = dirOf(f, id);
  if (f.version == 2) {
    RETURN_IF_ERROR(writeFile(dir + "/cgroup.freeze", frozen ? "1" : "0"));
    if (!waitFor([&] { return v2Frozen(dir) == frozen; }))
      return Error(Errc::kIo, std::string("the session's cgroup did not report frozen ") + (frozen ? "1" : "0"));
    return {};
  }
  const char* want = frozen ? "FROZEN" : "THAWED";
  RETURN_IF_ERROR(writeFile(dir + "/freezer.state", want));
  if (!waitFor([&] { return readFile(dir + "/freezer.state") == want; }))
    return Error(Errc::kIo, std::string("the session's freezer did not reach ") + want);
  return {};
}

std::string freezerState(const Freezer& f, const std::string& id) {
  if (!f.usable) return "";
  const std::string dir = dirOf(f, id);
  if (f.version == 2) {
    const std::string asked = readFile(dir + "/cgroup.freeze");
    if (asked.empty()) return "";
    if (asked == "0") return "THAWED";
    return v2Frozen(dir) ? "FROZEN" : "FREEZING";
  }
  return readFile(dir + "/freezer.state");
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
  (void)writeFile(dir + (f.version == 2 ? "/cgroup.freeze" : "/freezer.state"), f.version == 2 ? "0" : "THAWED");
  (void)waitFor([&] { return ::rmdir(dir.c_str()) == 0 || errno == ENOENT; });
}

}  // namespace corral::daemon
