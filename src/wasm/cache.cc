// SPDX-License-Identifier: Apache-2.0
// The compiled-module cache: location, key and trust checks.
#include "wasm/cache.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <climits>
#include <cstdlib>

#include "base/read_fd.h"
#include "base/secure_dir.h"
#include "wasm/digest.h"
#include "wasm/guest_shim.h"

namespace corral::wasm {
namespace {

// Owned by us, and neither group nor others may write it: what "no other uid could have
// written this" comes down to for one inode.
Result<void> ownedAndPrivate(int fd, const std::string& what, bool regular) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) return sysError(what);
  if (st.st_uid != ::geteuid())
    return Error(Errc::kRefused, what + ": owned by uid " + std::to_string(st.st_uid) + ", not this user; not trusted");
  if (st.st_mode & 022) return Error(Errc::kRefused, what + ": writable by group or others; not trusted");
  if (regular && !S_ISREG(st.st_mode)) return Error(Errc::kRefused, what + ": not a regular file; not trusted");
  if (regular && st.st_nlink != 1) return Error(Errc::kRefused, what + ": has other hard links; not trusted");
  return {};
}

Result<std::string> identity(const char* path) {
  char resolved[PATH_MAX];
  if (!::realpath(path, resolved)) return sysError(std::string("wasm toolchain ") + path);
  struct stat st {};
  if (::stat(resolved, &st) != 0) return sysError(std::string("wasm toolchain ") + resolved);
  return std::string(resolved) + " size=" + std::to_string(st.st_size) + " ino=" + std::to_string(st.st_ino) +
         " mtime=" + std::to_string(st.st_mtim.tv_sec) + "." + std::to_string(st.st_mtim.tv_nsec);
}

}  // namespace

Result<std::string> cacheRootPath(const std::optional<std::string>& flag) {
  std::string root;
  if (flag) root = *flag;
  else if (const char* c = std::getenv("CORRAL_WASM_CACHE"); c && *c) root = c;
  else if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) root = std::string(x) + "/corral/wasm";
  else if (const char* h = std::getenv("HOME"); h && *h) root = std::string(h) + "/.cache/corral/wasm";
  else return Error(Errc::kInvalidArgument, "no wasm cache directory: set --cache, CORRAL_WASM_CACHE or HOME");
  if (root.front() != '/') return Error(Errc::kInvalidArgument, "wasm cache " + root + ": not an absolute path");
  return root;
}

Result<UniqueFd> openCacheRoot(const std::string& root) {
  // Create each missing component 0700; an existing one is judged below, not changed.
  for (size_t slash = root.find('/', 1); ; slash = root.find('/', slash + 1)) {
    const std::string prefix = root.substr(0, slash);
    if (::mkdir(prefix.c_str(), 0700) != 0 && errno != EEXIST) return sysError("wasm cache " + prefix);
    if (slash == std::string::npos) break;
  }
  UniqueFd fd(::open(root.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!fd.valid()) return sysError("wasm cache " + root);
  RETURN_IF_ERROR(ownedAndPrivate(fd.get(), "wasm cache " + root, false));
  if (std::string why = whoElseCouldRename(fd.get()); !why.empty())
    return Error(Errc::kRefused, "wasm cache " + root + ": " + why + "; not trusted");
  return fd;
}

Result<std::string> cacheKey(const std::string& module_sha256, const std::string& flags) {
  ASSIGN_OR_RETURN(std::string wasm2c, identity(kWasm2c));
  ASSIGN_OR_RETURN(std::string header, identity(kRuntimeHeader));
  ASSIGN_OR_RETURN(std::string cc, identity(kCompiler));
  // Version 2: entries carry module.so.sha256 (findEntry); version-1 entries are misses.
  const std::string material = "corral-wasm-cache 2\nmodule " + module_sha256 + "\nwasm2c " + wasm2c + "\nwasm-rt.h " +
                               header + "\ncc " + cc + "\nflags " + flags + "\nshim " +
                               sha256Hex(kGuestShimSource) + "\n";
  return sha256Hex(material);
}

Result<std::optional<std::string>> findEntry(const UniqueFd& root, const std::string& root_path, const std::string& key) {
  UniqueFd dir(::openat(root.get(), key.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!dir.valid() && errno == ENOENT) return std::optional<std::string>();
  if (!dir.valid()) return sysError("wasm cache entry " + key);
  RETURN_IF_ERROR(ownedAndPrivate(dir.get(), "wasm cache entry " + key, false));
  UniqueFd so(::openat(dir.get(), "module.so", O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
  if (!so.valid() && errno == ENOENT) return std::optional<std::string>();
  const std::string so_name = "wasm cache entry " + key + "/module.so";
  if (!so.valid()) return sysError(so_name);
  RETURN_IF_ERROR(ownedAndPrivate(so.get(), so_name, true));
  // Integrity: the bytes are those sealEntry hashed. Against a damaged or half-restored entry
  // (and another uid could not have written it, above); the user's own processes could
  // rewrite both files, which the claim's boundary says.
  const std::string digest_name = "wasm cache entry " + key + "/" + kEntryDigest;
  UniqueFd recorded(::openat(dir.get(), kEntryDigest, O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
  if (!recorded.valid() && errno == ENOENT) return Error(Errc::kRefused, digest_name + ": missing; not trusted");
  if (!recorded.valid()) return sysError(digest_name);
  RETURN_IF_ERROR(ownedAndPrivate(recorded.get(), digest_name, true));
  ASSIGN_OR_RETURN(std::string want, readUpTo(recorded.get(), 65, digest_name));
  ASSIGN_OR_RETURN(std::string got, sha256HexOfFd(so.get(), so_name));
  if (want != got) return Error(Errc::kRefused, so_name + ": its bytes differ from the digest recorded when it was compiled; not trusted");
  return std::optional<std::string>(root_path + "/" + key + "/module.so");
}

Result<void> sealEntry(int dir) {
  if (::fchmodat(dir, "module.so", 0500, 0) != 0) return sysError("wasm cache: chmod module.so");
  UniqueFd so(::openat(dir, "module.so", O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
  if (!so.valid()) return sysError("wasm cache: open module.so");
  ASSIGN_OR_RETURN(std::string digest, sha256HexOfFd(so.get(), "wasm cache: module.so"));
  UniqueFd out(::openat(dir, kEntryDigest, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0400));
  if (!out.valid()) return sysError(std::string("wasm cache: write ") + kEntryDigest);
  if (::write(out.get(), digest.data(), digest.size()) != static_cast<ssize_t>(digest.size()))
    return sysError(std::string("wasm cache: write ") + kEntryDigest);
  return {};
}

}  // namespace corral::wasm
