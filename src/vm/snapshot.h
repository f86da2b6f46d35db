// SPDX-License-Identifier: Apache-2.0
// VM snapshots (docs/vm.md, "Snapshot restore"): a guest booted once to the snapshot point
// (agent hello, nothing mounted from the workspace disk, no request), saved with QEMU
// migration to a file in the image cache, and restored per run with -incoming. The file is
// named by a key over everything the saved state depends on, and carries its own size and
// SHA-256 in a header: a file that does not match is never handed to QEMU.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "base/result.h"
#include "base/unique_fd.h"

namespace corral::vm::snapshot {

// The header: "corral-vm-snapshot 1 <stream bytes> <sha256 of the stream>\n", zero-padded.
inline constexpr size_t kHeaderBytes = 4096;

struct KeyInputs {
  std::string kernel, initrd, rootfs, qemu;  // host paths: the kernel and QEMU are hashed, the
                                             // cached images are content-named already
  uint64_t memory_bytes = 0, workspace_bytes = 0;
  uint32_t cpus = 1;
  bool kvm = false, net_proxy = false;
};
Result<std::string> key(const KeyInputs& in);
std::string path(const std::string& cache, const std::string& key);

// The stream's fd, positioned after the header, once size and hash match; else why not.
// A verified file's mtime is set to now: prune() keeps the most recently used.
Result<UniqueFd> openVerified(const std::string& path);

// Each snapshot is about a quarter of the guest's RAM, and every new corral build (a new
// agent, so a new initramfs) or configuration keys a new one: keep the `keep` most recently
// used, and remove leftovers of snapshot boots that died (temporary files over an hour old).
inline constexpr size_t kKeepSnapshots = 6;
void prune(const std::string& cache, size_t keep = kKeepSnapshots);

// A file being written: QEMU writes the stream through fd(); seal() hashes it, writes the
// header and renames it into place. Removed unless sealed.
class Writer {
 public:
  static Result<Writer> create(const std::string& path);
  Writer(Writer&& o) noexcept : tmp_(std::move(o.tmp_)), path_(std::move(o.path_)), fd_(std::move(o.fd_)) { o.tmp_.clear(); }
  Writer& operator=(Writer&&) = delete;
  ~Writer();
  int fd() const { return fd_.get(); }
  Result<uint64_t> seal();  // the stream's bytes

 private:
  Writer() = default;
  std::string tmp_, path_;
  UniqueFd fd_;
};

using Clock = std::chrono::steady_clock;

// A QMP connection QEMU made to corral's listener. Every call has a deadline; events are
// skipped; an error answer is an error.
class Qmp {
 public:
  // Listens on path (as root, owned by peer_uid so the jailed QEMU can connect).
  static Result<UniqueFd> listen(const std::string& path, uid_t peer_uid);
  static Result<Qmp> accept(int listener, Clock::time_point deadline);
  // fd >= 0 goes with the command (SCM_RIGHTS), for getfd.
  Result<nlohmann::json> execute(const std::string& command, const nlohmann::json& args, Clock::time_point deadline, int fd = -1);
  // Polls query-migrate until "completed"; "failed" or the deadline is an error.
  Result<void> waitMigration(Clock::time_point deadline);

 private:
  Result<nlohmann::json> readMessage(Clock::time_point deadline);
  UniqueFd sock_;
  std::string buf_;
};

}  // namespace corral::vm::snapshot
