// SPDX-License-Identifier: Apache-2.0
// Bounded whole-file reads: one loop for every "read this small file, but not past N" caller.
#pragma once

#include <cstddef>
#include <string>

#include "base/result.h"

namespace corral {

// Reads fd from its current offset until EOF or until limit + 1 bytes are in hand, so a
// result longer than limit tells the caller the source is too large (or grew). EINTR is
// retried; any other read error is returned as sysError(what).
Result<std::string> readUpTo(int fd, size_t limit, const std::string& what);

}  // namespace corral
