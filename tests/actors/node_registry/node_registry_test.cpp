// The node registry actor (actors/node_registry.cpp) on the deterministic scheduler with the
// registry fake: a refresh per interval with the node's figures and state, the drain request
// handed to the node's flag, no pile-up behind a slow database, and the prune schedule.
#define CAF_SUITE node_registry
#include "caf/test/dsl.hpp"

#include "actors/node_registry.hpp"
#include "tests/actors/support/actor_fixture.hpp"
#include "tests/support/fakes/node_fakes.hpp"

using namespace ingestd;
using namespace std::chrono_literals;

namespace {

struct node_registry_fixture : test::actor_fixture {
  std::shared_ptr<test::fake_node_repository> nodes
      = std::make_shared<test::fake_node_repository>();
  std::shared_ptr<node_drain_flags> flags = std::make_shared<node_drain_flags>();
  node_registration me;
  node_registry_settings settings;

  node_registry_fixture() {
    me.id = "node-a";
    me.incarnation = uuid::v4();
    me.host = "host";
    me.pid = 42;
    me.version = "0.1.0";
    me.stages = "ingest";
    me.capacity = 10;
    me.lease = 30s;
    nodes->register_node(me, [](const result<void>&) {});
    settings.id = me.id;
    settings.incarnation = me.incarnation;
    settings.interval = 1000ms;
    settings.retention = std::chrono::hours{24};
    settings.prune_interval = std::chrono::hours{1};
  }

  node_registry_actor start() {
    auto a = spawn_node_registry(sys, nodes, settings, ctx->metrics, ctx->admission, flags);
    periodic.push_back(caf::actor_cast<caf::actor>(a));
    sched.run();
    return a;
  }

  /// One interval later, everything it caused run.
  void next_tick() {
    advance_time(settings.interval);
    sched.run();
  }

  void check_no_violations() {
    for (auto& v : nodes->violations())
      CAF_FAIL("node repository: " << v);
  }
};

} // namespace

CAF_TEST_FIXTURE_SCOPE(node_registry_tests, node_registry_fixture)

CAF_TEST(each interval refreshes the row with in flight and the state) {
  start();
  CAF_CHECK(nodes->refreshes().empty());
  for (int i = 0; i < 3; ++i)
    ctx->admission->job_started();
  next_tick();
  auto row = nodes->find("node-a");
  CAF_REQUIRE(row.has_value());
  CAF_CHECK_EQUAL(row->refreshes, 1);
  CAF_CHECK_EQUAL(row->in_flight, 3);
  CAF_CHECK_EQUAL(row->state, "running");
  // The capacity usage: slots in use over the budget (jobs over max_in_flight without one).
  auto usage = [&] { return nodes->refreshes().back().capacity_usage; };
  CAF_CHECK_EQUAL(usage(), 3.0 / 1000.0);
  ctx->admission->configure({12, 10, 0, 1, std::chrono::seconds{300}});
  CAF_REQUIRE(ctx->admission->admit(5));
  flags->draining = true;
  ctx->admission->job_ended();
  ctx->admission->job_ended();
  next_tick();
  CAF_CHECK_EQUAL(usage(), 0.5);
  row = nodes->find("node-a");
  CAF_CHECK_EQUAL(row->refreshes, 2);
  CAF_CHECK_EQUAL(row->in_flight, 1);
  CAF_CHECK_EQUAL(row->state, "draining");
  CAF_CHECK(!flags->drain_requested);
  check_no_violations();
}

CAF_TEST(a drain request on the row sets the drain flag of the node) {
  start();
  next_tick();
  CAF_CHECK(!flags->drain_requested);
  nodes->request_drain(std::string{"node-a"}, [](const result<std::vector<std::string>>&) {});
  next_tick();
  CAF_CHECK(flags->drain_requested);
  check_no_violations();
}

CAF_TEST(jobs finished count for one minute) {
  start();
  for (int i = 0; i < 3; ++i)
    ctx->metrics->job_finished("ingest", "completed", "none");
  ctx->metrics->job_finished("ingest", "failed", "permanent");
  ctx->metrics->job_finished("ingest", "retried", "transient"); // not finished
  next_tick();
  CAF_CHECK_EQUAL(static_cast<int>(nodes->find("node-a").value().done_last_minute), 4);
  for (int i = 0; i < 61; ++i)
    next_tick();
  CAF_CHECK_EQUAL(static_cast<int>(nodes->find("node-a").value().done_last_minute), 0);
  check_no_violations();
}

CAF_TEST(a refresh still waiting holds back the next ones) {
  start();
  nodes->hold("refresh");
  next_tick();
  next_tick();
  next_tick();
  CAF_CHECK_EQUAL(nodes->refreshes().size(), 1u);
  nodes->unhold("refresh");
  sched.run();
  next_tick();
  CAF_CHECK_EQUAL(nodes->refreshes().size(), 2u);
  check_no_violations();
}

CAF_TEST(a failed refresh is tried again at the next tick) {
  start();
  nodes->fail_next("refresh", error::make_transient("pg.08006", "connection lost"));
  next_tick();
  CAF_CHECK_EQUAL(static_cast<int>(nodes->find("node-a").value().refreshes), 0);
  next_tick();
  CAF_CHECK_EQUAL(static_cast<int>(nodes->find("node-a").value().refreshes), 1);
  check_no_violations();
}

CAF_TEST(a row taken over by another process is left alone) {
  start();
  auto other = me;
  other.incarnation = uuid::v4();
  other.pid = 43;
  nodes->register_node(other, [](const result<void>&) {});
  next_tick();
  auto row = nodes->find("node-a");
  CAF_CHECK_EQUAL(row->node.pid, 43);
  CAF_CHECK_EQUAL(row->refreshes, 0);
  CAF_CHECK(!flags->drain_requested);
  check_no_violations();
}

CAF_TEST(rows are pruned at start and every prune interval) {
  start();
  CAF_CHECK_EQUAL(nodes->prune_calls().size(), 1u);
  CAF_CHECK_EQUAL(nodes->prune_calls().front().count(), 24 * 3600);
  advance_time(settings.prune_interval);
  sched.run();
  CAF_CHECK_EQUAL(nodes->prune_calls().size(), 2u);
  check_no_violations();
}

CAF_TEST_FIXTURE_SCOPE_END()
