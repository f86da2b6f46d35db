// SPDX-License-Identifier: Apache-2.0
// corral_http v1 imports (docs/wasm-abi.md, "HTTP"): a small handle table over HttpExchange,
// with every pointer and length the guest passes checked against its linear memory.
#include "wasm/guest/http_host.h"

#include <memory>
#include <string>
#include <vector>

#include "wasm/guest/http_exchange.h"
#include "wasm/guest/wasi_host.h"

#define CORRAL_HTTP(result, name) extern "C" result Z_corral_httpZ_##name

namespace corral::wasm::guest {

HttpConfig& httpConfig() {
  static HttpConfig config;
  return config;
}

}  // namespace corral::wasm::guest

using namespace corral::wasm::guest;  // NOLINT(google-build-using-namespace): the C entry points below
using HttpInstance = Z_corral_http_instance_t;

namespace {

// Open exchanges are few: each holds a connection and up to a response head of memory.
constexpr size_t kMaxOpen = 16;

std::vector<std::unique_ptr<HttpExchange>>& exchanges() {
  static std::vector<std::unique_ptr<HttpExchange>> table(kMaxOpen);
  return table;
}

// Handles are 1-based: 0 is never valid, so an uninitialised handle is caught.
HttpExchange* exchange(uint32_t handle) {
  auto& t = exchanges();
  if (handle == 0 || handle > t.size()) return nullptr;
  return t[handle - 1].get();
}

bool guestString(uint32_t ptr, uint32_t len, uint32_t max, std::string* out) {
  if (len > max) return false;
  const uint8_t* p = guestBytes(ptr, len);
  if (!p) return false;
  out->assign(reinterpret_cast<const char*>(p), len);
  return true;
}

}  // namespace

CORRAL_HTTP(uint32_t, request_open)(HttpInstance*, uint32_t method, uint32_t method_len, uint32_t url, uint32_t url_len,
                                    uint32_t headers, uint32_t headers_len, uint32_t lease, uint32_t lease_len,
                                    uint64_t body_len, uint32_t handle_ptr) {
  HttpRequest req;
  if (!guestString(method, method_len, 64, &req.method) || !guestString(url, url_len, 16384, &req.url) ||
      !guestString(headers, headers_len, 1u << 20, &req.headers) || !guestString(lease, lease_len, 64, &req.lease) ||
      !guestBytes(handle_ptr, 4))
    return method_len > 64 || url_len > 16384 || headers_len > (1u << 20) || lease_len > 64 ? kInval : kFault;
  req.body_len = static_cast<int64_t>(body_len);
  auto& t = exchanges();
  size_t slot = 0;
  while (slot < t.size() && t[slot]) ++slot;
  if (slot == t.size()) return kMfile;
  if (uint16_t e = HttpExchange::open(httpConfig(), req, &t[slot]); e != kOk) return e;
  (void)storeGuest<uint32_t>(handle_ptr, static_cast<uint32_t>(slot + 1));
  return kOk;
}

CORRAL_HTTP(uint32_t, request_write)(HttpInstance*, uint32_t handle, uint32_t buf, uint32_t len, uint32_t written_ptr) {
  HttpExchange* x = exchange(handle);
  if (!x) return kBadf;
  const uint8_t* p = guestBytes(buf, len);
  if (!p || !guestBytes(written_ptr, 4)) return kFault;
  if (uint16_t e = x->writeBody(p, len); e != kOk) return e;
  (void)storeGuest<uint32_t>(written_ptr, len);
  return kOk;
}

CORRAL_HTTP(uint32_t, response_open)(HttpInstance*, uint32_t handle, uint32_t status_ptr, uint32_t headers_len_ptr) {
  HttpExchange* x = exchange(handle);
  if (!x) return kBadf;
  if (!guestBytes(status_ptr, 4) || !guestBytes(headers_len_ptr, 4)) return kFault;
  const uint16_t e = x->openResponse();
  if (e != kOk && e != kNotcapable) return e;
  // A refusal is still a response: the guest may read the proxy's status, rule and line.
  (void)storeGuest<uint32_t>(status_ptr, static_cast<uint32_t>(x->status()));
  (void)storeGuest<uint32_t>(headers_len_ptr, static_cast<uint32_t>(x->responseHeaders().size()));
  return e;
}

CORRAL_HTTP(uint32_t, response_headers)(HttpInstance*, uint32_t handle, uint32_t buf, uint32_t len) {
  HttpExchange* x = exchange(handle);
  if (!x) return kBadf;
  if (!x->responseOpen()) return kInval;
  const std::string& h = x->responseHeaders();
  if (len < h.size()) return kInval;
  uint8_t* p = guestBytes(buf, h.size());
  if (!p) return kFault;
  std::copy(h.begin(), h.end(), p);
  return kOk;
}

CORRAL_HTTP(uint32_t, response_read)(HttpInstance*, uint32_t handle, uint32_t buf, uint32_t len, uint32_t read_ptr) {
  HttpExchange* x = exchange(handle);
  if (!x) return kBadf;
  uint8_t* p = guestBytes(buf, len);
  if (!p || !guestBytes(read_ptr, 4)) return kFault;
  size_t got = 0;
  if (uint16_t e = x->readBody(p, len, &got); e != kOk) return e;
  (void)storeGuest<uint32_t>(read_ptr, static_cast<uint32_t>(got));
  return kOk;
}

CORRAL_HTTP(uint32_t, close)(HttpInstance*, uint32_t handle) {
  if (!exchange(handle)) return kBadf;
  exchanges()[handle - 1].reset();
  return kOk;
}
