// A connection lost inside a transaction (its session terminated between two statements, as an
// administrator, a failover or the chaos test does) is never made again under the transaction:
// the statements after the loss fail instead of committing one by one on a new session, nothing
// of the transaction is written, and the next transaction connects again.
#include <gtest/gtest.h>

#include "adapters/db/pg_connection.hpp"
#include "adapters/db/pg_work.hpp"
#include "messages/error_codes.hpp"
#include "tests/support/postgres/pg_fixture.hpp"

using namespace ingestd;

namespace {

class connection_test : public ingestd::test::postgres_test {
protected:
  void SetUp() override {
    postgres_test::SetUp();
    db->query("CREATE TABLE item (id int PRIMARY KEY, data text, status text)");
    db->query("INSERT INTO item VALUES (1, NULL, 'in-progress')");
  }

  /// The item's data and status, as "data status" ("NULL" for no data).
  std::string item() {
    return db->scalar("SELECT coalesce(data, 'NULL') || ' ' || status FROM item WHERE id = 1");
  }

  /// A completion as the repositories write one: the results, then the status, in one
  /// transaction; `between` runs after the first statement, `before_commit` after the second.
  result<int> complete(pg::connection& conn, const std::function<void()>& between,
                       const std::function<void()>& before_commit, int& settled) {
    static const pg::statement write{"test_write", "UPDATE item SET data = 'results' WHERE id = 1"};
    static const pg::statement finish{
        "test_finish", "UPDATE item SET status = 'completed' WHERE id = 1 AND status = "
                       "'in-progress' RETURNING id"};
    return pg::transaction<int>(
        conn,
        [&](pg::connection& c) -> result<int> {
          if (auto r = c.exec(write, {}); !r)
            return r.error();
          between();
          auto f = c.exec(finish, {});
          if (!f)
            return f.error();
          before_commit();
          return f->size();
        },
        [&](pg::connection&, const result<int>&, const error& lost) -> result<int> {
          ++settled;
          return lost;
        });
  }

  void terminate() { EXPECT_EQ(db->terminate_adapter_backends(), 1); }
};

TEST_F(connection_test, a_session_lost_between_two_statements_writes_neither) {
  pg::connection conn{db->url()};
  int settled = 0;
  auto out = complete(
      conn, [&] { terminate(); }, [] {}, settled);
  ASSERT_FALSE(out) << "the transaction's second statement ran on a new session";
  EXPECT_EQ(out.error().code, errc::pg_connection) << out.error().describe();
  EXPECT_TRUE(out.error().transient());
  EXPECT_EQ(item(), "NULL in-progress");
  EXPECT_EQ(conn.connects(), 1);
  EXPECT_EQ(settled, 0);

  // The next transaction connects again and goes through.
  auto again = complete(
      conn, [] {}, [] {}, settled);
  ASSERT_TRUE(again) << again.error().describe();
  EXPECT_EQ(*again, 1);
  EXPECT_EQ(item(), "results completed");
  EXPECT_EQ(conn.connects(), 2);
}

TEST_F(connection_test, a_session_lost_before_the_commit_is_settled_and_writes_nothing) {
  pg::connection conn{db->url()};
  int settled = 0;
  auto out = complete(
      conn, [] {}, [&] { terminate(); }, settled);
  ASSERT_FALSE(out) << "the COMMIT went to a new session, where there was nothing to commit";
  EXPECT_EQ(out.error().code, errc::pg_connection) << out.error().describe();
  // The lost COMMIT is settled on a new connection (which finds nothing written).
  EXPECT_EQ(settled, 1);
  EXPECT_EQ(item(), "NULL in-progress");

  auto again = complete(
      conn, [] {}, [] {}, settled);
  ASSERT_TRUE(again) << again.error().describe();
  EXPECT_EQ(item(), "results completed");
}

TEST_F(connection_test, a_lost_transaction_refuses_every_statement_until_it_is_ended) {
  pg::connection conn{db->url()};
  ASSERT_TRUE(conn.exec_simple("BEGIN"));
  ASSERT_TRUE(conn.exec_simple("UPDATE item SET data = 'first' WHERE id = 1"));
  terminate();
  for (int i = 0; i < 2; ++i) {
    auto r = conn.exec_simple("UPDATE item SET status = 'completed' WHERE id = 1");
    ASSERT_FALSE(r);
    EXPECT_NE(r.error().message.find("inside a transaction"), std::string::npos)
        << r.error().describe();
  }
  auto commit = conn.exec_simple("COMMIT");
  ASSERT_FALSE(commit);
  EXPECT_EQ(commit.error().code, errc::pg_connection);
  // Ended: the next statement connects again (autocommit, as any statement outside BEGIN).
  auto after = conn.exec_simple("SELECT status FROM item WHERE id = 1");
  ASSERT_TRUE(after) << after.error().describe();
  EXPECT_EQ(after->str(0, 0), "in-progress");
  EXPECT_EQ(item(), "NULL in-progress");
}

} // namespace
