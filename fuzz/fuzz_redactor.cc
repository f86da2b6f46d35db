// SPDX-License-Identifier: Apache-2.0
// Fuzzes the streaming redactor and the body placeholder detector: any chunking gives the
// one-shot result, and no secret survives outside a marker.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "check.h"
#include "net/placeholder.h"
#include "net/redactor.h"

namespace corral::fuzz {
namespace {

// Input: [len1][secret1][len2][secret2][chunking seed][text...]; lengths mod 40.
struct Input {
  std::string secrets[2];
  uint32_t seed = 0;
  std::string_view text;
};

Input split(std::string_view in) {
  Input out;
  for (std::string& s : out.secrets) {
    if (in.empty()) return out;
    size_t n = static_cast<unsigned char>(in[0]) % 40;
    in.remove_prefix(1);
    s = std::string(in.substr(0, n));
    in.remove_prefix(std::min(n, in.size()));
  }
  if (!in.empty()) {
    out.seed = static_cast<unsigned char>(in[0]);
    in.remove_prefix(1);
  }
  out.text = in;
  return out;
}

std::string hexLower(std::string_view s) {
  std::string out;
  for (unsigned char c : s) {
    out += "0123456789abcdef"[c >> 4];
    out += "0123456789abcdef"[c & 15];
  }
  return out;
}

std::string lowered(std::string_view s) {
  std::string out(s);
  for (char& c : out)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return out;
}

// Every occurrence of needle in out overlaps some marker: the only way a secret's bytes can
// be in the output is as part of a marker's own text.
bool onlyInsideMarkers(const std::string& out, std::string_view needle, const std::vector<std::string>& markers) {
  if (needle.empty()) return true;
  std::vector<bool> in_marker(out.size(), false);
  for (const std::string& m : markers)
    for (size_t p = out.find(m); p != std::string::npos; p = out.find(m, p + 1))
      for (size_t k = p; k < p + m.size(); ++k) in_marker[k] = true;
  for (size_t p = out.find(needle); p != std::string::npos; p = out.find(needle, p + 1)) {
    bool covered = false;
    for (size_t k = p; k < p + needle.size() && !covered; ++k) covered = in_marker[k];
    if (!covered) return false;
  }
  return true;
}

void checkRedactor(const Input& in) {
  std::vector<net::RedactTarget> targets = {{"a", in.secrets[0]}, {"b", in.secrets[1]}};
  auto patterns = std::make_shared<const net::RedactionPatterns>(targets);
  uint64_t one_shot_count = 0;
  std::string expected = patterns->redactAll(in.text, &one_shot_count);
  net::Redactor r(patterns);
  std::string got;
  size_t pos = 0;
  for (size_t n : chunking(in.seed, in.text.size(), 17)) {
    got += r.feed(in.text.substr(pos, n));
    pos += n;
  }
  got += r.finish();
  PROPERTY(got == expected, "chunked output differs from one-shot: " + got + " vs " + expected);
  PROPERTY(r.redactions() == one_shot_count, "redaction counts differ");
  std::vector<std::string> markers = {"[REDACTED:a]", "[REDACTED:b]"};
  for (const std::string& s : in.secrets) {
    PROPERTY(onlyInsideMarkers(got, s, markers), "a secret survived: " + got);
    if (s.size() >= 4) PROPERTY(onlyInsideMarkers(got, hexLower(s), markers), "a hex secret survived: " + got);
  }
}

void checkDetector(const Input& in) {
  std::vector<std::string> placeholders;
  for (const std::string& s : in.secrets)
    if (!s.empty()) placeholders.push_back(s);
  net::PlaceholderDetector d(placeholders);
  size_t pos = 0;
  for (size_t n : chunking(in.seed + 7, in.text.size(), 17)) {
    d.feed(in.text.substr(pos, n));
    pos += n;
  }
  std::vector<size_t> expected;
  std::string text = lowered(in.text);
  for (size_t i = 0; i < placeholders.size(); ++i)
    if (text.find(lowered(placeholders[i])) != std::string::npos) expected.push_back(i);
  PROPERTY(d.found() == expected, "detector missed or invented a placeholder in " + text);
}

}  // namespace
}  // namespace corral::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto in = corral::fuzz::split(std::string_view(reinterpret_cast<const char*>(data), size));
  corral::fuzz::checkRedactor(in);
  corral::fuzz::checkDetector(in);
  return 0;
}
