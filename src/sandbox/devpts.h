// SPDX-License-Identifier: Apache-2.0
// devpts: the sandbox's own pseudo-terminal instance (/dev/pts, /dev/ptmx), shared by exec
// and by a later session `attach`, which must open its terminals in the same instance.
#pragma once

namespace corral::sandbox::devpts {

// The mount options of the instance: a new one (never the host's /dev/pts), a ptmx node
// anyone inside may open (0666), and terminals owned by the sandbox's gid, mode 0620. The
// gid is the sandbox's (userns::kSandboxGid), the only one mapped in its user namespace.
extern const char kOptions[];

// Where /dev/ptmx points: the instance's own ptmx, so openpty() and posix_openpt() get a
// terminal of this instance only.
inline constexpr const char kPtmxLink[] = "pts/ptmx";

// Child side, async-signal-safe: mounts a new devpts instance on `target` (an existing
// directory) nosuid, noexec. Needs CAP_SYS_ADMIN in the user namespace that owns the mount
// namespace. Returns 0 or errno.
int mountInstance(const char* target);

}  // namespace corral::sandbox::devpts
