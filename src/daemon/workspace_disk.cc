// SPDX-License-Identifier: Apache-2.0
// Session workspaces on disk: an ext4 image on a loop device (capped) or a plain directory.
#include "daemon/workspace_disk.h"

#include <fcntl.h>
#include <linux/loop.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cerrno>
#include <fstream>

#include "base/unique_fd.h"
#include "vm/tool.h"

namespace corral::daemon {
namespace {

constexpr char kImage[] = "workspace.img";
constexpr char kDir[] = "workspace";

struct Loop {
  std::string dev;
  UniqueFd fd;  // held until the mount has its own reference: AUTOCLEAR acts on the last close
};

// A free loop device bound to image, set to detach itself once its last user (the mount, and
// every sandbox's clone of it) is gone: no loop device outlives the workspace's mounts.
Result<Loop> attachLoop(int image) {
  UniqueFd ctl(::open("/dev/loop-control", O_RDWR | O_CLOEXEC));
  if (!ctl.valid()) return sysError("open /dev/loop-control");
  for (int attempt = 0; attempt < 16; ++attempt) {
    const int n = ::ioctl(ctl.get(), LOOP_CTL_GET_FREE);
    if (n < 0) return sysError("no free loop device");
    const std::string dev = "/dev/loop" + std::to_string(n);
    UniqueFd loop(::open(dev.c_str(), O_RDWR | O_CLOEXEC));
    // The kernel made the device, but a /dev without devtmpfs or udev (a container) may lack
    // its node: make it, as the loop driver's own numbering says (block major 7).
    if (!loop.valid() && errno == ENOENT && ::mknod(dev.c_str(), S_IFBLK | 0660, makedev(7, n)) == 0)
      loop.reset(::open(dev.c_str(), O_RDWR | O_CLOEXEC));
    if (!loop.valid()) return sysError("open " + dev);
    loop_config cfg{};
    cfg.fd = static_cast<uint32_t>(image);
    cfg.info.lo_flags = LO_FLAGS_AUTOCLEAR;
    if (::ioctl(loop.get(), LOOP_CONFIGURE, &cfg) == 0) return Loop{dev, std::move(loop)};
    if (errno != EBUSY) return sysError("LOOP_CONFIGURE " + dev);
    // Another process took it between GET_FREE and CONFIGURE: ask again.
  }
  return Error(Errc::kIo, "no free loop device (all taken while asking)");
}

Result<void> mountImage(int session_dir, const std::string& session_path) {
  UniqueFd image(::openat(session_dir, kImage, O_RDWR | O_CLOEXEC | O_NOFOLLOW));
  if (!image.valid()) return sysError("open " + std::string(kImage));
  ASSIGN_OR_RETURN(Loop loop, attachLoop(image.get()));
  const std::string target = session_path + "/" + kDir;
  if (::mount(loop.dev.c_str(), target.c_str(), "ext4", MS_NOSUID | MS_NODEV | MS_NOATIME, "errors=remount-ro") != 0)
    return sysError("mount the workspace image");
  return {};  // loop.fd closes here: from now on the mount alone keeps the device bound
}

}  // namespace

WorkspaceMechanism workspaceMechanism() {
  WorkspaceMechanism m;
  const char* weaker = "refused unless --allow-weaker workspace-size (then an uncapped directory in the state dir)";
  if (::geteuid() != 0) {
    m.description = std::string("none for a non-root daemon: ") + weaker;
    return m;
  }
  if (::access("/dev/loop-control", R_OK | W_OK) != 0) {
    m.description = std::string("none (no /dev/loop-control): ") + weaker;
    return m;
  }
  auto mkfs = vm::findTool({"/usr/sbin/mkfs.ext4", "/sbin/mkfs.ext4"}, "e2fsprogs");
  if (!mkfs) {
    m.description = "none (" + mkfs.error().message() + "): " + weaker;
    return m;
  }
  m.capped = true;
  m.mkfs = *mkfs;
  m.description = "ext4 image of --workspace-size on a loop device, in the state dir";
  return m;
}

Result<void> makeWorkspace(int session_dir, const std::string& session_path, uint64_t bytes, bool capped,
                           const WorkspaceMechanism& how, uid_t uid, gid_t gid) {
  if (::mkdirat(session_dir, kDir, 0700) != 0) return sysError("mkdir workspace");
  UniqueFd dir(::openat(session_dir, kDir, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW));
  if (!dir.valid()) return sysError("open workspace");
  if (!capped) {
    // The sandbox's uid maps to uid: it owns its workspace, as it owns exec's tmpfs.
    if (::fchown(dir.get(), uid, gid) != 0) return sysError("chown workspace");
    return {};
  }
  if (!how.capped) return Error(Errc::kUnsupported, "workspace-size: " + how.description);
  {
    UniqueFd image(::openat(session_dir, kImage, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600));
    if (!image.valid()) return sysError("create " + std::string(kImage));
    if (::ftruncate(image.get(), static_cast<off_t>(bytes)) != 0) return sysError("size the workspace image");
  }
  // No reserved blocks, the root owned by the sandbox's uid, nothing zeroed up front (sparse).
  const std::string owner = "root_owner=" + std::to_string(uid) + ":" + std::to_string(gid) +
                            ",lazy_itable_init=1,lazy_journal_init=1,nodiscard";
  auto made = vm::runTool({how.mkfs, "-q", "-F", "-t", "ext4", "-m", "0", "-E", owner, session_path + "/" + kImage});
  if (!made) return made.error().wrap("mkfs.ext4 (is --workspace-size at least 1M?)");
  RETURN_IF_ERROR(mountImage(session_dir, session_path));
  // mkfs's lost+found (root's, 0700) would be the one thing in /workspace the command cannot touch.
  const std::string lost = session_path + "/" + kDir + "/lost+found";
  if (::rmdir(lost.c_str()) != 0 && errno != ENOENT) return sysError("rmdir lost+found");
  return {};
}

bool workspaceMounted(const std::string& session_path) {
  const std::string target = session_path + "/" + kDir;
  std::ifstream in("/proc/self/mountinfo");
  std::string line;
  // Field 5 is the mount point (octal escapes for spaces; state paths have none we make).
  while (std::getline(in, line)) {
    size_t pos = 0;
    for (int field = 0; field < 4 && pos != std::string::npos; ++field) pos = line.find(' ', pos) + 1;
    if (pos == 0) continue;
    const size_t end = line.find(' ', pos);
    if (line.compare(pos, end - pos, target) == 0) return true;
  }
  return false;
}

bool unmountWorkspace(const std::string& session_path) {
  const std::string target = session_path + "/" + kDir;
  while (workspaceMounted(session_path))
    if (::umount2(target.c_str(), MNT_DETACH | UMOUNT_NOFOLLOW) != 0) return false;
  return true;
}

Result<void> mountWorkspaceImage(int session_dir, const std::string& session_path) {
  if (workspaceMounted(session_path)) return {};
  struct stat st;
  if (::fstatat(session_dir, kImage, &st, AT_SYMLINK_NOFOLLOW) != 0) return {};  // uncapped: a plain directory
  return mountImage(session_dir, session_path);
}

}  // namespace corral::daemon
