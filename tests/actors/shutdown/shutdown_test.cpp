// The shutdown coordinator on the deterministic scheduler: a graceful drain, the grace period, and
// a second request; and a node built by start_node, drained and stopped through it.
#define CAF_SUITE shutdown
#include "caf/test/dsl.hpp"

#include "actors/node.hpp"
#include "actors/shutdown.hpp"
#include "stages/match/match_stage.hpp"
#include "tests/actors/support/poller_fixture.hpp"
#include "tests/support/fakes/stage_fakes.hpp"

using namespace ingestd;
using namespace std::chrono_literals;

CAF_TEST_FIXTURE_SCOPE(shutdown_tests, test::poller_fixture)

CAF_TEST(shutdown drains running jobs then stops) {
  ocr->hold("transcribe");
  add_documents(2);
  auto p = poller();
  sched.run();
  bool stopped = false;
  auto coordinator
      = spawn_shutdown(sys, ctx, {p}, {caf::actor_cast<caf::actor>(hb)}, [&] { stopped = true; });
  caf::anon_send(coordinator, shutdown_atom_v);
  sched.run();
  CAF_CHECK(!stopped); // two jobs still running, and the current long poll
  auto receives = queue->receive_sizes().size();
  ocr->unhold("transcribe");
  sched.run();
  CAF_CHECK(!stopped); // the long poll has not returned yet
  queue->end_waits();
  sched.run();
  CAF_CHECK(stopped);
  CAF_CHECK_EQUAL(queue->receive_sizes().size(), receives); // no receive after the stop
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
  auto coordinator
      = spawn_shutdown(sys, ctx, {p}, {caf::actor_cast<caf::actor>(hb)}, [&] { stopped = true; });
  caf::anon_send(coordinator, shutdown_atom_v);
  sched.run();
  advance_time(11s);
  sched.run();
  add_documents(1);         // the long poll still in progress receives one more message
  queue->deliver_pending(); // ... which is given back at once, not processed
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
  auto coordinator
      = spawn_shutdown(sys, ctx, {p}, {caf::actor_cast<caf::actor>(hb)}, [&] { stopped = true; });
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

CAF_TEST(a node drains the pollers of every stage then stops every actor it started) {
  // The match stage beside the ingest stage, each with its poller.
  auto match_queue = std::make_shared<test::fake_queue>();
  auto matching = std::make_shared<test::fake_matching_repository>(work);
  auto matcher = std::make_shared<test::fake_matcher>();
  auto mp = std::make_shared<match_ports>();
  mp->db = matching;
  mp->storage = store;
  mp->match = matcher;
  match_settings ms;
  ms.queue = match_queue;
  ctx->stages = {ingest_stage(), make_match_stage(mp, ms)};
  ctx->settings.heartbeat_actors = 2;
  ocr->hold("transcribe");
  matcher->hold("decide");
  add_documents(1);
  auto doc = matching->add(uuid::v7(), "{}");
  match_queue->push(doc.str());
  bool stopped = false;
  node_options opts;
  opts.sweeper = true;
  opts.on_stopped = [&] { stopped = true; };
  auto actors_before = sys.registry().running();
  auto n = start_node(sys, ctx, opts);
  sched.run();
  CAF_CHECK_EQUAL(n.pollers.size(), 2u);
  CAF_CHECK_EQUAL(n.heartbeats.size(), 2u);
  CAF_CHECK(n.sweeper);
  CAF_CHECK_EQUAL(ctx->admission->in_flight(), 2);
  caf::anon_send(n.coordinator, shutdown_atom_v);
  sched.run();
  CAF_CHECK(!stopped); // a job of each stage still runs
  ocr->unhold("transcribe");
  sched.run();
  CAF_CHECK(!stopped);
  matcher->unhold("decide");
  sched.run();
  queue->end_waits();
  match_queue->end_waits();
  sched.run();
  CAF_CHECK(stopped);
  CAF_REQUIRE_EQUAL(outcomes.size(), 2u);
  for (auto& o : outcomes)
    CAF_CHECK_EQUAL(o.result, job_result::completed);
  // The pollers, heartbeats, sweeper and the coordinator itself are gone.
  CAF_CHECK_EQUAL(sys.registry().running(), actors_before);
}

CAF_TEST_FIXTURE_SCOPE_END()
