// SPDX-License-Identifier: Apache-2.0
// JSON helpers shared by the wire formats: a non-throwing parse of untrusted bytes and a
// dump that cannot throw on invalid UTF-8. Pure: no I/O.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "agent/conversation.h"
#include "base/result.h"

namespace corral::agent::wire {

// Deeper than any real model response or transcript; bounds the work a hostile body can cause.
inline constexpr int kMaxJsonDepth = 128;

// Parses text as one JSON document. Errors (kInvalidArgument) are "<what>: invalid JSON at
// byte N", "<what>: duplicate object key" (only when strict) or "<what>: nested deeper than
// N" and never quote the input.
Result<nlohmann::json> parseJson(std::string_view text, std::string_view what, bool strict);

// Compact dump. Invalid UTF-8 in a string (tool output is arbitrary bytes) becomes U+FFFD
// instead of an exception.
std::string dumpJson(const nlohmann::json& value);

// A malformed-response error: "<what>: <reason>" with code kInvalidArgument.
Error malformed(std::string_view what, std::string_view reason);

// Reads an optional token count of obj (absent or null: 0). A value of any other type, or
// above kMaxTokenCount, is an error naming the field path.
inline constexpr uint64_t kMaxTokenCount = 0xFFFFFFFFu;
Result<uint64_t> optionalCount(const nlohmann::json& obj, const char* key, std::string_view what,
                               std::string_view path);

// The OpenAI-shaped assistant message both OpenAI and Ollama send: content (string or null)
// and tool_calls[] of {id?, function: {name, arguments}} into reply. path names the message
// in errors ("choices[0].message"). arguments: a JSON string is kept verbatim (what the
// model wrote), an object is re-serialised; absent or null is "{}" when missing_args_empty,
// else an error. A call without an id gets "call_<first_call_number + index>".
struct MessageShape {
  std::string_view path;
  bool missing_args_empty = false;
};
Result<void> parseAssistantMessage(const nlohmann::json& message, const MessageShape& shape, std::string_view what,
                                   uint64_t first_call_number, ModelReply& reply);

}  // namespace corral::agent::wire
