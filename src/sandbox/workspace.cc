// SPDX-License-Identifier: Apache-2.0
// Workspace staging and output copy-back.
#include "sandbox/workspace.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <linux/openat2.h>
#include <sys/fsuid.h>
#include <sys/random.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "base/open_beneath.h"
#include "base/unique_fd.h"

namespace corral::sandbox::workspace {
namespace {

constexpr int kMaxDepth = 128;

// Staging as a root caller: files created in the sandbox's tmpfs must belong to the
// sandbox's host uid (root is unmapped there: EOVERFLOW), while the sources are read with
// root's access. One switch for the whole copy instead of four per file: fsuid/fsgid become
// the owner's, and the file-system capabilities the kernel drops with a non-zero fsuid
// (CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH, CAP_FOWNER...) are raised again from the permitted
// set, so sources open as they would for root. Both are per-thread and undone on exit. The
// command has not started yet (init waits for "go"), so nothing of the sandbox runs while
// corral holds these rights over its tmpfs.
class OwnerScope {
 public:
  static Result<OwnerScope> enter(const Owner& o) {
    OwnerScope scope(o.switch_fsuid);
    if (!scope.active_) return scope;
    scope.hdr_ = {_LINUX_CAPABILITY_VERSION_3, 0};
    if (::syscall(SYS_capget, &scope.hdr_, scope.saved_) != 0) return sysError("--workspace: capget");
    ::setfsgid(o.gid);
    ::setfsuid(o.uid);
    scope.switched_ = true;
    __user_cap_data_struct raised[2] = {scope.saved_[0], scope.saved_[1]};
    raised[0].effective = raised[0].permitted;
    raised[1].effective = raised[1].permitted;
    if (::syscall(SYS_capset, &scope.hdr_, raised) != 0) return sysError("--workspace: capset");
    // setfsuid reports the previous value only: check the switch took.
    if (static_cast<uid_t>(::setfsuid(static_cast<uid_t>(-1))) != o.uid ||
        static_cast<gid_t>(::setfsgid(static_cast<gid_t>(-1))) != o.gid)
      return Error(EPERM, "--workspace: cannot create files as the sandbox's owner (setfsuid)");
    return scope;
  }
  OwnerScope(OwnerScope&& other) noexcept : active_(other.active_), switched_(other.switched_), hdr_(other.hdr_) {
    std::memcpy(saved_, other.saved_, sizeof saved_);
    other.switched_ = false;
  }
  OwnerScope& operator=(OwnerScope&&) = delete;
  OwnerScope(const OwnerScope&) = delete;
  OwnerScope& operator=(const OwnerScope&) = delete;
  ~OwnerScope() {
    if (!switched_) return;
    ::setfsuid(0);
    ::setfsgid(0);
    (void)::syscall(SYS_capset, &hdr_, saved_);
  }

 private:
  explicit OwnerScope(bool active) : active_(active) {}
  bool active_;
  bool switched_ = false;
  __user_cap_header_struct hdr_{};
  __user_cap_data_struct saved_[2]{};
};

// Copies the data regions of from (its first size bytes) and leaves its holes as holes, then
// sets the length. A sparse file is as large as its data: `truncate -s 1G` in a 1M workspace
// must not become 1 GiB of zeros written to the host's disk at copy-back (or to the tmpfs at
// staging). Without SEEK_DATA support the whole range counts as data.
// A file with at least as many allocated blocks as bytes has no hole worth keeping: it is
// copied front to back without asking for its data regions (three system calls per file
// fewer, which is most of a small file's cost). The destination is always new and empty, so
// a source that shrank meanwhile simply ends where its data did.
Result<void> copyData(int from, int to, const struct stat& st, const std::string& what) {
  auto failed = [&what]() -> Error {
    if (errno == ENOSPC || errno == EFBIG) return Error(Errc::kLimit, what + ": workspace is full (raise --workspace-size)");
    return sysError(what);
  };
  const auto end = st.st_size;
  if (end <= 0) return {};
  if (st.st_blocks * 512 >= end) {
    for (off_t off = 0; off < end;) {
      ssize_t n = ::sendfile(to, from, &off, static_cast<size_t>(std::min<off_t>(end - off, off_t{1} << 30)));
      if (n < 0) return failed();
      if (n == 0) break;
    }
    return {};
  }
  off_t length = end;  // shorter if the file shrank while we copied
  for (off_t pos = 0; pos < length;) {
    off_t data = ::lseek(from, pos, SEEK_DATA);
    if (data < 0 && errno == ENXIO) break;  // only a hole is left
    if (data < 0) data = pos;               // no hole support here: copy it all
    if (data >= length) break;
    off_t hole = ::lseek(from, data, SEEK_HOLE);
    if (hole < 0 || hole > length) hole = length;
    if (::lseek(to, data, SEEK_SET) < 0) return sysError(what);
    for (off_t off = data; off < hole;) {
      const auto chunk = static_cast<size_t>(std::min<off_t>(hole - off, off_t{1} << 30));
      ssize_t n = ::sendfile(to, from, &off, chunk);
      if (n < 0) return failed();
      if (n == 0) {  // the file shrank while we copied: keep what we have
        length = off;
        break;
      }
    }
    pos = hole;
  }
  if (::ftruncate(to, length) != 0) return failed();
  return {};
}

Result<void> stageDir(int src, int dst, StageStats& stats, int depth, const std::string& rel) {
  if (depth > kMaxDepth) return Error(Errc::kLimit, "--workspace: directories nest deeper than 128 at " + rel);
  UniqueFd iter(::dup(src));
  if (!iter.valid()) return sysError("dup");
  DIR* dir = ::fdopendir(iter.release());
  if (!dir) return sysError("--workspace: opendir " + rel);
  struct Closer { DIR* d; ~Closer() { ::closedir(d); } } closer{dir};
  while (dirent* e = ::readdir(dir)) {
    std::string_view name = e->d_name;
    if (name == "." || name == "..") continue;
    std::string path = rel.empty() ? std::string(name) : rel + "/" + std::string(name);
    struct stat st;
    if (::fstatat(src, e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) return sysError("--workspace: stat " + path);
    if (S_ISDIR(st.st_mode)) {
      UniqueFd sub(::openat(src, e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
      if (!sub.valid()) return sysError("--workspace: open " + path);
      if (::mkdirat(dst, e->d_name, 0700) != 0) return sysError("--workspace: mkdir " + path);
      UniqueFd sub_dst(::openat(dst, e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
      if (!sub_dst.valid()) return sysError("--workspace: open staged " + path);
      RETURN_IF_ERROR(stageDir(sub.get(), sub_dst.get(), stats, depth + 1, path));
      ::fchmod(sub_dst.get(), st.st_mode & 01777);
    } else if (S_ISREG(st.st_mode)) {
      UniqueFd in(::openat(src, e->d_name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
      if (!in.valid()) return sysError("--workspace: open " + path);
      UniqueFd out(::openat(dst, e->d_name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, st.st_mode & 0777));
      if (!out.valid()) {
        if (errno == ENOSPC) return Error(Errc::kLimit, "--workspace: workspace is full (raise --workspace-size)");
        return sysError("--workspace: create " + path);
      }
      RETURN_IF_ERROR(copyData(in.get(), out.get(), st, "--workspace: copy " + path));
      ++stats.files;
      stats.bytes += static_cast<uint64_t>(st.st_size);
    } else if (S_ISLNK(st.st_mode)) {
      char target[4096];
      ssize_t n = ::readlinkat(src, e->d_name, target, sizeof(target) - 1);
      if (n < 0) return sysError("--workspace: readlink " + path);
      target[n] = '\0';
      // Copied as a link: inside, it resolves against the sandbox's own tree.
      if (::symlinkat(target, dst, e->d_name) != 0) return sysError("--workspace: symlink " + path);
    } else {
      ++stats.skipped;
    }
  }
  return {};
}

const char* kindOf(mode_t mode) {
  if (S_ISLNK(mode)) return "symlink";
  if (S_ISDIR(mode)) return "directory";
  if (S_ISFIFO(mode)) return "fifo";
  if (S_ISCHR(mode) || S_ISBLK(mode)) return "device";
  if (S_ISSOCK(mode)) return "socket";
  return "not a regular file";
}

// Opens (creating as needed) the host directory that will hold rel's last component.
Result<UniqueFd> hostParent(int host_root, const std::string& rel) {
  UniqueFd dir(::fcntl(host_root, F_DUPFD_CLOEXEC, 0));
  size_t start = 0;
  for (size_t slash = rel.find('/'); slash != std::string::npos; slash = rel.find('/', start)) {
    std::string comp = rel.substr(start, slash - start);
    if (::mkdirat(dir.get(), comp.c_str(), 0755) != 0 && errno != EEXIST) return sysError("mkdir " + comp);
    UniqueFd next(openBeneath(dir.get(), comp.c_str(), O_RDONLY | O_DIRECTORY));
    if (!next.valid()) return sysError("open host directory " + comp);
    dir = std::move(next);
    start = slash + 1;
  }
  return dir;
}

OutputResult copyOne(int ws_root, int host_root, const std::string& rel) {
  OutputResult r{rel, OutputResult::Status::kRefused, "", 0};
  UniqueFd src(openBeneath(ws_root, rel.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY));
  if (!src.valid()) {
    int err = errno;
    if (err == ENOENT) {
      r.status = OutputResult::Status::kMissing;
      r.reason = "not created";
      return r;
    }
    struct stat st;
    // ELOOP: a symlink somewhere on the path; ENXIO: a socket; EXDEV: a mount crossing.
    if (::fstatat(ws_root, rel.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && !S_ISREG(st.st_mode)) r.reason = kindOf(st.st_mode);
    else if (err == ELOOP) r.reason = "symlink in path";
    else r.reason = std::string("cannot open: ") + std::strerror(err);
    return r;
  }
  struct stat st;
  if (::fstat(src.get(), &st) != 0) {
    r.reason = "fstat failed";
    return r;
  }
  if (!S_ISREG(st.st_mode)) {
    r.reason = kindOf(st.st_mode);
    return r;
  }
  if (st.st_nlink != 1) {
    r.reason = "hard link";
    return r;
  }
  auto parent = hostParent(host_root, rel);
  if (!parent) {
    r.reason = parent.error().message();
    return r;
  }
  std::string name = rel.substr(rel.rfind('/') == std::string::npos ? 0 : rel.rfind('/') + 1);
  struct stat existing;
  if (::fstatat(parent->get(), name.c_str(), &existing, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(existing.st_mode)) {
    r.reason = "a directory is in the way on the host";
    return r;
  }
  uint64_t rnd = 0;
  if (::getrandom(&rnd, sizeof(rnd), 0) != sizeof(rnd)) rnd = static_cast<uint64_t>(::getpid());
  char tmp[64];
  std::snprintf(tmp, sizeof(tmp), ".corral-out-%016llx", static_cast<unsigned long long>(rnd));
  // The data goes into an unnamed O_TMPFILE inode, which gets a name only once it is whole
  // and synced: corral killed mid-copy leaves nothing behind (the inode is freed), and the
  // named temp file exists only between linkat and rename. File systems without O_TMPFILE
  // get a named temp file from the start.
  UniqueFd out(::openat(parent->get(), ".", O_TMPFILE | O_WRONLY | O_CLOEXEC, st.st_mode & 0755));
  const bool unnamed = out.valid();
  if (!unnamed)
    out = UniqueFd(::openat(parent->get(), tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, st.st_mode & 0755));
  if (!out.valid()) {
    r.reason = std::string("create on host: ") + std::strerror(errno);
    return r;
  }
  auto copied = copyData(src.get(), out.get(), st, "copy " + rel);
  bool ok = copied && ::fsync(out.get()) == 0;
  if (ok && unnamed) {
    const std::string self = "/proc/self/fd/" + std::to_string(out.get());
    ok = ::linkat(AT_FDCWD, self.c_str(), parent->get(), tmp, AT_SYMLINK_FOLLOW) == 0;
  }
  // Renamed into place only whole: a crash leaves the old file or the new one, never half.
  if (!ok || ::renameat(parent->get(), tmp, parent->get(), name.c_str()) != 0) {
    r.reason = copied ? std::string("write on host: ") + std::strerror(errno) : copied.error().message();
    ::unlinkat(parent->get(), tmp, 0);
    return r;
  }
  r.status = OutputResult::Status::kCopied;
  r.bytes = static_cast<uint64_t>(st.st_size);
  return r;
}

}  // namespace

Result<StageStats> stage(const std::string& host_dir, int ws_root, const Owner& owner) {
  UniqueFd src(::open(host_dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!src.valid()) return sysError("--workspace " + host_dir);
  StageStats stats;
  ASSIGN_OR_RETURN(OwnerScope as, OwnerScope::enter(owner));
  RETURN_IF_ERROR(stageDir(src.get(), ws_root, stats, 0, ""));
  return stats;
}

std::vector<OutputResult> copyBack(int ws_root, const std::string& host_dir, const std::vector<std::string>& outputs) {
  std::vector<OutputResult> results;
  UniqueFd host(::open(host_dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  for (const std::string& rel : outputs) {
    if (!host.valid()) {
      results.push_back({rel, OutputResult::Status::kRefused, std::string("host workspace: ") + std::strerror(errno), 0});
      continue;
    }
    results.push_back(copyOne(ws_root, host.get(), rel));
  }
  return results;
}

}  // namespace corral::sandbox::workspace
