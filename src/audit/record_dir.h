// SPDX-License-Identifier: Apache-2.0
// WORKSPACE/.corral: opening the record directory and reading its files without following links.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "base/result.h"
#include "base/unique_fd.h"

namespace corral::audit {

inline constexpr std::string_view kRecordDirName = ".corral";
inline constexpr std::string_view kTraceFileName = "trace.jsonl";
inline constexpr std::string_view kResultFileName = "result.json";

// Opens WORKSPACE/.corral as a directory, never through a symlink. With create, makes it
// (mode 0755) when missing.
Result<UniqueFd> openRecordDir(const std::string& workspace, bool create);

// Reads a regular file under dir (no symlinks), refusing files larger than max_bytes.
Result<std::string> readRecordFile(const UniqueFd& dir, std::string_view name, size_t max_bytes);

// Replaces dir/name with bytes: written to a fresh temp name (random, O_EXCL, so nothing
// planted at a predictable name, a hard link or a FIFO, is ever opened), then renamed over
// name. rename(2) replaces a symlink or file at name itself, never what it points to. With
// durable, the file and then the directory are fsynced. The temp file is removed on failure.
Result<void> replaceFileAt(const UniqueFd& dir, std::string_view name, std::string_view bytes, bool durable);

// Writes whole buffers, retrying short writes and EINTR.
Result<void> writeAll(int fd, std::string_view bytes, std::string_view what);

}  // namespace corral::audit
