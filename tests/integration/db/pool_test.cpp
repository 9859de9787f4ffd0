// Every task of the connection pool answers its caller: a task that throws (std::bad_alloc, a
// bug) answers a transient error instead of leaving its caller waiting for ever, the pool thread
// survives and runs the next task on its connection, and a caller is never answered twice. The
// same for a coalesced batch: each of its callers is answered once, and the next batch still runs.
#include <future>
#include <new>
#include <stdexcept>
#include <vector>

#include <gtest/gtest.h>

#include "adapters/db/pg_batch.hpp"
#include "adapters/db/pg_connection.hpp"
#include "adapters/support/coalescing_queue.hpp"
#include "tests/support/postgres/await.hpp"
#include "tests/support/postgres/pg_fixture.hpp"

using namespace ingestd;
using ingestd::test::await;

namespace {

class pool_test : public ingestd::test::postgres_test {
protected:
  /// One thread, so that the task after a throwing one runs on the same thread and connection.
  std::unique_ptr<pg::pool> make_pool() {
    pg::pool_options opts;
    opts.size = 1;
    return std::make_unique<pg::pool>(db->url(), opts);
  }

  /// SELECT 1 through the pool: proves that its thread still runs tasks and its connection works.
  static result<int> select_one(pg::pool& p) {
    return await<int>([&](callback<int> done) {
      p.call(std::move(done), [](pg::connection& conn, const callback<int>& answer) {
        auto rows = conn.exec_simple("SELECT 1");
        if (!rows)
          return answer(rows.error());
        answer(static_cast<int>(rows->i64(0, 0)));
      });
    });
  }
};

TEST_F(pool_test, a_task_that_throws_answers_an_error_and_the_thread_runs_the_next_task) {
  auto p = make_pool();
  auto thrown = await<int>([&](callback<int> done) {
    p->call(std::move(done), [](pg::connection&, const callback<int>&) { throw std::bad_alloc{}; });
  });
  ASSERT_FALSE(thrown);
  EXPECT_TRUE(thrown.error().transient());
  EXPECT_EQ(thrown.error().code, "pg.task_exception");
  EXPECT_NE(thrown.error().message.find("bad_alloc"), std::string::npos) << thrown.error().message;

  auto unknown = await<int>([&](callback<int> done) {
    p->call(std::move(done), [](pg::connection&, const callback<int>&) { throw 42; });
  });
  ASSERT_FALSE(unknown);
  EXPECT_EQ(unknown.error().code, "pg.task_exception");

  auto next = select_one(*p);
  ASSERT_TRUE(next) << next.error().describe();
  EXPECT_EQ(*next, 1);
}

TEST_F(pool_test, a_task_that_answers_then_throws_answers_once) {
  auto p = make_pool();
  // await fails the test when a callback is called twice; the exception is handled before the
  // next task (SELECT 1) starts on the single thread.
  auto answered = await<int>([&](callback<int> done) {
    p->call(std::move(done), [](pg::connection&, const callback<int>& answer) {
      answer(7);
      throw std::runtime_error{"after the answer"};
    });
  });
  ASSERT_TRUE(answered) << answered.error().describe();
  EXPECT_EQ(*answered, 7);
  auto next = select_one(*p);
  ASSERT_TRUE(next) << next.error().describe();
}

struct item {
  int value = 0;
  callback<int> done;
};

TEST_F(pool_test, a_coalesced_run_that_throws_answers_each_caller_once_and_the_next_run_goes_on) {
  auto p = make_pool();
  coalescing_queue<item> waiting;
  // The run answers its first item, then throws: a bug halfway through a batch.
  auto run = [](pg::connection&, std::vector<item>& batch) {
    batch.front().done(batch.front().value);
    if (batch.size() > 1)
      throw std::runtime_error{"halfway"};
    for (auto& i : batch)
      i.done(i.value);
  };

  // Hold the only thread so that three calls form one batch.
  std::promise<void> release;
  auto released = release.get_future().share();
  p->submit([released](pg::connection&) { released.wait(); }, nullptr);

  std::vector<std::promise<result<int>>> answers(3);
  std::vector<int> calls(3, 0);
  std::mutex mtx;
  for (int i = 0; i < 3; ++i) {
    auto started = waiting.push({i + 10, [&, i](result<int> r) {
                                   std::lock_guard guard{mtx};
                                   if (calls[i]++ == 0)
                                     answers[i].set_value(std::move(r));
                                 }});
    EXPECT_EQ(started, i == 0);
    if (started)
      pg::submit_coalesced(*p, waiting, run);
  }
  release.set_value();

  auto first = answers[0].get_future().get();
  ASSERT_TRUE(first) << first.error().describe();
  EXPECT_EQ(*first, 10);
  for (int i = 1; i < 3; ++i) {
    auto r = answers[i].get_future().get();
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().code, "pg.task_exception");
  }

  // The queue is idle again: the next call starts a run of its own, which answers.
  auto later = await<int>([&](callback<int> done) {
    if (waiting.push({42, std::move(done)}))
      pg::submit_coalesced(*p, waiting, run);
  });
  ASSERT_TRUE(later) << later.error().describe();
  EXPECT_EQ(*later, 42);
  ASSERT_TRUE(select_one(*p));
  std::lock_guard guard{mtx};
  EXPECT_EQ(calls, (std::vector<int>{1, 1, 1}));
}

} // namespace
