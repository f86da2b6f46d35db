// SPDX-License-Identifier: Apache-2.0
// Workspace staging: the host directory copied into the sandbox's tmpfs before the command
// starts (init waits for "go"). The calling thread walks the tree: it makes directories and
// symlinks and lists regular files in batches. Files are copied by that thread and, once a
// tree has a second batch, by one more thread beside it: a small file costs a dozen
// microseconds of kernel work on each side (open, create, copy, close), so two CPUs stage
// a large tree in a little over half the time, and a small one never pays for a thread.
#include <dirent.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <sys/fsuid.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

#include "base/unique_fd.h"
#include "policy/manifest.h"
#include "sandbox/file_copy.h"
#include "sandbox/workspace.h"

namespace corral::sandbox::workspace {
namespace {

constexpr int kMaxDepth = 128;
constexpr size_t kBatchFiles = 32;
// Batches waiting for a copier: bounds the directory descriptors they keep open.
constexpr size_t kMaxQueued = 8;

// Staging as a root caller: files created in the sandbox's tmpfs must belong to the
// sandbox's host uid (root is unmapped there: EOVERFLOW), while the sources are read with
// root's access. One switch for the whole copy instead of four per file: fsuid/fsgid become
// the owner's, and the file-system capabilities the kernel drops with a non-zero fsuid
// (CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH, CAP_FOWNER...) are raised again from the permitted
// set, so sources open as they would for root. Both are per-thread and undone on exit. The
// command has not started yet (init waits for "go"), so nothing of the sandbox runs while
// corral holds these rights over its tmpfs.
class OwnerScope {
 public:
  static Result<OwnerScope> enter(const Owner& o) {
    OwnerScope scope(o.switch_fsuid);
    if (!scope.active_) return scope;
    scope.hdr_ = {_LINUX_CAPABILITY_VERSION_3, 0};
    if (::syscall(SYS_capget, &scope.hdr_, scope.saved_) != 0) return sysError("--workspace: capget");
    ::setfsgid(o.gid);
    ::setfsuid(o.uid);
    scope.switched_ = true;
    __user_cap_data_struct raised[2] = {scope.saved_[0], scope.saved_[1]};
    raised[0].effective = raised[0].permitted;
    raised[1].effective = raised[1].permitted;
    if (::syscall(SYS_capset, &scope.hdr_, raised) != 0) return sysError("--workspace: capset");
    // setfsuid reports the previous value only: check the switch took.
    if (static_cast<uid_t>(::setfsuid(static_cast<uid_t>(-1))) != o.uid ||
        static_cast<gid_t>(::setfsgid(static_cast<gid_t>(-1))) != o.gid)
      return Error(EPERM, "--workspace: cannot create files as the sandbox's owner (setfsuid)");
    return scope;
  }
  OwnerScope(OwnerScope&& other) noexcept : active_(other.active_), switched_(other.switched_), hdr_(other.hdr_) {
    std::memcpy(saved_, other.saved_, sizeof saved_);
    other.switched_ = false;
  }
  OwnerScope& operator=(OwnerScope&&) = delete;
  OwnerScope(const OwnerScope&) = delete;
  OwnerScope& operator=(const OwnerScope&) = delete;
  ~OwnerScope() {
    if (!switched_) return;
    ::setfsuid(0);
    ::setfsgid(0);
    (void)::syscall(SYS_capset, &hdr_, saved_);
  }

 private:
  explicit OwnerScope(bool active) : active_(active) {}
  bool active_;
  bool switched_ = false;
  __user_cap_header_struct hdr_{};
  __user_cap_data_struct saved_[2]{};
};

// A directory being staged: its host side and its staged side. The staged side gets its
// mode when the last holder lets go, that is when the walk has left it and its last batch is
// copied: made read-only earlier, it would refuse the files still to come (a rootless caller
// has no DAC override). Through the descriptor, never a path, so no path can grow past
// PATH_MAX, and nothing is kept per directory once it is done.
struct DirPair {
  UniqueFd src, dst;
  int mode = -1;  // -1: leave it (the workspace root)
  DirPair() = default;
  DirPair(const DirPair&) = delete;
  DirPair& operator=(const DirPair&) = delete;
  ~DirPair() {
    if (mode >= 0 && dst.valid()) ::fchmod(dst.get(), static_cast<mode_t>(mode));
  }
};

struct Batch {
  std::shared_ptr<const DirPair> dir;
  std::string rel;  // the directory's path in the workspace ("" for the root), for errors
  std::vector<std::pair<std::string, struct stat>> files;
};

std::string join(const std::string& rel, const char* name) { return rel.empty() ? std::string(name) : rel + "/" + name; }

class Stager {
 public:
  Stager(const Owner& owner, const SandboxSpec::StageOnly* only) : owner_(owner), only_(only) {}
  // Also the way out of an exception in the walk: the copier must not wait for more batches.
  ~Stager() {
    {
      std::lock_guard lock(mu_);
      walking_ = false;
    }
    cv_.notify_all();
    if (helper_.joinable()) helper_.join();
  }
  Stager(const Stager&) = delete;
  Stager& operator=(const Stager&) = delete;

  Result<StageStats> run(int src_root, int dst_root);

 private:
  Result<void> walk(const std::shared_ptr<const DirPair>& dir, int depth, const std::string& rel);
  void submit(Batch batch);
  std::optional<Batch> take(bool wait);
  void copyBatch(const Batch& batch);
  void helperMain();
  void fail(Error e);

  const Owner owner_;
  const SandboxSpec::StageOnly* only_;  // null: the whole tree
  std::mutex mu_;
  std::condition_variable cv_;  // a batch was queued, or the walk ended
  std::deque<Batch> queue_;     // guarded by mu_
  bool walking_ = true;         // guarded by mu_
  std::optional<Error> error_;  // the first failure; guarded by mu_
  std::atomic<bool> failed_{false};
  std::atomic<uint64_t> files_{0}, bytes_{0};
  std::thread helper_;
  size_t submitted_ = 0;                                   // walker only
  uint64_t skipped_ = 0;                                   // walker only
};

void Stager::fail(Error e) {
  std::lock_guard lock(mu_);
  if (!error_) error_ = std::move(e);
  failed_ = true;
}

// The walker queues a batch and, while copiers are behind, copies one itself. The second
// thread starts with the second batch: a tree of one batch is copied where it was listed.
void Stager::submit(Batch batch) {
  {
    std::lock_guard lock(mu_);
    queue_.push_back(std::move(batch));
  }
  cv_.notify_one();
  if (++submitted_ == 2 && !helper_.joinable()) {
    try {
      helper_ = std::thread([this] { helperMain(); });
    } catch (const std::system_error&) {
      // No thread to be had (RLIMIT_NPROC, memory): the walker copies everything itself.
    }
  }
  for (;;) {
    {
      std::lock_guard lock(mu_);
      if (queue_.size() < (helper_.joinable() ? 2 : kMaxQueued)) return;
    }
    if (auto b = take(false)) copyBatch(*b);
  }
}

std::optional<Batch> Stager::take(bool wait) {
  std::unique_lock lock(mu_);
  if (wait) cv_.wait(lock, [this] { return !queue_.empty() || !walking_; });
  if (queue_.empty()) return std::nullopt;
  Batch b = std::move(queue_.front());
  queue_.pop_front();
  return b;
}

void Stager::copyBatch(const Batch& batch) {
  for (const auto& [name, st] : batch.files) {
    if (failed_) return;
    const std::string path = join(batch.rel, name.c_str());
    UniqueFd in(::openat(batch.dir->src.get(), name.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
    if (!in.valid()) return fail(sysError("--workspace: open " + path));
    // The entry the walker looked at, still: a file renamed in meanwhile would be copied
    // with another's size, and anything but a regular file is refused.
    struct stat now;
    if (::fstat(in.get(), &now) != 0 || !S_ISREG(now.st_mode) || now.st_dev != st.st_dev || now.st_ino != st.st_ino)
      return fail(Error(Errc::kRefused, "--workspace: " + path + " changed while it was staged"));
    UniqueFd out(::openat(batch.dir->dst.get(), name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                          st.st_mode & 0777));
    if (!out.valid()) {
      if (errno == ENOSPC) return fail(Error(Errc::kLimit, "--workspace: workspace is full (raise --workspace-size)"));
      return fail(sysError("--workspace: create " + path));
    }
    if (auto copied = copyFileData(in.get(), out.get(), st, "--workspace: copy " + path); !copied)
      return fail(copied.error());
    ++files_;
    bytes_ += static_cast<uint64_t>(st.st_size);
  }
}

void Stager::helperMain() {
  // Credentials are per thread: this one switches for itself.
  auto scope = OwnerScope::enter(owner_);
  if (!scope) fail(scope.error());
  while (auto b = take(true))
    if (!failed_) copyBatch(*b);
}

Result<void> Stager::walk(const std::shared_ptr<const DirPair>& dir, int depth, const std::string& rel) {
  if (depth > kMaxDepth) return Error(Errc::kLimit, "--workspace: directories nest deeper than 128 at " + rel);
  UniqueFd iter(::dup(dir->src.get()));
  if (!iter.valid()) return sysError("dup");
  DIR* d = ::fdopendir(iter.release());
  if (!d) return sysError("--workspace: opendir " + rel);
  struct Closer { DIR* d; ~Closer() { ::closedir(d); } } closer{d};
  Batch batch{dir, rel, {}};
  while (dirent* e = ::readdir(d)) {
    if (failed_) return {};
    if (std::strcmp(e->d_name, ".") == 0 || std::strcmp(e->d_name, "..") == 0) continue;
    const std::string path = join(rel, e->d_name);
    struct stat st;
    if (::fstatat(dir->src.get(), e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) return sysError("--workspace: stat " + path);
    if (only_ && !(S_ISDIR(st.st_mode) ? policy::mayDeclareBelow(only_->inputs, only_->outputs, path)
                                        : policy::declaresFile(only_->inputs, only_->outputs, path)))
      continue;  // not the task's to see
    if (S_ISDIR(st.st_mode)) {
      auto sub = std::make_shared<DirPair>();
      sub->src = UniqueFd(::openat(dir->src.get(), e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
      if (!sub->src.valid()) return sysError("--workspace: open " + path);
      if (::mkdirat(dir->dst.get(), e->d_name, 0700) != 0) return sysError("--workspace: mkdir " + path);
      sub->dst = UniqueFd(::openat(dir->dst.get(), e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
      if (!sub->dst.valid()) return sysError("--workspace: open staged " + path);
      sub->mode = static_cast<int>(st.st_mode & 01777);
      RETURN_IF_ERROR(walk(sub, depth + 1, path));
    } else if (S_ISREG(st.st_mode)) {
      batch.files.emplace_back(e->d_name, st);
      if (batch.files.size() == kBatchFiles) submit(std::exchange(batch, Batch{dir, rel, {}}));
    } else if (S_ISLNK(st.st_mode)) {
      char target[4096];
      ssize_t n = ::readlinkat(dir->src.get(), e->d_name, target, sizeof(target) - 1);
      if (n < 0) return sysError("--workspace: readlink " + path);
      target[n] = '\0';
      // Copied as a link: inside, it resolves against the sandbox's own tree.
      if (::symlinkat(target, dir->dst.get(), e->d_name) != 0) return sysError("--workspace: symlink " + path);
    } else {
      ++skipped_;
    }
  }
  if (!batch.files.empty()) submit(std::move(batch));
  return {};
}

Result<StageStats> Stager::run(int src_root, int dst_root) {
  auto root = std::make_shared<DirPair>();
  root->src = UniqueFd(::fcntl(src_root, F_DUPFD_CLOEXEC, 0));
  root->dst = UniqueFd(::fcntl(dst_root, F_DUPFD_CLOEXEC, 0));
  if (!root->src.valid() || !root->dst.valid()) return sysError("--workspace: dup");
  if (auto walked = walk(root, 0, ""); !walked) fail(walked.error());
  root.reset();
  {
    std::lock_guard lock(mu_);
    walking_ = false;
  }
  cv_.notify_all();
  while (auto b = take(false))
    if (!failed_) copyBatch(*b);
  if (helper_.joinable()) helper_.join();
  if (error_) return *error_;
  return StageStats{files_, bytes_, skipped_};
}

}  // namespace

Result<StageStats> stage(int host_dir, int ws_root, const Owner& owner, const SandboxSpec::StageOnly* only) {
  IgnoreSigxfsz quiet;
  ASSIGN_OR_RETURN(OwnerScope as, OwnerScope::enter(owner));
  Stager stager(owner, only);
  return stager.run(host_dir, ws_root);
}

}  // namespace corral::sandbox::workspace
