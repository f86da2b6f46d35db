// SPDX-License-Identifier: Apache-2.0
// Fuzzes the ClientHello SNI reader: no read past the input, and a prefix never reaches a
// verdict other than the whole input's.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "check.h"
#include "net/tls_sni.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using corral::net::SniStatus;
  if (size < 2 || size > 96 * 1024) return 0;
  // A heap copy of exactly the input: ASan catches any read past it.
  std::string bytes(reinterpret_cast<const char*>(data) + 2, size - 2);
  auto whole = corral::net::parseClientHelloSni(bytes);
  if (whole.status == SniStatus::kFound) PROPERTY(!whole.host.empty(), std::string("empty host"));
  if (whole.status == SniStatus::kMalformed) PROPERTY(corral::fuzz::noControlBytes(whole.reason) && !whole.reason.empty(), whole.reason);
  if (whole.status == SniStatus::kNeedMore || bytes.empty()) return 0;
  size_t cut = ((static_cast<size_t>(data[0]) << 8) | data[1]) % bytes.size();
  auto part = corral::net::parseClientHelloSni(std::string(bytes.substr(0, cut)));
  PROPERTY(part.status == SniStatus::kNeedMore || (part.status == whole.status && part.host == whole.host),
           "prefix of " + std::to_string(cut) + " bytes decided differently");
  return 0;
}
