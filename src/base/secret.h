// SPDX-License-Identifier: Apache-2.0
// Secret: a string that cannot be printed, logged or serialised by accident.
#pragma once

#include <string>
#include <string_view>

namespace corral {

class Secret {  // no operator<<, no formatter, no implicit conversion
 public:
  explicit Secret(std::string value) : value_(std::move(value)) {}
  Secret(const Secret&) = delete;
  Secret& operator=(const Secret&) = delete;
  Secret(Secret&&) = default;
  Secret& operator=(Secret&&) = default;
  ~Secret() { wipe(); }
  // grep-able: every call site is a place the secret leaves corral on purpose.
  std::string_view revealForInjection() const { return value_; }
  size_t size() const { return value_.size(); }

 private:
  void wipe() {
    volatile char* p = value_.data();
    for (size_t i = 0; i < value_.size(); ++i) p[i] = 0;
  }
  std::string value_;
};

}  // namespace corral
