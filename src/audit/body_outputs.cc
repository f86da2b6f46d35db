// SPDX-License-Identifier: Apache-2.0
// Strict reader of result.json's body.outputs (every field type-checked before it is read).
#include "audit/body_outputs.h"

#include <set>

#include "audit/canonical_json.h"
#include "base/sha256.h"

namespace corral::audit {
namespace {

Error bad(const std::string& where, std::string_view what) {
  return Error(Errc::kInvalidArgument, where + " " + std::string(what));
}

}  // namespace

bool isNormalOutputPath(std::string_view path) {
  constexpr size_t kMaxPath = 4096, kMaxComponent = 255;
  if (path.empty() || path.size() > kMaxPath || !isValidUtf8(path)) return false;
  for (unsigned char c : path)
    if (c < 0x20 || c == 0x7f) return false;
  size_t start = 0;
  for (;;) {
    const size_t slash = path.find('/', start);
    const std::string_view comp = path.substr(start, slash == std::string_view::npos ? std::string_view::npos : slash - start);
    if (comp.empty() || comp == "." || comp == ".." || comp.size() > kMaxComponent) return false;
    if (start == 0 && comp == ".corral") return false;
    if (slash == std::string_view::npos) return true;
    start = slash + 1;
  }
}

Result<std::vector<BodyOutput>> parseBodyOutputs(const nlohmann::json& body) {
  std::vector<BodyOutput> out;
  if (!body.is_object()) return Error(Errc::kInvalidArgument, "body is not an object");
  const auto list = body.find("outputs");
  if (list == body.end()) return out;
  if (!list->is_array()) return Error(Errc::kInvalidArgument, "body.outputs is not an array");
  std::set<std::string> seen;
  for (size_t i = 0; i < list->size(); ++i) {
    const nlohmann::json& o = (*list)[i];
    const std::string where = "body.outputs[" + std::to_string(i) + "]";
    if (!o.is_object()) return bad(where, "is not an object");
    for (const auto& [key, value] : o.items()) {
      (void)value;
      if (key != "path" && key != "sha256" && key != "applied" && key != "changed" && key != "bytes")
        return bad(where, "has an unknown field (allowed: applied bytes changed path sha256)");
    }
    BodyOutput e;
    const auto path = o.find("path");
    if (path == o.end() || !path->is_string() || !isNormalOutputPath(path->get_ref<const std::string&>()))
      return bad(where + ".path", "is not a relative path in normal form");
    e.path = path->get_ref<const std::string&>();
    if (!seen.insert(e.path).second) return bad(where + ".path", "repeats an earlier entry's path");
    const auto sha = o.find("sha256");
    if (sha == o.end() || !sha->is_string() ||
        !(sha->get_ref<const std::string&>().empty() || isSha256Hex(sha->get_ref<const std::string&>())))
      return bad(where + ".sha256", "is not \"\" or 64 lowercase hex digits");
    e.sha256 = sha->get_ref<const std::string&>();
    if (const auto a = o.find("applied"); a != o.end()) {
      const bool known = a->is_string() && (*a == "copied" || *a == "refused" || *a == "withheld" || *a == "missing");
      if (!known) return bad(where + ".applied", "is not one of copied, refused, withheld, missing");
      e.applied = a->get_ref<const std::string&>();
    }
    if (const auto c = o.find("changed"); c != o.end()) {
      if (!c->is_boolean()) return bad(where + ".changed", "is not true or false");
      e.changed = c->get<bool>();
    }
    if (const auto b = o.find("bytes"); b != o.end()) {
      if (!b->is_number_unsigned()) return bad(where + ".bytes", "is not a non-negative integer");
      e.bytes = b->get<uint64_t>();
    }
    if (e.applied == "copied" && e.sha256.empty()) return bad(where, "was copied but has no sha256");
    out.push_back(std::move(e));
  }
  return out;
}

}  // namespace corral::audit
