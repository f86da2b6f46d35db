// SPDX-License-Identifier: Apache-2.0
// Ollama native API wire format: /api/chat request and reply, /api/tags lookup. Pure.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "agent/conversation.h"
#include "base/result.h"

namespace corral::agent::wire {

// The POST {endpoint}/api/chat body (non-streaming).
nlohmann::json ollamaRequest(std::string_view model, const std::vector<Message>& conversation,
                             const std::vector<ToolSpec>& tools, uint32_t max_tokens);

// Parses an /api/chat reply. Ollama sends tool arguments as an object (serialised here into
// arguments_json) and no ids: calls are numbered "call_<first_call_number + i>".
Result<ModelReply> parseOllamaReply(std::string_view body, uint64_t first_call_number);

// Whether an /api/tags body lists model: models[].name equal to it, or to it + ":latest"
// when model names no tag. Malformed body: kInvalidArgument.
Result<bool> ollamaTagsList(std::string_view body, std::string_view model);

}  // namespace corral::agent::wire
