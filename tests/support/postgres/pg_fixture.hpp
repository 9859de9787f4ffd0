// A fresh PostgreSQL schema per test, migrated with the embedded migrations (or up to a given
// version, for the tests of a migration), with a database URL whose search_path points at it (for
// the adapters) and a small query helper for checks.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

struct pg_conn;

namespace ingestd::test {

/// One row of a query result, NULL as nullopt.
using pg_row = std::vector<std::optional<std::string>>;

/// The embedded migrations up to and including `version`.
struct migrated_to {
  int version = 0;
};

/// A schema created on construction and dropped (CASCADE) on destruction. Reads
/// INGESTD_TEST_DATABASE_URL; construction throws std::runtime_error with a clear message when it
/// is unset or the database is unreachable.
class pg_schema {
public:
  /// Creates the schema; when `migrate` is true, applies embedded_migrations() into it.
  explicit pg_schema(bool migrate = true);
  /// Creates the schema and applies the embedded migrations up to `target.version` only: the
  /// schema a database of that version has, for a test of the migrations after it.
  explicit pg_schema(migrated_to target);
  ~pg_schema();
  pg_schema(const pg_schema&) = delete;
  pg_schema& operator=(const pg_schema&) = delete;

  /// The schema's name (unique_name("t")).
  const std::string& name() const { return name_; }
  /// INGESTD_TEST_DATABASE_URL as given.
  const std::string& base_url() const { return base_url_; }
  /// The URL with options=-csearch_path=<schema>: what adapters under test get.
  const std::string& url() const { return url_; }

  /// Runs SQL with text parameters ($1, ...) on the fixture's own connection (search_path set);
  /// throws std::runtime_error on failure, with the server's message. A connection lost to a
  /// server restart or a terminated session is made again (within 60 s) and the SQL run again.
  std::vector<pg_row> query(const std::string& sql,
                            const std::vector<std::optional<std::string>>& params = {});
  /// The first column of the first row ("" when NULL; throws when there is no row).
  std::string scalar(const std::string& sql,
                     const std::vector<std::optional<std::string>>& params = {});

  /// Applies the embedded migrations not applied yet; answers the names of those applied.
  std::vector<std::string> migrate_rest();

  /// Creates `n` new documents, each with one in-progress ingestion and its work item of the
  /// stage `stage` nobody holds (no queue message); returns the ingestions' ids.
  std::vector<std::string> add_ingestions(int n, const std::string& stage = "ingest");

  /// Terminates the backends of the adapters under test (url() sets application_name to the
  /// schema's name), as an administrator or a crashed server would, and waits until the server
  /// has ended them; returns how many.
  int terminate_adapter_backends();

private:
  void create(bool migrate, int up_to_version);
  /// Waits (10 s at most) until no session under the schema's application_name is listed.
  void wait_for_adapter_backends_to_end();
  bool reconnect();

  std::string base_url_;
  std::string name_;
  std::string url_;
  ::pg_conn* conn_ = nullptr;
};

/// GoogleTest base: a fresh migrated schema per test in `db`.
class postgres_test : public ::testing::Test {
protected:
  void SetUp() override;
  void TearDown() override;

  std::unique_ptr<pg_schema> db;
};

/// `url` with options=-csearch_path=<schema> and application_name=<schema> added (URI or
/// key=value form).
std::string with_search_path(const std::string& url, const std::string& schema);

/// What `ingestd queues create` makes on the Postgres queue for the default stages, with the
/// ingest stage's queue named `ingest_queue` (its dead letters "<ingest_queue>-dlq"): that and
/// ingestd-match and ingestd-unpack, with their dead-letter queues after 3 receives. Fails the
/// calling test (ADD_FAILURE) naming a queue it could not make.
void create_stage_queues(const std::string& database_url, const std::string& ingest_queue);

} // namespace ingestd::test
