// One libpq connection with reconnect-with-backoff, prepared statements by name, and SQLSTATE
// classification into ingestd errors; plus pg_pool, a few threads that each own one connection.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_set>
#include <utility>
#include <vector>

#include "messages/result.hpp"

struct pg_conn;
struct pg_result;

namespace ingestd::pg {

/// A parameter value in text form; nullopt is SQL NULL.
using param = std::optional<std::string>;

/// How a call of a statement is planned. `cached`: the statement is prepared once per connection,
/// and planned as the statement says (`plans`). `per_call`: the statement is sent
/// with the call and planned for its values: for a large coalesced batch of a statement that
/// joins two of the batch's lists (unnest() of its arrays, or a CTE made of them). A generic plan
/// takes each such list for 10 rows and joins two of them in a nested loop, every row with every
/// other (7.8 million rows compared for a completion of 2,800 items); for a small batch the
/// planning costs more than such a join (see for_batch).
enum class planning : bool { cached, per_call };

/// per_call for a batch of more than 100 rows (the statement triggers' threshold too, migration
/// 030), cached for a smaller one.
constexpr planning for_batch(size_t rows) {
  return rows > 100 ? planning::per_call : planning::cached;
}

/// How PostgreSQL plans the cached calls of a prepared statement.
enum class plans : bool {
  /// Its own choice (plan_cache_mode = auto): a plan for each call's values at first, then a
  /// generic one if that looks no dearer. For a statement whose best plan depends on the values
  /// (the matching's candidates: ranges, similarity, the tenant's size).
  chosen,
  /// One generic plan for every call (plan_cache_mode = force_generic_plan): for a statement that
  /// reads and changes rows by their keys, whose plan is the same for any values, and which
  /// PostgreSQL would otherwise plan at nearly every call because the generic plan's estimate
  /// (a list of unknown length, a LIMIT) looks dearer: 0.3-1 ms of planning each time.
  generic,
};

/// A named statement; `name` must be unique per SQL text within the process.
struct statement {
  const char* name;
  const char* sql;
  plans cached_plans = plans::chosen;
};

/// An owned PGresult.
class rows {
public:
  rows() = default;
  explicit rows(::pg_result* res) : res_(res) {}
  rows(rows&& other) noexcept : res_(other.res_) { other.res_ = nullptr; }
  rows& operator=(rows&& other) noexcept;
  rows(const rows&) = delete;
  rows& operator=(const rows&) = delete;
  ~rows();

  int size() const;
  /// Rows changed by an UPDATE/DELETE/INSERT without RETURNING.
  int64_t affected() const;
  bool is_null(int row, int col) const;
  std::string_view text(int row, int col) const;
  std::string str(int row, int col) const { return std::string{text(row, col)}; }
  int64_t i64(int row, int col) const;
  double f64(int row, int col) const;
  bool boolean(int row, int col) const { return text(row, col) == "t"; }

private:
  ::pg_result* res_ = nullptr;
};

/// Classifies a failed result (or a connection failure when `res` is null) by its SQLSTATE:
/// connection loss, shutdown, serialization and deadlock, too many connections are transient;
/// 08007 is transient with advice to re-read; 23505 and data/definition errors are permanent.
error classify(const ::pg_result* res, const ::pg_conn* conn, std::string_view context);

/// The statements waiting for the server now, on every connection of the process, longest first,
/// each as "name (N s)": what a shutdown that runs out of time names as stuck.
std::vector<std::string> statements_in_progress();

/// The statements this process has sent (BEGIN and COMMIT included), on every connection: what
/// the benchmarks divide by the documents.
uint64_t statements_sent();

/// Renders a PostgreSQL array literal of text elements (quoted and escaped; nullopt is NULL).
std::string array_literal(const std::vector<param>& items);

/// The deadlines every call on a connection runs under, set when it connects (0: none). The
/// server cancels a statement or a lock wait that runs over (SQLSTATE 57014 or 55P03, both
/// transient); the TCP user timeout drops a connection whose sent data stays unacknowledged
/// (a silent network stall), which ends the call with a transient connection error.
struct session_options {
  std::chrono::seconds statement_timeout{30};
  std::chrono::seconds lock_timeout{10};
  std::chrono::seconds tcp_user_timeout{30};

  /// Only the TCP user timeout: for callers that set a deadline per statement themselves, or
  /// whose statements may rightly run and wait long (migrations).
  static session_options tcp_only() { return {std::chrono::seconds{0}, std::chrono::seconds{0}}; }
};

/// A blocking libpq connection; use from one thread at a time.
class connection {
public:
  /// `url` may carry startup options of its own (`options=-c ...`): they come after the
  /// session's deadlines, so a setting given there wins.
  explicit connection(std::string url, session_options session = {});
  ~connection();
  connection(const connection&) = delete;
  connection& operator=(const connection&) = delete;

  /// Connects if not connected (or found dead), waiting out the backoff of earlier failures
  /// only when `wait_backoff`; otherwise fails fast while backing off.
  ///
  /// A connection lost inside a transaction (BEGIN answered, no COMMIT or ROLLBACK yet) is never
  /// made again under it: the server rolled the transaction back, and a statement of it sent on a
  /// new session would commit on its own. Every statement until the transaction's end fails with
  /// pg.connection ("lost inside a transaction"); a COMMIT fails likewise, a ROLLBACK (or the
  /// next BEGIN) ends it, and the statement after connects again.
  result<void> ensure(bool wait_backoff = false);

  /// Runs a statement, preparing it on this connection on first use (unless `plan` is per_call).
  /// Connection-class errors drop the connection so that the next call reconnects.
  result<rows> exec(const statement& st, const std::vector<param>& params,
                    planning plan = planning::cached);

  /// Runs SQL text without parameters (migrations, LISTEN, BEGIN/COMMIT/ROLLBACK).
  result<rows> exec_simple(const std::string& sql);

  /// The raw handle, or nullptr when not connected.
  ::pg_conn* raw() const { return conn_; }

  /// Closes the connection (the next ensure() reconnects).
  void drop();

  /// Number of successful connects, for tests and logs.
  int64_t connects() const { return connects_; }

  /// True when the connection is open and the server has not announced its end.
  bool alive() const;

private:
  result<rows> check(::pg_result* res, std::string_view context);

  std::string url_;
  /// The startup `options`: the session's deadlines, then the URL's own options.
  std::string startup_options_;
  std::string tcp_user_timeout_;
  ::pg_conn* conn_ = nullptr;
  std::unordered_set<std::string> prepared_;
  std::chrono::steady_clock::time_point next_attempt_{};
  std::chrono::milliseconds backoff_{0};
  int64_t connects_ = 0;
  /// The server sent FATAL while the connection was idle: it is going away.
  bool fatal_seen_ = false;
  /// The server's answer to the last statement left a transaction open.
  bool in_transaction_ = false;
  /// The connection went away inside a transaction that has not been ended since.
  bool transaction_lost_ = false;
  /// The session's plan_cache_mode as this connection last set it (a new session: auto);
  /// unknown after a rollback, which undoes a SET made in its transaction.
  std::optional<plans> plan_mode_ = plans::chosen;
};

struct pool_options {
  /// Threads, each owning one connection.
  int size = 2;
  /// The threads' name (at most 15 characters), for `top -H`.
  const char* thread_name = "ingestd-db";
  /// The deadlines of every connection's calls.
  session_options session = {};
};

/// Wraps a port callback so that only its first answer goes through (later ones are dropped):
/// what lets a task's exception be answered without answering a caller twice. The copies share
/// one answer; any thread may call them.
template <class T>
callback<T> answer_once(callback<T> done) {
  struct state {
    std::mutex mtx;
    callback<T> done;
  };
  auto st = std::make_shared<state>();
  st->done = std::move(done);
  return [st](result<T> r) {
    callback<T> first;
    {
      std::lock_guard guard{st->mtx};
      first = std::exchange(st->done, nullptr);
    }
    if (first)
      first(std::move(r));
  };
}

/// The error a caller gets when its task threw (std::bad_alloc, a bug) instead of answering:
/// transient "pg.task_exception" with what the exception said.
error task_exception(std::string_view what);

/// A small pool of threads, each owning one connection. Tasks run in submission order per
/// thread; a task gets a connection that ensure() has tried to open (it checks the result).
/// Every task answers its caller: an exception that escapes a task is caught on the pool thread
/// (which goes on with the next task) and handed to the task's `on_throw` as task_exception(),
/// so that the caller gets an error instead of waiting for ever.
class pool {
public:
  using task = std::function<void(connection&)>;
  /// Answers the caller(s) of a task that threw; must not throw itself.
  using on_throw = std::function<void(const error&)>;

  pool(std::string url, pool_options opts);
  /// Runs the tasks already submitted, then joins the threads.
  ~pool();
  pool(const pool&) = delete;
  pool& operator=(const pool&) = delete;

  /// Runs `t` on a pool thread; when it throws, `failed` gets the error (once). For tasks that
  /// answer several callers (a coalesced batch), whose `failed` answers each not yet answered.
  void submit(task t, on_throw failed);

  /// The usual port call: runs `body(connection&, const callback<T>& done)` on a pool thread.
  /// `done` answers the caller exactly once: the body's first answer goes through, and a body
  /// that throws before answering makes the caller's answer task_exception().
  template <class T, class Body>
  void call(callback<T> done, Body body) {
    auto once = answer_once(std::move(done));
    submit([once, body = std::move(body)](connection& conn) mutable { body(conn, once); },
           [once](const error& err) { once(err); });
  }

private:
  struct entry {
    task run;
    on_throw failed;
  };
  void run(int index);

  std::string url_;
  pool_options opts_;
  std::mutex mtx_;
  std::condition_variable cv_;
  std::deque<entry> tasks_;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

} // namespace ingestd::pg
