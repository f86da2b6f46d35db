// SPDX-License-Identifier: Apache-2.0
// The host's side of the control protocol as a state machine: one frame from the guest at a
// time, in the order the protocol allows (hello, then output and outputs, then exit). The
// guest is untrusted: any frame out of order ends the run. I/O stays with the caller.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "sandbox/spec.h"
#include "vm/frame.h"
#include "vm/output_receiver.h"
#include "vm/protocol.h"

namespace corral::vm {

class ControlSession {
 public:
  enum class Event { kNone, kHello, kStarted, kExit };
  struct Io {
    std::function<bool(std::string_view request)> send_request;         // false: the channel failed
    std::function<void(frame::Type stream, std::string_view bytes)> relay;  // the command's stdout/stderr
  };
  ControlSession(const sandbox::SandboxSpec& spec, OutputReceiver& outputs, Io io)
      : spec_(spec), outputs_(outputs), io_(std::move(io)) {}

  // A restored guest (snapshot.h) said hello before the snapshot: its first frame must be
  // kReseeded echoing this nonce (hex), which then stands for the hello, and saying the kernel
  // RNG was reseeded unless the host asked it to skip that (a test control). Call before any frame.
  void expectRestore(std::string nonce_hex, bool require_reseed = true) {
    restore_nonce_ = std::move(nonce_hex);
    require_reseed_ = require_reseed;
  }
  bool restoring() const { return !restore_nonce_.empty(); }
  bool reseeded() const { return reseeded_; }

  // An error ends the run: the caller reads no further frame.
  Result<Event> onFrame(const frame::Frame& f);

  bool helloSeen() const { return hello_; }
  bool started() const { return started_; }
  const protocol::Hello& hello() const { return hello_info_; }
  // After kExit: the guest's report, its output verdicts checked against the declared outputs.
  sandbox::RunReport& report() { return report_; }

 private:
  const sandbox::SandboxSpec& spec_;
  OutputReceiver& outputs_;
  Io io_;
  bool hello_ = false, started_ = false, exited_ = false, reseeded_ = false;
  std::string restore_nonce_;  // empty: a cold boot
  bool require_reseed_ = true;
  protocol::Hello hello_info_;
  sandbox::RunReport report_;
};

}  // namespace corral::vm
