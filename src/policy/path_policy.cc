// SPDX-License-Identifier: Apache-2.0
// Output and mount-target path validation: pure string checks, no filesystem access.
#include "policy/path_policy.h"

#include <array>

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

bool isReservedName(std::string_view component) {
  for (std::string_view root : kReservedOutputRoots) {
    if (component.size() != root.size()) continue;
    bool same = true;
    for (size_t i = 0; i < root.size() && same; ++i) {
      char c = component[i];
      if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
      same = c == root[i];
    }
    if (same) return true;
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
