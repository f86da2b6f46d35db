// SPDX-License-Identifier: Apache-2.0
// Property checks for the fuzz targets: a failed one prints the property and aborts.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

namespace corral::fuzz {

// Aborts (libFuzzer then saves the input as a crash-* artifact) with the property that broke
// and the offending text, escaped so the report itself stays readable.
[[noreturn]] inline void fail(const char* file, int line, const char* property, std::string_view detail) {
  std::string shown;
  for (char c : detail.substr(0, 400)) {
    auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u >= 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", u);
      shown += buf;
    } else {
      shown += c;
    }
  }
  std::fprintf(stderr, "\n%s:%d: PROPERTY VIOLATED: %s\n  detail: %s\n", file, line, property, shown.c_str());
  std::abort();
}

// The reference splitter of the path properties: every '/'-separated component, empty ones
// included ("a//b/" gives a, "", b, ""). Written here, not taken from src/policy, so that the
// fuzz targets check the subject against an independent reading.
inline std::vector<std::string_view> refSplit(std::string_view p) {
  std::vector<std::string_view> parts;
  size_t start = 0;
  while (true) {
    size_t slash = p.find('/', start);
    parts.push_back(p.substr(start, slash == std::string_view::npos ? std::string_view::npos : slash - start));
    if (slash == std::string_view::npos) return parts;
    start = slash + 1;
  }
}

// True when s holds no byte below 0x20 and no DEL: what an error message, which goes to a
// one-line log field or a terminal, must satisfy (printable() escapes all of them).
inline bool noControlBytes(std::string_view s) {
  for (char c : s) {
    auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7f) return false;
  }
  return true;
}

// Feed sizes that add up to total, from 0 to max_chunk - 1 each (0 included: empty feeds
// must be harmless), derived from seed: streaming parsers must give the one-feed result.
inline std::vector<size_t> chunking(uint32_t seed, size_t total, size_t max_chunk) {
  std::vector<size_t> sizes;
  uint32_t x = seed * 2654435761u + 1;
  for (size_t done = 0; done < total;) {
    x = x * 1103515245u + 12345u;
    size_t n = std::min<size_t>(total - done, (x >> 16) % max_chunk);
    sizes.push_back(n);
    done += n;
  }
  return sizes;
}

}  // namespace corral::fuzz

// PROPERTY(cond, detail): cond must hold for every input; detail names what was seen.
#define PROPERTY(cond, detail)                                                      \
  do {                                                                              \
    if (!(cond)) ::corral::fuzz::fail(__FILE__, __LINE__, #cond, (detail));         \
  } while (0)

// An Error's message must be one line with no control bytes: it is echoed to logs and
// terminals, and hostile input in it must not forge a second line.
#define PROPERTY_ONE_LINE_ERROR(result)                                             \
  do {                                                                              \
    if (!(result).ok()) {                                                           \
      const std::string corral_m_ = (result).error().message();                     \
      PROPERTY(::corral::fuzz::noControlBytes(corral_m_), corral_m_);               \
      PROPERTY(!corral_m_.empty(), std::string("empty error message"));             \
    }                                                                               \
  } while (0)
