// SPDX-License-Identifier: Apache-2.0
// Host cgroup detection: parses /proc/self/{cgroup,mountinfo} and probes cgroupfs read-only.
#include "sandbox/host_cgroups.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <charconv>
#include <cstring>
#include <map>
#include <optional>
#include <vector>

#include "sandbox/cgroup.h"

namespace corral::sandbox::cgroup {
namespace {

struct Mount {
  std::string root;   // the part of the hierarchy this mount shows
  std::string point;  // where it is mounted
  std::string fstype;
  std::vector<std::string> super_opts;
};

struct SelfCgroups {
  std::optional<std::string> v2;              // "0::<path>"
  std::map<std::string, std::string> v1;      // controller -> path
};

std::vector<std::string> split(std::string_view s, char sep) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= s.size()) {
    size_t end = s.find(sep, start);
    if (end == std::string_view::npos) end = s.size();
    out.emplace_back(s.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

// mountinfo escapes space, tab, newline and backslash as \ooo.
std::string unescape(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 3 < s.size()) {
      int v = 0;
      bool ok = true;
      for (size_t j = 1; j <= 3; ++j) {
        char c = s[i + j];
        if (c < '0' || c > '7') ok = false;
        v = v * 8 + (c - '0');
      }
      if (ok) {
        out += static_cast<char>(v);
        i += 3;
        continue;
      }
    }
    out += s[i];
  }
  return out;
}

std::vector<Mount> parseMountinfo(std::string_view text) {
  std::vector<Mount> mounts;
  for (const std::string& line : split(text, '\n')) {
    std::vector<std::string> f = split(line, ' ');
    size_t dash = 6;
    while (dash < f.size() && f[dash] != "-") ++dash;
    if (dash + 3 >= f.size()) continue;  // also covers lines too short for f[3], f[4]
    if (f[dash + 1] != "cgroup" && f[dash + 1] != "cgroup2") continue;
    mounts.push_back({unescape(f[3]), unescape(f[4]), f[dash + 1], split(f[dash + 3], ',')});
  }
  return mounts;
}

SelfCgroups parseProcCgroup(std::string_view text) {
  SelfCgroups self;
  for (const std::string& line : split(text, '\n')) {
    size_t a = line.find(':');
    size_t b = a == std::string::npos ? a : line.find(':', a + 1);
    if (b == std::string::npos) continue;
    std::string id = line.substr(0, a), ctrls = line.substr(a + 1, b - a - 1), path = line.substr(b + 1);
    if (id == "0" && ctrls.empty()) {
      self.v2 = path;
      continue;
    }
    for (const std::string& c : split(ctrls, ',')) self.v1[c] = path;
  }
  return self;
}

// The directory showing cgroup `path` under mount `m`, or "" when the mount does not show it
// (a bind of another subtree, or a mount from outside our cgroup namespace: root "/..").
std::string dirOf(const Mount& m, const std::string& path) {
  if (m.root == "/") return path == "/" ? m.point : m.point + path;
  if (path == m.root) return m.point;
  if (path.size() > m.root.size() && path.compare(0, m.root.size(), m.root) == 0 &&
      path[m.root.size()] == '/')
    return m.point + path.substr(m.root.size());
  return "";
}

bool exists(const std::string& path) { return ::faccessat(AT_FDCWD, path.c_str(), F_OK, 0) == 0; }
// AT_EACCESS: the effective ids decide, as they will when we mkdir and write.
bool canWrite(const std::string& path, int mode = W_OK) {
  return ::faccessat(AT_FDCWD, path.c_str(), mode, AT_EACCESS) == 0;
}
bool canMkdirIn(const std::string& dir) { return canWrite(dir, W_OK | X_OK); }

bool listHas(const std::string& file, std::string_view word) {
  auto text = detail::readAt(AT_FDCWD, file.c_str());
  return text && detail::hasWord(*text, word);
}

bool holdsProcesses(const std::string& dir) {
  auto text = detail::readAt(AT_FDCWD, (dir + "/cgroup.procs").c_str());
  return text && text->find_first_not_of(" \n") != std::string::npos;
}

std::string fixHint(Version where) {
  if (::geteuid() == 0)
    return "mount the cgroup filesystem read-write, or start corral in a delegated cgroup whose "
           "parent it may write (systemd-run --scope -p Delegate=yes corral ...)";
  if (where == Version::kV2)
    return "run as root, or start corral in a delegated scope (systemd-run --user --scope "
           "-p Delegate=yes corral ...)";
  return "run as root or on a cgroup v2 host with a delegated subtree (systemd-run --user --scope "
         "-p Delegate=yes)";
}

std::string uidText() { return "uid " + std::to_string(::geteuid()); }

// v1: the cgroup we are in, in the hierarchy that has `ctrl`. No internal-process rule on v1,
// so our own cgroup is a fine parent; limits of ancestors still apply on top (use_hierarchy).
ControllerSite v1Site(const std::vector<Mount>& mounts, const SelfCgroups& self, const std::string& ctrl) {
  ControllerSite site;
  const Mount* mount = nullptr;
  for (const Mount& m : mounts)  // last wins: a later mount on the same point shadows earlier ones
    if (m.fstype == "cgroup")
      for (const std::string& o : m.super_opts)
        if (o == ctrl) mount = &m;
  if (!mount) return site;  // why_not left empty: the controller is not on v1 at all
  auto path = self.v1.find(ctrl);
  std::string dir = path == self.v1.end() ? "" : dirOf(*mount, path->second);
  if (dir.empty() || !exists(dir)) {
    site.why_not = "cgroup v1 " + ctrl + " hierarchy at " + mount->point +
                   " does not show our cgroup (foreign cgroup namespace?); " + fixHint(Version::kV1);
  } else if (!canMkdirIn(dir) || !canWrite(dir + "/cgroup.procs")) {
    site.why_not = "cgroup v1 " + ctrl + " controller at " + dir + " is not writable by " + uidText() +
                   "; " + fixHint(Version::kV1);
  } else {
    site.version = Version::kV1;
    site.parent = dir;
  }
  return site;
}

// v2 root layout: <root>/corral, a process-free cgroup of our own. The root cgroup is exempt
// from the no-internal-process rule, so it can enable controllers for us whatever it holds.
// Preferred when possible: independent of which session or service started corral, and one
// place for reapStale. Needs the real root (no cgroup.type file; a cgroup namespace root has
// one) and root-level write access, i.e. real root without a cgroup namespace.
std::optional<ControllerSite> v2RootLayout(const Mount& m, const std::string& ctrl) {
  if (m.root != "/" || exists(m.point + "/cgroup.type")) return std::nullopt;
  const std::string& root = m.point;
  if (!listHas(root + "/cgroup.controllers", ctrl)) return std::nullopt;
  if (!canMkdirIn(root) || !canWrite(root + "/cgroup.procs")) return std::nullopt;
  if (!listHas(root + "/cgroup.subtree_control", ctrl) && !canWrite(root + "/cgroup.subtree_control"))
    return std::nullopt;
  std::string ours = root + "/corral";
  if (exists(ours) && (!canMkdirIn(ours) || !canWrite(ours + "/cgroup.subtree_control") ||
                       !canWrite(ours + "/cgroup.procs") || holdsProcesses(ours)))
    return std::nullopt;
  ControllerSite site{Version::kV2, ours, "", true};
  return site;
}

// v2 delegated parent: the nearest strict ancestor of our cgroup that already has the
// controller in subtree_control and that we may write. Typical: `systemd-run --user --scope
// -p Delegate=yes` puts us in app.slice/run-N.scope; the scope holds our own process, so its
// subtree cannot get controllers (no-internal-process rule, EBUSY), but app.slice (owned by the
// user manager, controllers enabled because of the delegated scope) can hold siblings. We never
// enable controllers in such a slice ourselves: systemd owns its subtree_control and rewrites
// it. Moving corral itself into a leaf would make our own cgroup usable, but other processes
// of the caller (a shell) would have to move too, so detection does not assume it.
std::optional<ControllerSite> v2DelegatedParent(const Mount& m, const std::string& self_dir,
                                                const std::string& ctrl) {
  std::string dir = self_dir;
  while (dir.size() > m.point.size()) {
    size_t slash = dir.rfind('/');
    if (slash == std::string::npos) break;
    dir.resize(slash);
    if (dir.size() < m.point.size()) break;
    if (!exists(dir + "/cgroup.type")) break;  // the real root: v2RootLayout's business
    if (listHas(dir + "/cgroup.subtree_control", ctrl) && canMkdirIn(dir) &&
        canWrite(dir + "/cgroup.procs")) {
      ControllerSite site{Version::kV2, dir, "", false};
      return site;
    }
  }
  return std::nullopt;
}

ControllerSite v2Site(const Mount* m, const std::string& self_dir, const std::string& ctrl) {
  ControllerSite site;
  if (!m || self_dir.empty()) return site;
  if (auto s = v2RootLayout(*m, ctrl)) return *s;
  if (auto s = v2DelegatedParent(*m, self_dir, ctrl)) return *s;
  if (!listHas(self_dir + "/cgroup.controllers", ctrl) && !listHas(m->point + "/cgroup.controllers", ctrl)) {
    site.why_not = "cgroup v2 at " + m->point + " does not offer the " + ctrl + " controller";
  } else {
    site.why_not = "no cgroup v2 parent with " + ctrl + " enabled is writable by " + uidText() +
                   " above our cgroup " + self_dir +
                   " (it holds processes, so it cannot have controller children); " + fixHint(Version::kV2);
  }
  return site;
}

ControllerSite pick(const std::vector<Mount>& mounts, const Mount* v2, const std::string& self_dir,
                    const SelfCgroups& self, const std::string& ctrl) {
  ControllerSite two = v2Site(v2, self_dir, ctrl);
  if (two.version != Version::kNone) return two;  // v2 first: CLONE_INTO_CGROUP, oom.group, cgroup.kill
  ControllerSite one = v1Site(mounts, self, ctrl);
  if (one.version != Version::kNone) return one;
  // A controller lives in exactly one hierarchy, so the v1 reason wins when v1 has it.
  if (!one.why_not.empty()) return one;
  if (!two.why_not.empty()) return two;
  one.why_not = "no cgroup hierarchy offers the " + ctrl +
                " controller (mount cgroup2 at /sys/fs/cgroup, or enable CONFIG_CGROUPS)";
  return one;
}

bool kernelAtLeast(int major, int minor) {
  struct utsname u {};
  if (::uname(&u) != 0) return false;
  // "6.1.0-13-amd64": major and minor, each checked for overflow.
  int a = 0, b = 0;
  const char* end = u.release + std::strlen(u.release);
  auto major_end = std::from_chars(u.release, end, a);
  if (major_end.ec != std::errc() || major_end.ptr == end || *major_end.ptr != '.') return false;
  if (std::from_chars(major_end.ptr + 1, end, b).ec != std::errc()) return false;
  return a > major || (a == major && b >= minor);
}

}  // namespace

const char* versionName(Version version) {
  switch (version) {
    case Version::kV1: return "v1";
    case Version::kV2: return "v2";
    case Version::kNone: break;
  }
  return "none";
}

HostCgroups detectFrom(std::string_view proc_self_cgroup, std::string_view mountinfo) {
  std::vector<Mount> mounts = parseMountinfo(mountinfo);
  SelfCgroups self = parseProcCgroup(proc_self_cgroup);
  const Mount* v2 = nullptr;
  std::string self_dir;
  if (self.v2) {
    for (const Mount& m : mounts) {
      if (m.fstype != "cgroup2") continue;
      std::string dir = dirOf(m, *self.v2);
      if (!dir.empty() && exists(dir)) {
        v2 = &m;
        self_dir = dir;
      }
    }
  }
  HostCgroups host;
  host.v2_self = self_dir;
  host.memory = pick(mounts, v2, self_dir, self, "memory");
  host.pids = pick(mounts, v2, self_dir, self, "pids");
  host.cpu = pick(mounts, v2, self_dir, self, "cpu");
  if (host.memory.version == Version::kV1)
    host.v1_memsw = exists(host.memory.parent + "/memory.memsw.limit_in_bytes");
  if (host.memory.version == Version::kV2) {
    // The root cgroup has no memory.* files; a non-root cgroup with memory enabled shows
    // whether this kernel has memory.peak (5.19). Otherwise trust the version.
    if (exists(self_dir + "/memory.max"))
      host.v2_memory_peak = exists(self_dir + "/memory.peak");
    else
      host.v2_memory_peak = kernelAtLeast(5, 19);
  }
  return host;
}

HostCgroups detect() {
  auto cg = detail::readAt(AT_FDCWD, "/proc/self/cgroup");
  auto mi = detail::readAt(AT_FDCWD, "/proc/self/mountinfo");
  return detectFrom(cg.value_or(""), mi.value_or(""));
}

}  // namespace corral::sandbox::cgroup
