// The PostgreSQL test fixture: a fresh schema per test in the database the local stack runs,
// migrated with the embedded migrations and dropped afterwards.
#include "tests/support/postgres/pg_fixture.hpp"

#include <chrono>
#include <stdexcept>
#include <thread>
#include <tuple>

#include <libpq-fe.h>

#include "adapters/db/migrator.hpp"
#include "adapters/queue/postgres_queue.hpp"
#include "tests/support/environment.hpp"

namespace ingestd::test {

namespace {

std::string quote_ident(PGconn* conn, const std::string& name) {
  auto quoted = PQescapeIdentifier(conn, name.c_str(), name.size());
  if (quoted == nullptr)
    throw std::runtime_error("cannot quote identifier " + name);
  std::string out{quoted};
  PQfreemem(quoted);
  return out;
}

} // namespace

std::string with_search_path(const std::string& url, const std::string& schema) {
  if (url.rfind("postgresql://", 0) == 0 || url.rfind("postgres://", 0) == 0) {
    auto sep = url.find('?') == std::string::npos ? "?" : "&";
    return url + sep + "options=-csearch_path%3D" + schema + "&application_name=" + schema;
  }
  return url + " options='-csearch_path=" + schema + "' application_name=" + schema;
}

pg_schema::pg_schema(bool migrate) {
  create(migrate, 0);
}

pg_schema::pg_schema(migrated_to target) {
  create(true, target.version);
}

void pg_schema::create(bool migrate, int up_to_version) {
  base_url_ = env_or("INGESTD_TEST_DATABASE_URL", "");
  if (base_url_.empty())
    throw std::runtime_error(
        "INGESTD_TEST_DATABASE_URL is not set: start the local stack (deploy/local-stack.sh start) "
        "and run eval \"$(deploy/local-stack.sh env)\" before the tests");
  name_ = unique_name("t");
  conn_ = PQconnectdb(base_url_.c_str());
  if (PQstatus(conn_) != CONNECTION_OK) {
    std::string msg = PQerrorMessage(conn_);
    PQfinish(conn_);
    conn_ = nullptr;
    throw std::runtime_error("cannot connect to INGESTD_TEST_DATABASE_URL (" + base_url_
                             + "): " + msg);
  }
  query("SET client_min_messages = warning");
  query("CREATE SCHEMA " + quote_ident(conn_, name_));
  query("SELECT set_config('search_path', $1, false)", {quote_ident(conn_, name_)});
  url_ = with_search_path(base_url_, name_);
  if (!migrate)
    return;
  auto migrations = embedded_migrations();
  if (up_to_version > 0) {
    std::erase_if(migrations, [&](const migration& m) { return m.version > up_to_version; });
    if (migrations.empty() || migrations.back().version != up_to_version)
      throw std::runtime_error("no embedded migration of version " + std::to_string(up_to_version));
  }
  auto report = ingestd::migrate(url_, migrations);
  if (!report)
    throw std::runtime_error("migrations failed in schema " + name_ + ": "
                             + report.error().describe());
  wait_for_adapter_backends_to_end();
}

void pg_schema::wait_for_adapter_backends_to_end() {
  // The migrator has closed its session, but the server lists its backend until the process
  // has exited: a test that counts or ends its adapters' sessions would see it too.
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds{10};
  while (scalar("SELECT count(*) FROM pg_stat_activity WHERE application_name = $1 AND pid <> "
                "pg_backend_pid()",
                {name_})
         != "0") {
    if (std::chrono::steady_clock::now() > deadline)
      throw std::runtime_error("the migrator's session in schema " + name_
                               + " did not end within 10 s");
    std::this_thread::sleep_for(std::chrono::milliseconds{5});
  }
}

std::vector<std::string> pg_schema::migrate_rest() {
  auto report = ingestd::migrate(url_, embedded_migrations());
  if (!report)
    throw std::runtime_error("migrations failed in schema " + name_ + ": "
                             + report.error().describe());
  wait_for_adapter_backends_to_end();
  return report->applied;
}

pg_schema::~pg_schema() {
  if (conn_ == nullptr)
    return;
  if (env_or("INGESTD_TEST_KEEP_SCHEMA", "").empty()) {
    auto sql = "DROP SCHEMA IF EXISTS " + quote_ident(conn_, name_) + " CASCADE";
    PQclear(PQexec(conn_, sql.c_str()));
  }
  PQfinish(conn_);
}

bool pg_schema::reconnect() {
  // The server restarted or ended this session (fault tests): connect again, with a deadline, and
  // restore the session's settings.
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds{60};
  for (;;) {
    PQreset(conn_);
    if (PQstatus(conn_) == CONNECTION_OK)
      break;
    if (std::chrono::steady_clock::now() > deadline)
      return false;
    std::this_thread::sleep_for(std::chrono::milliseconds{200});
  }
  PQclear(PQexec(conn_, "SET client_min_messages = warning"));
  auto path = quote_ident(conn_, name_);
  const char* values[] = {path.c_str()};
  PQclear(PQexecParams(conn_, "SELECT set_config('search_path', $1, false)", 1, nullptr, values,
                       nullptr, nullptr, 0));
  return true;
}

std::vector<pg_row> pg_schema::query(const std::string& sql,
                                     const std::vector<std::optional<std::string>>& params) {
  std::vector<const char*> values;
  values.reserve(params.size());
  for (const auto& p : params)
    values.push_back(p ? p->c_str() : nullptr);
  auto res = PQexecParams(conn_, sql.c_str(), static_cast<int>(values.size()), nullptr,
                          values.data(), nullptr, nullptr, 0);
  auto status = PQresultStatus(res);
  if (status != PGRES_COMMAND_OK && status != PGRES_TUPLES_OK && PQstatus(conn_) != CONNECTION_OK
      && reconnect()) {
    PQclear(res);
    res = PQexecParams(conn_, sql.c_str(), static_cast<int>(values.size()), nullptr, values.data(),
                       nullptr, nullptr, 0);
    status = PQresultStatus(res);
  }
  if (status != PGRES_COMMAND_OK && status != PGRES_TUPLES_OK) {
    std::string msg = PQresultErrorMessage(res);
    std::string state = PQresultErrorField(res, PG_DIAG_SQLSTATE) != nullptr
                            ? PQresultErrorField(res, PG_DIAG_SQLSTATE)
                            : "";
    PQclear(res);
    throw std::runtime_error("[" + state + "] " + msg + " in: " + sql);
  }
  std::vector<pg_row> out;
  for (int r = 0; r < PQntuples(res); ++r) {
    pg_row row;
    for (int c = 0; c < PQnfields(res); ++c) {
      if (PQgetisnull(res, r, c))
        row.emplace_back();
      else
        row.emplace_back(PQgetvalue(res, r, c));
    }
    out.push_back(std::move(row));
  }
  PQclear(res);
  return out;
}

std::string pg_schema::scalar(const std::string& sql,
                              const std::vector<std::optional<std::string>>& params) {
  auto rows = query(sql, params);
  if (rows.empty() || rows[0].empty())
    throw std::runtime_error("no row from: " + sql);
  return rows[0][0].value_or("");
}

std::vector<std::string> pg_schema::add_ingestions(int n, const std::string& stage) {
  auto rows
      = query("WITH d AS (INSERT INTO document (id, tenant_id, content_hash, file_path) "
              "SELECT g, gen_random_uuid(), g::text, 'documents/' || g FROM "
              "(SELECT gen_random_uuid() AS g FROM generate_series(1, $1::integer)) x "
              "RETURNING id, tenant_id), "
              "i AS (INSERT INTO ingestion (id, document_id, uploaded_by) "
              "SELECT gen_random_uuid(), id, gen_random_uuid() FROM d RETURNING id, document_id) "
              "INSERT INTO work_item (id, stage, document_id, tenant_id) "
              "SELECT i.id, $2, i.document_id, d.tenant_id FROM i JOIN d ON d.id = i.document_id "
              "RETURNING id",
              {std::to_string(n), stage});
  std::vector<std::string> ids;
  ids.reserve(rows.size());
  for (auto& r : rows)
    ids.push_back(r.at(0).value_or(""));
  return ids;
}

int pg_schema::terminate_adapter_backends() {
  // Materialized first: the planner may otherwise call pg_terminate_backend() before the
  // application_name filter and end other tests' connections.
  auto rows = query("WITH targets AS MATERIALIZED (SELECT pid FROM pg_stat_activity WHERE "
                    "application_name = $1 AND pid <> pg_backend_pid()) "
                    "SELECT pid FROM targets WHERE pg_terminate_backend(pid)",
                    {name_});
  // Wait (with a deadline) until the server has ended them; adapters may reconnect meanwhile
  // under the same application_name, so watch the pids.
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds{10};
  for (auto& row : rows) {
    while (scalar("SELECT count(*) FROM pg_stat_activity WHERE pid = $1", {row.at(0)}) != "0") {
      if (std::chrono::steady_clock::now() > deadline)
        throw std::runtime_error("terminated backend " + row.at(0).value_or("?")
                                 + " did not exit within 10 s");
      std::this_thread::sleep_for(std::chrono::milliseconds{5});
    }
  }
  return static_cast<int>(rows.size());
}

void postgres_test::SetUp() {
  try {
    db = std::make_unique<pg_schema>();
  } catch (const std::exception& e) {
    FAIL() << e.what();
  }
}

void postgres_test::TearDown() {
  db.reset();
}

void create_stage_queues(const std::string& database_url, const std::string& ingest_queue) {
  for (const auto& [name, dead_letter, receives] :
       {std::tuple{ingest_queue, ingest_queue + "-dlq", 0},
        std::tuple{std::string{"ingestd-match"}, std::string{"ingestd-match-dlq"}, 3},
        std::tuple{std::string{"ingestd-unpack"}, std::string{"ingestd-unpack-dlq"}, 3}})
    if (auto r = create_postgres_queue(database_url, name, dead_letter, receives); !r)
      ADD_FAILURE() << "creating queue " << name << ": " << r.error().describe();
}

} // namespace ingestd::test
