// SPDX-License-Identifier: Apache-2.0
// Builds and caches the guest's boot files and disks (images.h).
#include "vm/images.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <string.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <set>
#include <sstream>
#include <vector>

#include "audit/sha256.h"
#include "base/copy_fd.h"
#include "base/read_fd.h"
#include "base/remove_tree.h"
#include "base/unique_fd.h"
#include "base/random_id.h"
#include "vm/tool.h"

namespace corral::vm::images {
namespace {

// Bumped whenever what goes into an image changes, so stale caches are not booted.
constexpr const char* kLayoutVersion = "corral-vm-images-2";

Result<std::string> readFile(const std::string& path, size_t limit) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) return sysError("open " + path);
  ASSIGN_OR_RETURN(std::string s, readUpTo(fd.get(), limit, "read " + path));
  if (s.size() > limit) return Error(Errc::kLimit, path + ": larger than expected");
  return s;
}

Result<void> writeFileAtomically(const std::string& path, std::string_view data) {
  const std::string tmp = path + ".tmp-" + randomHex16();
  UniqueFd fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644));
  if (!fd.valid()) return sysError("create " + tmp);
  size_t off = 0;
  while (off < data.size()) {
    ssize_t n = ::write(fd.get(), data.data() + off, data.size() - off);
    if (n <= 0) {
      ::unlink(tmp.c_str());
      return sysError("write " + tmp);
    }
    off += static_cast<size_t>(n);
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) return sysError("rename " + tmp);
  return {};
}

bool exists(const std::string& path) { return ::access(path.c_str(), F_OK) == 0; }

// ---- cpio newc ----
void cpioEntry(std::string& out, const std::string& name, uint32_t mode, std::string_view data, uint32_t ino) {
  char hdr[111];
  std::snprintf(hdr, sizeof hdr, "070701%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X", ino, mode, 0u, 0u, 1u,
                0u, static_cast<uint32_t>(data.size()), 0u, 0u, 0u, 0u, static_cast<uint32_t>(name.size() + 1), 0u);
  out.append(hdr, 110);
  out.append(name);
  out.push_back('\0');
  while (out.size() % 4) out.push_back('\0');
  out.append(data);
  while (out.size() % 4) out.push_back('\0');
}

// The modules the guest loads, their dependencies first (modules.dep order).
Result<std::vector<std::string>> moduleOrder(const std::string& release) {
  const std::string base = "/lib/modules/" + release + "/";
  // No module tree at all: a kernel with the guest's drivers built in (scripts/build-vm-kernel.sh);
  // if one is missing the agent's mount fails and says so.
  struct stat st;
  if (::stat(("/lib/modules/" + release).c_str(), &st) != 0 && errno == ENOENT) return std::vector<std::string>{};
  ASSIGN_OR_RETURN(std::string dep, readFile(base + "modules.dep", 16u << 20));
  std::map<std::string, std::vector<std::string>> deps;  // path -> dependency paths
  std::map<std::string, std::string> by_name;            // module name -> path
  std::istringstream in(dep);
  std::string line;
  while (std::getline(in, line)) {
    size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string path = line.substr(0, colon);
    std::string name = path.substr(path.rfind('/') + 1);
    name.resize(std::min(name.size(), name.find('.')));
    std::replace(name.begin(), name.end(), '-', '_');
    by_name[name] = path;
    std::istringstream ds(line.substr(colon + 1));
    std::string d;
    while (ds >> d) deps[path].push_back(d);
  }
  // crc32c_generic: ext4 and erofs ask the crypto API for "crc32c" at mount time, which the
  // guest cannot modprobe; loading it up front answers that request.
  const std::vector<std::string> wanted = {"virtio_mmio", "virtio_blk", "virtio_console", "virtio_rng",
                                           "crc32c_generic", "erofs", "ext4"};
  std::vector<std::string> order;
  std::set<std::string> seen;
  std::vector<std::pair<std::string, bool>> stack;
  for (const std::string& w : wanted) {
    auto it = by_name.find(w);
    if (it == by_name.end()) continue;  // built in
    stack.emplace_back(it->second, false);
    while (!stack.empty()) {
      auto [path, expanded] = stack.back();
      stack.pop_back();
      if (expanded) {
        if (seen.insert(path).second) order.push_back(path);
        continue;
      }
      if (seen.count(path)) continue;
      stack.emplace_back(path, true);
      for (const std::string& d : deps[path])
        if (!seen.count(d)) stack.emplace_back(d, false);
    }
  }
  if (order.empty()) return Error(Errc::kUnsupported, "no guest modules found in " + base);
  for (std::string& p : order) p.insert(0, base);
  return order;
}

// ---- the runtime package closure ----
struct Package {
  std::string version;
  bool essential = false;
  std::vector<std::vector<std::string>> depends;  // alternatives per entry
};

Result<std::map<std::string, Package>> installedPackages() {
  ASSIGN_OR_RETURN(std::string dpkg, findTool({"/usr/bin/dpkg-query"}, "dpkg"));
  ASSIGN_OR_RETURN(std::string text, runTool({dpkg, "-W", "-f=${Package}\t${Version}\t${Essential}\t${db:Status-Abbrev}\t${Pre-Depends}, ${Depends}\n"}));
  std::map<std::string, Package> pkgs;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    std::vector<std::string> f;
    size_t start = 0;
    for (size_t tab; (tab = line.find('\t', start)) != std::string::npos; start = tab + 1) f.push_back(line.substr(start, tab - start));
    f.push_back(line.substr(start));
    if (f.size() != 5 || f[3].rfind("ii", 0) != 0) continue;
    Package p{f[1], f[2] == "yes", {}};
    std::istringstream deps(f[4]);
    std::string entry;
    while (std::getline(deps, entry, ',')) {
      std::vector<std::string> alts;
      std::istringstream as(entry);
      std::string alt;
      while (std::getline(as, alt, '|')) {
        size_t b = alt.find_first_not_of(' ');
        if (b == std::string::npos) continue;
        std::string name = alt.substr(b);
        name.resize(std::min(name.size(), name.find_first_of(" (:")));
        if (!name.empty()) alts.push_back(name);
      }
      if (!alts.empty()) p.depends.push_back(alts);
    }
    pkgs[f[0]] = std::move(p);
  }
  return pkgs;
}

std::vector<std::string> closure(const std::map<std::string, Package>& pkgs) {
  std::set<std::string> in;
  std::vector<std::string> todo;
  for (const auto& [name, p] : pkgs)
    if (p.essential) todo.push_back(name);
  while (!todo.empty()) {
    std::string n = todo.back();
    todo.pop_back();
    if (!in.insert(n).second) continue;
    for (const auto& alts : pkgs.at(n).depends)
      for (const std::string& a : alts)
        if (pkgs.count(a)) {
          todo.push_back(a);
          break;
        }
  }
  return {in.begin(), in.end()};
}

// /bin/sh -> /usr/bin/sh: Debian 12 has merged /usr, but packages still list the old paths.
std::string underUsr(const std::string& path) {
  for (const char* top : {"/bin/", "/sbin/", "/lib/", "/lib64/", "/lib32/", "/libx32/"})
    if (path.rfind(top, 0) == 0) return "/usr" + path;
  for (const char* top : {"/bin", "/sbin", "/lib", "/lib64", "/lib32", "/libx32"})
    if (path == top) return "/usr" + path;
  return path;
}

bool skipped(const std::string& path) {
  for (const char* p : {"/usr/share/doc/", "/usr/share/man/", "/usr/share/info/", "/usr/share/locale/", "/usr/share/lintian/"})
    if (path.rfind(p, 0) == 0) return true;
  return false;
}

// Copies one host path (file, symlink or directory) into the staging tree at the same path.
Result<void> stageOne(const std::string& staging, const std::string& path) {
  struct stat st;
  if (::lstat(path.c_str(), &st) != 0) return {};  // listed but gone (a diverted or removed file)
  const std::string dst = staging + path;
  if (S_ISDIR(st.st_mode)) {
    if (::mkdir(dst.c_str(), 0755) != 0 && errno != EEXIST) return sysError("mkdir " + dst);
    return {};
  }
  if (exists(dst)) return {};
  if (S_ISLNK(st.st_mode)) {
    char target[4096];
    ssize_t n = ::readlink(path.c_str(), target, sizeof target - 1);
    if (n < 0) return sysError("readlink " + path);
    target[n] = '\0';
    if (::symlink(target, dst.c_str()) != 0) return sysError("symlink " + dst);
    return {};
  }
  if (!S_ISREG(st.st_mode)) return {};
  // A hard link costs nothing when the cache shares the file system; otherwise a copy.
  if (::link(path.c_str(), dst.c_str()) == 0) return {};
  UniqueFd src(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
  if (!src.valid()) return {};  // unreadable to this user (a 0600 file): the guest will not have it
  UniqueFd out(::open(dst.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, st.st_mode & 0755));
  if (!out.valid()) return sysError("create " + dst);
  return copyFdContents(src.get(), out.get(), st.st_size, path);
}

Result<void> mkdirs(const std::string& path) {
  for (size_t i = 1; i <= path.size(); ++i)
    if (i == path.size() || path[i] == '/')
      if (::mkdir(path.substr(0, i).c_str(), 0755) != 0 && errno != EEXIST) return sysError("mkdir " + path.substr(0, i));
  return {};
}

}  // namespace

std::string cachePath() {
  std::string dir;
  if (const char* c = std::getenv("CORRAL_VM_CACHE"); c && *c) dir = c;
  else if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x == '/') dir = std::string(x) + "/corral/vm";
  else if (const char* h = std::getenv("HOME"); h && *h == '/' && ::access(h, W_OK) == 0) dir = std::string(h) + "/.cache/corral/vm";
  else {
    const char* t = std::getenv("TMPDIR");
    dir = std::string(t && *t == '/' ? t : "/tmp") + "/corral-vm-" + std::to_string(::getuid());
  }
  return dir;
}

Result<std::string> cacheDir() {
  const std::string dir = cachePath();
  const size_t last = dir.rfind('/');
  if (last > 0) {
    RETURN_IF_ERROR(mkdirs(dir.substr(0, last)));
  }
  if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) return sysError("VM cache " + dir);
  struct stat st;
  if (::lstat(dir.c_str(), &st) != 0) return sysError("VM cache " + dir);
  if (!S_ISDIR(st.st_mode) || st.st_uid != ::getuid() || (st.st_mode & 022))
    return Error(Errc::kRefused, "VM cache " + dir + ": not a directory of this user that only it can write");
  return dir;
}

Result<std::string> kernelRelease(const std::string& bzimage) {
  UniqueFd fd(::open(bzimage.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) return sysError("--vm-kernel " + bzimage);
  char hdr[0x210];
  if (::pread(fd.get(), hdr, sizeof hdr, 0) != static_cast<ssize_t>(sizeof hdr) || std::string_view(hdr + 0x202, 4) != "HdrS")
    return Error(Errc::kInvalidArgument, "--vm-kernel " + bzimage + ": not a Linux bzImage");
  const auto off = static_cast<uint16_t>(static_cast<unsigned char>(hdr[0x20e]) | (static_cast<unsigned char>(hdr[0x20f]) << 8));
  char ver[128] = {};
  if (off == 0 || ::pread(fd.get(), ver, sizeof ver - 1, off + 0x200) <= 0)
    return Error(Errc::kInvalidArgument, "--vm-kernel " + bzimage + ": no version string");
  std::string release(ver);
  release.resize(std::min(release.size(), release.find(' ')));
  if (release.empty() || release.find('/') != std::string::npos || release[0] == '.')
    return Error(Errc::kInvalidArgument, "--vm-kernel " + bzimage + ": bad version string");
  return release;
}

Result<std::string> defaultKernel() {
  std::vector<std::string> found;
  if (DIR* d = ::opendir("/boot")) {
    while (dirent* e = ::readdir(d)) {
      std::string n = e->d_name;
      if (n.rfind("vmlinuz-", 0) == 0 && exists("/lib/modules/" + n.substr(8) + "/modules.dep")) found.push_back("/boot/" + n);
    }
    ::closedir(d);
  }
  if (found.empty())
    return Error(Errc::kUnsupported, "no guest kernel: no /boot/vmlinuz-* with modules (install linux-image-amd64, or pass --vm-kernel)");
  std::sort(found.begin(), found.end(), [](const std::string& a, const std::string& b) { return ::strverscmp(a.c_str(), b.c_str()) < 0; });
  return found.back();
}

Result<KernelChoice> chooseKernel() {
  // The escape hatch: CORRAL_VM_KERNEL=debian boots Debian's kernel even with a minimal one
  // cached (--vm-kernel PATH boots any). Any other value is refused, not guessed at.
  const char* forced = std::getenv("CORRAL_VM_KERNEL");
  const std::string_view want = forced ? forced : "";
  if (!want.empty() && want != "debian")
    return Error(Errc::kInvalidArgument, "CORRAL_VM_KERNEL must be \"debian\" or unset (--vm-kernel PATH boots another kernel)");
  if (want == "debian") {
    ASSIGN_OR_RETURN(std::string debian, defaultKernel());
    return KernelChoice{debian, "debian", "Debian's kernel: CORRAL_VM_KERNEL=debian"};
  }
  // Chosen by boot time: the minimal kernel boots several times faster (docs/benchmarks-vm.md),
  // so a cached one wins. Only a cache that exists is looked in: cacheDir() creates the
  // directory, and `corral doctor`, which asks this, must leave nothing behind in $HOME.
  std::string best;
  int refused = 0;
  if (exists(cachePath())) {
    if (Result<std::string> cache = cacheDir()) {
      struct timespec best_time {};
      if (DIR* d = ::opendir(cache->c_str())) {
        while (dirent* e = ::readdir(d)) {
          const std::string n = e->d_name;
          if (n.rfind("vmlinuz-minimal-", 0) != 0) continue;
          // Another user could plant a kernel that would be booted: a regular file of this
          // user that nobody else can write, not a symlink, with a release string.
          struct stat st;
          const std::string p = *cache + "/" + n;
          if (::lstat(p.c_str(), &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != ::getuid() || (st.st_mode & 022) ||
              !kernelRelease(p).ok()) {
            ++refused;
            continue;
          }
          if (best.empty() || st.st_mtim.tv_sec > best_time.tv_sec ||
              (st.st_mtim.tv_sec == best_time.tv_sec && st.st_mtim.tv_nsec > best_time.tv_nsec)) {
            best = p;
            best_time = st.st_mtim;
          }
        }
        ::closedir(d);
      }
    }
  }
  if (!best.empty())
    return KernelChoice{best, "minimal",
                        "the cached minimal kernel (scripts/build-vm-kernel.sh): it boots faster; CORRAL_VM_KERNEL=debian boots Debian's"};
  ASSIGN_OR_RETURN(std::string debian, defaultKernel());
  return KernelChoice{debian, "debian",
                      refused ? "Debian's kernel: the cached vmlinuz-minimal-* refused (not a regular file of this user that "
                                "nobody else can write); scripts/build-vm-kernel.sh builds one"
                              : "Debian's kernel: no minimal kernel cached (scripts/build-vm-kernel.sh builds one)"};
}

Result<std::string> initramfs(const std::string& cache, const std::string& agent, const std::string& release) {
  ASSIGN_OR_RETURN(std::vector<std::string> modules, moduleOrder(release));
  ASSIGN_OR_RETURN(std::string agent_bytes, readFile(agent, 256u << 20));
  std::string key = std::string(kLayoutVersion) + "\n" + release + "\n" + audit::sha256Hex(agent_bytes) + "\n";
  std::vector<std::pair<std::string, std::string>> files;  // name in the image, bytes
  std::string order;
  for (const std::string& m : modules) {
    ASSIGN_OR_RETURN(std::string bytes, readFile(m, 64u << 20));
    std::string name = m.substr(m.rfind('/') + 1);
    key += name + " " + audit::sha256Hex(bytes) + "\n";
    order += name + "\n";
    files.emplace_back("modules/" + name, std::move(bytes));
  }
  const std::string path = cache + "/initramfs-" + audit::sha256Hex(key).substr(0, 32) + ".cpio";
  if (exists(path)) return path;
  std::string out;
  uint32_t ino = 1;
  for (const char* dir : {"dev", "proc", "sys", "tmp", "usr", "ws", "etc", "modules", "root", "newroot"}) cpioEntry(out, dir, 040755, "", ino++);
  for (const auto& [link, target] : std::vector<std::pair<const char*, const char*>>{
           {"bin", "usr/bin"}, {"sbin", "usr/sbin"}, {"lib", "usr/lib"}, {"lib64", "usr/lib64"}})
    cpioEntry(out, link, 0120777, target, ino++);
  cpioEntry(out, "init", 0100755, agent_bytes, ino++);
  cpioEntry(out, "modules/order", 0100644, order, ino++);
  for (const auto& [name, bytes] : files) cpioEntry(out, name, 0100644, bytes, ino++);
  cpioEntry(out, "TRAILER!!!", 0, "", 0);
  RETURN_IF_ERROR(writeFileAtomically(path, out));
  return path;
}

Result<std::string> rootfs(const std::string& cache) {
  ASSIGN_OR_RETURN(std::string mkfs, findTool({"/usr/bin/mkfs.erofs", "/usr/sbin/mkfs.erofs"}, "erofs-utils"));
  ASSIGN_OR_RETURN(auto pkgs, installedPackages());
  const std::vector<std::string> names = closure(pkgs);
  std::string key = std::string(kLayoutVersion) + "\n";
  for (const std::string& n : names) key += n + "=" + pkgs.at(n).version + "\n";
  const std::string path = cache + "/rootfs-" + audit::sha256Hex(key).substr(0, 32) + ".erofs";
  if (exists(path)) return path;
  const std::string staging = cache + "/staging-" + randomHex16();
  RETURN_IF_ERROR(mkdirs(staging + "/usr"));
  struct Cleanup {
    std::string dir;
    ~Cleanup() {
      UniqueFd fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW));
      if (fd.valid()) removeContents(fd.get());
      ::rmdir(dir.c_str());
    }
  } cleanup{staging};
  // The packages' file lists through dpkg-query, dpkg's interface to its database (its
  // files under /var/lib/dpkg are private to dpkg). One call for the whole closure.
  ASSIGN_OR_RETURN(std::string dpkg, findTool({"/usr/bin/dpkg-query"}, "dpkg"));
  std::vector<std::string> query{dpkg, "--listfiles"};
  query.insert(query.end(), names.begin(), names.end());
  ASSIGN_OR_RETURN(std::string list, runTool(query, 256u << 20));
  std::vector<std::string> paths;
  {
    std::istringstream in(list);
    std::string p;
    while (std::getline(in, p)) {
      p = underUsr(p);
      if (p.rfind("/usr/", 0) == 0 && !skipped(p)) paths.push_back(p);
    }
  }
  std::sort(paths.begin(), paths.end());
  paths.erase(std::unique(paths.begin(), paths.end()), paths.end());
  for (const std::string& p : paths) {
    RETURN_IF_ERROR(mkdirs(staging + p.substr(0, p.rfind('/'))));
    RETURN_IF_ERROR(stageOne(staging, p));
  }
  // The image's root is the guest's /usr.
  const std::string tmp = path + ".tmp-" + randomHex16();
  auto made = runTool({mkfs, "-T0", tmp, staging + "/usr"});
  if (!made) {
    ::unlink(tmp.c_str());
    return made.error().wrap("build the VM runtime image");
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) return sysError("rename " + tmp);
  return path;
}

Result<void> workspaceImage(const std::string& dir, uint64_t bytes, const std::string& out) {
  ASSIGN_OR_RETURN(std::string mkfs, findTool({"/usr/sbin/mkfs.ext4", "/sbin/mkfs.ext4"}, "e2fsprogs"));
  {
    UniqueFd fd(::open(out.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600));
    if (!fd.valid()) return sysError("create " + out);
    if (::ftruncate(fd.get(), static_cast<off_t>(bytes)) != 0) return sysError("size " + out);
  }
  std::vector<std::string> args = {mkfs, "-q", "-F", "-t", "ext4", "-O", "^has_journal", "-m", "0", "-E", "root_owner=0:0"};
  if (!dir.empty()) {
    args.emplace_back("-d");
    args.push_back(dir);
  }
  args.push_back(out);
  auto made = runTool(args);
  if (!made) return made.error().wrap("--workspace into the VM's disk (--workspace-size " + std::to_string(bytes) + ")");
  return {};
}

}  // namespace corral::vm::images
