// SPDX-License-Identifier: Apache-2.0
// Finding shims by their command line and killing a process tree through pidfds.
#include "daemon/orphans.h"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <map>
#include <set>

#include "base/read_fd.h"
#include "base/unique_fd.h"
#include "daemon/shim.h"

namespace corral::daemon {
namespace {

std::string procFile(pid_t pid, const char* name) {
  UniqueFd fd(::open(("/proc/" + std::to_string(pid) + "/" + name).c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) return "";
  auto text = readUpTo(fd.get(), 65536, name);
  return text ? *text : "";
}

std::vector<pid_t> allPids() {
  std::vector<pid_t> out;
  DIR* d = ::opendir("/proc");
  if (!d) return out;
  while (dirent* e = ::readdir(d)) {
    char* end = nullptr;
    const long pid = std::strtol(e->d_name, &end, 10);
    if (*end == '\0' && pid > 0) out.push_back(static_cast<pid_t>(pid));
  }
  ::closedir(d);
  return out;
}

// Field 4 of /proc/PID/stat; 0 when it cannot be read.
pid_t parentOf(pid_t pid) {
  const std::string stat = procFile(pid, "stat");
  const size_t paren = stat.rfind(')');
  if (paren == std::string::npos || paren + 4 > stat.size()) return 0;
  return static_cast<pid_t>(std::strtol(stat.c_str() + paren + 4, nullptr, 10));
}

bool ownedByUs(pid_t pid) {
  struct stat st;
  return ::stat(("/proc/" + std::to_string(pid)).c_str(), &st) == 0 && st.st_uid == ::geteuid();
}

}  // namespace

std::vector<ShimProcess> findShims(const std::string& sessions_dir) {
  std::vector<ShimProcess> out;
  const std::string want = std::string(kShimCommand) + '\0' + sessions_dir + "/";
  for (pid_t pid : allPids()) {
    if (pid == ::getpid() || !ownedByUs(pid)) continue;
    const std::string cmdline = procFile(pid, "cmdline");
    const size_t at = cmdline.find('\0');  // argv[0] is the binary, argv[1] the shim's verb
    if (at == std::string::npos || cmdline.compare(at + 1, want.size(), want) != 0) continue;
    std::string id = cmdline.substr(at + 1 + want.size());
    while (!id.empty() && id.back() == '\0') id.pop_back();
    if (id.empty() || id.find('/') != std::string::npos || id.find('\0') != std::string::npos) continue;
    out.push_back({pid, processStartTime(pid), id});
  }
  // A shim's own child with its command line (a VM session's QEMU jailer, forked, not exec'd)
  // is not a shim: it dies with its shim, and killing it as an orphan would end a live session.
  std::set<pid_t> found;
  for (const ShimProcess& s : out) found.insert(s.pid);
  std::erase_if(out, [&](const ShimProcess& s) { return found.count(parentOf(s.pid)) != 0; });
  return out;
}

int killProcessTree(pid_t pid, uint64_t start, int timeout_ms) {
  std::vector<UniqueFd> pidfds;
  // The root first: its pidfd, then its identity checked (a pid reused in between fails here).
  UniqueFd root(static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)));
  if (!root.valid() || processStartTime(pid) != start) return 0;
  // Its descendants, by the parent links of one /proc walk (each pidfd opened before its
  // parent link is read again, for the same reason).
  std::map<pid_t, pid_t> parent;
  for (pid_t p : allPids()) parent[p] = parentOf(p);
  std::set<pid_t> tree = {pid};
  for (bool grew = true; grew;) {
    grew = false;
    for (const auto& [p, pp] : parent)
      if (tree.count(pp) && tree.insert(p).second) grew = true;
  }
  for (pid_t p : tree) {
    if (p == pid) continue;
    UniqueFd fd(static_cast<int>(::syscall(SYS_pidfd_open, p, 0)));
    if (fd.valid() && tree.count(parentOf(p))) pidfds.push_back(std::move(fd));
  }
  pidfds.push_back(std::move(root));
  int killed = 0;
  for (const UniqueFd& fd : pidfds)
    if (::syscall(SYS_pidfd_send_signal, fd.get(), SIGKILL, nullptr, 0) == 0) ++killed;
  const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  for (const UniqueFd& fd : pidfds) {
    pollfd p{fd.get(), POLLIN, 0};
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - std::chrono::steady_clock::now()).count();
    if (left <= 0) break;
    (void)::poll(&p, 1, static_cast<int>(left));
  }
  return killed;
}

}  // namespace corral::daemon
