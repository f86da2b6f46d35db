// SPDX-License-Identifier: Apache-2.0
// The host's control-protocol state machine (control_session.h).
#include "vm/control_session.h"

namespace corral::vm {
namespace {

Error outOfOrder(const std::string& what) { return Error(Errc::kIo, "control channel: " + what); }

// The guest may only speak of outputs the host declared, each once, and never claim bytes.
Result<void> checkGuestVerdicts(std::vector<sandbox::OutputResult>& verdicts, const std::vector<std::string>& declared) {
  std::vector<bool> seen(declared.size(), false);
  for (sandbox::OutputResult& v : verdicts) {
    size_t i = 0;
    while (i < declared.size() && declared[i] != v.path) ++i;
    if (i == declared.size() || seen[i]) return outOfOrder("the exit report names an undeclared output or one twice");
    seen[i] = true;
    v.bytes = 0;
  }
  return {};
}

}  // namespace

Result<ControlSession::Event> ControlSession::onFrame(const frame::Frame& f) {
  if (exited_) return outOfOrder("a frame after the exit report");
  if (!restore_nonce_.empty() && !hello_) {
    // The nonce is this restore's alone: a guest that answers with another (a stale restore's,
    // a replayed frame) or not at all was not reseeded by this run, and runs nothing.
    if (f.type != frame::Type::kReseeded) return outOfOrder("the restored guest did not answer the reseed");
    ASSIGN_OR_RETURN(protocol::Reseeded r, protocol::decodeReseeded(f.payload));
    if (r.nonce_hex != restore_nonce_) return outOfOrder("the restored guest answered with another restore's nonce");
    if (require_reseed_ && !r.reseeded) return outOfOrder("the restored guest did not reseed its RNG");
    hello_info_ = std::move(r.hello);
    reseeded_ = r.reseeded;
    hello_ = true;
    if (!io_.send_request(protocol::encodeRequest(spec_))) return outOfOrder("cannot send the request");
    return Event::kHello;
  }
  if (f.type == frame::Type::kHello) {
    if (hello_) return outOfOrder("a second hello");
    ASSIGN_OR_RETURN(hello_info_, protocol::decodeHello(f.payload));
    hello_ = true;
    if (!io_.send_request(protocol::encodeRequest(spec_))) return outOfOrder("cannot send the request");
    return Event::kHello;
  }
  if (!hello_) return outOfOrder("a frame before the agent's hello");
  switch (f.type) {
    case frame::Type::kStarted:
      if (started_) return outOfOrder("a second start");
      started_ = true;
      return Event::kStarted;
    case frame::Type::kStdout:
    case frame::Type::kStderr:
      io_.relay(f.type, f.payload);
      return Event::kNone;
    case frame::Type::kOutput:
      // Outputs exist only once the command ran.
      if (!started_) return outOfOrder("an output before the command started");
      RETURN_IF_ERROR(outputs_.onHeader(f.payload));
      return Event::kNone;
    case frame::Type::kData:
      if (!started_) return outOfOrder("output data before the command started");
      RETURN_IF_ERROR(outputs_.onData(f.payload));
      return Event::kNone;
    case frame::Type::kExit: {
      ASSIGN_OR_RETURN(sandbox::RunReport r, protocol::decodeExit(f.payload));
      RETURN_IF_ERROR(outputs_.finish());
      RETURN_IF_ERROR(checkGuestVerdicts(r.outputs, spec_.outputs));
      report_ = std::move(r);
      exited_ = true;
      return Event::kExit;
    }
    default:
      return outOfOrder("a frame the guest may not send");
  }
}

}  // namespace corral::vm
