// The sweeper on the deterministic scheduler with the port fakes: stranded ingestions re-enqueued
// at start and on every interval, nothing while messages wait in the queue or another node
// sweeps, errors retried at the next interval, never two sweeps at once, and no sweep after it
// stops.
#define CAF_SUITE sweeper
#include "caf/test/unit_test_impl.hpp"

#include <algorithm>

#include "actors/ingest_job.hpp"
#include "actors/match_job.hpp"
#include "actors/sweeper.hpp"
#include "tests/actors/support/actor_fixture.hpp"
#include "tests/support/fakes/stage_fakes.hpp"

using namespace ingestd;
using namespace std::chrono_literals;

namespace {

struct fixture : test::actor_fixture {
  fixture() {
    ctx->settings.sweeper_interval = 60s;
    ctx->settings.stale_threshold = 300s;
    ctx->settings.visibility_timeout = 60s;
    ctx->settings.heartbeat_extension = 120s;
  }

  /// Workers receive every message waiting in the queue.
  void receive_all() {
    queue->receive(10, 0s, 60s, [](const result<std::vector<queue_message>>&) {});
  }

  /// Spawns the sweeper; it sweeps once at start.
  sweeper_actor sweeper() {
    auto s = spawn_sweeper(sys, ctx);
    periodic.push_back(caf::actor_cast<caf::actor>(s));
    sched.run();
    return s;
  }

  /// Bodies sent to the queue so far, sorted (the fake returns rows in id order).
  std::vector<std::string> sent() {
    auto bodies = queue->sent_bodies();
    std::sort(bodies.begin(), bodies.end());
    return bodies;
  }

  static std::vector<std::string> ids(const std::vector<uuid>& xs) {
    std::vector<std::string> out;
    out.reserve(xs.size());
    for (const auto& x : xs)
      out.push_back(x.str());
    std::sort(out.begin(), out.end());
    return out;
  }
};

} // namespace

CAF_TEST_FIXTURE_SCOPE(sweeper_tests, fixture)

CAF_TEST(a stranded ingestion goes back to its size class queue at its priority) {
  auto large_queue = std::make_shared<test::fake_queue>();
  ctx->ports.large_ingest_queue = large_queue;
  auto small = db->add("documents/small.txt");
  auto large = db->add("documents/large.txt");
  db->set_size_class(large, "large");
  db->set_priority(large, 10);
  db->set_priority(small, 70);
  sweeper();
  CAF_CHECK_EQUAL(queue->sent_bodies(), std::vector<std::string>{small.str()});
  CAF_CHECK_EQUAL(large_queue->sent_bodies(), std::vector<std::string>{large.str()});
  CAF_CHECK_EQUAL(queue->sent_priority(small.str()), 70);
  CAF_CHECK_EQUAL(large_queue->sent_priority(large.str()), 10);
  CAF_CHECK_EQUAL(ctx->metrics->rescues.load(), 2);
}

CAF_TEST(a backlog in the large class queue holds the sweep too) {
  auto large_queue = std::make_shared<test::fake_queue>();
  ctx->ports.large_ingest_queue = large_queue;
  large_queue->push("waiting");
  db->add("documents/a.txt");
  sweeper();
  CAF_CHECK(queue->sent_bodies().empty());
  CAF_CHECK(db->rescue_calls().empty());
}

CAF_TEST(stranded ingestions are re - enqueued at start and on every interval) {
  auto a = db->add("documents/a.txt");
  auto b = db->add("documents/b.txt");
  auto held = db->add("documents/held.txt");
  db->hold_by_other(held);  // a worker holds a live lease on it: not stranded
  sweeper();
  CAF_CHECK_EQUAL(sent(), ids({a, b}));
  CAF_CHECK_EQUAL(ctx->metrics->rescues.load(), 2);
  CAF_CHECK_EQUAL(db->rescue_calls(), std::vector<std::chrono::seconds>{300s});
  receive_all();  // workers receive and claim the two re-enqueued ones
  db->hold_by_other(a);
  db->hold_by_other(b);
  auto c = db->add("documents/c.txt");
  advance_time(59s);
  sched.run();
  CAF_CHECK_EQUAL(db->rescue_calls().size(), 1u);  // not yet
  advance_time(1s);
  sched.run();
  CAF_CHECK_EQUAL(db->rescue_calls().size(), 2u);
  CAF_CHECK_EQUAL(sent(), ids({a, b, c}));
  CAF_CHECK_EQUAL(ctx->metrics->rescues.load(), 3);
  CAF_CHECK(db->violations().empty());
}

CAF_TEST(nothing is rescued while messages wait in the queue) {
  // An SQS backlog is invisible to the database: an ingestion whose message waits unreceived
  // looks stranded, and re-enqueueing it would duplicate it at every sweep.
  auto waiting = db->add("documents/waiting.txt");
  queue->push(waiting.str());
  sweeper();
  advance_time(60s);
  sched.run();
  CAF_CHECK(db->rescue_calls().empty());
  CAF_CHECK(queue->sent_bodies().empty());
  receive_all();  // the backlog is worked off: only what truly has no message is left
  db->hold_by_other(waiting);
  auto lost = db->add("documents/lost.txt");
  advance_time(60s);
  sched.run();
  CAF_CHECK_EQUAL(db->rescue_calls().size(), 1u);
  CAF_CHECK_EQUAL(sent(), ids({lost}));
}

CAF_TEST(the threshold outlasts any invisibility the queue gives a message) {
  ctx->settings.heartbeat_extension = 600s;
  sweeper();
  CAF_CHECK_EQUAL(db->rescue_calls(), std::vector<std::chrono::seconds>{660s});
}

CAF_TEST(nothing is sent while another node holds the sweep lock) {
  auto a = db->add("documents/a.txt");
  db->hold_sweep_lock_elsewhere(true);
  sweeper();
  advance_time(60s);
  sched.run();
  CAF_CHECK_EQUAL(db->rescue_calls().size(), 2u);
  CAF_CHECK(queue->sent_bodies().empty());
  CAF_CHECK_EQUAL(ctx->metrics->rescues.load(), 0);
  db->hold_sweep_lock_elsewhere(false);  // that node stopped: this one takes over
  advance_time(60s);
  sched.run();
  CAF_CHECK_EQUAL(sent(), ids({a}));
}

CAF_TEST(a failed sweep or an unknown queue depth is tried again at the next interval) {
  auto a = db->add("documents/a.txt");
  db->fail_next("rescue_stranded", error::make_transient("pg.connection", "connection refused"));
  queue->fail_next("stats", error::make_transient("sqs.unavailable", "service unavailable"));
  sweeper();  // the queue depth is unknown: no sweep
  CAF_CHECK(db->rescue_calls().empty());
  advance_time(60s);
  sched.run();  // the sweep fails
  CAF_CHECK_EQUAL(db->rescue_calls().size(), 1u);
  CAF_CHECK(queue->sent_bodies().empty());
  advance_time(60s);
  sched.run();
  CAF_CHECK_EQUAL(sent(), ids({a}));
}

CAF_TEST(a failed re - enqueue leaves the ingestions for the next sweep) {
  auto a = db->add("documents/a.txt");
  queue->fail_next("send", error::make_transient("sqs.unavailable", "service unavailable"));
  sweeper();
  CAF_CHECK(queue->sent_bodies().empty());
  CAF_CHECK_EQUAL(ctx->metrics->rescues.load(), 0);
  advance_time(60s);
  sched.run();
  CAF_CHECK_EQUAL(sent(), ids({a}));
  CAF_CHECK_EQUAL(ctx->metrics->rescues.load(), 1);
}

CAF_TEST(a sweep still running at the next interval is not started twice) {
  auto a = db->add("documents/a.txt");
  db->hold("rescue_stranded");
  sweeper();
  advance_time(60s);
  sched.run();
  CAF_CHECK_EQUAL(db->rescue_calls().size(), 1u);  // the tick found the first sweep running
  db->unhold("rescue_stranded");
  sched.run();
  CAF_CHECK_EQUAL(sent(), ids({a}));
  receive_all();
  db->hold_by_other(a);
  advance_time(60s);
  sched.run();
  CAF_CHECK_EQUAL(db->rescue_calls().size(), 2u);  // the one after it sweeps again
}

CAF_TEST(a sweep whose answer never comes is given up at its deadline) {
  auto a = db->add("documents/a.txt");
  db->hold("rescue_stranded");
  sweeper();
  advance_time(60s);
  sched.run();
  CAF_CHECK_EQUAL(db->rescue_calls().size(), 1u);  // still running at the first interval
  advance_time(60s);                                // two intervals: the call's deadline
  sched.run();
  advance_time(60s);
  sched.run();
  CAF_CHECK_EQUAL(db->rescue_calls().size(), 2u);  // the next interval sweeps again
  db->unhold("rescue_stranded");                   // the late answer of the first is dropped
  sched.run();
  CAF_CHECK_EQUAL(sent(), ids({a}));
}

CAF_TEST(a stopped sweeper sweeps no more) {
  db->add("documents/a.txt");
  auto s = sweeper();
  CAF_CHECK_EQUAL(db->rescue_calls().size(), 1u);
  caf::anon_send_exit(s, caf::exit_reason::user_shutdown);
  sched.run();
  advance_time(10min);
  sched.run();
  CAF_CHECK_EQUAL(db->rescue_calls().size(), 1u);
  CAF_CHECK_EQUAL(queue->sent_bodies().size(), 1u);
}

CAF_TEST(pending documents whose matching message was lost are sent to the match queue again) {
  auto match_queue = std::make_shared<test::fake_queue>();
  auto matching = std::make_shared<test::fake_matching_repository>();
  ctx->ports.match_queue = match_queue;
  ctx->ports.matching = matching;
  match_stage_settings m;
  m.queue = match_queue;
  m.queue_name = "the-match-queue";
  ctx->stages = {make_ingest_stage(*ctx), make_match_stage(*ctx, m)};
  auto tenant = uuid::v4();
  auto lost = matching->add(tenant);
  auto fine = matching->add(tenant);
  matching->lose_message(lost);
  sweeper();
  CAF_CHECK_EQUAL(match_queue->sent_bodies(), std::vector<std::string>{lost.str()});
  CAF_CHECK(queue->sent_bodies().empty());
  auto calls = matching->rescue_calls();
  CAF_REQUIRE_EQUAL(calls.size(), 1u);
  CAF_CHECK_EQUAL(calls[0].first, "the-match-queue");
  // Longer than the longest back-off (30 min) plus the message's visibility and a margin.
  CAF_CHECK(calls[0].second > 1800s + 120s);
  // Each once: the next interval (its message received by a worker meanwhile) finds nothing more.
  match_queue->receive(10, 0s, 60s, [](const result<std::vector<queue_message>>&) {});
  advance_time(60s);
  sched.run();
  CAF_CHECK_EQUAL(matching->rescue_calls().size(), 2u);
  CAF_CHECK_EQUAL(match_queue->sent_bodies().size(), 1u);
  CAF_CHECK_EQUAL(matching->row(fine).status, "pending");
  // While messages wait in the match queue, it does not sweep.
  matching->lose_message(fine);
  match_queue->push("waiting");
  advance_time(60s);
  sched.run();
  CAF_CHECK_EQUAL(matching->rescue_calls().size(), 2u);
}

CAF_TEST_FIXTURE_SCOPE_END()
