// SPDX-License-Identifier: Apache-2.0
// Non-throwing JSON parse and dump for the provider wire formats.
#include "agent/wire_json.h"

#include <set>
#include <vector>

namespace corral::agent::wire {

Error malformed(std::string_view what, std::string_view reason) {
  std::string s(what);
  s += ": ";
  s += reason;
  return Error(Errc::kInvalidArgument, std::move(s));
}

Result<nlohmann::json> parseJson(std::string_view text, std::string_view what, bool strict) {
  // nlohmann keeps the last of duplicate keys silently; a strict reader (the replay
  // transcript, which a person writes) refuses them so two readers cannot disagree.
  std::vector<std::set<std::string>> open_objects;
  bool duplicate = false;
  bool too_deep = false;
  auto callback = [&](int depth, nlohmann::json::parse_event_t event, nlohmann::json& parsed) {
    using E = nlohmann::json::parse_event_t;
    if (depth > kMaxJsonDepth) too_deep = true;
    if (!strict) return true;
    if (event == E::object_start) {
      open_objects.emplace_back();
    } else if (event == E::object_end && !open_objects.empty()) {
      open_objects.pop_back();
    } else if (event == E::key && !open_objects.empty() && parsed.is_string() &&
               !open_objects.back().insert(parsed.get_ref<const std::string&>()).second) {
      duplicate = true;
    }
    return true;
  };
  nlohmann::json parsed;
  try {
    parsed = nlohmann::json::parse(text.begin(), text.end(), callback, /*allow_exceptions=*/true);
  } catch (const nlohmann::json::parse_error& e) {
    // e.what() quotes the input; only the offset leaves this function.
    return malformed(what, "invalid JSON at byte " + std::to_string(e.byte));
  } catch (const nlohmann::json::exception&) {
    return malformed(what, "invalid JSON");
  }
  if (too_deep) return malformed(what, "nested deeper than " + std::to_string(kMaxJsonDepth));
  if (duplicate) return malformed(what, "duplicate object key");
  return parsed;
}

std::string dumpJson(const nlohmann::json& value) {
  return value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

Result<uint64_t> optionalCount(const nlohmann::json& obj, const char* key, std::string_view what,
                               std::string_view path) {
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return uint64_t{0};
  if (!it->is_number_unsigned()) {
    // A negative number parses as number_integer; a float or a string is also refused.
    if (it->is_number_integer() && it->get<int64_t>() >= 0) return static_cast<uint64_t>(it->get<int64_t>());
    return malformed(what, std::string(path) + "." + key + " is not a non-negative integer");
  }
  return it->get<uint64_t>();
}

}  // namespace corral::agent::wire
