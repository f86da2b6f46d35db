// SPDX-License-Identifier: Apache-2.0
// Path checks for declared outputs (workspace-relative) and sandbox-side mount targets.
#pragma once

#include <string>
#include <string_view>

#include "base/result.h"

namespace corral::policy::path {

// Kernel limits: NAME_MAX per component, PATH_MAX for a whole path.
inline constexpr size_t kMaxComponent = 255;
inline constexpr size_t kMaxPath = 4096;

// A declared output, relative to the workspace, in normal form: not empty or absolute, no
// "." / ".." / empty components, no trailing slash, no control bytes, within the limits
// above, and not under a reserved workspace name (.corral/, the audit record). Returns the
// path unchanged. Errors (kInvalidArgument) say why and leave naming the path to the caller.
Result<std::string> outputPath(std::string_view rel);

// A path component as a case-insensitive or casefolding filesystem (vfat, ntfs3,
// ext4/tmpfs casefold) might see it: ASCII letters lowercased, Unicode default-ignorable
// code points dropped, trailing dots and spaces removed.
std::string reservedFold(std::string_view component);

// Whether one path component names the reserved audit directory (.corral) on such a
// filesystem too: ".CORRAL", ".corral.", ".c<U+200D>orral" are the same directory there.
bool isReservedName(std::string_view component);

// The sandbox side of a read-only bind: absolute, in normal form as above, and neither "/"
// nor equal to or beneath a place corral builds itself (/proc, /dev, /workspace, /tmp, /etc,
// /usr, /bin, /sbin, /lib*). Returns the path unchanged.
Result<std::string> sandboxMountPath(std::string_view abs);

}  // namespace corral::policy::path
