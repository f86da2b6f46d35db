// SPDX-License-Identifier: Apache-2.0
#include "agent/content_store.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "audit/record_dir.h"
#include "audit/sha256.h"

namespace corral::agent {

Result<ContentStore> ContentStore::open(const UniqueFd& record_dir) {
  if (::mkdirat(record_dir.get(), "blobs", 0755) != 0 && errno != EEXIST) return sysError("content store: mkdir blobs");
  UniqueFd dir(::openat(record_dir.get(), "blobs", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!dir.valid()) return sysError("content store: .corral/blobs");
  return ContentStore(std::move(dir));
}

Result<std::string> ContentStore::keep(std::string_view bytes) {
  const std::string hash = audit::sha256Hex(bytes);
  struct stat st;
  if (::fstatat(dir_.get(), hash.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0) return hash;
  const std::string tmp = "." + hash + ".tmp";
  UniqueFd fd(::openat(dir_.get(), tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644));
  if (!fd.valid()) return sysError("content store: create");
  RETURN_IF_ERROR(audit::writeAll(fd.get(), bytes, "content store"));
  if (::renameat(dir_.get(), tmp.c_str(), dir_.get(), hash.c_str()) != 0) return sysError("content store: rename");
  ++stored_;
  return hash;
}

}  // namespace corral::agent
