// Migration 035 (config/migrations/035_audit_trail_row_per_write.sql) applied to a database of
// migration 034 holding audit rows: the view ingestion_event shows every row as it was (ids,
// columns, times to the microsecond), a step inserted into the view takes the next id and the
// time of its write, and the repository's trail of a job becomes one row of audit_trail whose
// steps keep their order (two rows past a block of 1,000 ids).
#include <gtest/gtest.h>

#include "adapters/db/pg_work_repository.hpp"
#include "tests/support/postgres/await.hpp"
#include "tests/support/postgres/pg_fixture.hpp"

using namespace ingestd;
using ingestd::test::await;
using ingestd::test::migrated_to;
using ingestd::test::pg_schema;

namespace {

const char* const every_row = "SELECT id::text, ingestion_id::text, step, outcome, detail, "
                              "duration_ms::text, worker_id, at::text FROM ingestion_event "
                              "ORDER BY id";

} // namespace

TEST(migration_035, the_audit_rows_are_carried_over_and_the_trail_is_written_a_row_per_write) {
  std::unique_ptr<pg_schema> db;
  try {
    db = std::make_unique<pg_schema>(migrated_to{34});
  } catch (const std::exception& e) {
    FAIL() << e.what();
  }
  auto a = uuid::v7().str();
  auto b = uuid::v7().str();
  db->query("INSERT INTO ingestion_event (ingestion_id, step, outcome, detail, duration_ms, "
            "worker_id, at) VALUES "
            "($1, 'claim', 'ok', 'attempt 1', 3, 'w1', '2026-01-02 03:04:05.123456+00'), "
            "($1, 'fetch', 'transient', 's3.SlowDown: \"quoted\" \\ backslash', 120, 'w1', "
            " '2026-01-02 03:04:05.123456+00'), "
            "($2, 'cancel', 'cancelled', NULL, NULL, NULL, '2026-01-03 00:00:00+00')",
            {a, b});
  auto before = db->query(every_row);
  ASSERT_EQ(before.size(), 3u);

  auto applied = db->migrate_rest();
  ASSERT_FALSE(applied.empty());
  EXPECT_EQ(applied.front(), "035_audit_trail_row_per_write.sql");
  EXPECT_EQ(db->query(every_row), before);
  EXPECT_EQ(db->scalar("SELECT count(*) FROM audit_trail"), "3");

  // A step inserted into the view, as intake and the review desk write theirs.
  db->query("INSERT INTO ingestion_event (ingestion_id, step, outcome, detail, worker_id) "
            "VALUES ($1, 'review', 'approve', 'by a reviewer', 'review')",
            {b});
  auto added = db->query("SELECT id > (SELECT max(id) FROM ingestion_event WHERE step <> "
                         "'review'), at > now() - interval '1 minute' FROM ingestion_event "
                         "WHERE step = 'review'");
  ASSERT_EQ(added.size(), 1u);
  EXPECT_EQ(added[0][0], "t");
  EXPECT_EQ(added[0][1], "t");

  // A job's trail through the repository: one row, its steps in order after the earlier ones.
  auto work = std::make_shared<pg_work_repository>(db->url());
  auto item = uuid::parse(a).value();
  std::vector<audit_event> trail{{item, "transcribe", "ok", "", 900, "w2", 1'700'000'000'000},
                                 {item, "extract", "ok", "model x", 1200, "w2", 1'700'000'001'000},
                                 {item, "complete", "ok", "", 4, "w2", 0}};
  ASSERT_TRUE(await<void>([&](auto cb) { work->append_audit(trail, cb); }));
  EXPECT_EQ(db->scalar("SELECT count(*) FROM audit_trail WHERE ingestion_id = $1", {a}), "3");
  EXPECT_EQ(db->scalar("SELECT string_agg(step, ',' ORDER BY id) FROM ingestion_event "
                       "WHERE ingestion_id = $1",
                       {a}),
            "claim,fetch,transcribe,extract,complete");
  EXPECT_EQ(db->scalar("SELECT floor(extract(epoch FROM at) * 1000)::bigint FROM ingestion_event "
                       "WHERE step = 'extract'"),
            "1700000001000");

  // A write longer than a block of ids is split: every step keeps an id of its own, in order.
  auto other = uuid::v7();
  std::vector<audit_event> long_trail;
  long_trail.reserve(1500);
  for (int i = 0; i < 1500; ++i)
    long_trail.push_back({other, "step" + std::to_string(i), "ok", "", 0, "w2", 0});
  ASSERT_TRUE(await<void>([&](auto cb) { work->append_audit(long_trail, cb); }));
  EXPECT_EQ(db->scalar("SELECT count(*) FROM audit_trail WHERE ingestion_id = $1", {other.str()}),
            "2");
  EXPECT_EQ(db->scalar("SELECT count(DISTINCT id) = 1500 AND bool_and(step = 'step' || (n - 1)) "
                       "FROM (SELECT id, step, row_number() OVER (ORDER BY id) AS n "
                       "FROM ingestion_event WHERE ingestion_id = $1) AS s",
                       {other.str()}),
            "t");
}
