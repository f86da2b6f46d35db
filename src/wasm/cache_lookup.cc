// SPDX-License-Identifier: Apache-2.0
// A module's cache lookup: read, scan, key, trusted entry.
#include "wasm/cache_lookup.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <climits>

#include "base/read_fd.h"
#include "wasm/cache.h"
#include "wasm/digest.h"
#include "wasm/wasi_imports.h"

namespace corral::wasm {
namespace {

Result<std::string> readModule(const std::string& path, uint64_t cap) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK));
  if (!fd.valid()) return sysError(path);
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return sysError(path);
  if (!S_ISREG(st.st_mode)) return Error(Errc::kInvalidArgument, path + ": not a regular file");
  if (static_cast<uint64_t>(st.st_size) > cap)
    return Error(Errc::kLimit, "module refused: " + std::to_string(st.st_size) + " bytes (the cap is " + std::to_string(cap) + ")");
  ASSIGN_OR_RETURN(std::string bytes, readUpTo(fd.get(), cap, path));
  if (bytes.size() > cap) return Error(Errc::kLimit, "module refused: larger than the cap of " + std::to_string(cap) + " bytes");
  return bytes;
}

ImportModules importModules(const ModuleInfo& info) {
  ImportModules m;
  for (const std::string& i : info.imports) {
    const std::string_view module = std::string_view(i).substr(0, i.find('.'));
    m.wasi = m.wasi || module == kWasiModule;
    m.http = m.http || module == kHttpModule;
  }
  return m;
}

// realpath(), then checked to name the very directory that was opened and judged.
Result<std::string> resolvedPathOf(const std::string& path, int fd) {
  char resolved[PATH_MAX];
  if (!::realpath(path.c_str(), resolved)) return sysError("wasm cache " + path);
  struct stat a {}, b {};
  if (::stat(resolved, &a) != 0 || ::fstat(fd, &b) != 0 || a.st_dev != b.st_dev || a.st_ino != b.st_ino)
    return Error(Errc::kRefused, "wasm cache " + path + ": changed while it was opened");
  return std::string(resolved);
}

}  // namespace

std::string ImportModules::defines() const {
  return std::string("-DCORRAL_HAS_WASI=") + (wasi ? "1" : "0") + " -DCORRAL_HAS_HTTP=" + (http ? "1" : "0");
}

std::string compileFlags(const ImportModules& m) {
  return std::string("wasm2c --no-debug-names -n corral; cc ") + kCcFlags + " " + m.defines() + " -lm";
}

Result<Lookup> lookupModule(const std::string& path, const std::optional<std::string>& cache, const ScanCaps& caps) {
  ASSIGN_OR_RETURN(std::string bytes, readModule(path, caps.module_bytes));
  Lookup l;
  Compiled& c = l.module;
  ASSIGN_OR_RETURN(c.info, scanModule(bytes, caps));
  c.module_sha256 = sha256Hex(bytes);
  l.imports = importModules(c.info);
  ASSIGN_OR_RETURN(c.key, cacheKey(c.module_sha256, compileFlags(l.imports)));
  ASSIGN_OR_RETURN(std::string given_root, cacheRootPath(cache));
  ASSIGN_OR_RETURN(l.root, openCacheRoot(given_root));
  // The staged workspace must be a path without symlinks (workspace::openHostDir says why).
  ASSIGN_OR_RETURN(l.root_path, resolvedPathOf(given_root, l.root.get()));
  ASSIGN_OR_RETURN(std::optional<std::string> hit, findEntry(l.root, l.root_path, c.key));
  if (hit) {
    c.so_path = *hit;
    c.cache_hit = true;
  }
  return l;
}

}  // namespace corral::wasm
