// SPDX-License-Identifier: Apache-2.0
// Captures a sandboxed command's stdout and stderr through pipes: the first keep_bytes of
// each are kept for the model, the whole stream is counted and hashed, the rest discarded,
// so a command that writes gigabytes costs the runner no memory.
#pragma once
#include <cstdint>
#include <memory>
#include <string>

#include "base/result.h"
#include "base/unique_fd.h"

namespace corral::agent {

struct CapturedStream {
  std::string kept;      // at most keep_bytes
  uint64_t total = 0;    // every byte the command wrote
  std::string sha256;    // of all of them
  bool truncated() const { return total > kept.size(); }
};

struct CapturedOutput {
  CapturedStream out;
  CapturedStream err;
};

class OutputCapture {
 public:
  // Two pipes and a reader thread. The write ends (close-on-exec here; the sandbox's init
  // dups them onto 1 and 2) are what SandboxSpec::stdio takes.
  static Result<std::unique_ptr<OutputCapture>> start(uint64_t keep_bytes);
  ~OutputCapture();
  OutputCapture(const OutputCapture&) = delete;
  OutputCapture& operator=(const OutputCapture&) = delete;

  int stdoutFd() const { return out_write_.get(); }
  int stderrFd() const { return err_write_.get(); }
  // Closes the write ends and waits until every other holder (the sandbox) has closed
  // them too: call after the sandbox is gone.
  CapturedOutput finish();

 private:
  struct State;
  OutputCapture(UniqueFd out_write, UniqueFd err_write, std::unique_ptr<State> state);
  UniqueFd out_write_;
  UniqueFd err_write_;
  std::unique_ptr<State> state_;
};

}  // namespace corral::agent
