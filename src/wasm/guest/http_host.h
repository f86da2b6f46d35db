// SPDX-License-Identifier: Apache-2.0
// corral_http v1, the host half (docs/wasm-abi.md, "HTTP"): every request the guest makes is
// an HTTP/1.1 request to corral's egress proxy, which decides it. This process holds no grant,
// no secret and no route out: the sandbox has loopback only, and the proxy is all there is.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace corral::wasm::guest {

struct HttpLease {
  std::string name;    // the --credential name: requests go to /lease/NAME/... (broker mode)
  std::string origin;  // its canonical "scheme://host:port", the only origin the name serves
};

struct HttpConfig {
  uint16_t proxy_port = 0;  // where the sandbox's init accepts proxy connections; 0: no proxy
  std::vector<HttpLease> leases;
  std::string ca_file;  // CAs for https:// without a lease; "": the system's
};

HttpConfig& httpConfig();

}  // namespace corral::wasm::guest

// The import instance wasm2c passes to every corral_http function: a tag, as for WASI.
struct Z_corral_http_instance_t {
  int unused;
};
