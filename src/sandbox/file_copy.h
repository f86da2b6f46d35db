// SPDX-License-Identifier: Apache-2.0
// One file's bytes from fd to fd, holes kept: shared by workspace staging and copy-back.
#pragma once

#include <sys/stat.h>

#include <string>

#include "base/result.h"

namespace corral::sandbox {

// Copies the first st.st_size bytes of from into to, which must be new and empty. A sparse
// source stays sparse: `truncate -s 1G` in a 1M workspace must become neither 1 GiB of zeros
// on the host's disk at copy-back nor in the tmpfs at staging. ENOSPC and EFBIG are
// Errc::kLimit, named for where the copy goes (the sandbox's --workspace-size at staging, the
// host's disk or ulimit at copy-back); what names the file in errors.
enum class CopyInto { kSandbox, kHost };
Result<void> copyFileData(int from, int to, const struct stat& st, const std::string& what,
                          CopyInto into = CopyInto::kSandbox);

}  // namespace corral::sandbox
