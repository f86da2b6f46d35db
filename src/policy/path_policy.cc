// SPDX-License-Identifier: Apache-2.0
// Output and mount-target path validation: pure string checks, no filesystem access.
#include "policy/path_policy.h"

#include <array>
#include <cstdint>

#include "policy/manifest_fields.h"

namespace corral::policy::path {
namespace {

// Workspace names a sandboxed command may never hand back to the host. .corral/ holds the
// audit record (DESIGN.md "Audit record"): copying it back would let the command forge it.
constexpr std::array<std::string_view, 1> kReservedOutputRoots = {".corral"};

// Sandbox paths corral mounts or generates itself; a user bind there or beneath would
// shadow the runtime (/usr, /lib*), the generated /etc, or the facilities the
// isolation depends on (/proc of the PID namespace, the minimal /dev).
constexpr std::array<std::string_view, 12> kCorralMounts = {
    "/proc", "/dev", "/workspace", "/tmp", "/etc", "/usr",
    "/bin",  "/sbin", "/lib",      "/lib32", "/lib64", "/libx32",
};

Error invalid(std::string why) { return Error(Errc::kInvalidArgument, std::move(why)); }

Result<void> checkLength(std::string_view p) {
  if (p.size() > kMaxPath) return invalid("longer than " + std::to_string(kMaxPath) + " bytes");
  return {};
}

// Checks a relative path body ("a/b/c") component by component; shared by both kinds.
Result<void> checkComponents(std::string_view p) {
  for (char c : p) {
    auto u = static_cast<unsigned char>(c);
    if (u == 0) return invalid("contains a NUL byte");
    if (u < 0x20 || u == 0x7f) return invalid("contains a control character");
  }
  if (!p.empty() && p.back() == '/') return invalid("has a trailing slash");
  size_t start = 0;
  while (true) {
    size_t slash = p.find('/', start);
    std::string_view comp = p.substr(start, slash == std::string_view::npos ? std::string_view::npos : slash - start);
    if (comp.empty()) return invalid("has an empty component ('//')");
    if (comp == ".") return invalid("has a '.' component");
    if (comp == "..") return invalid("has a '..' component");
    if (comp.size() > kMaxComponent)
      return invalid("has a component longer than " + std::to_string(kMaxComponent) + " bytes");
    if (slash == std::string_view::npos) return {};
    start = slash + 1;
  }
}

// True when p is root or lies beneath it, on a component boundary ("/usr2" is not "/usr").
bool within(std::string_view p, std::string_view root) {
  if (p.substr(0, root.size()) != root) return false;
  return p.size() == root.size() || p[root.size()] == '/';
}

}  // namespace

namespace {

// Unicode default-ignorable code points (DerivedCoreProperties): a casefolding filesystem
// may drop them from a name (ext4 did before 6.13), so ".c<U+200D>orral" could be .corral.
bool defaultIgnorable(uint32_t c) {
  return c == 0xAD || c == 0x34F || c == 0x61C || (c >= 0x115F && c <= 0x1160) || (c >= 0x17B4 && c <= 0x17B5) ||
         (c >= 0x180B && c <= 0x180F) || (c >= 0x200B && c <= 0x200F) || (c >= 0x202A && c <= 0x202E) ||
         (c >= 0x2060 && c <= 0x206F) || c == 0x3164 || (c >= 0xFE00 && c <= 0xFE0F) || c == 0xFEFF || c == 0xFFA0 ||
         (c >= 0xFFF0 && c <= 0xFFF8) || (c >= 0x1BCA0 && c <= 0x1BCA3) || (c >= 0x1D173 && c <= 0x1D17A) ||
         (c >= 0xE0000 && c <= 0xE0FFF);
}

}  // namespace

std::string reservedFold(std::string_view component) {
  std::string out;
  for (size_t i = 0; i < component.size();) {
    auto lead = static_cast<unsigned char>(component[i]);
    size_t len = lead < 0x80 ? 1 : lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : lead >= 0xC0 ? 2 : 1;
    if (i + len > component.size()) len = component.size() - i;
    uint32_t cp = len == 1 ? lead : lead & (0x7F >> len);
    for (size_t k = 1; k < len; ++k) cp = (cp << 6) | (static_cast<unsigned char>(component[i + k]) & 0x3F);
    if (len == 1 && lead >= 'A' && lead <= 'Z') {
      out += static_cast<char>(lead - 'A' + 'a');
    } else if (len == 1 || !defaultIgnorable(cp)) {
      out.append(component.substr(i, len));
    }
    i += len;
  }
  // vfat and NTFS ignore trailing dots and spaces in a name.
  while (!out.empty() && (out.back() == '.' || out.back() == ' ')) out.pop_back();
  return out;
}

bool isReservedName(std::string_view component) {
  const std::string folded = reservedFold(component);
  for (std::string_view root : kReservedOutputRoots) {
    if (folded == root) return true;
    // vfat (and ntfs3 with short names) also find a long name by its 8.3 alias: ".corral"
    // is "CORRAL~1" there, or ~2, ~3... when that was taken.
    std::string_view alias = folded;
    if (!alias.empty() && alias.front() == '.') alias.remove_prefix(1);
    const std::string_view base = root.substr(1);
    if (alias.size() > base.size() + 1 && alias.substr(0, base.size()) == base && alias[base.size()] == '~' &&
        alias.find_first_not_of("0123456789", base.size() + 1) == std::string_view::npos)
      return true;
  }
  return false;
}

Result<std::string> outputPath(std::string_view rel) {
  if (rel.empty()) return invalid("is empty");
  if (rel.front() == '/') return invalid("is absolute; outputs are relative to the workspace");
  RETURN_IF_ERROR(checkLength(rel));
  RETURN_IF_ERROR(checkComponents(rel));
  // Reports and the trace are JSON: a name that is not UTF-8 could not be written in them.
  if (!manifest_fields::validUtf8(rel)) return invalid("is not valid UTF-8");
  if (isReservedName(rel.substr(0, rel.find('/'))))
    return invalid("is under .corral/, which corral reserves");
  return std::string(rel);
}

Result<std::string> sandboxMountPath(std::string_view abs) {
  if (abs.empty()) return invalid("is empty");
  if (abs.front() != '/') return invalid("is not absolute");
  if (abs == "/") return invalid("is the sandbox root, which corral builds itself");
  RETURN_IF_ERROR(checkLength(abs));
  RETURN_IF_ERROR(checkComponents(abs.substr(1)));
  for (std::string_view root : kCorralMounts) {
    if (abs == root) return invalid("is " + std::string(root) + ", which corral mounts itself");
    if (within(abs, root)) return invalid("beneath " + std::string(root) + ", which corral mounts itself");
  }
  return std::string(abs);
}

}  // namespace corral::policy::path
