// SPDX-License-Identifier: Apache-2.0
// Errors that carry an HTTP status, and the status of any Error: pure, shared with fuzz/.
#include "market/market.h"

namespace corral::market {

Error statusError(int http_status, std::string message) { return Error(20000 + http_status, std::move(message)); }

int httpStatus(const Error& e) {
  if (e.code() >= 20400 && e.code() < 20600) return e.code() - 20000;
  switch (e.code()) {
    case static_cast<int>(Errc::kInvalidArgument): return 400;
    case static_cast<int>(Errc::kRefused): return 403;
    case static_cast<int>(Errc::kLimit): return 429;
    default: return 500;
  }
}

}  // namespace corral::market
