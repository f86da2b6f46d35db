// SPDX-License-Identifier: Apache-2.0
// OpenAI-compatible provider: HTTP around wire_openai.
#include "agent/provider_openai.h"

#include "agent/wire_json.h"
#include "agent/wire_openai.h"

namespace corral::agent {

OpenAiProvider::OpenAiProvider(ProviderConfig config, Endpoint endpoint)
    : config_(std::move(config)), endpoint_(std::move(endpoint)) {}

Result<ModelReply> OpenAiProvider::complete(const std::vector<Message>& conversation,
                                            const std::vector<ToolSpec>& tools) {
  HttpRequest req = providerRequest(config_, endpoint_, "/chat/completions");
  req.headers = {"Content-Type: application/json", "Accept: application/json"};
  if (config_.api_key) {
    req.secret = &*config_.api_key;
    req.secret_header_prefix = "Authorization: Bearer ";
  }
  req.body = wire::dumpJson(wire::openaiRequest(config_.model, conversation, tools, config_.max_tokens));
  auto resp = httpSend(req);
  if (!resp.ok()) return resp.error().wrap("openai");
  auto reply = wire::parseOpenaiReply(resp->body, next_call_number_);
  if (!reply.ok()) return reply.error();
  next_call_number_ += reply->tool_calls.size();
  stampResponse(*reply, resp->body);
  return reply;
}

}  // namespace corral::agent
