// SPDX-License-Identifier: Apache-2.0
// Provider-neutral conversation types: what the agent loop keeps and every provider
// translates to and from its own wire format.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace corral::agent {

struct ToolCall {
  std::string id;              // the provider's id, or one the provider module made up
  std::string name;
  std::string arguments_json;  // exactly as the model sent it; the runner parses and validates
};

enum class Role { kSystem, kUser, kAssistant, kTool };
const char* roleName(Role role);  // "system", "user", "assistant", "tool"

struct Message {
  Role role = Role::kUser;
  std::string content;
  std::vector<ToolCall> tool_calls;  // kAssistant only
  std::string tool_call_id;          // kTool only: which call this answers
  std::string tool_name;             // kTool only
};

struct ToolSpec {
  std::string name;
  std::string description;
  nlohmann::json parameters;  // a JSON Schema object
};

struct Usage {
  uint64_t input_tokens = 0;
  uint64_t output_tokens = 0;
};

struct ModelReply {
  std::string content;               // assistant text (may be empty)
  std::vector<ToolCall> tool_calls;
  Usage usage;
  std::string stop_reason;           // the provider's own word ("stop", "tool_calls", "end_turn", ...)
  uint64_t response_bytes = 0;       // size of the response body as received
  std::string response_sha256;       // SHA-256 hex of that body (what the trace commits to)
};

}  // namespace corral::agent
