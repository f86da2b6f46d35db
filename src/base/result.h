// SPDX-License-Identifier: Apache-2.0
// Result<T>: a value or an Error, shaped like std::expected so C++23 can replace it.
#pragma once

#include <cerrno>
#include <string>
#include <utility>
#include <variant>

namespace corral {

// Errc values sit above any errno so one int field can carry both.
enum class Errc : int {
  kInvalidArgument = 10000,  // bad input from the user or a model
  kUnsupported,              // a host facility corral needs is missing
  kRefused,                  // policy said no
  kLimit,                    // a size or budget ceiling was hit
  kIo,                       // short read/write, protocol error with a peer
};

class Error {
 public:
  Error(int code, std::string context) : code_(code), context_(std::move(context)) {}
  Error(Errc code, std::string context) : code_(static_cast<int>(code)), context_(std::move(context)) {}

  int code() const { return code_; }
  bool isErrno() const { return code_ > 0 && code_ < 10000; }
  // The one-line message: "context: strerror" for errno codes, the context alone otherwise.
  std::string message() const;
  const std::string& context() const { return context_; }
  // Prefixes the context ("--workspace /x" + "open: ENOENT").
  Error wrap(std::string_view outer) const;

 private:
  int code_;
  std::string context_;
};

// Captures errno at the call site; call it on the line after the failing syscall.
Error sysError(std::string context, int err = errno);

template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}  // NOLINT: implicit by design, like std::expected
  Result(Error error) : v_(std::move(error)) {}  // NOLINT

  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }
  T& value() & { return std::get<0>(v_); }
  const T& value() const& { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  const Error& error() const { return std::get<1>(v_); }

 private:
  std::variant<T, Error> v_;
};

template <>
class [[nodiscard]] Result<void> {
 public:
  Result() = default;
  Result(Error error) : err_(std::move(error)), ok_(false) {}  // NOLINT

  bool ok() const { return ok_; }
  explicit operator bool() const { return ok_; }
  const Error& error() const { return err_; }

 private:
  Error err_{0, ""};
  bool ok_ = true;
};

}  // namespace corral

#define CORRAL_CONCAT_INNER(a, b) a##b
#define CORRAL_CONCAT(a, b) CORRAL_CONCAT_INNER(a, b)
#define RETURN_IF_ERROR(expr)                                  \
  do {                                                         \
    if (auto corral_r_ = (expr); !corral_r_.ok()) return corral_r_.error(); \
  } while (0)
// ASSIGN_OR_RETURN(auto x, f()): binds the value or returns the error.
#define ASSIGN_OR_RETURN(decl, expr)                                          \
  auto CORRAL_CONCAT(corral_a_, __LINE__) = (expr);                           \
  if (!CORRAL_CONCAT(corral_a_, __LINE__).ok())                               \
    return CORRAL_CONCAT(corral_a_, __LINE__).error();                        \
  decl = std::move(CORRAL_CONCAT(corral_a_, __LINE__)).value()  // NOLINT(bugprone-macro-parentheses): decl is a declaration
