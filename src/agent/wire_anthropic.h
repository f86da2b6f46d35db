// SPDX-License-Identifier: Apache-2.0
// Anthropic Messages API wire format: request body and reply parsing. Pure.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "agent/conversation.h"
#include "base/result.h"

namespace corral::agent::wire {

// The POST {endpoint}/v1/messages body. System messages go to the top-level "system";
// tool results become tool_result blocks of a user message; consecutive messages of one
// role are merged, since the API requires user and assistant turns to alternate.
nlohmann::json anthropicRequest(std::string_view model, const std::vector<Message>& conversation,
                                const std::vector<ToolSpec>& tools, uint32_t max_tokens);

// Parses a Messages reply: text blocks concatenated, tool_use blocks as calls (input object
// serialised into arguments_json), stop_reason, usage. Other block types are ignored.
Result<ModelReply> parseAnthropicReply(std::string_view body);

}  // namespace corral::agent::wire
