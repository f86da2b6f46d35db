// SPDX-License-Identifier: Apache-2.0
// makeProvider: config validation and the choice of provider.
#include <memory>

#include "agent/http_client.h"
#include "agent/provider.h"
#include "agent/provider_anthropic.h"
#include "agent/provider_ollama.h"
#include "agent/provider_openai.h"
#include "agent/provider_replay.h"
#include "policy/units.h"

namespace corral::agent {
namespace {

Error invalid(const std::string& provider, std::string_view why) {
  return Error(Errc::kInvalidArgument, "model provider " + provider + ": " + std::string(why));
}

}  // namespace

Result<std::unique_ptr<Provider>> makeProvider(ProviderConfig config) {
  const std::string& p = config.provider;
  const bool network = p == "openai" || p == "ollama" || p == "anthropic";
  if (!network && p != "replay")
    return Error(Errc::kInvalidArgument, "model provider \"" + policy::printable(p) +
                                             "\" is unknown (openai, ollama, anthropic or replay)");
  if (config.timeout.count() <= 0) return invalid(p, "timeout must be positive");
  if (config.max_tokens == 0) return invalid(p, "max_tokens must be positive");
  if (config.max_response_bytes == 0) return invalid(p, "max_response_bytes must be positive");
  if (p == "replay") {
    if (config.transcript_path.empty()) return invalid(p, "needs a transcript");
    if (config.transcript_path.front() != '/') return invalid(p, "transcript path must be absolute");
    return std::unique_ptr<Provider>(std::make_unique<ReplayProvider>(std::move(config)));
  }
  auto endpoint = parseEndpoint(config.endpoint);
  if (!endpoint.ok()) return endpoint.error().wrap("model provider " + p);
  if (config.model.empty()) return invalid(p, "needs a model name");
  if (p == "openai") return std::unique_ptr<Provider>(std::make_unique<OpenAiProvider>(std::move(config), std::move(*endpoint)));
  if (p == "ollama") return std::unique_ptr<Provider>(std::make_unique<OllamaProvider>(std::move(config), std::move(*endpoint)));
  return std::unique_ptr<Provider>(std::make_unique<AnthropicProvider>(std::move(config), std::move(*endpoint)));
}

}  // namespace corral::agent
