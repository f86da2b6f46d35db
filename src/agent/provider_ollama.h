// SPDX-License-Identifier: Apache-2.0
// Ollama's native chat API.
#pragma once
#include <cstdint>

#include "agent/http_client.h"
#include "agent/provider.h"

namespace corral::agent {

// preflight: GET {endpoint}/api/tags must list the model. complete: POST {endpoint}/api/chat
// with "stream": false. Endpoint is the server root ("http://127.0.0.1:11434").
class OllamaProvider final : public Provider {
 public:
  OllamaProvider(ProviderConfig config, Endpoint endpoint);
  std::string_view name() const override { return "ollama"; }
  Result<void> preflight() override;
  Result<ModelReply> complete(const std::vector<Message>& conversation, const std::vector<ToolSpec>& tools) override;

 private:
  HttpRequest request(std::string_view path) const;

  ProviderConfig config_;
  Endpoint endpoint_;
  uint64_t next_call_number_ = 0;  // Ollama sends no call ids: "call_<n>" across the run
};

}  // namespace corral::agent
