// SPDX-License-Identifier: Apache-2.0
// The record directory and bounded, link-refusing reads from it.
#include "audit/record_dir.h"

#include "base/read_fd.h"

#include <fcntl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

namespace corral::audit {

Result<UniqueFd> openRecordDir(const std::string& workspace, bool create) {
  int ws = ::open(workspace.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (ws < 0) return sysError("open workspace " + workspace);
  UniqueFd ws_fd(ws);
  const std::string name(kRecordDirName);
  if (create && ::mkdirat(ws_fd.get(), name.c_str(), 0755) != 0 && errno != EEXIST)
    return sysError("mkdir " + name);
  // O_NOFOLLOW: a .corral symlink planted in the workspace must not redirect the record.
  int fd = ::openat(ws_fd.get(), name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOTDIR || errno == ELOOP)
      return Error(Errc::kRefused, name + " is not a directory (a symlink or file?)");
    return sysError("open " + name);
  }
  return UniqueFd(fd);
}

Result<std::string> readRecordFile(const UniqueFd& dir, std::string_view name, size_t max_bytes) {
  const std::string n(name);
  int raw = ::openat(dir.get(), n.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
  if (raw < 0) {
    if (errno == ELOOP) return Error(Errc::kRefused, n + " is a symlink");
    return sysError("open " + n);
  }
  UniqueFd fd(raw);
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return sysError("stat " + n);
  if (!S_ISREG(st.st_mode)) return Error(Errc::kRefused, n + " is not a regular file");
  if (static_cast<uint64_t>(st.st_size) > max_bytes)
    return Error(Errc::kLimit, n + " is " + std::to_string(st.st_size) + " bytes (limit " +
                                   std::to_string(max_bytes) + ")");
  ASSIGN_OR_RETURN(std::string out, readUpTo(fd.get(), max_bytes, "read " + n));
  if (out.size() > max_bytes) return Error(Errc::kLimit, n + " grew past its limit while being read");
  return out;
}

Result<void> replaceFileAt(const UniqueFd& dir, std::string_view name, std::string_view bytes, bool durable) {
  const std::string target(name);
  std::string tmp;
  UniqueFd fd;
  for (int attempt = 0; attempt < 8 && !fd.valid(); ++attempt) {
    uint64_t rnd = 0;
    if (::getrandom(&rnd, sizeof(rnd), 0) != sizeof(rnd)) return sysError("getrandom");
    static constexpr char kHex[] = "0123456789abcdef";
    tmp = "." + target.substr(0, 160) + ".tmp-";
    for (int i = 0; i < 16; ++i) tmp += kHex[(rnd >> (4 * i)) & 0xf];
    fd = UniqueFd(::openat(dir.get(), tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644));
    if (!fd.valid() && errno != EEXIST) return sysError("create " + tmp);
  }
  if (!fd.valid()) return Error(Errc::kIo, "create a temp file for " + target + ": every name taken");
  auto fail = [&](Error e) -> Error {
    ::unlinkat(dir.get(), tmp.c_str(), 0);
    return e;
  };
  if (auto w = writeAll(fd.get(), bytes, tmp); !w) return fail(w.error());
  if (durable && ::fsync(fd.get()) != 0) return fail(sysError("fsync " + tmp));
  if (::renameat(dir.get(), tmp.c_str(), dir.get(), target.c_str()) != 0)
    return fail(sysError("rename " + tmp + " to " + target));
  if (durable && ::fsync(dir.get()) != 0) return sysError("fsync the directory of " + target);
  return {};
}

Result<void> writeAll(int fd, std::string_view bytes, std::string_view what) {
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t w = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (w < 0 && errno == EINTR) continue;
    if (w < 0) return sysError("write " + std::string(what));
    if (w == 0) return Error(Errc::kIo, "write " + std::string(what) + ": no progress");
    done += static_cast<size_t>(w);
  }
  return {};
}

}  // namespace corral::audit
