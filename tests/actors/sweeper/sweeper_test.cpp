// The sweeper on the deterministic scheduler with the port fakes: for each stage the node serves
// (each size class of the ingest stage on its own) whose queue has no backlog, one
// work_repository::revive call that sends stranded work again in the database, at start and on
// every interval; nothing while that stage's messages wait in its queue or another node sweeps;
// errors retried at the next interval; never two sweeps of a stage at once; no sweep after it
// stops. The sweeper itself sends nothing through a queue.
#define CAF_SUITE sweeper
#include "caf/test/dsl.hpp"

#include <algorithm>

#include "actors/sweeper.hpp"
#include "stages/match/match_stage.hpp"
#include "tests/actors/support/actor_fixture.hpp"
#include "tests/support/fakes/stage_fakes.hpp"

using namespace ingestd;
using namespace std::chrono_literals;

namespace {

struct sweeper_fixture : test::actor_fixture {
  sweeper_fixture() {
    ctx->settings.sweeper_interval = 60s;
    ctx->settings.stale_threshold = 300s;
    ctx->settings.visibility_timeout = 60s;
    ctx->settings.heartbeat_extension = 120s;
    ctx->stages = {ingest_stage()};
  }

  /// Workers receive every message waiting in the queue.
  static void receive_all(test::fake_queue& q) {
    q.receive(10, 0s, 60s, [](const result<std::vector<queue_message>>&) {});
  }
  void receive_all() { receive_all(*queue); }

  /// Spawns the sweeper; it sweeps once at start.
  sweeper_actor sweeper() {
    auto s = spawn_sweeper(sys, ctx);
    periodic.push_back(caf::actor_cast<caf::actor>(s));
    sched.run();
    return s;
  }

  /// An ingestion whose message is gone: the next revive of its stage finds it.
  uuid stranded(const std::string& key = "documents/a.txt") {
    auto id = db->add(key);
    work->strand(id);
    return id;
  }

  /// Bodies the database sent to `queue_name` so far, sorted.
  std::vector<std::string> sent(const std::string& queue_name = test::ingest_queue_name) {
    auto bodies = work->sent_to(queue_name);
    std::sort(bodies.begin(), bodies.end());
    return bodies;
  }

  size_t revives() { return work->revive_calls().size(); }

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

CAF_TEST_FIXTURE_SCOPE(sweeper_tests, sweeper_fixture)

CAF_TEST(a stranded ingestion goes back to its size class queue at its priority) {
  auto large_queue = std::make_shared<test::fake_queue>();
  work->connect("ingestd-large", large_queue);
  ingest_class s{"small", queue, test::ingest_queue_name};
  ingest_class l{"large", large_queue, "ingestd-large"};
  ctx->stages = {make_ingest_stage(ports, ingest, s), make_ingest_stage(ports, ingest, l)};
  auto small = stranded("documents/small.txt");
  auto large = stranded("documents/large.txt");
  work->update(large, [](test::fake_work_item& w) {
    w.size_class = "large";
    w.priority = 10;
  });
  work->update(small, [](test::fake_work_item& w) { w.priority = 70; });
  sweeper();
  // One revive per class, each to its own queue.
  auto calls = work->revive_calls();
  CAF_REQUIRE_EQUAL(calls.size(), 2u);
  std::sort(calls.begin(), calls.end(),
            [](const revive_request& a, const revive_request& b) { return a.queue < b.queue; });
  CAF_CHECK_EQUAL(calls[0].stage, "ingest");
  CAF_CHECK_EQUAL(calls[0].size_class, "small");
  CAF_CHECK_EQUAL(calls[0].queue, test::ingest_queue_name);
  CAF_CHECK_EQUAL(calls[1].stage, "ingest");
  CAF_CHECK_EQUAL(calls[1].size_class, "large");
  CAF_CHECK_EQUAL(calls[1].queue, "ingestd-large");
  CAF_CHECK_EQUAL(sent(), ids({small}));
  CAF_CHECK_EQUAL(sent("ingestd-large"), ids({large}));
  for (auto& m : work->sent())
    CAF_CHECK_EQUAL(m.priority, m.body == small.str() ? 70 : 10);
  // In the database: the sweeper sent nothing through a queue itself.
  CAF_CHECK(queue->sent_bodies().empty());
  CAF_CHECK(large_queue->sent_bodies().empty());
  CAF_CHECK_EQUAL(ctx->metrics->rescues.load(), 2);
  CAF_CHECK(work->violations().empty());
}

CAF_TEST(a backlog in the large class queue holds that class s sweep and not the small one s) {
  // Each stage (class) is swept when its own queue has no backlog.
  auto large_queue = std::make_shared<test::fake_queue>();
  work->connect("ingestd-large", large_queue);
  ingest_class s{"small", queue, test::ingest_queue_name};
  ingest_class l{"large", large_queue, "ingestd-large"};
  ctx->stages = {make_ingest_stage(ports, ingest, s), make_ingest_stage(ports, ingest, l)};
  large_queue->push("waiting");
  auto a = stranded();
  auto b = stranded("documents/b.txt");
  work->update(b, [](test::fake_work_item& w) { w.size_class = "large"; });
  sweeper();
  auto calls = work->revive_calls();
  CAF_REQUIRE_EQUAL(calls.size(), 1u);
  CAF_CHECK_EQUAL(calls[0].size_class, "small");
  CAF_CHECK_EQUAL(sent(), ids({a}));
  CAF_CHECK(sent("ingestd-large").empty());
}

CAF_TEST(stranded ingestions are sent again at start and on every interval) {
  auto a = stranded("documents/a.txt");
  auto b = stranded("documents/b.txt");
  auto held = stranded("documents/held.txt");
  work->hold_by_other(held); // a worker holds a live lease on it: not stranded
  sweeper();
  CAF_CHECK_EQUAL(sent(), ids({a, b}));
  CAF_CHECK_EQUAL(ctx->metrics->rescues.load(), 2);
  auto calls = work->revive_calls();
  CAF_REQUIRE_EQUAL(calls.size(), 1u);
  CAF_CHECK_EQUAL(calls[0].stage, "ingest");
  CAF_CHECK_EQUAL(calls[0].size_class, "");
  CAF_CHECK_EQUAL(calls[0].queue, test::ingest_queue_name);
  CAF_CHECK_EQUAL(calls[0].stale_after, 300s);
  CAF_CHECK(calls[0].limit >= 1);
  receive_all(); // workers receive the two sent again
  auto c = stranded("documents/c.txt");
  advance_time(59s);
  sched.run();
  CAF_CHECK_EQUAL(revives(), 1u); // not yet
  advance_time(1s);
  sched.run();
  CAF_CHECK_EQUAL(revives(), 2u);
  CAF_CHECK_EQUAL(sent(), ids({a, b, c}));
  CAF_CHECK_EQUAL(ctx->metrics->rescues.load(), 3);
  CAF_CHECK(work->violations().empty());
}

CAF_TEST(nothing is revived while messages wait in the queue) {
  // An SQS backlog is invisible to the database: an ingestion whose message waits unreceived
  // looks stranded, and sending it again would duplicate it at every sweep.
  auto waiting = stranded("documents/waiting.txt");
  queue->push(waiting.str());
  sweeper();
  advance_time(60s);
  sched.run();
  CAF_CHECK_EQUAL(revives(), 0u);
  CAF_CHECK(work->sent().empty());
  receive_all(); // the backlog is worked off: only what truly has no message is left
  work->hold_by_other(waiting);
  auto lost = stranded("documents/lost.txt");
  advance_time(60s);
  sched.run();
  CAF_CHECK_EQUAL(revives(), 1u);
  CAF_CHECK_EQUAL(sent(), ids({lost}));
}

CAF_TEST(the threshold outlasts any invisibility the queue gives a message) {
  ctx->settings.heartbeat_extension = 600s;
  sweeper();
  auto calls = work->revive_calls();
  CAF_REQUIRE_EQUAL(calls.size(), 1u);
  CAF_CHECK_EQUAL(calls[0].stale_after, 660s);
}

CAF_TEST(nothing is sent while another node holds the sweep lock) {
  auto a = stranded();
  work->hold_sweep_lock_elsewhere(true);
  sweeper();
  advance_time(60s);
  sched.run();
  CAF_CHECK_EQUAL(revives(), 2u);
  CAF_CHECK(work->sent().empty());
  CAF_CHECK_EQUAL(ctx->metrics->rescues.load(), 0);
  work->hold_sweep_lock_elsewhere(false); // that node stopped: this one takes over
  advance_time(60s);
  sched.run();
  CAF_CHECK_EQUAL(sent(), ids({a}));
}

CAF_TEST(an unknown queue depth skips the sweep until the next interval) {
  auto a = stranded();
  queue->fail_next("stats", error::make_transient("sqs.unavailable", "service unavailable"));
  sweeper(); // the queue depth is unknown: no sweep
  CAF_CHECK_EQUAL(revives(), 0u);
  advance_time(60s);
  sched.run();
  CAF_CHECK_EQUAL(revives(), 1u);
  CAF_CHECK_EQUAL(sent(), ids({a}));
}

CAF_TEST(a failed revive leaves its items for the next sweep) {
  // The new messages and the items' marks are one transaction: a revive that fails sent none.
  auto a = stranded();
  work->fail_next("revive", error::make_transient("pg.connection", "connection refused"));
  sweeper();
  CAF_CHECK_EQUAL(revives(), 1u);
  CAF_CHECK(work->sent().empty());
  CAF_CHECK(work->item(a).stranded);
  CAF_CHECK_EQUAL(ctx->metrics->rescues.load(), 0);
  advance_time(60s);
  sched.run();
  CAF_CHECK_EQUAL(sent(), ids({a}));
  CAF_CHECK_EQUAL(ctx->metrics->rescues.load(), 1);
}

CAF_TEST(a sweep still running at the next interval is not started twice) {
  auto a = stranded();
  work->hold("revive");
  sweeper();
  advance_time(60s);
  sched.run();
  CAF_CHECK_EQUAL(revives(), 1u); // the tick found the first sweep running
  work->unhold("revive");
  sched.run();
  CAF_CHECK_EQUAL(sent(), ids({a}));
  receive_all();
  advance_time(60s);
  sched.run();
  CAF_CHECK_EQUAL(revives(), 2u); // the one after it sweeps again
}

CAF_TEST(a sweep whose answer never comes is given up at its deadline) {
  auto a = stranded();
  work->hold("revive");
  sweeper();
  receive_all(); // the statement ran: its message is received, only its answer is lost
  advance_time(60s);
  sched.run();
  CAF_CHECK_EQUAL(revives(), 1u); // still running at the first interval
  advance_time(60s);              // two intervals: the call's deadline
  sched.run();
  advance_time(60s);
  sched.run();
  CAF_CHECK_EQUAL(revives(), 2u); // the next interval sweeps again
  work->unhold("revive");         // the late answer of the first is dropped
  sched.run();
  CAF_CHECK_EQUAL(sent(), ids({a}));
}

CAF_TEST(a stopped sweeper sweeps no more) {
  stranded();
  auto s = sweeper();
  CAF_CHECK_EQUAL(revives(), 1u);
  caf::anon_send_exit(s, caf::exit_reason::user_shutdown);
  sched.run();
  advance_time(10min);
  sched.run();
  CAF_CHECK_EQUAL(revives(), 1u);
  CAF_CHECK_EQUAL(work->sent().size(), 1u);
}

CAF_TEST(documents whose matching message was lost are sent to the match queue again) {
  auto match_queue = std::make_shared<test::fake_queue>();
  work->connect("the-match-queue", match_queue);
  auto matching = std::make_shared<test::fake_matching_repository>(work);
  auto mp = std::make_shared<match_ports>();
  mp->db = matching;
  mp->storage = store;
  mp->match = std::make_shared<test::fake_matcher>();
  match_settings m;
  m.queue = match_queue;
  m.queue_name = "the-match-queue";
  ctx->stages = {ingest_stage(), make_match_stage(mp, m)};
  auto tenant = uuid::v4();
  auto lost = matching->add(tenant);
  auto fine = matching->add(tenant);
  work->strand(lost);
  sweeper();
  CAF_CHECK_EQUAL(sent("the-match-queue"), ids({lost}));
  CAF_CHECK(sent().empty());
  std::vector<revive_request> of_match;
  for (auto& c : work->revive_calls())
    if (c.stage == "match")
      of_match.push_back(c);
  CAF_REQUIRE_EQUAL(of_match.size(), 1u);
  CAF_CHECK_EQUAL(of_match[0].queue, "the-match-queue");
  CAF_CHECK_EQUAL(of_match[0].size_class, "");
  // The item's due time covers a back-off: the threshold is the node's, as for every stage.
  CAF_CHECK_EQUAL(of_match[0].stale_after, 300s);
  // Each once: the next interval (its message received by a worker meanwhile) finds nothing more.
  receive_all(*match_queue);
  advance_time(60s);
  sched.run();
  auto match_revives = [&] {
    size_t n = 0;
    for (auto& c : work->revive_calls())
      n += c.stage == "match" ? 1 : 0;
    return n;
  };
  CAF_CHECK_EQUAL(match_revives(), 2u);
  CAF_CHECK_EQUAL(sent("the-match-queue").size(), 1u);
  CAF_CHECK_EQUAL(work->item(fine).status, "in-progress");
  // While messages wait in the match queue, it does not sweep that stage; the ingest stage goes on.
  work->strand(fine);
  match_queue->push("waiting");
  auto ingest_before = work->revive_calls().size() - match_revives();
  advance_time(60s);
  sched.run();
  CAF_CHECK_EQUAL(match_revives(), 2u);
  CAF_CHECK_EQUAL(work->revive_calls().size() - match_revives(), ingest_before + 1);
}

CAF_TEST_FIXTURE_SCOPE_END()
