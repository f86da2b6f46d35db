// SPDX-License-Identifier: Apache-2.0
// Output copy-back (staging is workspace_stage.cc).
#include "sandbox/workspace.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>

#include "base/open_beneath.h"
#include "base/unique_fd.h"
#include "sandbox/file_copy.h"

namespace corral::sandbox::workspace {
namespace {

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
  auto copied = copyFileData(src.get(), out.get(), st, "copy " + rel);
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

Result<UniqueFd> openHostDir(const std::string& path) {
  UniqueFd fd(openNoSymlinks(path.c_str(), O_RDONLY | O_DIRECTORY));
  if (fd.valid()) return fd;
  if (errno == ELOOP) return Error(ELOOP, "--workspace " + path + ": a symlink is on the path (it changed after it was resolved)");
  return sysError("--workspace " + path);
}

IgnoreSigxfsz::IgnoreSigxfsz() {
  struct sigaction ign{};
  ign.sa_handler = SIG_IGN;
  ::sigaction(SIGXFSZ, &ign, &old_);
}

IgnoreSigxfsz::~IgnoreSigxfsz() { ::sigaction(SIGXFSZ, &old_, nullptr); }

std::vector<OutputResult> copyBack(int ws_root, int host_dir, const std::vector<std::string>& outputs) {
  IgnoreSigxfsz quiet;
  std::vector<OutputResult> results;
  results.reserve(outputs.size());
  for (const std::string& rel : outputs) results.push_back(copyOne(ws_root, host_dir, rel));
  return results;
}

}  // namespace corral::sandbox::workspace
