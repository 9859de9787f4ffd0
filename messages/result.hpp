// result<T>: a value or an ingestd::error, returned by every adapter at its boundary, and the
// callback type of the asynchronous ports.
#pragma once

#include <cassert>
#include <functional>
#include <utility>
#include <variant>

#include "messages/error.hpp"

namespace ingestd {

// clang-tidy's bugprone-exception-escape finds std::variant's bad_variant_access throw in the
// implicit noexcept operator=: only a valueless variant takes it, impossible with a noexcept move.
template <class T>
class [[nodiscard]] result { // NOLINT(bugprone-exception-escape)
public:
  result(T value) : data_(std::in_place_index<0>, std::move(value)) {}
  result(ingestd::error err) : data_(std::in_place_index<1>, std::move(err)) {}

  bool ok() const { return data_.index() == 0; }
  explicit operator bool() const { return ok(); }

  T& value() & {
    assert(ok());
    return std::get<0>(data_);
  }
  const T& value() const& {
    assert(ok());
    return std::get<0>(data_);
  }
  T&& value() && {
    assert(ok());
    return std::get<0>(std::move(data_));
  }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

  const ingestd::error& error() const {
    assert(!ok());
    return std::get<1>(data_);
  }
  ingestd::error& error() {
    assert(!ok());
    return std::get<1>(data_);
  }

private:
  std::variant<T, ingestd::error> data_;
};

/// The success value of a result<void>.
struct unit {};

template <>
class [[nodiscard]] result<void> {
public:
  result() = default;
  result(unit) {}
  result(ingestd::error err) : err_(std::move(err)), failed_(true) {}

  bool ok() const { return !failed_; }
  explicit operator bool() const { return ok(); }
  const ingestd::error& error() const {
    assert(failed_);
    return err_;
  }
  ingestd::error& error() {
    assert(failed_);
    return err_;
  }

private:
  ingestd::error err_;
  bool failed_ = false;
};

/// Completion handler of an asynchronous port call. Ports call it exactly once, from any thread
/// (the HTTP engine thread, a database thread): keep it short and thread-safe, e.g. send a
/// message to an actor.
template <class T>
using callback = std::function<void(result<T>)>;

} // namespace ingestd
