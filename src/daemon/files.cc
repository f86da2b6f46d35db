// SPDX-License-Identifier: Apache-2.0
// Files beneath a workspace: every open is openat2-confined, every name resolved once.
#include "daemon/files.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/dir_stream.h"
#include "base/open_beneath.h"
#include "base/random_id.h"
#include "policy/path_policy.h"
#include "policy/units.h"

namespace corral::daemon::files {
namespace {

const char* typeOf(mode_t m) {
  if (S_ISREG(m)) return "file";
  if (S_ISDIR(m)) return "directory";
  if (S_ISLNK(m)) return "symlink";
  return "other";
}

// What a refused open means for the caller: a symlink on the path (ELOOP), a path leaving the
// workspace or crossing a mount (EXDEV), missing (ENOENT, a 404) or anything else.
Error openError(int err, const std::string& rel) {
  if (err == ELOOP || err == EXDEV) return Error(Errc::kRefused, "path " + policy::printable(rel) + ": refused (a symlink or a mount on the way)");
  if (err == ENOENT) return Error(ENOENT, "no such file in the workspace: " + policy::printable(rel));
  return Error(err, "path " + policy::printable(rel));
}

// The directory that holds rel's last component, and that component.
Result<UniqueFd> openParent(int ws, const std::string& rel, std::string* name) {
  const size_t slash = rel.rfind('/');
  *name = slash == std::string::npos ? rel : rel.substr(slash + 1);
  if (slash == std::string::npos) {
    UniqueFd dup(::fcntl(ws, F_DUPFD_CLOEXEC, 3));
    if (!dup.valid()) return sysError("dup");
    return dup;
  }
  const std::string dir = rel.substr(0, slash);
  UniqueFd fd(openBeneath(ws, dir.c_str(), O_RDONLY | O_DIRECTORY));
  if (!fd.valid()) return openError(errno, dir);
  return fd;
}

}  // namespace

Result<std::string> checkedPath(std::string_view rel) {
  if (rel.empty()) return std::string();
  auto ok = policy::path::outputPath(rel);
  if (!ok) return ok.error().wrap("path " + policy::printable(rel));
  return *ok;
}

Result<Download> openDownload(int ws, const std::string& rel) {
  // O_NONBLOCK: a FIFO planted under the name opens without waiting for a writer, then is refused.
  UniqueFd fd(openBeneath(ws, rel.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY));
  if (!fd.valid()) return openError(errno, rel);
  struct stat st;
  if (::fstat(fd.get(), &st) != 0) return sysError("stat " + rel);
  if (!S_ISREG(st.st_mode)) return Error(Errc::kRefused, "path " + policy::printable(rel) + ": not a regular file (" + typeOf(st.st_mode) + ")");
  if (st.st_nlink != 1) return Error(Errc::kRefused, "path " + policy::printable(rel) + ": a file with more than one link");
  const int flags = ::fcntl(fd.get(), F_GETFL);
  if (flags < 0 || ::fcntl(fd.get(), F_SETFL, flags & ~O_NONBLOCK) != 0) return sysError("fcntl");
  return Download{std::move(fd), static_cast<uint64_t>(st.st_size)};
}

Result<Json> stat(int ws, const std::string& rel) {
  struct stat st;
  if (rel.empty()) {
    if (::fstat(ws, &st) != 0) return sysError("stat workspace");
  } else {
    std::string name;
    ASSIGN_OR_RETURN(UniqueFd parent, openParent(ws, rel, &name));
    if (::fstatat(parent.get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) return openError(errno, rel);
  }
  return Json{{"path", rel}, {"type", typeOf(st.st_mode)}, {"size", static_cast<uint64_t>(st.st_size)},
              {"mode", static_cast<unsigned>(st.st_mode & 07777)}};
}

Result<Json> list(int ws, const std::string& rel) {
  UniqueFd dir(rel.empty() ? ::fcntl(ws, F_DUPFD_CLOEXEC, 3) : openBeneath(ws, rel.c_str(), O_RDONLY | O_DIRECTORY));
  if (!dir.valid()) return openError(errno, rel);
  DirStream ds = openDirStream(dir.get());
  if (!ds) return sysError("readdir " + rel);
  Json entries = Json::array();
  while (dirent* e = ::readdir(ds.get())) {
    const std::string name = e->d_name;
    if (name == "." || name == "..") continue;
    if (entries.size() >= kMaxEntries) return Error(Errc::kLimit, "directory " + policy::printable(rel) + ": over 10000 entries");
    struct stat st;
    if (::fstatat(dir.get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) continue;  // gone meanwhile
    entries.push_back({{"name", name}, {"type", typeOf(st.st_mode)}, {"size", static_cast<uint64_t>(st.st_size)}});
  }
  return Json{{"path", rel}, {"entries", entries}};
}

Result<void> remove(int ws, const std::string& rel) {
  if (rel.empty()) return Error(Errc::kInvalidArgument, "the workspace itself cannot be removed");
  std::string name;
  ASSIGN_OR_RETURN(UniqueFd parent, openParent(ws, rel, &name));
  struct stat st;
  if (::fstatat(parent.get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) return openError(errno, rel);
  if (::unlinkat(parent.get(), name.c_str(), S_ISDIR(st.st_mode) ? AT_REMOVEDIR : 0) != 0) return openError(errno, rel);
  return {};
}

Result<Upload> Upload::begin(int ws, const std::string& rel, uid_t owner, gid_t group, uint64_t cap) {
  if (rel.empty()) return Error(Errc::kInvalidArgument, "an upload needs a file path");
  Upload u;
  ASSIGN_OR_RETURN(u.parent_, openParent(ws, rel, &u.name_));
  struct stat st;
  if (::fstatat(u.parent_.get(), u.name_.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && !S_ISREG(st.st_mode))
    return Error(Errc::kRefused, "path " + policy::printable(rel) + ": exists and is not a regular file (" + typeOf(st.st_mode) + ")");
  const std::string tmp = ".corral-upload-" + randomHex16();
  u.file_.reset(::openat(u.parent_.get(), tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644));
  if (!u.file_.valid()) return openError(errno, rel);
  u.tmp_ = tmp;  // ours from here: the destructor removes it unless committed
  // A root daemon writes as root: the file must belong to the sandbox's uid to be its own.
  if (::geteuid() == 0 && ::fchown(u.file_.get(), owner, group) != 0) return sysError("chown upload");
  u.rel_ = rel;
  u.cap_ = cap;
  return u;
}

Upload::~Upload() {
  if (!done_ && parent_.valid() && !tmp_.empty()) ::unlinkat(parent_.get(), tmp_.c_str(), 0);
}

Result<void> Upload::write(std::string_view data) {
  if (written_ + data.size() > cap_)
    return Error(Errc::kLimit, "upload over the cap of " + std::to_string(cap_) + " bytes (the session's --workspace-size)");
  for (size_t off = 0; off < data.size();) {
    const ssize_t n = ::write(file_.get(), data.data() + off, data.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == ENOSPC || errno == EDQUOT || errno == EFBIG))
      return Error(Errc::kLimit, "the workspace is full (its --workspace-size)");
    if (n <= 0) return sysError("write upload");
    off += static_cast<size_t>(n);
  }
  written_ += data.size();
  return {};
}

Result<Json> Upload::commit() {
  if (::fsync(file_.get()) != 0) return sysError("fsync upload");
  // renameat replaces the name itself: a symlink planted there meanwhile is replaced, never followed.
  if (::renameat(parent_.get(), tmp_.c_str(), parent_.get(), name_.c_str()) != 0) return openError(errno, rel_);
  done_ = true;
  return Json{{"path", rel_}, {"bytes", written_}};
}

}  // namespace corral::daemon::files
