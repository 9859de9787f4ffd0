// libpq connection handling shared by the repository, the Postgres queue and the migrator:
// reconnect with backoff, prepared statements, SQLSTATE classification, the thread pool.
#include "adapters/db/pg_connection.hpp"
#include "adapters/support/thread_name.hpp"
#include "messages/error_codes.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <list>
#include <mutex>

#include <libpq-fe.h>
#include <poll.h>

namespace ingestd::pg {

namespace {

constexpr std::chrono::milliseconds initial_backoff{100};
constexpr std::chrono::milliseconds max_backoff{5000};

std::string milliseconds_text(std::chrono::seconds s) {
  return std::to_string(std::chrono::milliseconds{s}.count());
}

/// The `options` startup parameter: the session's deadlines (in ms), no JIT compilation and the
/// planner's cost of a random page read for rows in memory, then whatever options the URL
/// carries, so that the URL's own settings win.
/// - A batch of thousands of rows is estimated above jit_above_cost, and compiling it took half a
///   second, where the statement itself ran in a tenth of that (a lease renewal of 10,000 claims:
///   625 ms, 108 ms without JIT).
/// - A coalesced claim or completion looks a few hundred rows up by key in tables of tens of
///   thousands. With the default cost of a random read (4, a disk's), the plan read and hashed
///   the whole work item table, or the ingestion table, for each of them; the rows ingestd
///   works on are recent and in memory, where a read by key costs about as much as a
///   sequential one.
std::string startup_options(const std::string& url, const session_options& session) {
  std::string out = "-c jit=off -c random_page_cost=1.1 -c statement_timeout=";
  out.append(milliseconds_text(session.statement_timeout))
      .append(" -c lock_timeout=")
      .append(milliseconds_text(session.lock_timeout));
  char* message = nullptr;
  if (PQconninfoOption* parsed = PQconninfoParse(url.c_str(), &message)) {
    for (auto o = parsed; o->keyword != nullptr; ++o)
      if (std::strcmp(o->keyword, "options") == 0 && o->val != nullptr && *o->val != '\0')
        out.append(" ").append(o->val);
    PQconninfoFree(parsed);
  }
  // An unparsable URL fails again, and is reported, when it is used to connect.
  PQfreemem(message);
  return out;
}

/// Statements in progress: registered while a connection waits for the server's answer.
struct running_statement {
  std::string name;
  std::chrono::steady_clock::time_point since;
};
struct running_statements {
  std::mutex mtx;
  std::list<running_statement> list;
  /// Statements sent since the process started.
  uint64_t sent = 0;
};

/// Never destroyed: a detached thread may still run a statement while the process exits.
running_statements& running() {
  static auto* all = new running_statements;
  return *all;
}

/// Registers a statement for as long as it waits for the server.
class in_progress {
public:
  explicit in_progress(std::string name) {
    auto& r = running();
    std::lock_guard guard{r.mtx};
    entry_ = r.list.insert(r.list.end(), {std::move(name), std::chrono::steady_clock::now()});
    ++r.sent;
  }
  ~in_progress() {
    auto& r = running();
    std::lock_guard guard{r.mtx};
    r.list.erase(entry_);
  }
  in_progress(const in_progress&) = delete;
  in_progress& operator=(const in_progress&) = delete;

private:
  std::list<running_statement>::iterator entry_;
};

std::string trimmed(const char* text) {
  std::string out = text != nullptr ? text : "";
  while (!out.empty() && (out.back() == '\n' || out.back() == ' '))
    out.pop_back();
  return out;
}

} // namespace

// -- rows ------------------------------------------------------------------------------------

rows& rows::operator=(rows&& other) noexcept {
  if (this != &other) {
    if (res_ != nullptr)
      PQclear(res_);
    res_ = other.res_;
    other.res_ = nullptr;
  }
  return *this;
}

rows::~rows() {
  if (res_ != nullptr)
    PQclear(res_);
}

int rows::size() const {
  return res_ != nullptr ? PQntuples(res_) : 0;
}

int64_t rows::affected() const {
  if (res_ == nullptr)
    return 0;
  auto text = PQcmdTuples(res_);
  return text != nullptr && *text != '\0' ? std::strtoll(text, nullptr, 10) : 0;
}

bool rows::is_null(int row, int col) const {
  return PQgetisnull(res_, row, col) != 0;
}

std::string_view rows::text(int row, int col) const {
  return {PQgetvalue(res_, row, col), static_cast<size_t>(PQgetlength(res_, row, col))};
}

int64_t rows::i64(int row, int col) const {
  return is_null(row, col) ? 0 : std::strtoll(PQgetvalue(res_, row, col), nullptr, 10);
}

double rows::f64(int row, int col) const {
  return is_null(row, col) ? 0 : std::strtod(PQgetvalue(res_, row, col), nullptr);
}

// -- classification --------------------------------------------------------------------------

error classify(const ::pg_result* res, const ::pg_conn* conn, std::string_view context) {
  std::string state;
  std::string message;
  if (res != nullptr) {
    if (auto s = PQresultErrorField(res, PG_DIAG_SQLSTATE); s != nullptr)
      state = s;
    message = trimmed(PQresultErrorMessage(res));
  }
  if (message.empty() && conn != nullptr)
    message = trimmed(PQerrorMessage(conn));
  if (!context.empty())
    message = std::string{context} + ": " + message;
  if (state.empty()) {
    // No server answer: the connection broke or could not be made.
    return error::make_transient(errc::pg_connection, message);
  }
  auto code = "pg." + state;
  auto cls = state.substr(0, 2);
  if (state == "08007")
    return error::make_transient(code,
                                 "commit outcome unknown, re-read before redoing: " + message);
  if (cls == "08" || state == "57P01" || state == "57P02" || state == "57P03" || state == "40001"
      || state == "40P01" || cls == "53" || state == "55P03" || state == "57014" || cls == "58"
      || cls == "XX")
    return error::make_transient(code, message);
  // 23505 and every other data, constraint or definition error: retrying the same statement
  // cannot help. Callers that expect 23505 handle it themselves.
  return error::make_permanent(code, message);
}

uint64_t statements_sent() {
  auto& r = running();
  std::lock_guard guard{r.mtx};
  return r.sent;
}

std::vector<std::string> statements_in_progress() {
  std::vector<running_statement> now;
  {
    auto& r = running();
    std::lock_guard guard{r.mtx};
    now.assign(r.list.begin(), r.list.end());
  }
  // Oldest (longest running) first: the list is in start order.
  auto t = std::chrono::steady_clock::now();
  std::vector<std::string> out;
  out.reserve(now.size());
  for (auto& r : now) {
    auto secs = std::chrono::duration_cast<std::chrono::seconds>(t - r.since).count();
    out.push_back(r.name);
    out.back().append(" (").append(std::to_string(secs)).append(" s)");
  }
  return out;
}

std::string array_literal(const std::vector<param>& items) {
  std::string out = "{";
  bool first = true;
  for (auto& item : items) {
    if (!first)
      out.push_back(',');
    first = false;
    if (!item) {
      out += "NULL";
      continue;
    }
    out.push_back('"');
    for (char c : *item) {
      if (c == '"' || c == '\\')
        out.push_back('\\');
      out.push_back(c);
    }
    out.push_back('"');
  }
  out.push_back('}');
  return out;
}

// -- connection ------------------------------------------------------------------------------

connection::connection(std::string url, session_options session)
    : url_(std::move(url)), startup_options_(startup_options(url_, session)),
      tcp_user_timeout_(milliseconds_text(session.tcp_user_timeout)) {}

connection::~connection() {
  drop();
}

bool connection::alive() const {
  return conn_ != nullptr && PQstatus(conn_) == CONNECTION_OK && !fatal_seen_;
}

void connection::drop() {
  if (conn_ != nullptr) {
    PQfinish(conn_);
    conn_ = nullptr;
  }
  prepared_.clear();
  transaction_lost_ = transaction_lost_ || in_transaction_;
  in_transaction_ = false;
  plan_mode_ = plans::chosen; // the next session starts with the server's default
}

namespace {

error lost_in_transaction() {
  return error::make_transient(errc::pg_connection,
                               "the connection was lost inside a transaction, which the server "
                               "rolled back; nothing of it was written");
}

} // namespace

result<void> connection::ensure(bool wait_backoff) {
  if (conn_ != nullptr) {
    // A backend terminated while we were idle has sent its FATAL and closed: reading what is
    // pending (non-blocking) reveals it before a statement is sent on a dead connection.
    // The FATAL message and the end of the stream may take two reads; stop once nothing is
    // pending.
    for (int i = 0; i < 4 && PQstatus(conn_) == CONNECTION_OK; ++i) {
      pollfd pending{PQsocket(conn_), POLLIN, 0};
      if (::poll(&pending, 1, 0) <= 0 || PQconsumeInput(conn_) == 0)
        break;
      // PQconsumeInput only buffers; parsing (which reports the FATAL) happens here.
      (void)PQisBusy(conn_);
    }
    if (PQstatus(conn_) == CONNECTION_OK && !fatal_seen_)
      return {};
    drop();
  }
  if (transaction_lost_)
    return lost_in_transaction();
  auto now = std::chrono::steady_clock::now();
  if (now < next_attempt_) {
    if (!wait_backoff)
      return error::make_transient(errc::pg_connection,
                                   "reconnecting after a failure (backing off)");
    std::this_thread::sleep_for(next_attempt_ - now);
  }
  // Defaults first: the URL (expanded from dbname) overrides them. The startup options come
  // after it: they already hold the URL's own.
  const char* keys[] = {"connect_timeout",
                        "application_name",
                        "keepalives_idle",
                        "keepalives_interval",
                        "keepalives_count",
                        "tcp_user_timeout",
                        "dbname",
                        "options",
                        nullptr};
  const char* values[] = {"5",          "ingestd",
                          "30",         "10",
                          "3",          tcp_user_timeout_.c_str(),
                          url_.c_str(), startup_options_.c_str(),
                          nullptr};
  conn_ = PQconnectdbParams(keys, values, 1);
  if (conn_ == nullptr || PQstatus(conn_) != CONNECTION_OK) {
    auto err = classify(nullptr, conn_, "connect");
    drop();
    backoff_ = backoff_.count() == 0 ? initial_backoff : std::min(backoff_ * 2, max_backoff);
    next_attempt_ = std::chrono::steady_clock::now() + backoff_;
    // A refused login (bad password, unknown database) is still reported as transient: the
    // daemon's start-up checks tell configuration errors apart; a running worker waits it out.
    return err;
  }
  // Server notices (e.g. "already exists, skipping") are not errors; keep them off stderr. A
  // FATAL that arrives while idle (the backend was terminated) comes this way too: it means the
  // server is closing the connection, possibly before the end of the stream is readable.
  fatal_seen_ = false;
  PQsetNoticeReceiver(
      conn_,
      [](void* self, const PGresult* res) {
        auto severity = PQresultErrorField(res, PG_DIAG_SEVERITY_NONLOCALIZED);
        if (severity != nullptr
            && (std::strcmp(severity, "FATAL") == 0 || std::strcmp(severity, "PANIC") == 0))
          static_cast<connection*>(self)->fatal_seen_ = true;
      },
      this);
  backoff_ = std::chrono::milliseconds{0};
  next_attempt_ = {};
  ++connects_;
  return {};
}

result<rows> connection::check(::pg_result* res, std::string_view context) {
  if (PQstatus(conn_) == CONNECTION_OK) {
    auto txn = PQtransactionStatus(conn_);
    in_transaction_ = txn == PQTRANS_INTRANS || txn == PQTRANS_INERROR;
  }
  auto status = res != nullptr ? PQresultStatus(res) : PGRES_FATAL_ERROR;
  if (status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK)
    return rows{res};
  auto err = classify(res, conn_, context);
  if (res != nullptr)
    PQclear(res);
  if (database_unavailable(err) || PQstatus(conn_) != CONNECTION_OK)
    drop();
  return err;
}

result<rows> connection::exec(const statement& st, const std::vector<param>& params,
                              planning plan) {
  if (auto ok = ensure(); !ok)
    return ok.error();
  in_progress registered{st.name};
  std::vector<const char*> values;
  values.reserve(params.size());
  for (auto& p : params)
    values.push_back(p ? p->c_str() : nullptr);
  // A call planned for its values needs PostgreSQL's own choice too: under force_generic_plan
  // even the unnamed statement gets a generic plan.
  auto mode = plan == planning::per_call ? plans::chosen : st.cached_plans;
  if (plan_mode_ != mode) {
    auto set
        = check(PQexec(conn_, mode == plans::generic ? "SET plan_cache_mode = force_generic_plan"
                                                     : "SET plan_cache_mode = auto"),
                st.name);
    if (!set)
      return set;
    plan_mode_ = mode;
  }
  if (plan == planning::per_call)
    return check(PQexecParams(conn_, st.sql, static_cast<int>(values.size()), nullptr,
                              values.data(), nullptr, nullptr, 0),
                 st.name);
  if (!prepared_.contains(st.name)) {
    auto res = check(PQprepare(conn_, st.name, st.sql, 0, nullptr), st.name);
    if (!res)
      return res;
    prepared_.insert(st.name);
  }
  return check(PQexecPrepared(conn_, st.name, static_cast<int>(values.size()), values.data(),
                              nullptr, nullptr, 0),
               st.name);
}

result<rows> connection::exec_simple(const std::string& sql) {
  // A new transaction: whatever was lost before it is behind the caller.
  if (sql == "BEGIN")
    transaction_lost_ = false;
  auto ok = ensure();
  // The end of a transaction lost with its connection (found now or before): a COMMIT fails,
  // a ROLLBACK has nothing left to undo. The connection is made again at the next statement.
  if (sql == "ROLLBACK")
    plan_mode_.reset(); // a SET made in the transaction is undone
  if ((sql == "COMMIT" || sql == "ROLLBACK") && transaction_lost_) {
    transaction_lost_ = false;
    if (sql == "COMMIT")
      return lost_in_transaction();
    return rows{};
  }
  if (!ok)
    return ok.error();
  // Named by its first words (BEGIN, LISTEN, a migration's first line).
  in_progress registered{sql.substr(0, std::min(sql.find('\n'), size_t{40}))};
  auto res = check(PQexec(conn_, sql.c_str()), "");
  if (!res && sql == "COMMIT")
    plan_mode_.reset(); // a COMMIT that fails rolls back
  return res;
}

// -- pool ------------------------------------------------------------------------------------

pool::pool(std::string url, pool_options opts) : url_(std::move(url)), opts_(opts) {
  auto n = opts.size < 1 ? 1 : opts.size;
  for (int i = 0; i < n; ++i)
    threads_.emplace_back([this, i] { run(i); });
}

pool::~pool() {
  {
    std::lock_guard guard{mtx_};
    stopping_ = true;
  }
  cv_.notify_all();
  for (auto& t : threads_)
    t.join();
}

void pool::submit(task t, on_throw failed) {
  {
    std::lock_guard guard{mtx_};
    tasks_.push_back({std::move(t), std::move(failed)});
  }
  cv_.notify_one();
}

error task_exception(std::string_view what) {
  return error::make_transient("pg.task_exception",
                               "the database task failed with an exception: " + std::string{what});
}

namespace {

/// Runs a task; what it throws becomes the error its caller gets. Nothing escapes the thread.
void run_task(pool::task& t, const pool::on_throw& failed, connection& conn) {
  std::optional<error> err;
  try {
    t(conn);
    return;
  } catch (const std::exception& e) {
    err = task_exception(e.what());
  } catch (...) {
    err = task_exception("an unknown exception");
  }
  try {
    if (failed)
      failed(*err);
  } catch (...) {
    // An answer that throws has nobody left to tell; the thread goes on with the next task.
  }
}

} // namespace

void pool::run(int) {
  name_this_thread(opts_.thread_name);
  connection conn{url_, opts_.session};
  for (;;) {
    entry e;
    {
      std::unique_lock guard{mtx_};
      cv_.wait(guard, [this] { return stopping_ || !tasks_.empty(); });
      if (tasks_.empty())
        return;
      e = std::move(tasks_.front());
      tasks_.pop_front();
    }
    run_task(e.run, e.failed, conn);
  }
}

} // namespace ingestd::pg
