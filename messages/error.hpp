// The project's error value. Every adapter reports failures as an `error` whose class tells the
// pipeline what to do: retry later (transient), give up now (permanent), or stop without side
// effects because another worker owns the ingestion now (claim_lost).
#pragma once

#include <cstdint>
#include <exception>
#include <string>
#include <string_view>

#include <caf/meta/type_name.hpp>

namespace ingestd {

enum class error_class : uint8_t {
  /// Worth retrying: 429, 5xx, timeouts, connection loss, unparsable LLM output.
  transient,
  /// Retrying cannot help: 401/403, corrupt or unsupported file, provider limits, missing object.
  permanent,
  /// A fenced write matched no row: the claim belongs to someone else now.
  claim_lost,
};

/// "transient", "permanent" or "claim_lost" (the spelling stored in ingestion.error_class).
std::string_view to_string(error_class x);

/// The longest server-requested wait (Retry-After) that an error carries: 12 hours, the longest
/// visibility timeout SQS accepts for the back-off. A larger value is clamped to it, so that no
/// arithmetic on a wait can overflow.
inline constexpr int64_t max_retry_after_ms = int64_t{12} * 60 * 60 * 1000;

struct error {
  error_class cls = error_class::transient;
  /// A short machine-readable code, e.g. "http_429", "s3.NoSuchKey", "pg.57P01",
  /// "ocr.corrupt_file".
  std::string code;
  /// A human-readable explanation; never contains a secret.
  std::string message;
  /// Server-requested wait before retrying, in milliseconds; negative when none was given, at most
  /// max_retry_after_ms.
  int64_t retry_after_ms = -1;

  bool transient() const { return cls == error_class::transient; }
  bool permanent() const { return cls == error_class::permanent; }
  bool claim_lost() const { return cls == error_class::claim_lost; }

  /// "code: message" for logs and the ingestion's last_error column.
  std::string describe() const;

  static error make_transient(std::string_view code, std::string message) {
    return error{error_class::transient, std::string{code}, std::move(message)};
  }
  static error make_permanent(std::string_view code, std::string message) {
    return error{error_class::permanent, std::string{code}, std::move(message)};
  }
  static error make_claim_lost(std::string message) {
    return error{error_class::claim_lost, "claim_lost", std::move(message)};
  }
};

/// What an exception says: its what(), or that it was of no standard type.
std::string exception_text(const std::exception_ptr& eptr);

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, error& x) {
  auto cls = static_cast<uint8_t>(x.cls);
  auto result = f(caf::meta::type_name("error"), cls, x.code, x.message, x.retry_after_ms);
  x.cls = static_cast<error_class>(cls);
  return result;
}

} // namespace ingestd
