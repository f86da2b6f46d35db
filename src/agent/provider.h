// SPDX-License-Identifier: Apache-2.0
// A model provider: one attempt per call. Retries, backoff and the max_model_calls budget
// belong to the agent loop (each attempt counts), so a provider never retries on its own.
#pragma once
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "agent/conversation.h"
#include "base/result.h"
#include "base/secret.h"

namespace corral::agent {

inline constexpr uint64_t kMaxResponseBytes = uint64_t{8} << 20;  // 8 MiB per model response

struct ProviderConfig {
  std::string provider;                 // "openai" | "ollama" | "anthropic" | "replay"
  std::string endpoint;                 // base URL, e.g. http://127.0.0.1:11434 or https://api.openai.com/v1
  std::string model;
  std::optional<Secret> api_key;        // read from the manifest's api_key_env by the caller
  std::string transcript_path;          // replay: absolute path of the transcript file
  std::chrono::milliseconds timeout{60000};
  uint32_t max_tokens = 4096;
  uint64_t max_response_bytes = kMaxResponseBytes;
};

class Provider {
 public:
  virtual ~Provider() = default;
  virtual std::string_view name() const = 0;
  // Once before the run. Ollama: the model must be listed by GET /api/tags. Replay: the
  // transcript parses. Others: nothing (no network call).
  virtual Result<void> preflight() { return {}; }
  // One attempt. Errors: Errc::kIo for transient failures a retry may cure (connect refused,
  // timeout, HTTP 429 or 5xx); Errc::kInvalidArgument for a malformed response (bad JSON,
  // wrong shape, oversized); anything else is final. Messages name the endpoint's host and
  // the HTTP status, never the key, the prompt or the response body.
  virtual Result<ModelReply> complete(const std::vector<Message>& conversation,
                                      const std::vector<ToolSpec>& tools) = 0;
};

// An Error (kInvalidArgument) for an unknown provider or a config it cannot use (no
// endpoint, an endpoint that is not http(s), replay without a transcript).
Result<std::unique_ptr<Provider>> makeProvider(ProviderConfig config);

// Errc::kIo is the one retryable class.
inline bool isRetryable(const Error& e) { return e.code() == static_cast<int>(Errc::kIo); }

}  // namespace corral::agent
