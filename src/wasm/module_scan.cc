// SPDX-License-Identifier: Apache-2.0
// The first look at an untrusted .wasm: caps, the import/export whitelist, custom sections
// dropped. Full validation is wasm2c's; this pass decides only what wasm2c may see.
#include "wasm/module_scan.h"

#include <string>

#include "wasm/wasi_imports.h"

namespace corral::wasm {
namespace {

enum Section : uint8_t { kCustom = 0, kType = 1, kImport = 2, kFunction = 3, kTable = 4, kMemory = 5,
                         kGlobal = 6, kExport = 7, kStart = 8, kElement = 9, kCode = 10, kData = 11,
                         kDataCount = 12 };

Error bad(const std::string& what) { return Error(Errc::kInvalidArgument, "malformed module: " + what); }
Error refused(const std::string& what) { return Error(Errc::kRefused, "module refused: " + what); }
Error capped(const std::string& what) { return Error(Errc::kLimit, "module refused: " + what); }

// A bounds-checked cursor over one section's bytes.
class Reader {
 public:
  explicit Reader(std::string_view b) : b_(b) {}
  bool done() const { return pos_ == b_.size(); }
  size_t pos() const { return pos_; }
  Result<uint8_t> byte() {
    if (pos_ >= b_.size()) return bad("unexpected end");
    return static_cast<uint8_t>(b_[pos_++]);
  }
  // Unsigned LEB128 of at most 32 bits: five bytes, the last carrying no more than 4 bits.
  Result<uint32_t> u32() {
    uint32_t v = 0;
    for (int shift = 0; shift < 35; shift += 7) {
      ASSIGN_OR_RETURN(uint8_t c, byte());
      if (shift == 28 && (c & 0xf0) != 0) return bad("integer too large");
      v |= static_cast<uint32_t>(c & 0x7f) << shift;
      if ((c & 0x80) == 0) return v;
    }
    return bad("integer too long");
  }
  Result<std::string_view> bytes(uint32_t n) {
    if (n > b_.size() - pos_) return bad("length past the end");
    std::string_view s = b_.substr(pos_, n);
    pos_ += n;
    return s;
  }
  Result<std::string_view> name() {
    ASSIGN_OR_RETURN(uint32_t n, u32());
    return bytes(n);
  }

 private:
  std::string_view b_;
  size_t pos_ = 0;
};

// The one shape a name may have before wasm2c pastes it into C: an identifier. wabt 1.0.32
// writes names into comments and string literals unescaped, so "*/" or a newline in a name
// is C the host compiles and runs at dlopen.
bool isIdentifier(std::string_view s) {
  if (s.empty() || s.size() > 64) return false;
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    const bool alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
    if (!alpha && !(i > 0 && c >= '0' && c <= '9')) return false;
  }
  return true;
}

struct Limits {
  uint32_t min = 0;
  std::optional<uint32_t> max;
};

Result<Limits> readLimits(Reader& r, const char* what) {
  ASSIGN_OR_RETURN(uint8_t flags, r.byte());
  // 0x02/0x03 are shared (threads), 0x04+ memory64: neither is enabled for wasm2c here.
  if (flags > 1) return refused(std::string(what) + " limits flag " + std::to_string(flags) + " (shared or 64-bit) is not supported");
  Limits l;
  ASSIGN_OR_RETURN(l.min, r.u32());
  if (flags == 1) {
    ASSIGN_OR_RETURN(uint32_t max, r.u32());
    if (max < l.min) return bad(std::string(what) + " maximum below its minimum");
    l.max = max;
  }
  return l;
}

Result<std::string> valueLetter(uint8_t t) {
  switch (t) {
    case 0x7f: return std::string("i");
    case 0x7e: return std::string("I");
    case 0x7d: return std::string("f");
    case 0x7c: return std::string("F");
    case 0x7b: return std::string("v");
    case 0x70: return std::string("r");
    case 0x6f: return std::string("x");
    default: return bad("unknown value type");
  }
}

Result<std::vector<std::string>> readTypes(Reader& r) {
  ASSIGN_OR_RETURN(uint32_t n, r.u32());
  std::vector<std::string> types;
  for (uint32_t i = 0; i < n; ++i) {
    ASSIGN_OR_RETURN(uint8_t form, r.byte());
    if (form != 0x60) return bad("type " + std::to_string(i) + " is not a function type");
    std::string sig;
    for (int half = 0; half < 2; ++half) {
      ASSIGN_OR_RETURN(uint32_t count, r.u32());
      for (uint32_t k = 0; k < count; ++k) {
        ASSIGN_OR_RETURN(uint8_t t, r.byte());
        ASSIGN_OR_RETURN(std::string letter, valueLetter(t));
        sig += letter;
        if (sig.size() > 1000) return bad("function type too long");
      }
      if (half == 0) sig += ':';
    }
    types.push_back(std::move(sig));
  }
  return types;
}

struct Scan {
  const ScanCaps& caps;
  ModuleInfo info;
  std::vector<std::string> types;
  uint32_t defined_functions = 0;
  bool saw_function_section = false;
  uint32_t memories = 0;
  std::vector<uint32_t> func_types;  // the type of every function, imported ones first
  bool start_ok = false, memory_ok = false;
};

Result<void> readImports(Reader& r, Scan& s) {
  ASSIGN_OR_RETURN(uint32_t n, r.u32());
  for (uint32_t i = 0; i < n; ++i) {
    ASSIGN_OR_RETURN(std::string_view module, r.name());
    ASSIGN_OR_RETURN(std::string_view name, r.name());
    const std::string shown = printableName(module) + "." + printableName(name);
    if (!isIdentifier(module) || !isIdentifier(name))
      return refused("import " + shown + ": names must be identifiers ([A-Za-z_][A-Za-z0-9_]*, at most 64 bytes)");
    ASSIGN_OR_RETURN(uint8_t kind, r.byte());
    if (kind != 0) return refused("import " + shown + ": only functions may be imported (memory, tables and globals are the module's own)");
    ASSIGN_OR_RETURN(uint32_t type, r.u32());
    if (type >= s.types.size()) return bad("import " + shown + " names a type that does not exist");
    const char* want = importSignature(module, name);
    if (!want) return refused("import " + shown + " is not provided by corral (docs/wasm-abi.md lists what is)");
    if (s.types[type] != want)
      return refused("import " + shown + " has signature " + s.types[type] + ", corral provides " + want);
    s.info.imports.push_back(std::string(module) + "." + std::string(name));
    s.func_types.push_back(type);
    if (++s.info.functions > s.caps.functions) return capped("more than " + std::to_string(s.caps.functions) + " functions");
  }
  return {};
}

Result<void> readTables(Reader& r, const Scan& s) {
  ASSIGN_OR_RETURN(uint32_t n, r.u32());
  for (uint32_t i = 0; i < n; ++i) {
    ASSIGN_OR_RETURN(uint8_t ref, r.byte());
    if (ref != 0x70 && ref != 0x6f) return bad("table of an unknown type");
    ASSIGN_OR_RETURN(Limits l, readLimits(r, "table"));
    if (l.min > s.caps.table_elements)
      return capped("a table of " + std::to_string(l.min) + " elements (the cap is " + std::to_string(s.caps.table_elements) + ")");
  }
  return {};
}

Result<void> readMemories(Reader& r, Scan& s) {
  ASSIGN_OR_RETURN(uint32_t n, r.u32());
  for (uint32_t i = 0; i < n; ++i) {
    ASSIGN_OR_RETURN(Limits l, readLimits(r, "memory"));
    if (++s.memories > 1) return refused("more than one memory");
    if (l.min > 65536 || (l.max && *l.max > 65536)) return bad("memory larger than 4 GiB");
    s.info.memory = MemoryDecl{l.min, l.max};
  }
  return {};
}

Result<void> readExports(Reader& r, Scan& s) {
  ASSIGN_OR_RETURN(uint32_t n, r.u32());
  for (uint32_t i = 0; i < n; ++i) {
    ASSIGN_OR_RETURN(std::string_view name, r.name());
    if (!isIdentifier(name))
      return refused("export " + printableName(name) + ": names must be identifiers ([A-Za-z_][A-Za-z0-9_]*, at most 64 bytes)");
    ASSIGN_OR_RETURN(uint8_t kind, r.byte());
    if (kind > 3) return bad("export of an unknown kind");
    ASSIGN_OR_RETURN(uint32_t index, r.u32());
    // The host calls these two through fixed C signatures: their kinds and types must match.
    if (name == "_start")
      s.start_ok = kind == 0 && index < s.func_types.size() && s.types[s.func_types[index]] == ":";
    if (name == "memory") s.memory_ok = kind == 2 && index == 0 && s.memories == 1;
    s.info.exports.emplace_back(name);
  }
  return {};
}

Result<void> readCode(Reader& r, Scan& s) {
  ASSIGN_OR_RETURN(uint32_t n, r.u32());
  if (n != s.defined_functions) return bad("code and function sections disagree");
  for (uint32_t i = 0; i < n; ++i) {
    ASSIGN_OR_RETURN(uint32_t size, r.u32());
    if (size > s.caps.function_bytes)
      return capped("function " + std::to_string(i) + " is " + std::to_string(size) + " bytes (the cap is " +
                    std::to_string(s.caps.function_bytes) + "; one huge function is a compile bomb)");
    if (size > s.info.largest_function_bytes) s.info.largest_function_bytes = size;
    RETURN_IF_ERROR(r.bytes(size));
  }
  return {};
}

Result<void> readSection(uint8_t id, std::string_view body, Scan& s) {
  Reader r(body);
  switch (id) {
    case kType: {
      ASSIGN_OR_RETURN(s.types, readTypes(r));
      break;
    }
    case kImport: RETURN_IF_ERROR(readImports(r, s)); break;
    case kFunction: {
      ASSIGN_OR_RETURN(s.defined_functions, r.u32());
      s.saw_function_section = true;
      if (s.defined_functions > s.caps.functions || s.info.functions + s.defined_functions > s.caps.functions)
        return capped("more than " + std::to_string(s.caps.functions) + " functions");
      s.info.functions += s.defined_functions;
      for (uint32_t i = 0; i < s.defined_functions; ++i) {
        ASSIGN_OR_RETURN(uint32_t t, r.u32());
        if (t >= s.types.size()) return bad("a function names a type that does not exist");
        s.func_types.push_back(t);
      }
      break;
    }
    case kTable: RETURN_IF_ERROR(readTables(r, s)); break;
    case kMemory: RETURN_IF_ERROR(readMemories(r, s)); break;
    case kExport: RETURN_IF_ERROR(readExports(r, s)); break;
    case kCode: RETURN_IF_ERROR(readCode(r, s)); break;
    default: return {};  // globals, start, elements, data: wasm2c validates them
  }
  if (!r.done()) return bad("section " + std::to_string(id) + " has trailing bytes");
  return {};
}

}  // namespace

std::string printableName(std::string_view name) {
  std::string out = "'";
  for (char c : name.substr(0, 64)) out += (c >= 0x20 && c < 0x7f && c != '\'' && c != '\\') ? c : '?';
  if (name.size() > 64) out += "...";
  return out + "'";
}

Result<ModuleInfo> scanModule(std::string_view bytes, const ScanCaps& caps) {
  if (bytes.size() > caps.module_bytes)
    return capped("module is " + std::to_string(bytes.size()) + " bytes (the cap is " + std::to_string(caps.module_bytes) + ")");
  if (bytes.size() < 8 || bytes.substr(0, 4) != std::string_view("\0asm", 4)) return bad("not a WebAssembly binary");
  if (bytes.substr(4, 4) != std::string_view("\1\0\0\0", 4)) return bad("not WebAssembly version 1");
  Scan s{caps, {}, {}, 0, false, 0};
  s.info.stripped.assign(bytes.substr(0, 8));
  Reader r(bytes.substr(8));
  int last = 0;
  while (!r.done()) {
    const size_t start = r.pos() + 8;
    ASSIGN_OR_RETURN(uint8_t id, r.byte());
    ASSIGN_OR_RETURN(uint32_t size, r.u32());
    ASSIGN_OR_RETURN(std::string_view body, r.bytes(size));
    if (id == kCustom) continue;
    if (id > kDataCount) return bad("unknown section " + std::to_string(id));
    // Wasm orders its sections, data count sitting between import-ish ones and code.
    const int order = id == kDataCount ? 95 : id * 10;
    if (order <= last) return bad("section " + std::to_string(id) + " out of order or repeated");
    last = order;
    RETURN_IF_ERROR(readSection(id, body, s));
    s.info.stripped.append(bytes.substr(start, 8 + r.pos() - start));
  }
  if (s.defined_functions > 0 && last < kCode * 10) return bad("functions declared without code");
  if (!s.start_ok) return refused("no '_start' export of type () -> () (corral runs WASI commands)");
  if (!s.memory_ok) return refused("no exported memory named 'memory' (WASI needs one)");
  return std::move(s.info);
}

}  // namespace corral::wasm
