// The heartbeat's batching, incremental extension, the 12-hour limit and lost claims; the
// deadline of each batch call (a lost answer counts as a failed call, a late one is dropped).
#define CAF_SUITE heartbeat
#include "caf/test/unit_test_impl.hpp"

#include "tests/actors/support/actor_fixture.hpp"

using namespace ingestd;
using namespace std::chrono_literals;

namespace {

/// Stands in for a job: records what the heartbeat tells it.
struct fixture : test::actor_fixture {
  std::vector<std::string> lost;
  caf::actor job_stub = sys.spawn([this](caf::event_based_actor*) -> caf::behavior {
    return {
      [this](lost_atom, std::string& reason) { lost.push_back(reason); },
    };
  });

  /// Claims an ingestion in the fake database and tracks it.
  uuid track(const heartbeat_actor& hb, std::chrono::steady_clock::time_point received = std::chrono::steady_clock::now()) {
    auto id = db->add("documents/x.txt");
    auto msg = deliver(id.str());
    lease_ref ref;
    db->claim({claim_request{id, uuid::v7()}}, "w", 300s, [&](auto r) {
      ref = lease_ref{id, (*r)[0]->claim_token};
    });
    caf::anon_send(hb, track_atom_v, tracked_claim{msg.receipt, ref, job_stub, received});
    return id;
  }
};

} // namespace

CAF_TEST_FIXTURE_SCOPE(heartbeat_tests, fixture)

CAF_TEST(new claims are extended in one batch soon after tracking) {
  ctx->settings.heartbeat_extension = 300s;
  auto hb = heartbeat();
  for (int i = 0; i < 25; ++i)
    track(hb);
  sched.run();
  CAF_CHECK(queue->visibility_calls().empty());
  advance_time(1s);
  sched.run();
  auto calls = queue->visibility_calls();
  CAF_CHECK_EQUAL(calls.size(), 25u);
  for (auto& c : calls)
    CAF_CHECK_EQUAL(c.timeout, 300s);
}

CAF_TEST(each tick extends every claim and renews every lease in one statement) {
  ctx->settings.heartbeat_rate = 60s;
  ctx->settings.heartbeat_extension = 300s;
  auto hb = heartbeat();
  for (int i = 0; i < 12; ++i)
    track(hb);
  sched.run();
  advance_time(1s);
  sched.run();
  advance_time(60s);
  sched.run();
  CAF_CHECK_EQUAL(queue->visibility_calls().size(), 24u);
  CAF_CHECK_EQUAL(db->renew_batch_sizes(), std::vector<size_t>{12});
  advance_time(60s);
  sched.run();
  CAF_CHECK_EQUAL(db->renew_batch_sizes(), (std::vector<size_t>{12, 12}));
  CAF_CHECK(lost.empty());
}

CAF_TEST(untracked claims are left alone) {
  auto hb = heartbeat();
  auto id = track(hb);
  sched.run();
  // Listed as held (for a shutdown that runs out of time) until untracked.
  CAF_CHECK(ctx->claims->ids() == std::vector<uuid>{id});
  caf::anon_send(hb, untrack_atom_v, id);
  sched.run();
  CAF_CHECK(ctx->claims->ids().empty());
  advance_time(61s);
  sched.run();
  CAF_CHECK(queue->visibility_calls().empty());
  CAF_CHECK_EQUAL(db->renew_calls(), 0);
}

CAF_TEST(a job that dies without untracking no longer has its lease renewed) {
  auto hb = heartbeat();
  auto dying = sys.spawn([](caf::event_based_actor*) -> caf::behavior {
    return {[](lost_atom, std::string&) {}};
  });
  auto id = db->add("documents/x.txt");
  lease_ref ref;
  db->claim({claim_request{id, uuid::v7()}}, "w", 300s, [&](auto r) { ref = lease_ref{id, (*r)[0]->claim_token}; });
  caf::anon_send(hb, track_atom_v, tracked_claim{deliver(id.str()).receipt, ref, dying, std::chrono::steady_clock::now()});
  sched.run();
  CAF_CHECK_EQUAL(ctx->metrics->tracked_claims.load(), 1);
  caf::anon_send_exit(dying, caf::exit_reason::kill);
  sched.run();
  CAF_CHECK_EQUAL(ctx->metrics->tracked_claims.load(), 0);
  CAF_CHECK(ctx->claims->ids().empty());
  advance_time(61s);
  sched.run();
  CAF_CHECK_EQUAL(db->renew_calls(), 0);
}

CAF_TEST(a lost lease is told to the job) {
  auto hb = heartbeat();
  auto id = track(hb);
  sched.run();
  db->steal_claim(id);
  advance_time(61s);
  sched.run();
  CAF_REQUIRE_EQUAL(lost.size(), 1u);
  CAF_CHECK(lost[0].find("lease lost") != std::string::npos);
  CAF_CHECK(ctx->claims->ids().empty());
}

CAF_TEST(a refused extension is told to the job) {
  auto hb = heartbeat();
  auto id = track(hb);
  (void) id;
  sched.run();
  for (auto& c : queue->visibility_calls())
    queue->refuse_receipt(c.receipt);
  // The receipt the heartbeat holds: the only message received so far.
  queue->refuse_receipt("r1-m1");
  advance_time(1s);
  sched.run();
  CAF_REQUIRE_EQUAL(lost.size(), 1u);
  CAF_CHECK(lost[0].find("refused") != std::string::npos);
}

CAF_TEST(extension stops at the 12-hour visibility total of SQS) {
  ctx->settings.heartbeat_rate = 60s;
  ctx->settings.heartbeat_extension = 300s;
  auto hb = heartbeat();
  auto now = std::chrono::steady_clock::now();
  track(hb, now - 12h + 200s);  // 200 s left: one more extension of at most 200 s
  track(hb, now - 12h + 30s);   // 30 s left: less than a heartbeat period
  sched.run();
  advance_time(1s);
  sched.run();
  auto calls = queue->visibility_calls();
  CAF_REQUIRE_EQUAL(calls.size(), 1u);
  CAF_CHECK(calls[0].timeout <= 200s && calls[0].timeout > 60s);
  CAF_REQUIRE_EQUAL(lost.size(), 1u);
  CAF_CHECK(lost[0].find("12-hour") != std::string::npos);
}

CAF_TEST(a renewal that never answers times out and is retried next tick without dropping the claim) {
  ctx->settings.heartbeat_rate = 60s;
  ctx->settings.heartbeat_extension = 300s;
  auto hb = heartbeat();
  auto id = track(hb);
  sched.run();
  advance_time(1s);
  sched.run();
  // The database would answer "lost", but the answer never arrives.
  db->steal_claim(id);
  db->hold("renew_leases");
  advance_time(60s);
  sched.run();
  CAF_CHECK_EQUAL(db->held("renew_leases"), 1u);
  // The deadline (one tick) passes: logged and retried, the claim is kept.
  advance_time(60s);
  sched.run();
  CAF_CHECK(lost.empty());
  CAF_CHECK(ctx->claims->ids() == std::vector<uuid>{id});
  CAF_CHECK_EQUAL(db->renew_batch_sizes(), (std::vector<size_t>{1, 1}));
  // The answers come, one late (dropped: its call counted as failed already), the next in
  // time: the database says the lease is lost, so the claim is dropped, once.
  db->unhold("renew_leases");
  sched.run();
  CAF_REQUIRE_EQUAL(lost.size(), 1u);
  CAF_CHECK(lost[0].find("lease lost") != std::string::npos);
  CAF_CHECK(ctx->claims->ids().empty());
}

CAF_TEST(an extension that never answers times out and drops a claim whose visibility ran out) {
  ctx->settings.heartbeat_rate = 60s;
  ctx->settings.heartbeat_extension = 300s;
  ctx->settings.visibility_timeout = 60s;
  auto hb = heartbeat();
  auto now = std::chrono::steady_clock::now();
  // Received an hour ago with a 60 s visibility: it has run out unless an extension succeeds.
  track(hb, now - 1h);
  // Received now: its visibility still runs.
  auto fresh = track(hb, now);
  queue->hold("change_visibility");
  sched.run();
  advance_time(1s);
  sched.run();
  CAF_CHECK_EQUAL(queue->held("change_visibility"), 1u);
  CAF_CHECK(lost.empty());
  // No answer within the deadline: the extension counts as failed.
  advance_time(60s);
  sched.run();
  CAF_REQUIRE_EQUAL(lost.size(), 1u);
  CAF_CHECK(lost[0].find("visibility expired") != std::string::npos);
  CAF_CHECK(lost[0].find("queue.change_visibility.timeout") != std::string::npos);
  CAF_CHECK(ctx->claims->ids() == std::vector<uuid>{fresh});
  // The late answer is dropped; the next ticks keep extending the claim still held.
  queue->unhold("change_visibility");
  sched.run();
  advance_time(60s);
  sched.run();
  CAF_CHECK_EQUAL(lost.size(), 1u);
  CAF_CHECK(ctx->claims->ids() == std::vector<uuid>{fresh});
}

CAF_TEST_FIXTURE_SCOPE_END()
