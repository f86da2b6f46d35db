// SPDX-License-Identifier: Apache-2.0
// Fuzzes outputPath and sandboxMountPath against a reference implementation and containment checks.
#include <array>
#include <cctype>
#include <cstddef>
#include <cstdint>
#include <regex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "check.h"
#include "policy/path_policy.h"

namespace corral::fuzz {
namespace {

namespace path = policy::path;

// Where corral mounts or generates something itself (written out again, not copied from
// path_policy.cc, so a deletion there shows up here).
constexpr std::array<std::string_view, 12> kReservedMounts = {
    "/proc", "/dev", "/workspace", "/tmp", "/etc", "/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"};

// Whether a first component is .corral as vfat, NTFS or a casefolding filesystem may see
// it (written out again from the Unicode tables, not copied from path_policy.cc): ASCII case
// ignored, default-ignorable code points dropped, trailing dots and spaces dropped; or the
// 8.3 alias vfat gives it (CORRAL~1).
bool refReservedName(std::string_view c) {
  static const std::vector<std::pair<uint32_t, uint32_t>> kIgnorable = {
      {0xAD, 0xAD},       {0x34F, 0x34F},     {0x61C, 0x61C},     {0x115F, 0x1160},   {0x17B4, 0x17B5},
      {0x180B, 0x180F},   {0x200B, 0x200F},   {0x202A, 0x202E},   {0x2060, 0x206F},   {0x3164, 0x3164},
      {0xFE00, 0xFE0F},   {0xFEFF, 0xFEFF},   {0xFFA0, 0xFFA0},   {0xFFF0, 0xFFF8},   {0x1BCA0, 0x1BCA3},
      {0x1D173, 0x1D17A}, {0xE0000, 0xE0FFF}};
  std::string kept;
  size_t i = 0;
  while (i < c.size()) {
    const auto b = static_cast<unsigned char>(c[i]);
    const size_t n = (b & 0x80) == 0 ? 1 : (b & 0xE0) == 0xC0 ? 2 : (b & 0xF0) == 0xE0 ? 3 : (b & 0xF8) == 0xF0 ? 4 : 1;
    uint32_t cp = n == 1 ? b : n == 2 ? (b & 0x1F) : n == 3 ? (b & 0x0F) : (b & 0x07);
    for (size_t k = 1; k < n && i + k < c.size(); ++k) cp = cp * 64 + (static_cast<unsigned char>(c[i + k]) & 0x3F);
    bool drop = false;
    for (const auto& [lo, hi] : kIgnorable) drop = drop || (n > 1 && cp >= lo && cp <= hi);
    if (!drop) kept += std::string(c.substr(i, n));
    i += n;
  }
  while (!kept.empty() && (kept.back() == '.' || kept.back() == ' ')) kept.pop_back();
  for (char& ch : kept) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  // The name itself, or its vfat 8.3 alias.
  static const std::regex kReservedRe(R"(\.corral|\.?corral~[0-9]+)");
  return std::regex_match(kept, kReservedRe);
}

// A relative body in normal form: every component non-empty, not "." or "..", within
// NAME_MAX; no control byte anywhere.
bool refNormalBody(std::string_view body) {
  if (!noControlBytes(body)) return false;
  for (std::string_view c : refSplit(body))
    if (c.empty() || c == "." || c == ".." || c.size() > path::kMaxComponent) return false;
  return true;
}

// Well-formed UTF-8 by decoding (RFC 3629): no overlong form, no surrogate, nothing above
// U+10FFFF. Written differently from the library's byte-range table on purpose.
bool refUtf8(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    const auto b = static_cast<unsigned char>(s[i]);
    uint32_t cp = 0;
    size_t n = 0;
    if (b < 0x80) cp = b, n = 0;
    else if ((b & 0xE0) == 0xC0) cp = b & 0x1F, n = 1;
    else if ((b & 0xF0) == 0xE0) cp = b & 0x0F, n = 2;
    else if ((b & 0xF8) == 0xF0) cp = b & 0x07, n = 3;
    else return false;
    if (s.size() - i <= n) return false;
    for (size_t k = 1; k <= n; ++k) {
      const auto c = static_cast<unsigned char>(s[i + k]);
      if ((c & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (c & 0x3F);
    }
    static constexpr uint32_t kMin[] = {0, 0x80, 0x800, 0x10000};
    if (cp < kMin[n] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
    i += n + 1;
  }
  return true;
}

bool refOutput(std::string_view rel) {
  if (rel.empty() || rel.size() > path::kMaxPath || rel.front() == '/') return false;
  if (!refNormalBody(rel) || !refUtf8(rel)) return false;
  return !refReservedName(refSplit(rel).front());
}

bool refMount(std::string_view abs) {
  if (abs.size() < 2 || abs.size() > path::kMaxPath || abs.front() != '/') return false;
  if (!refNormalBody(abs.substr(1))) return false;
  std::string first = "/" + std::string(refSplit(abs.substr(1)).front());
  for (std::string_view r : kReservedMounts)
    if (first == r) return false;
  return true;
}

// Resolves rel lexically from a workspace root, as a copy-back would with no symlinks in
// play: true when it never climbs above the root and ends below it.
bool staysInside(std::string_view rel) {
  int depth = 0;
  for (std::string_view c : refSplit(rel)) {
    if (c.empty() || c == ".") continue;
    depth += c == ".." ? -1 : 1;
    if (depth < 0) return false;
  }
  return depth > 0;
}

void checkOutput(std::string_view rel) {
  auto r = path::outputPath(rel);
  PROPERTY_ONE_LINE_ERROR(r);
  PROPERTY(r.ok() == refOutput(rel), "outputPath and the reference disagree on '" + std::string(rel) + "'");
  if (!r.ok()) return;
  PROPERTY(*r == rel, "outputPath changed the path: " + *r);
  PROPERTY(rel.front() != '/', "absolute output accepted: " + *r);
  PROPERTY(rel.find("//") == std::string_view::npos && rel.back() != '/', "empty component accepted: " + *r);
  PROPERTY(noControlBytes(rel), "control byte accepted: " + *r);
  for (std::string_view c : refSplit(rel)) PROPERTY(c != ".." && c != ".", "dot component accepted: " + *r);
  PROPERTY(staysInside(rel), "output resolves outside the workspace: " + *r);
  PROPERTY(!refReservedName(refSplit(rel).front()), "reserved .corral/ output accepted: " + *r);
}

void checkMount(std::string_view abs) {
  auto r = path::sandboxMountPath(abs);
  PROPERTY_ONE_LINE_ERROR(r);
  PROPERTY(r.ok() == refMount(abs), "sandboxMountPath and the reference disagree on '" + std::string(abs) + "'");
  if (!r.ok()) return;
  PROPERTY(*r == abs, "sandboxMountPath changed the path: " + *r);
  PROPERTY(abs.front() == '/' && abs != "/", "non-absolute or root mount accepted: " + *r);
  PROPERTY(staysInside(abs.substr(1)), "mount target is not normal: " + *r);
  for (std::string_view root : kReservedMounts) {
    bool under = abs.substr(0, root.size()) == root && (abs.size() == root.size() || abs[root.size()] == '/');
    PROPERTY(!under, "mount target on or under reserved " + std::string(root) + ": " + *r);
  }
}

}  // namespace
}  // namespace corral::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  corral::fuzz::checkOutput(text);
  corral::fuzz::checkMount(text);
  // The same bytes as the body of an absolute path: most interesting mount targets are.
  corral::fuzz::checkMount("/" + std::string(text));
  return 0;
}
