// The poller's backpressure, error backoff and drain, and the shutdown coordinator, on the
// deterministic scheduler.
#define CAF_SUITE poller
#include "caf/test/unit_test_impl.hpp"

#include "actors/poller.hpp"
#include "actors/shutdown.hpp"
#include "tests/actors/support/actor_fixture.hpp"

using namespace ingestd;
using namespace std::chrono_literals;

namespace {

struct fixture : test::actor_fixture {
  heartbeat_actor hb = heartbeat();

  void add_documents(int n) {
    for (int i = 0; i < n; ++i) {
      auto id = db->add("documents/d" + std::to_string(i) + ".txt");
      store->set("documents/d" + std::to_string(i) + ".txt", "text");
      queue->push(id.str());
    }
  }

  poller_actor poller() {
    auto p = spawn_poller(sys, ctx, {hb});
    periodic.push_back(caf::actor_cast<caf::actor>(p));
    return p;
  }
};

} // namespace

CAF_TEST_FIXTURE_SCOPE(poller_tests, fixture)

CAF_TEST(the poller never runs more jobs than max_in_flight and resumes as jobs end) {
  ctx->settings.max_in_flight = 3;
  ocr->hold("transcribe");
  add_documents(5);
  auto p = poller();
  sched.run();
  CAF_CHECK_EQUAL(ctx->metrics->in_flight.load(), 3);
  auto sizes = queue->receive_sizes();
  CAF_REQUIRE_EQUAL(sizes.size(), 1u);  // full after the first receive: no second one
  CAF_CHECK_EQUAL(sizes[0], 3);
  ocr->unhold("transcribe");  // the three jobs finish, and new OCR calls are not held
  sched.run();
  CAF_CHECK_EQUAL(outcomes.size(), 5u);
  for (auto& o : outcomes)
    CAF_CHECK_EQUAL(o.result, job_result::completed);
  for (auto n : queue->receive_sizes())
    CAF_CHECK(n >= 1 && n <= 3);
  CAF_CHECK(queue->violations().empty());
}

CAF_TEST(a receive asks for at most ten messages) {
  ctx->settings.max_in_flight = 1000;
  add_documents(25);
  auto p = poller();
  sched.run();
  CAF_CHECK_EQUAL(outcomes.size(), 25u);
  for (auto n : queue->receive_sizes())
    CAF_CHECK_EQUAL(n, 10);
}

CAF_TEST(receive errors back off instead of spinning) {
  queue->fail_next("receive", error::make_transient("pg.connection", "connection refused"));
  queue->fail_next("receive", error::make_transient("pg.connection", "connection refused"));
  auto p = poller();
  sched.run();
  CAF_CHECK_EQUAL(queue->receive_sizes().size(), 1u);  // waiting for the backoff timer
  CAF_CHECK_EQUAL(ctx->metrics->queue_receive_errors.load(), 1);
  advance_time(1s);
  sched.run();
  CAF_CHECK_EQUAL(queue->receive_sizes().size(), 2u);
  advance_time(2s);
  sched.run();
  CAF_CHECK_EQUAL(queue->receive_sizes().size(), 3u);  // recovered: a long poll is waiting now
  CAF_CHECK_EQUAL(queue->pending_receives(), 1u);
  add_documents(1);
  queue->deliver_pending();
  sched.run();
  CAF_CHECK_EQUAL(outcomes.size(), 1u);
}

CAF_TEST(shutdown drains running jobs then stops) {
  ocr->hold("transcribe");
  add_documents(2);
  auto p = poller();
  sched.run();
  bool stopped = false;
  auto coordinator = spawn_shutdown(sys, ctx, p, {caf::actor_cast<caf::actor>(hb)}, [&] { stopped = true; });
  caf::anon_send(coordinator, shutdown_atom_v);
  sched.run();
  CAF_CHECK(!stopped);  // two jobs still running, and the current long poll
  auto receives = queue->receive_sizes().size();
  ocr->unhold("transcribe");
  sched.run();
  CAF_CHECK(!stopped);  // the long poll has not returned yet
  queue->end_waits();
  sched.run();
  CAF_CHECK(stopped);
  CAF_CHECK_EQUAL(queue->receive_sizes().size(), receives);  // no receive after the stop
  CAF_CHECK_EQUAL(outcomes.size(), 2u);
  for (auto& o : outcomes)
    CAF_CHECK_EQUAL(o.result, job_result::completed);
}

CAF_TEST(past the grace period running jobs give their work back) {
  ctx->settings.shutdown_grace = 10s;
  ocr->hold("transcribe");
  add_documents(2);
  auto p = poller();
  sched.run();
  bool stopped = false;
  auto coordinator = spawn_shutdown(sys, ctx, p, {caf::actor_cast<caf::actor>(hb)}, [&] { stopped = true; });
  caf::anon_send(coordinator, shutdown_atom_v);
  sched.run();
  advance_time(11s);
  sched.run();
  add_documents(1);          // the long poll still in progress receives one more message
  queue->deliver_pending();  // ... which is given back at once, not processed
  sched.run();
  CAF_CHECK(stopped);
  CAF_REQUIRE_EQUAL(outcomes.size(), 2u);
  for (auto& o : outcomes)
    CAF_CHECK_EQUAL(o.result, job_result::released);
  size_t made_visible = 0;
  for (auto& c : queue->visibility_calls())
    if (c.timeout == 0s)
      ++made_visible;
  // The two jobs give their messages back; the late receive then gets those two again plus the
  // new one, and gives all three back.
  CAF_CHECK_EQUAL(made_visible, 5u);
  CAF_CHECK_EQUAL(ocr->calls(), 2);
}

CAF_TEST(a second shutdown request releases at once) {
  ocr->hold("transcribe");
  add_documents(1);
  auto p = poller();
  sched.run();
  bool stopped = false;
  auto coordinator = spawn_shutdown(sys, ctx, p, {caf::actor_cast<caf::actor>(hb)}, [&] { stopped = true; });
  caf::anon_send(coordinator, shutdown_atom_v);
  sched.run();
  caf::anon_send(coordinator, shutdown_atom_v);
  sched.run();
  queue->end_waits();
  sched.run();
  CAF_CHECK(stopped);
  CAF_REQUIRE_EQUAL(outcomes.size(), 1u);
  CAF_CHECK_EQUAL(outcomes.back().result, job_result::released);
}

CAF_TEST_FIXTURE_SCOPE_END()
