// SPDX-License-Identifier: Apache-2.0
// Splitting and %-decoding a request's target.
#include "daemon/request_target.h"

#include "base/hex.h"

namespace corral::daemon {
namespace {

// A file path's segment, %XX-decoded: one whole name (no '/', no NUL), or false.
bool percentDecode(std::string& part) {
  std::string out;
  for (size_t i = 0; i < part.size(); ++i) {
    if (part[i] != '%') {
      out.push_back(part[i]);
      continue;
    }
    const int hi = i + 2 < part.size() ? hexValue(part[i + 1]) : -1, lo = hi >= 0 ? hexValue(part[i + 2]) : -1;
    if (lo < 0) return false;
    const char c = static_cast<char>(hi * 16 + lo);
    if (c == '/' || c == '\0') return false;
    out.push_back(c);
    i += 2;
  }
  part = std::move(out);
  return true;
}

std::vector<std::string> splitSegments(std::string_view target, bool* ok) {
  std::vector<std::string> out;
  size_t pos = 1;
  while (pos <= target.size()) {
    size_t end = target.find('/', pos);
    if (end == std::string_view::npos) end = target.size();
    std::string_view part = target.substr(pos, end - pos);
    if (part.empty() && end != target.size()) *ok = false;  // "//" or a leading empty part
    if (!part.empty()) out.emplace_back(part);
    pos = end + 1;
  }
  return out;
}

}  // namespace

std::vector<std::string> splitTarget(std::string_view target, bool* ok) {
  std::vector<std::string> out;
  *ok = !target.empty() && target[0] == '/' && target.find_first_of("?#") == std::string_view::npos;
  // No control byte, space or DEL anywhere, whatever the HTTP parser let through: a raw NUL
  // would otherwise reach a file name that percentDecode never saw.
  for (const char c : target)
    if (static_cast<unsigned char>(c) <= 0x20 || c == 0x7f) *ok = false;
  if (!*ok) return out;
  out = splitSegments(target, ok);
  for (size_t i = 0; *ok && i < out.size(); ++i) {
    if (out[i].find('%') == std::string::npos) continue;
    const bool file_part = i >= 4 && out[0] == "v1" && out[1] == "sessions" && (out[3] == "files" || out[3] == "stat");
    *ok = file_part && percentDecode(out[i]);
  }
  return out;
}

}  // namespace corral::daemon
