// SPDX-License-Identifier: Apache-2.0
// devpts: mounting the sandbox's private pseudo-terminal instance.
#include "sandbox/devpts.h"

#include <errno.h>
#include <sys/mount.h>

#include "sandbox/userns.h"

namespace corral::sandbox::devpts {

// "newinstance" is what every kernel since 4.7 does anyway; it is spelled out so that an
// older kernel could never hand the host's instance over. gid=1000 is userns::kSandboxGid:
// a gid not mapped in the sandbox's user namespace makes the mount fail (EINVAL), closed.
const char kOptions[] = "newinstance,ptmxmode=0666,mode=0620,gid=1000";
static_assert(userns::kSandboxGid == 1000, "kOptions names the sandbox gid");

int mountInstance(const char* target) {
  return ::mount("devpts", target, "devpts", MS_NOSUID | MS_NOEXEC, kOptions) == 0 ? 0 : errno;
}

}  // namespace corral::sandbox::devpts
