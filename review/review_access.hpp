// Who may use the review desk and for which tenants: the tokens of INGESTD_REVIEW_TOKEN, the
// cookie sessions the login form opens, and each session's CSRF token.
#pragma once

#include <chrono>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "messages/result.hpp"
#include "messages/uuid.hpp"

namespace ingestd {

/// The tenants each token opens. INGESTD_REVIEW_TOKEN is either one token (the default tenant)
/// or comma-separated TENANT_ID:TOKEN pairs; one token may appear in several pairs and then
/// opens all their tenants. An entry without a tenant UUID before a ':' is a token for the
/// default tenant.
class review_tokens {
public:
  /// Errors (permanent, "review.bad_token"): an empty entry, an empty token, a pair's tenant
  /// that is not a UUID when the entry looks like a pair, a token for the default tenant when
  /// there is none.
  static result<review_tokens> parse(std::string_view text, std::optional<uuid> default_tenant);

  /// No token configured: the desk is open (allowed on a loopback bind only).
  bool open() const { return by_token_.empty(); }
  /// The tenants of `token` (compared in constant time); empty when it is not one.
  std::vector<uuid> tenants_of(std::string_view token) const;
  /// The length of the shortest token (0 when none is configured).
  size_t shortest() const;

private:
  std::vector<std::pair<std::string, std::vector<uuid>>> by_token_;
};

/// A signed-in reviewer (login form, cookie).
struct review_session {
  std::string reviewer;
  std::vector<uuid> tenants;
  /// Sent back with every state-changing request made with the cookie.
  std::string csrf;
  std::chrono::steady_clock::time_point expires;
};

/// The cookie sessions, in memory (a restart signs everyone out), each for at most `lifetime`, at
/// most `max_sessions` at once: a new session beyond them ends the one that expires first.
/// Thread-safe.
class review_sessions {
public:
  explicit review_sessions(std::chrono::minutes lifetime = std::chrono::hours{12},
                           size_t max_sessions = 1000)
      : lifetime_(lifetime), max_sessions_(max_sessions < 1 ? 1 : max_sessions) {}

  /// A new session; returns its id (the cookie's value).
  std::string open(std::string reviewer, std::vector<uuid> tenants);
  /// The sessions alive now.
  size_t count();
  /// The live session with this id.
  std::optional<review_session> find(const std::string& id);
  void close(const std::string& id);

private:
  std::chrono::minutes lifetime_;
  size_t max_sessions_;
  std::mutex mtx_;
  std::map<std::string, review_session> sessions_;
};

/// 32 random bytes in hex, from the operating system's generator.
std::string random_token();

/// Equal strings, compared in time that depends on neither where they differ nor their lengths.
bool same_secret(std::string_view a, std::string_view b);

} // namespace ingestd
