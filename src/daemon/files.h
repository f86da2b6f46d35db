// SPDX-License-Identifier: Apache-2.0
// The files API's file system side: paths beneath a session's workspace, opened only with
// openat2 (RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_XDEV), copy-back's rules
// (regular files with one link, no symlink anywhere on the path), bounded writes.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <string_view>

#include "base/result.h"
#include "base/unique_fd.h"
#include "daemon/json_fields.h"

namespace corral::daemon::files {

// A request's path (the URL's segments after files/, joined): relative, normal form, no
// "." / ".." / empty parts, no control bytes (policy::path::outputPath). "" is the root.
Result<std::string> checkedPath(std::string_view rel);

// A regular file with one link, opened for reading (a FIFO never blocks the open).
struct Download {
  UniqueFd fd;
  uint64_t size = 0;
};
Result<Download> openDownload(int ws, const std::string& rel);

// {"path", "type": "file"|"directory"|"symlink"|"other", "size", "mode"} of rel itself (not followed).
Result<Json> stat(int ws, const std::string& rel);
// {"path", "entries": [{"name", "type", "size"}]} of a directory, at most kMaxEntries.
inline constexpr size_t kMaxEntries = 10'000;
Result<Json> list(int ws, const std::string& rel);
// Removes a file, a symlink (not what it names) or an empty directory.
Result<void> remove(int ws, const std::string& rel);

// An upload: written to a new temporary file beside the target, renamed over it at commit,
// removed if never committed. Its parent directory must exist; the fd held on it means a
// swap of any component after the open changes nothing.
class Upload {
 public:
  static Result<Upload> begin(int ws, const std::string& rel, uid_t owner, gid_t group, uint64_t cap);
  Upload(Upload&&) = default;
  Upload& operator=(Upload&&) = delete;
  Upload(const Upload&) = delete;
  ~Upload();
  // Errc::kLimit past the cap or when the workspace is full.
  Result<void> write(std::string_view data);
  Result<Json> commit();

 private:
  Upload() = default;
  UniqueFd parent_, file_;
  std::string rel_, name_, tmp_;
  uint64_t written_ = 0, cap_ = 0;
  bool done_ = false;
};

}  // namespace corral::daemon::files
