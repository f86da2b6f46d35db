// SPDX-License-Identifier: Apache-2.0
// Error formatting.
#include "base/result.h"

#include <cstring>

namespace corral {

std::string Error::message() const {
  if (!isErrno()) return context_;
  std::string s = context_;
  if (!s.empty()) s += ": ";
  s += std::strerror(code_);
  return s;
}

Error Error::wrap(std::string_view outer) const {
  std::string s(outer);
  if (!context_.empty()) s += ": " + context_;
  return Error(code_, std::move(s));
}

Error sysError(std::string context, int err) { return Error(err, std::move(context)); }

}  // namespace corral
