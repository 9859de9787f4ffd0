// Every database call has a deadline: a table locked by another session makes repository and
// queue calls fail as transient errors within the lock timeout (or the statement timeout), and a
// connection carries the configured deadlines together with the URL's own options.
#include <chrono>

#include <gtest/gtest.h>
#include <libpq-fe.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include "adapters/db/pg_connection.hpp"
#include "adapters/db/pg_work_repository.hpp"
#include "adapters/queue/postgres_queue.hpp"
#include "tests/support/environment.hpp"
#include "tests/support/postgres/await.hpp"
#include "tests/support/postgres/pg_fixture.hpp"

using namespace ingestd;
using namespace std::chrono_literals;
using ingestd::test::await;

namespace {

using clock_type = std::chrono::steady_clock;

/// Room for scheduling and round trips on a loaded machine: far below "for ever", which is what
/// a blocked call took without deadlines.
constexpr auto slack = 10s;

/// Seconds since `start`.
double since(clock_type::time_point start) {
  return std::chrono::duration<double>(clock_type::now() - start).count();
}

/// `r` is the transient error `code`, after about `deadline` (`took` seconds), not much later.
template <class T>
void expect_ended_by_deadline(const result<T>& r, double took, const std::string& code,
                              std::chrono::seconds deadline) {
  ASSERT_FALSE(r) << "the call went through a locked table";
  EXPECT_TRUE(r.error().transient()) << r.error().describe();
  EXPECT_EQ(r.error().code, code) << r.error().describe();
  EXPECT_GE(took, std::chrono::duration<double>(deadline).count() - 0.1);
  EXPECT_LT(took, std::chrono::duration<double>(deadline + slack).count());
}

class timeouts_test : public ingestd::test::postgres_test {
protected:
  /// A second session holding `table` in ACCESS EXCLUSIVE mode until the test ends.
  void lock_table(const std::string& table) {
    locker = std::make_unique<pg::connection>(db->url());
    ASSERT_TRUE(locker->exec_simple("BEGIN"));
    ASSERT_TRUE(locker->exec_simple("LOCK TABLE " + table + " IN ACCESS EXCLUSIVE MODE"));
  }

  void unlock() { ASSERT_TRUE(locker->exec_simple("ROLLBACK")); }

  std::string show(pg::connection& conn, const std::string& setting) {
    auto rows = conn.exec_simple("SHOW " + setting);
    EXPECT_TRUE(rows) << rows.error().describe();
    return rows && rows->size() == 1 ? rows->str(0, 0) : std::string{};
  }

  /// A repository call (the heartbeat's look-up of cancel requests) made while `work_item` is
  /// locked by another session, on a repository whose connection has `session`'s deadlines: its
  /// answer and how long it took (s). The same connection must serve the next call once the lock
  /// is gone.
  std::pair<result<std::vector<uuid>>, double>
  call_on_locked_work_items(pg::session_options session) {
    pg_work_repository repo{db->url(), pg_work_options{1, session}};
    auto ask = [&] {
      return await<std::vector<uuid>>([&](auto cb) { repo.cancel_requests({uuid::v7()}, cb); },
                                      60s);
    };
    // A first call connects before the lock, so that the measured time is the lock wait alone.
    EXPECT_TRUE(ask());
    lock_table("work_item");
    auto start = clock_type::now();
    auto r = ask();
    auto took = since(start);
    unlock();
    auto again = ask();
    EXPECT_TRUE(again) << again.error().describe();
    return {std::move(r), took};
  }

  std::unique_ptr<pg::connection> locker;
};

} // namespace

TEST_F(timeouts_test, a_connection_carries_its_deadlines_and_keeps_the_urls_options) {
  pg::connection conn{db->url(), pg::session_options{7s, 3s, 20s}};
  EXPECT_EQ(show(conn, "statement_timeout"), "7s");
  EXPECT_EQ(show(conn, "lock_timeout"), "3s");
  // The fixture's URL sets the search_path through its own options: they still apply.
  EXPECT_EQ(show(conn, "search_path"), db->name());
  // A statement of a large batch is never compiled: JIT took longer than the statement itself.
  EXPECT_EQ(show(conn, "jit"), "off");
  // Rows looked up by key are in memory: a random read costs about a sequential one.
  EXPECT_EQ(show(conn, "random_page_cost"), "1.1");
  int tcp_timeout = 0;
  socklen_t len = sizeof tcp_timeout;
  sockaddr_storage peer{};
  socklen_t peer_len = sizeof peer;
  ASSERT_EQ(::getpeername(PQsocket(conn.raw()), reinterpret_cast<sockaddr*>(&peer), &peer_len), 0);
  if (peer.ss_family == AF_INET || peer.ss_family == AF_INET6) {
    ASSERT_EQ(::getsockopt(PQsocket(conn.raw()), IPPROTO_TCP, TCP_USER_TIMEOUT, &tcp_timeout, &len),
              0);
    EXPECT_EQ(tcp_timeout, 20000);
  }
  // The defaults bound every call too; the tcp_only sessions leave the server's deadlines off.
  pg::connection defaults{db->url()};
  EXPECT_EQ(show(defaults, "statement_timeout"), "30s");
  EXPECT_EQ(show(defaults, "lock_timeout"), "10s");
  pg::connection unbounded{db->url(), pg::session_options::tcp_only()};
  EXPECT_EQ(show(unbounded, "statement_timeout"), "0");
  EXPECT_EQ(show(unbounded, "lock_timeout"), "0");
}

TEST_F(timeouts_test, a_statement_of_generic_plans_is_planned_once_and_others_as_postgres_chooses) {
  pg::connection conn{db->url()};
  // PostgreSQL would plan these for each call's values: a LIMIT it cannot know.
  const char* limited = "SELECT g FROM generate_series(1, 100) AS g ORDER BY g LIMIT $1";
  const pg::statement generic{"ingestd_test_generic", limited, pg::plans::generic};
  const pg::statement chosen{"ingestd_test_chosen", limited};
  auto plans_of = [&](const char* name) {
    auto r = conn.exec_simple(std::string{"SELECT generic_plans, custom_plans FROM "
                                          "pg_prepared_statements WHERE name = '"}
                              + name + "'");
    EXPECT_TRUE(r && r->size() == 1);
    return std::pair{r->str(0, 0), r->str(0, 1)};
  };
  // Taking turns on one connection: each keeps its own way.
  for (int i = 0; i < 6; ++i) {
    ASSERT_TRUE(conn.exec(generic, {std::to_string(i + 1)}));
    ASSERT_TRUE(conn.exec(chosen, {std::to_string(i + 1)}));
  }
  EXPECT_EQ(plans_of("ingestd_test_generic"), (std::pair<std::string, std::string>{"6", "0"}));
  EXPECT_NE(plans_of("ingestd_test_chosen").second, "0");
  // A call planned for its values after a generic one is planned for them.
  const pg::statement per_call{"ingestd_test_per_call", limited, pg::plans::generic};
  auto res = conn.exec(per_call, {"3"}, pg::planning::per_call);
  ASSERT_TRUE(res);
  EXPECT_EQ(res->size(), 3);
  // A rollback undoes a SET made in its transaction: the next call sets it again.
  ASSERT_TRUE(conn.exec_simple("BEGIN"));
  ASSERT_TRUE(conn.exec(chosen, {"1"}));
  ASSERT_TRUE(conn.exec(generic, {"1"}));
  ASSERT_TRUE(conn.exec_simple("ROLLBACK"));
  ASSERT_TRUE(conn.exec(generic, {"1"}));
  EXPECT_EQ(plans_of("ingestd_test_generic").second, "0");
}

TEST_F(timeouts_test, a_setting_in_the_urls_options_wins_over_the_session_deadline) {
  auto url = db->url() + "&options=-csearch_path%3D" + db->name() + "%20-clock_timeout%3D4s";
  pg::connection conn{url, pg::session_options{7s, 3s, 20s}};
  EXPECT_EQ(show(conn, "lock_timeout"), "4s");
  EXPECT_EQ(show(conn, "statement_timeout"), "7s");
  auto with_jit = db->url() + "&options=-csearch_path%3D" + db->name() + "%20-cjit%3Don";
  pg::connection compiled{with_jit};
  EXPECT_EQ(show(compiled, "jit"), "on");
  auto with_disk_costs
      = db->url() + "&options=-csearch_path%3D" + db->name() + "%20-crandom_page_cost%3D4";
  pg::connection on_disk{with_disk_costs};
  EXPECT_EQ(show(on_disk, "random_page_cost"), "4");
}

TEST_F(timeouts_test,
       a_repository_call_on_a_locked_table_fails_transiently_within_the_lock_timeout) {
  auto [r, took] = call_on_locked_work_items(pg::session_options{30s, 1s, 30s});
  expect_ended_by_deadline(r, took, "pg.55P03", 1s);
}

TEST_F(timeouts_test, without_a_lock_timeout_the_statement_timeout_ends_the_wait) {
  auto [r, took] = call_on_locked_work_items(pg::session_options{2s, 0s, 30s});
  expect_ended_by_deadline(r, took, "pg.57014", 2s);
}

TEST_F(timeouts_test, a_queue_call_on_a_locked_table_fails_transiently_within_the_lock_timeout) {
  postgres_queue_options opts;
  opts.session = pg::session_options{30s, 1s, 30s};
  postgres_queue q{db->url(), test::unique_name("q"), opts};
  ASSERT_TRUE(await<queue_stats>([&](auto cb) { q.stats(cb); }));
  lock_table("queue_message");
  auto start = clock_type::now();
  auto stats = await<queue_stats>([&](auto cb) { q.stats(cb); }, 60s);
  expect_ended_by_deadline(stats, since(start), "pg.55P03", 1s);
  // A send is refused the same way rather than hanging: the caller learns it may retry.
  auto sent = await<std::vector<batch_entry_result>>(
      [&](auto cb) {
        q.send({outgoing_message{"body", 0s}}, cb);
      },
      60s);
  if (sent) {
    ASSERT_EQ(sent->size(), 1u);
    EXPECT_TRUE((*sent)[0].failed);
    EXPECT_TRUE((*sent)[0].error.transient()) << (*sent)[0].error.describe();
  } else {
    EXPECT_TRUE(sent.error().transient()) << sent.error().describe();
  }
  unlock();
  EXPECT_TRUE(await<queue_stats>([&](auto cb) { q.stats(cb); }));
}
