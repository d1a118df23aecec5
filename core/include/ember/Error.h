// Error and Expected<T>: errors are values at every API boundary.
//
// An Error carries a one-line message with its context (file, node, op, config
// key). Internal invariants use assert(); users only ever see an Error.
#pragma once

#include <cassert>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <variant>

namespace ember {

/// A failure with a human-readable, one-line message. A default-constructed
/// Error means success.
class [[nodiscard]] Error {
 public:
  Error() = default;
  static Error success() { return Error(); }
  static Error make(std::string message) {
    Error e;
    e.message_ = std::make_shared<std::string>(std::move(message));
    return e;
  }

  explicit operator bool() const { return message_ != nullptr; }
  const std::string& message() const {
    static const std::string kEmpty;
    return message_ ? *message_ : kEmpty;
  }

  /// Prepends context ("while importing node 'conv1'") to the message.
  Error withContext(const std::string& context) const {
    if (!message_) return *this;
    return make(context + ": " + *message_);
  }

 private:
  std::shared_ptr<std::string> message_;
};

/// Builds an Error from streamable parts: makeError("node '", name, "': bad rank").
template <typename... Parts>
Error makeError(Parts&&... parts);

/// Either a T or an Error.
template <typename T>
class [[nodiscard]] Expected {
 public:
  Expected(T value) : storage_(std::move(value)) {}
  Expected(Error error) : storage_(std::move(error)) { assert(std::get<Error>(storage_) && "Expected built from success"); }

  explicit operator bool() const { return std::holds_alternative<T>(storage_); }
  bool hasValue() const { return std::holds_alternative<T>(storage_); }

  T& operator*() { return std::get<T>(storage_); }
  const T& operator*() const { return std::get<T>(storage_); }
  T* operator->() { return &std::get<T>(storage_); }
  const T* operator->() const { return &std::get<T>(storage_); }
  T take() { return std::move(std::get<T>(storage_)); }

  Error error() const { return hasValue() ? Error::success() : std::get<Error>(storage_); }

 private:
  std::variant<T, Error> storage_;
};

}  // namespace ember

#include <sstream>

namespace ember {
template <typename... Parts>
Error makeError(Parts&&... parts) {
  std::ostringstream os;
  (os << ... << std::forward<Parts>(parts));
  return Error::make(os.str());
}
}  // namespace ember

/// Returns from the enclosing function when `expr` (an Error) is a failure.
#define EMBER_RETURN_IF_ERROR(expr)        \
  do {                                     \
    if (::ember::Error ember_err_ = (expr)) \
      return ember_err_;                   \
  } while (0)

#define EMBER_CONCAT_IMPL(a, b) a##b
#define EMBER_CONCAT(a, b) EMBER_CONCAT_IMPL(a, b)
#define EMBER_ASSIGN_OR_RETURN_IMPL(tmp, decl, expr) \
  auto tmp = (expr);                                 \
  if (!tmp) return tmp.error();                      \
  decl = tmp.take()

/// Assigns an Expected's value to `decl` (a declaration such as `Dims dims`
/// or an existing variable), returning its Error on failure.
#define EMBER_ASSIGN_OR_RETURN(decl, expr) \
  EMBER_ASSIGN_OR_RETURN_IMPL(EMBER_CONCAT(ember_expected_, __LINE__), decl, expr)
