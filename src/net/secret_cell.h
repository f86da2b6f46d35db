// SPDX-License-Identifier: Apache-2.0
// A lease's value that a rotation replaces while requests read it: each reader takes a
// snapshot (the value it injects stays whole), and once the cell is replaced no new request
// can get the old one; the old Secret wipes itself when its last reader lets go.
#pragma once

#include <memory>
#include <mutex>

#include "base/secret.h"

namespace corral::net {

class SecretCell {
 public:
  explicit SecretCell(Secret value) : value_(std::make_shared<const Secret>(std::move(value))) {}
  std::shared_ptr<const Secret> current() const {
    std::lock_guard lock(mu_);
    return value_;
  }
  void replace(Secret value) {
    auto next = std::make_shared<const Secret>(std::move(value));
    std::lock_guard lock(mu_);
    value_.swap(next);
  }

 private:
  mutable std::mutex mu_;
  std::shared_ptr<const Secret> value_;
};

}  // namespace corral::net
