// SPDX-License-Identifier: Apache-2.0
// OpenAI-compatible chat completions wire format: request body and reply parsing. Pure.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "agent/conversation.h"
#include "base/result.h"

namespace corral::agent::wire {

// The POST {endpoint}/chat/completions body.
nlohmann::json openaiRequest(std::string_view model, const std::vector<Message>& conversation,
                             const std::vector<ToolSpec>& tools, uint32_t max_tokens);

// Parses a chat completion. Fills content, tool_calls (arguments kept as the raw string the
// model sent), usage and stop_reason; not response_bytes/response_sha256 (the caller's).
// A tool call without an id gets "call_<first_call_number + i>".
Result<ModelReply> parseOpenaiReply(std::string_view body, uint64_t first_call_number);

// {"type":"object","properties":{}} when a tool declares no parameters: every provider
// requires an object schema.
nlohmann::json toolParameters(const ToolSpec& tool);

// The "tools" array of function tools, in the shape OpenAI defined and Ollama accepts as is.
nlohmann::json functionTools(const std::vector<ToolSpec>& tools);

}  // namespace corral::agent::wire
