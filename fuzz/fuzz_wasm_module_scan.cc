// SPDX-License-Identifier: Apache-2.0
// Fuzzes the wasm module scan (src/wasm/module_scan.cc), the first code that reads an
// untrusted module, against what wasm2c may then see: every name an identifier, every import
// corral's with its exact signature, no custom section left, the caps held, the stripped bytes
// a module that scans to the same result, and errors that are one printable line.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "check.h"
#include "wasm/module_scan.h"
#include "wasm/wasi_imports.h"

namespace corral::fuzz {
namespace {

// [A-Za-z_][A-Za-z0-9_]{0,63}, written here rather than taken from module_scan.cc.
bool refIdentifier(std::string_view s) {
  if (s.empty() || s.size() > 64) return false;
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    const bool letter = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
    if (!letter && !(i > 0 && c >= '0' && c <= '9')) return false;
  }
  return true;
}

// The section ids of a module whose framing scanModule accepted, in order; false when the
// framing does not parse (it must, for the stripped bytes).
bool sectionIds(std::string_view b, std::string* ids) {
  size_t pos = 8;
  while (pos < b.size()) {
    const uint8_t id = static_cast<uint8_t>(b[pos++]);
    uint64_t size = 0;
    for (int shift = 0;; shift += 7) {
      if (pos >= b.size() || shift > 28) return false;
      const uint8_t c = static_cast<uint8_t>(b[pos++]);
      size |= static_cast<uint64_t>(c & 0x7f) << shift;
      if (!(c & 0x80)) break;
    }
    if (size > b.size() - pos) return false;
    pos += size;
    ids->push_back(static_cast<char>(id));
  }
  return true;
}

void check(std::string_view bytes, const wasm::ScanCaps& caps) {
  auto r = wasm::scanModule(bytes, caps);
  if (!r) {
    const std::string m = r.error().message();
    PROPERTY(!m.empty() && noControlBytes(m), m);
    return;
  }
  const wasm::ModuleInfo& info = *r;
  PROPERTY(bytes.size() <= caps.module_bytes, "a module over the size cap was accepted");
  PROPERTY(info.functions <= caps.functions, std::to_string(info.functions));
  PROPERTY(info.largest_function_bytes <= caps.function_bytes, std::to_string(info.largest_function_bytes));
  PROPERTY(info.memory.has_value(), "accepted without a memory");
  for (const std::string& imp : info.imports) {
    const size_t dot = imp.find('.');
    PROPERTY(dot != std::string::npos, imp);
    const std::string_view module = std::string_view(imp).substr(0, dot), name = std::string_view(imp).substr(dot + 1);
    PROPERTY(refIdentifier(module) && refIdentifier(name), imp);
    PROPERTY(wasm::importSignature(module, name) != nullptr, imp);
  }
  bool start = false, memory = false;
  for (const std::string& e : info.exports) {
    PROPERTY(refIdentifier(e), e);
    start = start || e == "_start";
    memory = memory || e == "memory";
  }
  PROPERTY(start && memory, "accepted without _start or memory exported");
  // What wasm2c gets: the magic and version, no custom section, no more bytes than given.
  const std::string& s = info.stripped;
  PROPERTY(s.size() <= bytes.size() && s.substr(0, 8) == bytes.substr(0, 8), "stripped bytes");
  std::string ids;
  PROPERTY(sectionIds(s, &ids), "the stripped module's framing does not parse");
  PROPERTY(ids.find('\0') == std::string::npos, "a custom section survived the strip");
  // Stripping is idempotent and changes nothing the scan decided.
  auto again = wasm::scanModule(s, caps);
  PROPERTY(again.ok(), "the stripped module is refused: " + again.error().message());
  PROPERTY(again->stripped == s, "stripping twice changed the bytes");
  PROPERTY(again->imports == info.imports && again->exports == info.exports && again->functions == info.functions,
           "the stripped module scans differently");
}

}  // namespace
}  // namespace corral::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  corral::fuzz::check(bytes, {});
  // Tight caps, so that the cap paths are reached by small inputs too.
  corral::fuzz::check(bytes, {.module_bytes = 4096, .functions = 8, .function_bytes = 64, .table_elements = 16});
  return 0;
}
