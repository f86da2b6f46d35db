// SPDX-License-Identifier: Apache-2.0
// OpenAI-compatible chat completions (OpenAI, vLLM, llama.cpp server, LM Studio, ...).
#pragma once
#include <cstdint>

#include "agent/http_client.h"
#include "agent/provider.h"

namespace corral::agent {

// POST {endpoint}/chat/completions; endpoint includes the version ("https://api.openai.com/v1").
// "Authorization: Bearer <key>" only when a key is configured.
class OpenAiProvider final : public Provider {
 public:
  OpenAiProvider(ProviderConfig config, Endpoint endpoint);
  std::string_view name() const override { return "openai"; }
  Result<ModelReply> complete(const std::vector<Message>& conversation, const std::vector<ToolSpec>& tools) override;

 private:
  ProviderConfig config_;
  Endpoint endpoint_;
  uint64_t next_call_number_ = 0;  // for calls a compatible server sends without an id
};

}  // namespace corral::agent
