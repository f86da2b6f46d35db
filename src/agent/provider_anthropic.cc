// SPDX-License-Identifier: Apache-2.0
// Anthropic provider: HTTP around wire_anthropic.
#include "agent/provider_anthropic.h"

#include "agent/wire_anthropic.h"
#include "agent/wire_json.h"

namespace corral::agent {

AnthropicProvider::AnthropicProvider(ProviderConfig config, Endpoint endpoint)
    : config_(std::move(config)), endpoint_(std::move(endpoint)) {}

Result<ModelReply> AnthropicProvider::complete(const std::vector<Message>& conversation,
                                               const std::vector<ToolSpec>& tools) {
  HttpRequest req = providerRequest(config_, endpoint_, "/v1/messages");
  req.headers = {"Content-Type: application/json", "Accept: application/json",
                 std::string("anthropic-version: ") + kApiVersion};
  if (config_.api_key) {
    req.secret = &*config_.api_key;
    req.secret_header_prefix = "x-api-key: ";
  }
  req.body = wire::dumpJson(wire::anthropicRequest(config_.model, conversation, tools, config_.max_tokens));
  auto resp = httpSend(req);
  if (!resp.ok()) return resp.error().wrap("anthropic");
  auto reply = wire::parseAnthropicReply(resp->body);
  if (!reply.ok()) return reply.error();
  stampResponse(*reply, resp->body);
  return reply;
}

}  // namespace corral::agent
