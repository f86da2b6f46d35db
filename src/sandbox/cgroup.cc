// SPDX-License-Identifier: Apache-2.0
// Per-run cgroups: create dispatch, the guard (attach, stats, kill, remove), reapStale.
#include "sandbox/cgroup.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <memory>
#include <thread>

#include "base/log.h"
#include "sandbox/cgroup_v1.h"
#include "sandbox/cgroup_v2.h"

namespace corral::sandbox::cgroup {
namespace {

using Clock = std::chrono::steady_clock;
constexpr auto kKillWait = std::chrono::seconds(5);
constexpr auto kRmdirWait = std::chrono::seconds(2);
constexpr int kMkdirAttempts = 3;
constexpr size_t kMaxRunId = 64;

Result<void> checkRunId(std::string_view id) {
  bool ok = !id.empty() && id.size() <= kMaxRunId && id[0] != '.';
  for (char c : id)
    ok = ok && ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                c == '-' || c == '_' || c == '.');
  if (!ok) return Error(Errc::kInvalidArgument, "cgroup run id must be 1-64 of [A-Za-z0-9._-], not starting with '.'");
  return {};
}

// Sleeps with doubling pauses: processes need a moment to exit after SIGKILL.
class Backoff {
 public:
  void pause() {
    std::this_thread::sleep_for(next_);
    next_ = std::min(next_ * 2, std::chrono::microseconds(10'000));
  }

 private:
  std::chrono::microseconds next_{50};
};

// SIGKILLs every pid in dirfd's cgroup.procs until it reads empty (v1, and v2 before 5.14).
bool killBySignal(int dirfd) {
  const auto deadline = Clock::now() + kKillWait;
  Backoff backoff;
  for (;;) {
    std::vector<pid_t> seen = detail::readPids(dirfd);
    if (seen.empty()) return true;
    if (Clock::now() > deadline) {
      // Unkillable for 5 s: stuck in uninterruptible sleep (D state), e.g. on a dead NFS mount.
      log::warn("cgroup_kill_incomplete", "remaining=" + std::to_string(seen.size()));
      return false;
    }
    // A pid read from cgroup.procs can exit and be reused by an unrelated process before we
    // signal it. Pin each pid with a pidfd (5.3), then re-read: a pid still listed while we
    // hold its pidfd is the process we pinned (a live pid has one owner), so the signal goes
    // only to members. Processes forked meanwhile are caught by the next round; pids.max
    // bounds how many there can be.
    std::vector<std::pair<pid_t, UniqueFd>> pinned;
    std::vector<pid_t> unpinned;  // pre-5.3 kernels only: the reuse window stays open
    for (pid_t pid : seen) {
      int fd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
      if (fd >= 0) pinned.emplace_back(pid, UniqueFd(fd));
      else if (errno == ENOSYS) unpinned.push_back(pid);
    }
    std::vector<pid_t> still = detail::readPids(dirfd);
    std::sort(still.begin(), still.end());
    auto member = [&](pid_t pid) { return std::binary_search(still.begin(), still.end(), pid); };
    for (auto& [pid, fd] : pinned)
      if (member(pid)) ::syscall(SYS_pidfd_send_signal, fd.get(), SIGKILL, nullptr, 0);
    for (pid_t pid : unpinned)
      if (member(pid)) ::kill(pid, SIGKILL);
    backoff.pause();
  }
}

// rmdir fails with EBUSY while killed tasks are still exiting; retry briefly. A directory
// that stays is logged here (the destructor has no caller to return to); reapStale removes
// it once it is empty.
void removeDir(const std::string& path) {
  const auto deadline = Clock::now() + kRmdirWait;
  Backoff backoff;
  for (;;) {
    if (::rmdir(path.c_str()) == 0 || errno == ENOENT) return;
    int err = errno;
    if (err != EBUSY || Clock::now() >= deadline) {
      log::warn("cgroup_remove_failed", "path=" + path + " errno=" + std::to_string(err));
      return;
    }
    backoff.pause();
  }
}

}  // namespace

struct Builder {
  // mkdir parent/name and lock it. Invariant: reapStale removes a corral-* directory only
  // while holding LOCK_EX on it, so our LOCK_SH keeps it alive for the guard's lifetime. A
  // reaper may win the race between our mkdir and our flock (it saw an empty corral-* dir);
  // it rmdirs before unlocking, so after flock we check the directory is still linked and,
  // if not, make it again: the name is free by then.
  static Result<Cgroup::Dir> makeDir(Version version, const std::string& parent, std::string_view run_id) {
    RETURN_IF_ERROR(checkRunId(run_id));
    const std::string path = parent + "/corral-" + std::string(run_id);
    for (int attempt = 0; attempt < kMkdirAttempts; ++attempt) {
      if (::mkdir(path.c_str(), 0755) != 0) {
        int err = errno;
        if (err == EEXIST) return Error(err, "mkdir " + path + " (run id in use, or left by a killed corral)");
        return sysError("mkdir " + path, err);
      }
      UniqueFd dir(::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
      if (!dir.valid() && errno == ENOENT) continue;
      if (!dir.valid()) {
        Error e = sysError("open " + path);
        ::rmdir(path.c_str());
        return e;
      }
      // Blocking is fine: a reaper holds LOCK_EX only across one rmdir.
      if (::flock(dir.get(), LOCK_SH) != 0) {
        Error e = sysError("flock " + path);
        ::rmdir(path.c_str());
        return e;
      }
      if (::faccessat(dir.get(), "cgroup.procs", F_OK, 0) != 0) continue;  // reaped; retry
      // v1 "tasks" with "0" moves only the calling thread, which lets the kernel skip the
      // global cgroup_threadgroup_rwsem ("cgroup: Optimize single thread migration", 5.5):
      // ~0.05 ms instead of an RCU grace period. v2 domain cgroups take whole processes only.
      const char* self_file = version == Version::kV1 ? "tasks" : "cgroup.procs";
      UniqueFd self(::openat(dir.get(), self_file, O_WRONLY | O_CLOEXEC));
      if (!self.valid()) {
        Error e = sysError("open " + path + "/" + self_file);
        ::rmdir(path.c_str());
        return e;
      }
      Cgroup::Dir d;
      d.version = version;
      d.path = path;
      d.fd = std::move(dir);
      d.self_fd = std::move(self);
      return d;
    }
    return Error(Errc::kIo, "mkdir " + path + ": removed by a concurrent reapStale each time");
  }

  static std::vector<Cgroup::Dir>& dirs(Cgroup& cg) { return cg.dirs_; }
  static void setSwapCapped(Cgroup& cg, bool capped) { cg.swap_capped_ = capped; }
};

Cgroup::Cgroup(Cgroup&& other) noexcept
    : dirs_(std::move(other.dirs_)), swap_capped_(other.swap_capped_), creator_(other.creator_) {
  other.dirs_.clear();
}

Cgroup& Cgroup::operator=(Cgroup&& other) noexcept {
  if (this != &other) {
    destroy();
    dirs_ = std::move(other.dirs_);
    other.dirs_.clear();
    swap_capped_ = other.swap_capped_;
    creator_ = other.creator_;
  }
  return *this;
}

Cgroup::~Cgroup() { destroy(); }

void Cgroup::destroy() {
  if (dirs_.empty()) return;
  killAll();
  // NOLINTNEXTLINE(modernize-loop-convert): std::views::reverse (libstdc++ 12) does not compile with clang 14
  for (auto it = dirs_.rbegin(); it != dirs_.rend(); ++it) removeDir(it->path);
  dirs_.clear();
}

Version Cgroup::version() const {
  if (dirs_.empty()) return Version::kNone;
  for (const Dir& d : dirs_)
    if (d.version != Version::kV2) return Version::kV1;
  return Version::kV2;
}

int Cgroup::cloneIntoFd() const {
  // With two v2 dirs (or v1 dirs beside one) a clone lands in one place only; attach() then.
  if (dirs_.size() == 1 && dirs_[0].version == Version::kV2) return dirs_[0].fd.get();
  return -1;
}

Result<void> Cgroup::attach(pid_t pid) {
  for (const Dir& d : dirs_) {
    if (auto r = detail::writeAt(d.fd.get(), "cgroup.procs", std::to_string(pid)); !r)
      return r.error().wrap("attach pid " + std::to_string(pid) + " to " + d.path);
  }
  return {};
}

int Cgroup::attachSelf() const noexcept {
  // Async-signal-safe: no allocation; getpid, write and close on fds opened by create().
  if (::getpid() == creator_) return EPERM;  // closing would break the guard's own fds
  int err = 0;
  for (const Dir& d : dirs_)
    if (err == 0 && ::write(d.self_fd.get(), "0", 1) != 1) err = errno;
  for (const Dir& d : dirs_) ::close(d.self_fd.get());
  return err;
}

Stats Cgroup::stats() const {
  Stats s;
  for (const Dir& d : dirs_) {
    if (d.memory) {
      if (d.version == Version::kV1) v1::readMemoryStats(d.fd.get(), s);
      else v2::readMemoryStats(d.fd.get(), s);
    }
    if (d.pids) {
      if (auto events = detail::readAt(d.fd.get(), "pids.events"))
        s.pids_max_hit = detail::flatKeyed(*events, "max").value_or(0) > 0;
    }
  }
  return s;
}

void Cgroup::killAll() {
  for (const Dir& d : dirs_) {
    if (d.version == Version::kV2 && v2::killViaCgroupKill(d.fd.get())) continue;
    // No freezer: it would be a third hierarchy to create, attach and remove, and v1 frozen
    // tasks do not die until thawed. Signalling converges without it because killed
    // processes cannot fork and pids.max bounds the rest.
    killBySignal(d.fd.get());
  }
}

std::vector<std::string> Cgroup::paths() const {
  std::vector<std::string> out;
  for (const Dir& d : dirs_) out.push_back(d.path);
  return out;
}

Result<Cgroup> create(const CgroupPlan& plan, const HostCgroups& host, std::string_view run_id) {
  struct Need {
    std::string name;
    const ControllerSite* site;
  };
  std::vector<Need> needs;
  if (plan.memory_max) needs.push_back({"memory", &host.memory});
  if (plan.pids_max) needs.push_back({"pids", &host.pids});
  for (const Need& n : needs) {
    if (n.site->version == Version::kNone)
      return Error(Errc::kUnsupported, "cgroup " + n.name + " controller: " +
                                           (n.site->why_not.empty() ? "no usable site" : n.site->why_not));
  }
  RETURN_IF_ERROR(checkRunId(run_id));

  Cgroup cg;  // on any error below, its destructor removes what was made so far
  auto& dirs = Builder::dirs(cg);
  for (size_t i = 0; i < needs.size(); ++i) {
    const ControllerSite& site = *needs[i].site;
    bool done = false;  // co-mounted v1 controllers, or v2: one dir serves several needs
    for (size_t j = 0; j < i; ++j)
      done = done || (needs[j].site->version == site.version && needs[j].site->parent == site.parent);
    if (done) continue;
    std::vector<std::string> here;
    for (const Need& n : needs)
      if (n.site->version == site.version && n.site->parent == site.parent) here.push_back(n.name);
    if (site.make_parent) RETURN_IF_ERROR(v2::prepareParent(site.parent, here));
    ASSIGN_OR_RETURN(auto dir, Builder::makeDir(site.version, site.parent, run_id));
    dir.memory = std::find(here.begin(), here.end(), "memory") != here.end();
    dir.pids = std::find(here.begin(), here.end(), "pids") != here.end();
    dirs.push_back(std::move(dir));

    const auto& d = dirs.back();
    if (d.memory) {
      Result<bool> capped = d.version == Version::kV1 ? v1::writeMemoryLimit(d.fd.get(), *plan.memory_max)
                                                      : v2::writeMemoryLimit(d.fd.get(), *plan.memory_max);
      if (!capped) return capped.error().wrap("cgroup " + d.path);
      Builder::setSwapCapped(cg, *capped);
    }
    if (d.pids) {
      if (auto r = detail::writeAt(d.fd.get(), "pids.max", std::to_string(*plan.pids_max)); !r)
        return r.error().wrap("cgroup " + d.path);
    }
  }
  return cg;
}

int reapStale(const HostCgroups& host) {
  std::vector<std::string> parents;
  for (const ControllerSite* s : {&host.memory, &host.pids, &host.cpu})
    if (s->version != Version::kNone && std::find(parents.begin(), parents.end(), s->parent) == parents.end())
      parents.push_back(s->parent);
  int removed = 0;
  for (const std::string& parent : parents) {
    UniqueFd pfd(::open(parent.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!pfd.valid()) continue;
    std::vector<std::string> names;
    {
      UniqueFd listing(::fcntl(pfd.get(), F_DUPFD_CLOEXEC, 0));
      if (!listing.valid()) continue;
      std::unique_ptr<DIR, int (*)(DIR*)> d(::fdopendir(listing.get()), ::closedir);
      if (!d) continue;
      listing.release();  // owned by the DIR now
      while (struct dirent* e = ::readdir(d.get())) {
        std::string_view name(e->d_name);
        if (name.substr(0, 7) == "corral-" && (e->d_type == DT_DIR || e->d_type == DT_UNKNOWN))
          names.emplace_back(name);
      }
    }
    for (const std::string& name : names) {
      UniqueFd child(::openat(pfd.get(), name.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
      if (!child.valid()) continue;
      if (::flock(child.get(), LOCK_EX | LOCK_NB) != 0) continue;  // a live guard holds it
      if (!detail::readPids(child.get()).empty()) continue;       // not ours to kill
      if (::unlinkat(pfd.get(), name.c_str(), AT_REMOVEDIR) == 0) ++removed;
    }
  }
  return removed;
}

namespace detail {

std::optional<std::string> readAt(int dirfd, const char* name) {
  UniqueFd fd(::openat(dirfd, name, O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) return std::nullopt;
  std::string out;
  char buf[4096];
  for (;;) {
    ssize_t n = ::read(fd.get(), buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return std::nullopt;
    if (n == 0) return out;
    out.append(buf, static_cast<size_t>(n));
  }
}

Result<void> writeAt(int dirfd, const char* name, std::string_view value) {
  UniqueFd fd(::openat(dirfd, name, O_WRONLY | O_CLOEXEC));
  if (!fd.valid()) return sysError(std::string("open ") + name);
  ssize_t n = ::write(fd.get(), value.data(), value.size());
  if (n < 0) return sysError(std::string("write ") + name);
  if (static_cast<size_t>(n) != value.size()) return Error(Errc::kIo, std::string("short write ") + name);
  return {};
}

std::optional<uint64_t> flatKeyed(std::string_view text, std::string_view key) {
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(pos, end - pos);
    if (line.size() > key.size() && line.substr(0, key.size()) == key && line[key.size()] == ' ')
      return std::strtoull(std::string(line.substr(key.size() + 1)).c_str(), nullptr, 10);
    pos = end + 1;
  }
  return std::nullopt;
}

bool hasWord(std::string_view text, std::string_view word) {
  size_t pos = 0;
  while ((pos = text.find(word, pos)) != std::string_view::npos) {
    bool starts = pos == 0 || text[pos - 1] == ' ' || text[pos - 1] == '\n';
    size_t after = pos + word.size();
    bool ends = after == text.size() || text[after] == ' ' || text[after] == '\n';
    if (starts && ends) return true;
    pos = after;
  }
  return false;
}

std::vector<pid_t> readPids(int dirfd) {
  std::vector<pid_t> pids;
  auto text = readAt(dirfd, "cgroup.procs");
  if (!text) return pids;
  const char* p = text->c_str();
  char* end = nullptr;
  for (long v = std::strtol(p, &end, 10); end != p; v = std::strtol(p, &end, 10)) {
    if (v > 0) pids.push_back(static_cast<pid_t>(v));
    p = end;
  }
  return pids;
}

Result<Cgroup> createBare(Version version, const std::string& parent, std::string_view run_id) {
  Cgroup cg;
  ASSIGN_OR_RETURN(auto dir, Builder::makeDir(version, parent, run_id));
  Builder::dirs(cg).push_back(std::move(dir));
  return cg;
}

}  // namespace detail
}  // namespace corral::sandbox::cgroup
