// SPDX-License-Identifier: Apache-2.0
// The compiled-module cache: where it lives, its key, and the checks that make an entry
// trusted (owned by this user, writable by nobody else, no links). docs/wasm.md describes it.
#pragma once

#include <optional>
#include <string>

#include "base/result.h"
#include "base/unique_fd.h"

namespace corral::wasm {

// --cache, else $CORRAL_WASM_CACHE, else $XDG_CACHE_HOME/corral/wasm, else
// $HOME/.cache/corral/wasm. Absolute, or an error.
Result<std::string> cacheRootPath(const std::optional<std::string>& flag);

// Creates what is missing of root (mode 0700) and opens it. Refused unless it is a directory
// owned by this user that group and others cannot write, and no other user could rename it or
// a directory above it (base/secure_dir.h).
Result<UniqueFd> openCacheRoot(const std::string& root);

// The cache key: SHA-256 over the module's SHA-256, the identities of wasm2c, wasm-rt.h and
// the C compiler (resolved path, size, inode and mtime of each: any upgrade changes the key),
// the compile flags and the shim's source.
Result<std::string> cacheKey(const std::string& module_sha256, const std::string& flags);

// root/key/module.so when that entry exists and is trusted: the entry directory and the file
// owned by this user, neither writable by group or others, the file regular with one link,
// and its bytes those whose SHA-256 sealEntry recorded beside it (kEntryDigest, held to the
// same checks). nullopt when there is no entry; an Error when one exists but is not trusted.
// The `corral` launcher and corral-core both look entries up through this one function.
Result<std::optional<std::string>> findEntry(const UniqueFd& root, const std::string& root_path, const std::string& key);

// A finished entry directory (module.so written): module.so made 0500 and its SHA-256 recorded.
Result<void> sealEntry(int dir);

inline constexpr char kEntryDigest[] = "module.so.sha256";
inline constexpr char kWasm2c[] = "/usr/bin/wasm2c";
inline constexpr char kCompiler[] = "/usr/bin/cc";
inline constexpr char kRuntimeHeader[] = "/usr/include/wasm-rt.h";

}  // namespace corral::wasm
