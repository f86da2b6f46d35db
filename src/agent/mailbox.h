// SPDX-License-Identifier: Apache-2.0
// The operator mailbox under WORKSPACE/.corral/mailbox: outbox/ receives what the model
// sends (one JSON file per message), inbox/ holds what the operator leaves for the model
// (one regular file per message, delivered in name order and then moved to inbox/delivered/).
// Everything opened beneath the record directory without following symlinks; sizes capped.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "base/unique_fd.h"

namespace corral::agent {

inline constexpr size_t kMaxMailBodyBytes = size_t{64} * 1024;
inline constexpr size_t kMaxMailPerRead = 16;
inline constexpr uint32_t kMaxMailSentPerRun = 64;

struct MailMessage {
  std::string id;    // the inbox file's name
  std::string body;
};

class Mailbox {
 public:
  // Opens (creating) WORKSPACE/.corral/mailbox/{inbox,outbox,inbox/delivered}.
  static Result<Mailbox> open(const UniqueFd& record_dir, std::string run_id);
  // Writes outbox/<run_id>-<seq>.json atomically; refuses past the caps.
  Result<std::string> send(std::string_view from_task, std::string_view to, std::string_view body, int64_t ts_ms);
  // Up to kMaxMailPerRead undelivered inbox messages; each is moved to delivered/ once read.
  // A message that is not a regular file or is over the size cap is skipped and moved too,
  // with an explanatory body.
  Result<std::vector<MailMessage>> receive();
  uint32_t sent() const { return sent_; }

 private:
  Mailbox(UniqueFd inbox, UniqueFd outbox, UniqueFd delivered, std::string run_id)
      : inbox_(std::move(inbox)), outbox_(std::move(outbox)), delivered_(std::move(delivered)), run_id_(std::move(run_id)) {}
  UniqueFd inbox_;
  UniqueFd outbox_;
  UniqueFd delivered_;
  std::string run_id_;
  uint32_t sent_ = 0;
};

}  // namespace corral::agent
