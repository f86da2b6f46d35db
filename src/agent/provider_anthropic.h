// SPDX-License-Identifier: Apache-2.0
// Anthropic's Messages API.
#pragma once
#include "agent/http_client.h"
#include "agent/provider.h"

namespace corral::agent {

// POST {endpoint}/v1/messages; endpoint is the API root without the version
// ("https://api.anthropic.com"). Headers x-api-key (when configured) and anthropic-version.
class AnthropicProvider final : public Provider {
 public:
  static constexpr const char* kApiVersion = "2023-06-01";
  AnthropicProvider(ProviderConfig config, Endpoint endpoint);
  std::string_view name() const override { return "anthropic"; }
  Result<ModelReply> complete(const std::vector<Message>& conversation, const std::vector<ToolSpec>& tools) override;

 private:
  ProviderConfig config_;
  Endpoint endpoint_;
};

}  // namespace corral::agent
