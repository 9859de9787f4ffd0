// The shutdown coordinator on the deterministic scheduler: a graceful drain, the grace period, and
// a second request.
#define CAF_SUITE shutdown
#include "caf/test/unit_test_impl.hpp"

#include "actors/shutdown.hpp"
#include "tests/actors/support/poller_fixture.hpp"

using namespace ingestd;
using namespace std::chrono_literals;

using fixture = test::poller_fixture;

CAF_TEST_FIXTURE_SCOPE(shutdown_tests, fixture)

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
