// SPDX-License-Identifier: Apache-2.0
#include "agent/content_store.h"

#include <fcntl.h>
#include <sys/stat.h>

#include "audit/record_dir.h"
#include "base/dir_stream.h"
#include "policy/units.h"
#include "base/sha256.h"

namespace corral::agent {

Result<ContentStore> ContentStore::open(const UniqueFd& record_dir) {
  if (::mkdirat(record_dir.get(), "blobs", 0755) != 0 && errno != EEXIST) return sysError("content store: mkdir blobs");
  UniqueFd dir(::openat(record_dir.get(), "blobs", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!dir.valid()) return sysError("content store: .corral/blobs");
  // A blob is replaced by rename(2), which cannot replace a directory: one laid out under a
  // blob's name would stop the run mid-way, after outputs may have been applied. Refuse now.
  DirStream entries = openDirStream(dir.get());
  if (!entries) return sysError("content store: .corral/blobs");
  while (dirent* e = ::readdir(entries.get())) {
    const std::string_view name = e->d_name;
    if (name == "." || name == "..") continue;
    struct stat st;
    if (::fstatat(dir.get(), e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) return sysError("content store: .corral/blobs");
    if (S_ISDIR(st.st_mode))
      return Error(Errc::kRefused, "content store: .corral/blobs/" + policy::printable(name) +
                                       " is a directory: refusing (remove it)");
  }
  return ContentStore(std::move(dir));
}

Result<std::string> ContentStore::keep(std::string_view bytes) {
  const std::string hash = audit::sha256Hex(bytes);
  // A blob already there is kept only when it holds exactly these bytes: the workspace
  // arrives from outside, and a planted blob must not stand as what the model saw.
  if (auto existing = audit::readRecordFile(dir_, hash, bytes.size()); existing && *existing == bytes) return hash;
  if (auto w = audit::replaceFileAt(dir_, hash, bytes, false); !w) return w.error().wrap("content store");
  ++stored_;
  return hash;
}

}  // namespace corral::agent
