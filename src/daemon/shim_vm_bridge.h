// SPDX-License-Identifier: Apache-2.0
// A VM session's bridge (shim_vm.h): the session init's packets (session_protocol.h) on the
// shim loop's side, the guest agent's session frames (vm/frame.h) on the guest's, and the
// files requests between them. Its own header so that hostile guest frames can be tested
// against it without a VM.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>

#include "base/unique_fd.h"
#include "daemon/json_fields.h"
#include "vm/frame.h"

namespace corral::daemon {

// The host's end of the bridge. One thread; the loop's side is a SOCK_SEQPACKET pair, as
// init's sync socket is.
class VmBridge {
 public:
  // control: the guest's channel (borrowed); kill: ends the VM (the loop then sees its pidfd).
  VmBridge(int control, std::function<void()> kill, UniqueFd loop_side, UniqueFd files, UniqueFd stop)
      : control_(control), kill_(std::move(kill)), sock_(std::move(loop_side)), files_(std::move(files)), stop_(std::move(stop)) {}
  // Until stop is readable, the loop's side closes, or the guest's channel ends or sends a
  // frame out of place: then kill() (the guest is untrusted).
  void run();
  // A VM op from the loop ("vm_pause", "vm_resume", "vm_state"): the answer's fields
  // ({"running"} or {"error", "status"}). Unset: refused. After a resume the bridge sends the
  // guest the host's clock (frame kClock: the paused guest's stood still).
  void onVmOp(std::function<Json(const std::string& op)> f) { vm_op_ = std::move(f); }

 private:
  struct Cmd {
    UniqueFd in, out, err;  // the loop's stdin read end, its stdout and stderr write ends
  };
  bool send(vm::frame::Type t, std::string_view payload);
  bool sendClock();
  bool fromLoop();
  bool fileRequest();
  bool fileFrame(const vm::frame::Frame& f);
  void fileAnswer(uint64_t seq, Json j);
  bool fromGuest(const vm::frame::Frame& f);
  void toLoop(const void* data, size_t n);
  void spawned(uint32_t id, int32_t pid);

  int control_;
  std::function<void()> kill_;
  std::function<Json(const std::string& op)> vm_op_;
  UniqueFd sock_, files_, stop_;
  std::map<uint32_t, Cmd> cmds_;
  struct FileReq {
    uint64_t seq = 0;
    bool get = false, answered = false;
    uint64_t size = 0;
    std::string data;
  };
  std::map<uint32_t, FileReq> file_reqs_;  // by the id the guest's frames carry
  uint32_t next_file_id_ = 1;
  vm::frame::Parser parser_{vm::frame::Direction::kToHost};
};

}  // namespace corral::daemon
