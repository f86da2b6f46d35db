// SPDX-License-Identifier: Apache-2.0
// Ollama provider: HTTP around wire_ollama.
#include "agent/provider_ollama.h"

#include "agent/wire_json.h"
#include "agent/wire_ollama.h"
#include "policy/units.h"

namespace corral::agent {

OllamaProvider::OllamaProvider(ProviderConfig config, Endpoint endpoint)
    : config_(std::move(config)), endpoint_(std::move(endpoint)) {}

HttpRequest OllamaProvider::request(std::string_view path) const {
  HttpRequest req = providerRequest(config_, endpoint_, path);
  req.headers = {"Accept: application/json"};
  // Ollama itself takes no key; one configured is for a reverse proxy in front of it.
  if (config_.api_key) {
    req.secret = &*config_.api_key;
    req.secret_header_prefix = "Authorization: Bearer ";
  }
  return req;
}

Result<void> OllamaProvider::preflight() {
  HttpRequest req = request("/api/tags");
  req.method = "GET";
  auto resp = httpSend(req);
  if (!resp.ok()) return resp.error().wrap("ollama: preflight");
  ASSIGN_OR_RETURN(bool listed, wire::ollamaTagsList(resp->body, config_.model));
  if (!listed)
    return Error(Errc::kRefused, "ollama: model \"" + policy::printable(config_.model) + "\" is not listed by " +
                                     endpoint_.host + "/api/tags (run: ollama pull " +
                                     policy::printable(config_.model) + ")");
  return {};
}

Result<ModelReply> OllamaProvider::complete(const std::vector<Message>& conversation,
                                            const std::vector<ToolSpec>& tools) {
  HttpRequest req = request("/api/chat");
  req.headers.emplace_back("Content-Type: application/json");
  req.body = wire::dumpJson(wire::ollamaRequest(config_.model, conversation, tools, config_.max_tokens));
  auto resp = httpSend(req);
  if (!resp.ok()) return resp.error().wrap("ollama");
  auto reply = wire::parseOllamaReply(resp->body, next_call_number_);
  if (!reply.ok()) return reply.error();
  next_call_number_ += reply->tool_calls.size();
  stampResponse(*reply, resp->body);
  return reply;
}

}  // namespace corral::agent
