// The relay (actors/relay.cpp) on the deterministic scheduler, with a fake outbox and fake
// queues: what it sends where (at the row's priority), what it marks, and when it looks again.
#define CAF_SUITE relay
#include "caf/test/dsl.hpp"

#include "actors/relay.hpp"
#include "tests/actors/support/actor_fixture.hpp"
#include "tests/support/fakes/stage_fakes.hpp"

using namespace ingestd;
using namespace std::chrono_literals;

namespace {

struct relay_fixture : test::actor_fixture {
  std::shared_ptr<test::fake_outbox> outbox = std::make_shared<test::fake_outbox>();
  std::shared_ptr<test::fake_queue> ingest_q = std::make_shared<test::fake_queue>();
  std::shared_ptr<test::fake_queue> match_q = std::make_shared<test::fake_queue>();
  relay_settings settings;

  relay_fixture() {
    settings.interval = 1000ms;
    settings.batch = 100;
    settings.hold = 60s;
    settings.retention = std::chrono::hours{24 * 7};
    settings.prune_interval = std::chrono::hours{1};
  }

  relay_actor start() {
    auto r = spawn_relay(sys, outbox, {{"ingest", ingest_q}, {"match", match_q}}, settings);
    periodic.push_back(caf::actor_cast<caf::actor>(r));
    return r;
  }

  static bool contains(const std::string& haystack, const std::string& needle) {
    return haystack.find(needle) != std::string::npos;
  }

  void check_no_violations() {
    for (auto& v : outbox->violations())
      CAF_FAIL("outbox: " << v);
    for (auto& v : ingest_q->violations())
      CAF_FAIL("ingest queue: " << v);
    for (auto& v : match_q->violations())
      CAF_FAIL("match queue: " << v);
  }
};

using strings = std::vector<std::string>;

} // namespace

CAF_TEST_FIXTURE_SCOPE(relay_tests, relay_fixture)

CAF_TEST(rows are sent to the queue their destination names and marked sent) {
  auto a = outbox->add("ingest", "a");
  auto b = outbox->add("match", "b");
  auto c = outbox->add("match", "c");
  start();
  sched.run();
  CAF_CHECK_EQUAL(ingest_q->sent_bodies(), strings({"a"}));
  CAF_CHECK_EQUAL(match_q->sent_bodies(), strings({"b", "c"}));
  for (auto id : {a, b, c}) {
    auto row = outbox->row(id);
    CAF_REQUIRE(row.has_value());
    CAF_CHECK(row->sent);
    CAF_CHECK_EQUAL(row->failures, 0);
  }
  auto limits = outbox->take_limits();
  CAF_REQUIRE_EQUAL(limits.size(), 1u);
  CAF_CHECK_EQUAL(limits.front(), 100);
  check_no_violations();
}

CAF_TEST(a row s priority goes with its message) {
  outbox->add("match", "urgent", 5);
  outbox->add("match", "bulk", 90);
  outbox->add("ingest", "plain");
  start();
  sched.run();
  CAF_CHECK_EQUAL(match_q->sent_priority("urgent"), 5);
  CAF_CHECK_EQUAL(match_q->sent_priority("bulk"), 90);
  CAF_CHECK_EQUAL(ingest_q->sent_priority("plain"), 50);
  check_no_violations();
}

CAF_TEST(rows are sent in batches of ten at most) {
  for (int i = 0; i < 25; ++i)
    outbox->add("match", "m" + std::to_string(i));
  start();
  sched.run();
  CAF_CHECK_EQUAL(match_q->sent_bodies().size(), 25u);
  for (int64_t id = 1; id <= 25; ++id)
    CAF_CHECK(outbox->row(id)->sent);
  check_no_violations();
}

CAF_TEST(a refused entry is marked failed and sent in the next round while the others are sent) {
  auto a = outbox->add("ingest", "a");
  auto b = outbox->add("match", "b");
  auto c = outbox->add("match", "c");
  match_q->refuse_next_send("b");
  start();
  sched.run();
  CAF_CHECK(outbox->row(a)->sent);
  CAF_CHECK(outbox->row(c)->sent);
  auto rb = *outbox->row(b);
  CAF_CHECK(!rb.sent);
  CAF_CHECK_EQUAL(rb.failures, 1);
  CAF_CHECK(contains(rb.last_error, "refused"));
  CAF_CHECK_EQUAL(match_q->sent_bodies(), strings({"c"}));
  advance_time(settings.interval);
  sched.run();
  CAF_CHECK(outbox->row(b)->sent);
  CAF_CHECK_EQUAL(match_q->sent_bodies(), strings({"c", "b"}));
  CAF_CHECK_EQUAL(ingest_q->sent_bodies(), strings({"a"})); // not sent twice
  check_no_violations();
}

CAF_TEST(a queue that fails the whole send gets every row of it marked failed) {
  auto a = outbox->add("match", "a");
  auto b = outbox->add("ingest", "b");
  match_q->fail_next("send", error::make_transient("http.timeout", "no answer"));
  start();
  sched.run();
  CAF_CHECK(!outbox->row(a)->sent);
  CAF_CHECK(contains(outbox->row(a)->last_error, "http.timeout"));
  CAF_CHECK(outbox->row(b)->sent);
  advance_time(settings.interval);
  sched.run();
  CAF_CHECK(outbox->row(a)->sent);
  check_no_violations();
}

CAF_TEST(a row for an unknown destination is marked failed with an error naming it) {
  auto x = outbox->add("nowhere", "x");
  auto a = outbox->add("match", "a");
  start();
  sched.run();
  auto rx = *outbox->row(x);
  CAF_CHECK(!rx.sent);
  CAF_CHECK_EQUAL(rx.failures, 1);
  CAF_CHECK(contains(rx.last_error, "nowhere"));
  CAF_CHECK(outbox->row(a)->sent);
  // Tried again each round, and kept unsent.
  advance_time(settings.interval);
  sched.run();
  rx = *outbox->row(x);
  CAF_CHECK_EQUAL(rx.failures, 2);
  CAF_CHECK(!rx.sent);
  check_no_violations();
}

CAF_TEST(a take error is retried after the interval) {
  auto a = outbox->add("match", "a");
  outbox->fail_next("take", error::make_transient("pg.connection", "server closed the connection"));
  start();
  sched.run();
  CAF_CHECK(!outbox->row(a)->sent);
  CAF_CHECK_EQUAL(outbox->take_limits().size(), 1u);
  advance_time(settings.interval - 1ms);
  sched.run();
  CAF_CHECK_EQUAL(outbox->take_limits().size(), 1u);
  advance_time(1ms);
  sched.run();
  CAF_CHECK_EQUAL(outbox->take_limits().size(), 2u);
  CAF_CHECK(outbox->row(a)->sent);
  check_no_violations();
}

CAF_TEST(a take that never answers is given up after its deadline and retried) {
  auto a = outbox->add("match", "a");
  outbox->hold("take");
  start();
  sched.run();
  CAF_CHECK_EQUAL(outbox->held("take"), 1u);
  advance_time(60s);
  sched.run();
  outbox->expire_holds(); // the hold ran out with the deadline
  // The deadline ended the round; the next starts after the interval.
  advance_time(settings.interval);
  sched.run();
  CAF_CHECK_EQUAL(outbox->take_limits().size(), 2u);
  CAF_CHECK_EQUAL(outbox->held("take"), 2u);
  outbox->unhold("take"); // both answers arrive: the late one is dropped
  sched.run();
  CAF_CHECK(outbox->row(a)->sent);
  CAF_CHECK_EQUAL(match_q->sent_bodies().size(), 1u);
}

CAF_TEST(a full batch is followed by the next round at once) {
  settings.batch = 2;
  for (int i = 0; i < 5; ++i)
    outbox->add("match", "m" + std::to_string(i));
  start();
  sched.run();
  // 2 (full), 2 (full), 1: three takes without any time passing.
  CAF_CHECK_EQUAL(outbox->take_limits().size(), 3u);
  CAF_CHECK_EQUAL(match_q->sent_bodies().size(), 5u);
  advance_time(settings.interval);
  sched.run();
  CAF_CHECK_EQUAL(outbox->take_limits().size(), 4u);
  check_no_violations();
}

CAF_TEST(a full batch of rows that all fail waits for the interval rather than spinning) {
  // The failed rows go back to the outbox at once: taking them again at once would spin on the
  // database and the queue without pause.
  settings.batch = 2;
  outbox->add("nowhere", "x");
  outbox->add("nowhere", "y");
  start();
  sched.run(1000);
  CAF_CHECK_EQUAL(outbox->take_limits().size(), 1u);
  advance_time(settings.interval);
  sched.run(1000);
  CAF_CHECK_EQUAL(outbox->take_limits().size(), 2u);
}

CAF_TEST(rows sent but not marked are sent again once their hold ends) {
  auto a = outbox->add("match", "a");
  outbox->fail_next("mark_sent", error::make_transient("pg.connection", "lost"));
  start();
  sched.run();
  CAF_CHECK(!outbox->row(a)->sent);
  CAF_CHECK_EQUAL(match_q->sent_bodies().size(), 1u);
  advance_time(settings.interval);
  sched.run();
  CAF_CHECK_EQUAL(match_q->sent_bodies().size(), 1u); // still held
  outbox->expire_holds();
  advance_time(settings.interval);
  sched.run();
  CAF_CHECK(outbox->row(a)->sent);
  CAF_CHECK_EQUAL(match_q->sent_bodies(), strings({"a", "a"})); // at least once
}

CAF_TEST(sent rows are pruned on the prune interval with the retention) {
  auto a = outbox->add("match", "a");
  auto b = outbox->add("match", "b");
  start();
  sched.run();
  auto calls = outbox->prune_calls();
  CAF_REQUIRE_EQUAL(calls.size(), 1u);
  CAF_CHECK_EQUAL(calls.front(), std::chrono::seconds{std::chrono::hours{24 * 7}});
  outbox->age_sent(a);
  advance_time(std::chrono::minutes{59});
  sched.run();
  CAF_CHECK_EQUAL(outbox->prune_calls().size(), 1u);
  CAF_CHECK(outbox->row(a).has_value());
  advance_time(std::chrono::minutes{1});
  sched.run();
  calls = outbox->prune_calls();
  CAF_CHECK_EQUAL(calls.size(), 2u);
  CAF_CHECK_EQUAL(calls.back(), std::chrono::seconds{std::chrono::hours{24 * 7}});
  CAF_CHECK(!outbox->row(a).has_value());
  CAF_CHECK(outbox->row(b).has_value());
  check_no_violations();
}

CAF_TEST(a failed prune is tried again on the next interval) {
  outbox->fail_next("prune", error::make_transient("pg.connection", "lost"));
  auto a = outbox->add("match", "a");
  start();
  sched.run();
  outbox->age_sent(a);
  advance_time(settings.prune_interval);
  sched.run();
  CAF_CHECK_EQUAL(outbox->prune_calls().size(), 2u);
  CAF_CHECK(!outbox->row(a).has_value());
}

CAF_TEST(events go to their sink in order per document and are marked sent) {
  auto sink = std::make_shared<test::fake_event_sink>();
  std::vector<int64_t> rows;
  for (int i = 0; i < 3; ++i)
    for (auto* doc : {"doc-a", "doc-b"})
      rows.push_back(
          outbox->add_event("events:webhook", std::string{doc} + "-" + std::to_string(i), doc));
  auto other = outbox->add_event("events:sqs", "elsewhere", "doc-a");
  auto a = outbox->add("match", "a");
  auto r = spawn_relay(sys, outbox, {{"match", match_q}}, settings, {{"events:webhook", sink}});
  periodic.push_back(caf::actor_cast<caf::actor>(r));
  sched.run();
  auto got = sink->delivered();
  strings of_a, of_b;
  for (auto& id : got)
    (id.rfind("doc-a", 0) == 0 ? of_a : of_b).push_back(id);
  CAF_CHECK_EQUAL(of_a, strings({"doc-a-0", "doc-a-1", "doc-a-2"}));
  CAF_CHECK_EQUAL(of_b, strings({"doc-b-0", "doc-b-1", "doc-b-2"}));
  for (auto id : rows)
    CAF_CHECK(outbox->row(id)->sent);
  // A sink this relay does not have: its rows stay for the relay that has it; queues go on.
  auto left = *outbox->row(other);
  CAF_CHECK(!left.sent);
  CAF_CHECK_EQUAL(left.failures, 0);
  CAF_CHECK(outbox->row(a)->sent);
  CAF_CHECK(sink->violations().empty());
  check_no_violations();
}

CAF_TEST(a sink that is down holds each document at its first event and is backed off) {
  settings.sink_retry_initial = 5s;
  settings.sink_retry_max = 20s;
  auto sink = std::make_shared<test::fake_event_sink>();
  sink->set_down(true);
  for (int i = 0; i < 3; ++i)
    for (auto* doc : {"doc-a", "doc-b"})
      outbox->add_event("events:webhook", std::string{doc} + "-" + std::to_string(i), doc);
  auto r = spawn_relay(sys, outbox, {}, settings, {{"events:webhook", sink}});
  periodic.push_back(caf::actor_cast<caf::actor>(r));
  sched.run();
  // One refusal per document: its later events were not tried behind the first, and only the
  // refused one counts an attempt.
  CAF_CHECK_EQUAL(sink->refused(), 2);
  for (auto& [id, failures] :
       std::vector<std::pair<int64_t, int>>{{1, 1}, {2, 1}, {3, 0}, {4, 0}}) {
    auto counted = outbox->row(id)->failures; // a copy: the row is a temporary
    CAF_CHECK_EQUAL(counted, failures);
  }
  // Backing off: rounds on the interval leave the sink's events alone.
  advance_time(settings.interval);
  sched.run();
  CAF_CHECK_EQUAL(sink->refused(), 2);
  advance_time(5s);
  sched.run();
  CAF_CHECK_EQUAL(sink->refused(), 4);
  // Back up: after the doubled back-off everything arrives, once and in order.
  sink->set_down(false);
  advance_time(5s);
  sched.run();
  CAF_CHECK(sink->delivered().empty());
  advance_time(5s);
  sched.run();
  strings of_a;
  for (auto& id : sink->delivered())
    if (id.rfind("doc-a", 0) == 0)
      of_a.push_back(id);
  CAF_CHECK_EQUAL(of_a, strings({"doc-a-0", "doc-a-1", "doc-a-2"}));
  CAF_CHECK_EQUAL(sink->delivered().size(), 6u);
  check_no_violations();
}

CAF_TEST(an event refused max_attempts times is dead and its documents later events go on) {
  settings.max_attempts = 2;
  settings.sink_retry_initial = 1s;
  settings.sink_retry_max = 1s;
  auto sink = std::make_shared<test::fake_event_sink>();
  for (int i = 0; i < 2; ++i)
    sink->fail_next("deliver", error::make_transient("events.http_500", "the receiver failed"));
  auto first = outbox->add_event("events:webhook", "doc-a-0", "doc-a");
  outbox->add_event("events:webhook", "doc-a-1", "doc-a");
  auto r = spawn_relay(sys, outbox, {}, settings, {{"events:webhook", sink}});
  periodic.push_back(caf::actor_cast<caf::actor>(r));
  sched.run();
  auto once = outbox->row(first)->failures; // a copy: the row is a temporary
  CAF_CHECK_EQUAL(once, 1);
  CAF_CHECK(!outbox->row(first)->dead);
  CAF_CHECK(sink->delivered().empty());
  advance_time(1s);
  sched.run();
  // The second refusal was the last attempt: dead, with its error; the next event goes out.
  auto dead = *outbox->row(first);
  CAF_CHECK(dead.dead);
  CAF_CHECK(!dead.sent);
  CAF_CHECK(contains(dead.last_error, "the receiver failed"));
  advance_time(1s);
  sched.run();
  CAF_CHECK_EQUAL(sink->delivered(), strings({"doc-a-1"}));
  CAF_CHECK_EQUAL(sink->refused(), 2);
  check_no_violations();
}

CAF_TEST_FIXTURE_SCOPE_END()
