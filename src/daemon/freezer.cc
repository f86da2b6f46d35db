// SPDX-License-Identifier: Apache-2.0
// The freezers: one cgroup per session, its state written and read back. v1 writes
// freezer.state (FROZEN/THAWED, read back as FREEZING until every task stopped); v2 writes
// cgroup.freeze (1/0) and the kernel reports "frozen 1" in cgroup.events once it holds. A v2
// session whose init is in a limits cgroup is frozen there (the cgroup its record names).
#include "daemon/freezer.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <fstream>
#include <sstream>

#include "base/log.h"
#include "base/unique_fd.h"
#include "daemon/freezer_record.h"
#include "daemon/shim.h"

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
    f.mount = mount;
    f.root = parent;
    f.description = "cgroup v2 freezer (" + f.root + "/ID/cgroup.freeze)";
    return f;
  }
  f.description = "none for this daemon: the cgroup v2 hierarchy at " + mount +
                  " is not writable by it and its own cgroup is not delegated to it";
  return f;
}

Freezer findChoice(FreezerChoice choice) {
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

// Where a session's freezer cgroup is.
struct Target {
  std::string dir;
  bool in_place = false;  // a limits cgroup, frozen where the sandbox made it
};

std::string recordDir(const Freezer& f, const std::string& id) { return f.records + "/" + id; }

// A session id names one directory entry (the daemon's ids are 16 hex digits).
bool plainId(const std::string& id) { return !id.empty() && id.find('/') == std::string::npos && id[0] != '.'; }

// The limits cgroup the session's record names, checked as hostile on every read and never
// re-derived from a pid; else ROOT/ID. An error (ENOENT: the cgroup is gone; anything else:
// the record does not check out) means nothing is frozen, thawed or listed through it.
Result<Target> targetOf(const Freezer& f, const std::string& id) {
  if (!plainId(id)) return Error(Errc::kInvalidArgument, "freezer: bad session id");
  if (f.version == 2 && !f.records.empty()) {
    ASSIGN_OR_RETURN(auto recorded, readFreezerRecord(recordDir(f, id)));
    if (recorded) {
      ASSIGN_OR_RETURN(std::string dir, openLimitsCgroup(f.mount, *recorded));
      return Target{dir, true};
    }
  }
  return Target{dirOf(f, id), false};
}

// The "0::" path of a process's /proc/PID/cgroup ("" when it has none).
std::string v2PathIn(const std::string& proc_cgroup) {
  std::istringstream in(proc_cgroup);
  for (std::string line; std::getline(in, line);)
    if (line.rfind("0::", 0) == 0) return line.substr(3);
  return "";
}

// init's cgroup v2 path, read through one /proc/PID directory once the pid's start time is
// init's: a pid reused since the launch names another process and is refused, and a read
// through the directory of a process that has died fails (ESRCH).
Result<std::string> initV2Path(pid_t pid, uint64_t start) {
  const std::string proc = "/proc/" + std::to_string(pid);
  UniqueFd dir(::open(proc.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!dir.valid()) return sysError("open " + proc);
  if (start == 0 || processStartTime(pid) != start) return Error(Errc::kRefused, "pause: pid " + std::to_string(pid) + " is not the session's init");
  UniqueFd file(::openat(dir.get(), "cgroup", O_RDONLY | O_CLOEXEC));
  if (!file.valid()) return sysError("open " + proc + "/cgroup");
  char buf[8192];
  const ssize_t n = ::read(file.get(), buf, sizeof buf);
  if (n < 0) return sysError("read " + proc + "/cgroup");
  return v2PathIn(std::string(buf, static_cast<size_t>(n)));
}

// Whether any component of a cgroup path is a limits cgroup's name.
bool belowLimits(const std::string& path) {
  std::istringstream in(path);
  for (std::string part; std::getline(in, part, '/');)
    if (isLimitsCgroupName(part)) return true;
  return false;
}

// init stays in its limits cgroup (moving it would lift the limits): the record names it.
Result<void> adoptInPlace(const Freezer& f, const std::string& id, const std::string& path) {
  if (f.records.empty()) return Error(Errc::kUnsupported, "pause: no directory to record the session's limits cgroup in");
  // The daemon in the session's cgroup would freeze itself with it.
  const std::string self = v2PathIn(readFile("/proc/self/cgroup"));
  if (self == path || self.rfind(path + "/", 0) == 0) return Error(Errc::kRefused, "pause: the daemon itself is in the session's limits cgroup");
  RETURN_IF_ERROR(openLimitsCgroup(f.mount, path));
  RETURN_IF_ERROR(writeFreezerRecord(recordDir(f, id), path));
  // A ROOT/ID of an earlier adopt (a launch cut short, then finished by reconcile) is no
  // longer the session's: removed when empty (rmdir refuses a populated cgroup).
  ::rmdir(dirOf(f, id).c_str());
  return {};
}

}  // namespace

Freezer findFreezer(FreezerChoice choice, std::string records) {
  Freezer f = findChoice(choice);
  f.records = std::move(records);
  return f;
}

Result<void> freezerAdopt(const Freezer& f, const std::string& id, pid_t init_pid, uint64_t init_start) {
  if (!f.usable) return Error(Errc::kUnsupported, "pause: " + f.description);
  if (f.version == 2) {
    // A v2-only host with --memory or --pids: the sandbox put init in "corral-<run id>",
    // and v2 freezing is hierarchical, so that cgroup is frozen in place. Below one (no
    // sandbox makes that) moving init would lift the limits too: refused.
    ASSIGN_OR_RETURN(std::string path, initV2Path(init_pid, init_start));
    const size_t slash = path.rfind('/');
    if (slash != std::string::npos && isLimitsCgroupName(std::string_view(path).substr(slash + 1))) return adoptInPlace(f, id, path);
    if (belowLimits(path)) return Error(Errc::kUnsupported, "pause: the session's init is below a cgroup v2 limits cgroup, not in it");
    // A record of an earlier init (recover relaunches) would shadow ROOT/ID from now on.
    if (!f.records.empty() && plainId(id)) eraseFreezerRecord(recordDir(f, id));
  }
  const std::string dir = dirOf(f, id);
  if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) return sysError("mkdir " + dir);
  return writeFile(dir + "/cgroup.procs", std::to_string(init_pid));
}

Result<void> freezerSet(const Freezer& f, const std::string& id, bool frozen) {
  if (!f.usable) return Error(Errc::kUnsupported, "pause: " + f.description);
  ASSIGN_OR_RETURN(Target target, targetOf(f, id));
  const std::string& dir = target.dir;
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
  auto target = targetOf(f, id);
  if (!target) return "";
  const std::string& dir = target->dir;
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
  auto target = targetOf(f, id);
  if (!target) return out;
  std::istringstream in(readFile(target->dir + "/cgroup.procs"));
  for (long pid; in >> pid;) out.push_back(static_cast<pid_t>(pid));
  return out;
}

void freezerRemove(const Freezer& f, const std::string& id) {
  if (!f.usable || !plainId(id)) return;
  auto target = targetOf(f, id);
  if (target && target->in_place) {
    // Thawed (a frozen task cannot die) and forgotten; the directory is the sandbox guard's.
    (void)writeFile(target->dir + "/cgroup.freeze", "0");
    (void)waitFor([&] { return !v2Frozen(target->dir); });
    eraseFreezerRecord(recordDir(f, id));
    return;
  }
  if (!target && target.error().code() != ENOENT)
    log::warn("freezer_record_refused", "session=" + id + " reason=" + log::value(target.error().message()));
  // A record that is gone or refused names nothing to thaw; ROOT/ID (ours) goes as ever.
  if (!target && !f.records.empty()) eraseFreezerRecord(recordDir(f, id));
  const std::string dir = dirOf(f, id);
  struct stat st;
  if (::stat(dir.c_str(), &st) != 0) return;
  (void)writeFile(dir + (f.version == 2 ? "/cgroup.freeze" : "/freezer.state"), f.version == 2 ? "0" : "THAWED");
  (void)waitFor([&] { return ::rmdir(dir.c_str()) == 0 || errno == ENOENT; });
}

}  // namespace corral::daemon
