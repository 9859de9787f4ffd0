// pg_intake_repository's connections, shared by the files that implement it: a session (one
// connection and the deadline last set on it) and a session borrowed for one call. Internal to
// adapters/db.
#pragma once

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "adapters/db/pg_connection.hpp"
#include "adapters/db/pg_intake_repository.hpp"
#include "adapters/support/blocking_call.hpp"
#include "messages/error_codes.hpp"

namespace ingestd {

namespace pg_intake {

inline constexpr pg::statement timeout_sql{"ingestd_intake_timeout",
                                           "SELECT set_config('statement_timeout', $1, false)"};

} // namespace pg_intake

struct pg_intake_repository::session {
  // Each call sets its own deadline (statement_timeout), lock waits included.
  explicit session(const std::string& url) : conn(url, pg::session_options::tcp_only()) {}

  /// Runs `st` with the deadline `t`, connecting first (waiting out the backoff of earlier
  /// failures only when `wait_backoff`). A statement cancelled by the deadline is timeout_code.
  result<pg::rows> run(const pg::statement& st, const std::vector<pg::param>& params, timeout t,
                       bool wait_backoff = false) {
    if (auto ok = conn.ensure(wait_backoff); !ok)
      return ok.error();
    auto ms = std::max<int64_t>(t.count(), 1);
    // The setting lives in the session: set again after a reconnect or for another deadline.
    if (timeout_set_on != conn.connects() || timeout_ms != ms) {
      if (auto set = conn.exec(pg_intake::timeout_sql, {std::to_string(ms)}); !set)
        return set.error();
      timeout_set_on = conn.connects();
      timeout_ms = ms;
    }
    auto res = conn.exec(st, params);
    if (!res && res.error().code == errc::pg_query_canceled)
      return timeout_error(timeout_code, "the database", t);
    return res;
  }

  pg::connection conn;
  /// conn.connects() when statement_timeout was set, and its value (ms).
  int64_t timeout_set_on = -1;
  int64_t timeout_ms = -1;
};

class pg_intake_repository::borrowed {
public:
  explicit borrowed(pg_intake_repository& owner) : owner_(owner), session_(owner.borrow()) {}
  ~borrowed() { owner_.give_back(std::move(session_)); }
  borrowed(const borrowed&) = delete;
  borrowed& operator=(const borrowed&) = delete;
  session* operator->() { return session_.get(); }

private:
  pg_intake_repository& owner_;
  std::unique_ptr<session> session_;
};

} // namespace ingestd
