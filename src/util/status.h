// Status and Result<T>: errors as values; no exceptions cross our code.
//
// A Status is either OK (cheap: no allocation) or carries a code and a one-line message. The message already
// names where the error happened (`file:line:col: ...`, `shard 3 row 17: ...`) — callers prepend context with
// Status::WithContext, they never parse messages.
//
// Result<T> holds either a T or a non-OK Status; shaped like std::expected so that moving to C++23 is mechanical.
// Thread-safety: values; no shared state.
#pragma once

#include <cstdlib>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace mmirage {

class [[nodiscard]] Status {
 public:
  enum class Code { kOk = 0, kInvalidArgument, kNotFound, kIOError, kCorruption, kUnavailable, kInternal };

  Status() = default;  // OK
  static Status OK() { return Status(); }
  static Status InvalidArgument(std::string msg) { return Status(Code::kInvalidArgument, std::move(msg)); }
  static Status NotFound(std::string msg) { return Status(Code::kNotFound, std::move(msg)); }
  static Status IOError(std::string msg) { return Status(Code::kIOError, std::move(msg)); }
  static Status Corruption(std::string msg) { return Status(Code::kCorruption, std::move(msg)); }
  // Retryable: 429, 5xx, timeouts.
  static Status Unavailable(std::string msg) { return Status(Code::kUnavailable, std::move(msg)); }
  static Status Internal(std::string msg) { return Status(Code::kInternal, std::move(msg)); }

  bool ok() const { return code_ == Code::kOk; }
  Code code() const { return code_; }
  bool IsInvalidArgument() const { return code_ == Code::kInvalidArgument; }
  bool IsNotFound() const { return code_ == Code::kNotFound; }
  bool IsIOError() const { return code_ == Code::kIOError; }
  bool IsCorruption() const { return code_ == Code::kCorruption; }
  bool IsUnavailable() const { return code_ == Code::kUnavailable; }
  const std::string& message() const { return message_; }

  // "OK" or the message alone (the code is policy, not text for users).
  std::string ToString() const { return ok() ? std::string("OK") : message_; }

  // Same code, message "<prefix>: <message>". OK stays OK.
  Status WithContext(std::string_view prefix) const {
    if (ok()) return *this;
    std::string m(prefix);
    m += ": ";
    m += message_;
    return Status(code_, std::move(m));
  }

 private:
  Status(Code code, std::string msg) : code_(code), message_(std::move(msg)) {}
  Code code_ = Code::kOk;
  std::string message_;
};

template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}        // NOLINT: implicit like std::expected
  Result(Status status) : v_(std::move(status)) {  // NOLINT
    if (std::get<Status>(v_).ok()) std::abort();   // programmer error: an OK status carries no value
  }

  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }
  // REQUIRES: ok().
  T& value() & { return std::get<0>(v_); }
  const T& value() const& { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  // OK when holding a value.
  Status status() const { return ok() ? Status::OK() : std::get<1>(v_); }

 private:
  std::variant<T, Status> v_;
};

}  // namespace mmirage

// Early return on error. MMIRAGE_TRY(s) for Status, MMIRAGE_ASSIGN_OR_RETURN(lhs, expr) for Result.
#define MMIRAGE_TRY(expr)           \
  do {                              \
    ::mmirage::Status _st = (expr); \
    if (!_st.ok()) return _st;      \
  } while (0)

#define MMIRAGE_CONCAT_INNER(a, b) a##b
#define MMIRAGE_CONCAT(a, b) MMIRAGE_CONCAT_INNER(a, b)
#define MMIRAGE_ASSIGN_OR_RETURN(lhs, expr)                                                   \
  auto MMIRAGE_CONCAT(_res_, __LINE__) = (expr);                                              \
  if (!MMIRAGE_CONCAT(_res_, __LINE__).ok()) return MMIRAGE_CONCAT(_res_, __LINE__).status(); \
  lhs = std::move(MMIRAGE_CONCAT(_res_, __LINE__)).value()

// Programmer errors only, never data.
#define MMIRAGE_CHECK(cond)                                                       \
  do {                                                                            \
    if (!(cond)) { ::mmirage::internal::CheckFailed(#cond, __FILE__, __LINE__); } \
  } while (0)

namespace mmirage::internal {
[[noreturn]] void CheckFailed(const char* cond, const char* file, int line);
}  // namespace mmirage::internal
