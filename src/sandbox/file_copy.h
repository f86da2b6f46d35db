// SPDX-License-Identifier: Apache-2.0
// One file's bytes from fd to fd, holes kept: shared by workspace staging and copy-back.
#pragma once

#include <sys/stat.h>

#include <string>

#include "base/result.h"

namespace corral::sandbox {

// Copies the first st.st_size bytes of from into to, which must be new and empty. A sparse
// source stays sparse: `truncate -s 1G` in a 1M workspace must become neither 1 GiB of zeros
// on the host's disk at copy-back nor in the tmpfs at staging. ENOSPC and EFBIG are the
// workspace limit (Errc::kLimit); what names the file in errors.
Result<void> copyFileData(int from, int to, const struct stat& st, const std::string& what);

}  // namespace corral::sandbox
