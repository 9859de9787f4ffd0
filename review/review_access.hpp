// Who may use the review desk and for which tenants: the cookie sessions the login form opens and
// each session's CSRF token (the tokens of INGESTD_REVIEW_TOKEN are http_server::tenant_tokens).
#pragma once

#include <chrono>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "messages/uuid.hpp"

namespace ingestd {

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

} // namespace ingestd
