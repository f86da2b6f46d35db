// SPDX-License-Identifier: Apache-2.0
// The run's private workspace: a fresh 0700 directory holding only the declared inputs and
// the declared outputs that already exist. Tools read and write here; every `run` command
// gets it staged as /workspace; with --apply the declared outputs alone go back to the
// host workspace at the end. Removed when the run ends.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "base/unique_fd.h"
#include "policy/manifest.h"
#include "sandbox/spec.h"

namespace corral::agent {

inline constexpr uint64_t kMaxStagedFiles = 100000;

struct StagedFile {
  std::string path;    // workspace-relative
  uint64_t bytes = 0;
  std::string sha256;
};

struct StageReport {
  std::vector<StagedFile> files;
  std::vector<std::string> refused;  // "path: symlink" and the like: matched but never staged
  uint64_t bytes = 0;
};

class PrivateWorkspace {
 public:
  // mkdtemp under $TMPDIR (or /tmp), mode 0700: TMPDIR/corral-run-XXXXXX holds a lock file
  // and ws/, the workspace itself. The directory is flock()ed for the life of the run, so a
  // later create() can tell a run that was killed (SIGKILL leaves its staged copies of the
  // inputs behind) from a live one, and removes what killed runs of this uid left. TMPDIR
  // must be owned by root or this user, and sticky if others can write it; one that is not
  // is passed over for /tmp.
  static Result<PrivateWorkspace> create();
  PrivateWorkspace(PrivateWorkspace&&) noexcept = default;
  PrivateWorkspace& operator=(PrivateWorkspace&&) noexcept = default;
  ~PrivateWorkspace();

  const std::string& path() const { return path_; }
  int dirFd() const { return dir_.get(); }

  // Copies from host_workspace (a directory fd: sandbox::workspace::openHostDir) every
  // regular file matching an input pattern or equal to a declared output (never .corral/,
  // never through a symlink; a matching symlink, FIFO, device or socket is listed in
  // refused). Refuses past max_bytes in total.
  Result<StageReport> stageFrom(int host_workspace, const policy::Manifest& m, uint64_t max_bytes);

  // rel must already be policy-validated. Opened beneath the workspace without following
  // any symlink; a regular file only; refuses files larger than max_bytes.
  Result<std::string> readFile(std::string_view rel, uint64_t max_bytes) const;
  // Replaces rel atomically (temp file + rename), creating missing parent directories;
  // never through a symlink.
  Result<void> writeFile(std::string_view rel, std::string_view content) const;
  // SHA-256 of rel's content, or empty when it does not exist.
  std::string hashOf(std::string_view rel) const;

  // Copies the declared outputs that exist here into host_workspace, the same directory fd
  // the inputs came from (sandbox::workspace::copyBack).
  std::vector<sandbox::OutputResult> copyOutputsTo(int host_workspace, const std::vector<std::string>& outputs) const;

 private:
  PrivateWorkspace(UniqueFd tmpdir, std::string name, UniqueFd lock, std::string path, UniqueFd dir)
      : tmpdir_(std::move(tmpdir)), name_(std::move(name)), lock_(std::move(lock)), path_(std::move(path)), dir_(std::move(dir)) {}
  UniqueFd tmpdir_;   // TMPDIR
  std::string name_;  // corral-run-XXXXXX in it, removed with everything in it (through lock_)
  UniqueFd lock_;     // that directory, flock()ed while the run lives
  std::string path_;  // TMPDIR/name_/ws
  UniqueFd dir_;
};

}  // namespace corral::agent
