// SPDX-License-Identifier: Apache-2.0
// Strict, non-throwing reads of request bodies and control messages.
#include "daemon/json_fields.h"

#include "policy/units.h"

namespace corral::daemon {

Result<Json> parseJson(std::string_view text) {
  Json j = Json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return Error(Errc::kInvalidArgument, "malformed JSON");
  return j;
}

std::string dumpJson(const Json& j) { return j.dump(-1, ' ', false, Json::error_handler_t::replace); }

Result<Fields> Fields::of(const Json& j, std::string where, std::initializer_list<std::string_view> known) {
  if (!j.is_object()) return Error(Errc::kInvalidArgument, where + ": expected a JSON object");
  for (const auto& item : j.items()) {
    bool ok = false;
    for (std::string_view k : known) ok = ok || item.key() == k;
    if (!ok) return Error(Errc::kInvalidArgument, where + ": unknown field '" + policy::printable(item.key()) + "'");
  }
  return Fields(&j, std::move(where));
}

const Json* Fields::find(std::string_view key) const {
  auto it = j_->find(std::string(key));
  return it == j_->end() || it->is_null() ? nullptr : &*it;
}

Error Fields::bad(std::string_view key, std::string_view want) const {
  return Error(Errc::kInvalidArgument, where_ + "." + std::string(key) + ": expected " + std::string(want));
}

Result<std::optional<std::string>> Fields::string(std::string_view key, size_t max_bytes) const {
  const Json* v = find(key);
  if (!v) return std::optional<std::string>();
  if (!v->is_string()) return bad(key, "a string");
  const std::string& s = v->get_ref<const std::string&>();
  if (s.size() > max_bytes) return bad(key, "at most " + std::to_string(max_bytes) + " bytes");
  return std::optional<std::string>(s);
}

Result<std::optional<uint64_t>> Fields::count(std::string_view key, uint64_t max) const {
  const Json* v = find(key);
  if (!v) return std::optional<uint64_t>();
  if (!v->is_number_unsigned() || v->get<uint64_t>() == 0 || v->get<uint64_t>() > max)
    return bad(key, "an integer from 1 to " + std::to_string(max));
  return std::optional<uint64_t>(v->get<uint64_t>());
}

Result<std::optional<bool>> Fields::boolean(std::string_view key) const {
  const Json* v = find(key);
  if (!v) return std::optional<bool>();
  if (!v->is_boolean()) return bad(key, "true or false");
  return std::optional<bool>(v->get<bool>());
}

Result<std::optional<std::vector<std::string>>> Fields::strings(std::string_view key, size_t max_items,
                                                                size_t max_bytes) const {
  const Json* v = find(key);
  if (!v) return std::optional<std::vector<std::string>>();
  if (!v->is_array() || v->size() > max_items) return bad(key, "an array of at most " + std::to_string(max_items) + " strings");
  std::vector<std::string> out;
  for (const Json& e : *v) {
    if (!e.is_string() || e.get_ref<const std::string&>().size() > max_bytes)
      return bad(key, "strings of at most " + std::to_string(max_bytes) + " bytes");
    out.push_back(e.get<std::string>());
  }
  return std::optional<std::vector<std::string>>(std::move(out));
}

const Json* Fields::object(std::string_view key) const { return find(key); }

}  // namespace corral::daemon
