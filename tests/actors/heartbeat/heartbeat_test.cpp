// The heartbeat's batching, incremental extension, the 12-hour limit and lost claims; one lease
// renewal for the claims of every stage, extensions on each stage's own queue, and cancel
// requests asked for the stages whose work can be cancelled; the deadline of each batch call (a
// lost answer counts as a failed call, a late one is dropped).
#define CAF_SUITE heartbeat
#include "caf/test/dsl.hpp"

#include <algorithm>

#include "stages/match/match_stage.hpp"
#include "tests/actors/support/actor_fixture.hpp"

using namespace ingestd;
using namespace std::chrono_literals;

namespace {

/// Stands in for a job: records what the heartbeat tells it.
struct heartbeat_fixture : test::actor_fixture {
  std::vector<std::string> lost;
  int cancels = 0;
  /// A job as the heartbeat sees it: told that its claim is lost or to be cancelled. The
  /// fixture is a spawn argument rather than a capture: CAF 0.17.6 dereferences a null argument
  /// tuple when a function actor is spawned without arguments, which libstdc++'s assertions (on
  /// in the sanitizer build) stop.
  static caf::behavior job_stub_actor(caf::event_based_actor*, heartbeat_fixture* f) {
    return {
        [f](lost_atom, std::string& reason) { f->lost.push_back(reason); },
        [f](cancel_atom) { ++f->cancels; },
    };
  }
  caf::actor job_stub = sys.spawn(job_stub_actor, this);
  std::shared_ptr<const stage> ingest_st = ingest_stage();

  /// Claims the work item `id` of `s` in the fake table, as a job's claim does.
  claim_ref claim(const uuid& id, const stage& s) {
    claim_ref ref;
    work->claim({claim_request{id, uuid::v7(), s.name}}, "w", 300s,
                [&](result<std::vector<claim_answer>> r) {
                  CAF_REQUIRE(r && r->size() == 1u);
                  CAF_REQUIRE_EQUAL(r->front().outcome, claim_outcome::granted);
                  ref = r->front().work.ref();
                });
    return ref;
  }

  /// Claims a new ingestion and tracks it.
  uuid track(const heartbeat_actor& hb,
             std::chrono::steady_clock::time_point received = std::chrono::steady_clock::now()) {
    auto id = db->add("documents/x.txt");
    auto msg = deliver(id.str());
    caf::anon_send(hb, track_atom_v,
                   tracked_claim{msg.receipt, claim(id, *ingest_st), job_stub, received, ingest_st,
                                 db->row(id).document_id, db->row(id).tenant_id});
    return id;
  }
};

} // namespace

CAF_TEST_FIXTURE_SCOPE(heartbeat_tests, heartbeat_fixture)

CAF_TEST(new claims whose visibility runs out soon are extended in one batch after tracking) {
  // The receive visibility (20 s) was mostly spent before the claims: less than two heartbeats
  // (5 s each) would be left at the next tick.
  ctx->settings.heartbeat_rate = 5s;
  ctx->settings.heartbeat_extension = 300s;
  auto hb = heartbeat();
  auto long_ago = std::chrono::steady_clock::now() - (ctx->settings.visibility_timeout - 10s);
  for (int i = 0; i < 25; ++i)
    track(hb, long_ago);
  track(hb); // received just now: it waits for the tick
  sched.run();
  CAF_CHECK(queue->visibility_calls().empty());
  advance_time(1s);
  sched.run();
  auto calls = queue->visibility_calls();
  CAF_CHECK_EQUAL(calls.size(), 25u);
  for (auto& c : calls)
    CAF_CHECK_EQUAL(c.timeout, 300s);
}

CAF_TEST(new claims with visibility for three heartbeats wait for the tick) {
  ctx->settings.heartbeat_rate = 5s;
  ctx->settings.heartbeat_extension = 20s;
  ctx->settings.visibility_timeout = 20s;
  auto hb = heartbeat();
  for (int i = 0; i < 10; ++i)
    track(hb);
  sched.run();
  advance_time(1s);
  sched.run();
  CAF_CHECK(queue->visibility_calls().empty());
  // The tick extends every claim, these among them, and renews every lease.
  advance_time(4s);
  sched.run();
  CAF_CHECK_EQUAL(queue->visibility_calls().size(), 10u);
  CAF_CHECK_EQUAL(work->renew_batch_sizes(), std::vector<size_t>{10});
  CAF_CHECK(lost.empty());
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
  CAF_CHECK_EQUAL(work->renew_batch_sizes(), std::vector<size_t>{12});
  advance_time(60s);
  sched.run();
  CAF_CHECK_EQUAL(work->renew_batch_sizes(), (std::vector<size_t>{12, 12}));
  CAF_CHECK(lost.empty());
  CAF_CHECK(work->violations().empty());
}

CAF_TEST(one renewal covers the claims of every stage and each message is kept on its own queue) {
  ctx->settings.heartbeat_rate = 60s;
  ctx->settings.heartbeat_extension = 300s;
  auto match_queue = std::make_shared<test::fake_queue>();
  match_settings ms;
  ms.queue = match_queue;
  auto match = make_match_stage(std::make_shared<match_ports>(), ms);
  auto hb = heartbeat();
  auto ingestion = track(hb);
  auto doc = uuid::v7();
  work->add("match", doc, doc, uuid::v7());
  match_queue->push(doc.str());
  auto msg = receive(*match_queue);
  caf::anon_send(hb, track_atom_v,
                 tracked_claim{msg.receipt, claim(doc, *match), job_stub,
                               std::chrono::steady_clock::now(), match, doc, uuid::v7()});
  sched.run();
  advance_time(1s);
  sched.run();
  CAF_CHECK_EQUAL(queue->visibility_calls().size(), 1u);
  CAF_CHECK_EQUAL(match_queue->visibility_calls().size(), 1u);
  advance_time(60s);
  sched.run();
  CAF_CHECK_EQUAL(work->renew_batch_sizes(), std::vector<size_t>{2});
  CAF_CHECK_EQUAL(queue->visibility_calls().size(), 2u);
  CAF_CHECK_EQUAL(match_queue->visibility_calls().size(), 2u);
  CAF_CHECK(lost.empty());
  // The match stage's lease lost: told to its job like any other.
  work->steal_claim(doc);
  advance_time(60s);
  sched.run();
  CAF_REQUIRE_EQUAL(lost.size(), 1u);
  CAF_CHECK(ctx->claims->ids() == std::vector<uuid>{ingestion});
}

CAF_TEST(cancel requests are asked for the claims of cancellable stages only and told once) {
  ctx->settings.heartbeat_rate = 60s;
  ctx->settings.heartbeat_extension = 300s;
  auto match_queue = std::make_shared<test::fake_queue>();
  match_settings ms;
  ms.queue = match_queue;
  auto match = make_match_stage(std::make_shared<match_ports>(), ms);
  CAF_REQUIRE(ingest_st->cancellable);
  CAF_REQUIRE(!match->cancellable);
  auto hb = heartbeat();
  auto ingestion = track(hb);
  auto doc = uuid::v7();
  work->add("match", doc, doc, uuid::v7());
  match_queue->push(doc.str());
  caf::anon_send(hb, track_atom_v,
                 tracked_claim{receive(*match_queue).receipt, claim(doc, *match), job_stub,
                               std::chrono::steady_clock::now(), match, doc, uuid::v7()});
  sched.run();
  advance_time(60s);
  sched.run();
  auto calls = work->cancel_request_calls();
  CAF_REQUIRE_EQUAL(calls.size(), 1u);
  CAF_CHECK(calls[0] == std::vector<uuid>{ingestion});
  CAF_CHECK_EQUAL(cancels, 0);
  work->request_cancel(ingestion);
  advance_time(60s);
  sched.run();
  CAF_CHECK_EQUAL(cancels, 1);
  // Told once: the job stops at its next step and untracks; until then it is not asked again.
  advance_time(60s);
  sched.run();
  CAF_CHECK_EQUAL(cancels, 1);
  calls = work->cancel_request_calls();
  CAF_CHECK_EQUAL(calls.size(), 2u);
  CAF_CHECK(lost.empty());
}

CAF_TEST(a failed cancel look up is tried again at the next tick) {
  ctx->settings.heartbeat_rate = 60s;
  ctx->settings.heartbeat_extension = 300s;
  auto hb = heartbeat();
  auto id = track(hb);
  sched.run();
  work->request_cancel(id);
  work->fail_next("cancel_requests", error::make_transient("pg.connection", "connection lost"));
  advance_time(60s);
  sched.run();
  CAF_CHECK_EQUAL(cancels, 0);
  advance_time(60s);
  sched.run();
  CAF_CHECK_EQUAL(cancels, 1);
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
  CAF_CHECK_EQUAL(work->renew_calls(), 0);
}

CAF_TEST(a job that dies without untracking no longer has its lease renewed) {
  auto hb = heartbeat();
  auto dying = sys.spawn(job_stub_actor, this);
  auto id = db->add("documents/x.txt");
  auto ref = claim(id, *ingest_st);
  caf::anon_send(hb, track_atom_v,
                 tracked_claim{deliver(id.str()).receipt, ref, dying,
                               std::chrono::steady_clock::now(), ingest_st, uuid{}, uuid{}});
  sched.run();
  CAF_CHECK_EQUAL(ctx->metrics->tracked_claims.load(), 1);
  caf::anon_send_exit(dying, caf::exit_reason::kill);
  sched.run();
  CAF_CHECK_EQUAL(ctx->metrics->tracked_claims.load(), 0);
  CAF_CHECK(ctx->claims->ids().empty());
  advance_time(61s);
  sched.run();
  CAF_CHECK_EQUAL(work->renew_calls(), 0);
}

CAF_TEST(a lost lease is told to the job) {
  auto hb = heartbeat();
  auto id = track(hb);
  sched.run();
  work->steal_claim(id);
  advance_time(61s);
  sched.run();
  CAF_REQUIRE_EQUAL(lost.size(), 1u);
  CAF_CHECK(lost[0].find("lease lost") != std::string::npos);
  CAF_CHECK(ctx->claims->ids().empty());
}

CAF_TEST(a refused extension is told to the job) {
  auto hb = heartbeat();
  track(hb);
  sched.run();
  // The receipt the heartbeat holds: the only message received so far.
  queue->refuse_receipt("r1-m1");
  // Its first extension: at the first tick (the receive visibility lasts past it).
  advance_time(ctx->settings.heartbeat_rate);
  sched.run();
  CAF_REQUIRE_EQUAL(lost.size(), 1u);
  CAF_CHECK(lost[0].find("refused") != std::string::npos);
}

CAF_TEST(extension stops at the 12 hour visibility total of SQS) {
  ctx->settings.heartbeat_rate = 60s;
  ctx->settings.heartbeat_extension = 300s;
  auto hb = heartbeat();
  auto now = std::chrono::steady_clock::now();
  track(hb, now - 12h + 200s); // 200 s left: one more extension of at most 200 s
  track(hb, now - 12h + 30s);  // 30 s left: less than a heartbeat period
  sched.run();
  advance_time(1s);
  sched.run();
  auto calls = queue->visibility_calls();
  CAF_REQUIRE_EQUAL(calls.size(), 1u);
  CAF_CHECK(calls[0].timeout <= 200s && calls[0].timeout > 60s);
  CAF_REQUIRE_EQUAL(lost.size(), 1u);
  CAF_CHECK(lost[0].find("12-hour") != std::string::npos);
}

CAF_TEST(
    a renewal that never answers times out and is retried next tick without dropping the claim) {
  ctx->settings.heartbeat_rate = 60s;
  ctx->settings.heartbeat_extension = 300s;
  auto hb = heartbeat();
  auto id = track(hb);
  sched.run();
  advance_time(1s);
  sched.run();
  // The database would answer "lost", but the answer never arrives.
  work->steal_claim(id);
  work->hold("renew_leases");
  advance_time(60s);
  sched.run();
  CAF_CHECK_EQUAL(work->held("renew_leases"), 1u);
  // The deadline (one tick) passes: logged and retried, the claim is kept.
  advance_time(60s);
  sched.run();
  CAF_CHECK(lost.empty());
  CAF_CHECK(ctx->claims->ids() == std::vector<uuid>{id});
  CAF_CHECK_EQUAL(work->renew_batch_sizes(), (std::vector<size_t>{1, 1}));
  // The answers come, one late (dropped: its call counted as failed already), the next in
  // time: the database says the lease is lost, so the claim is dropped, once.
  work->unhold("renew_leases");
  sched.run();
  CAF_REQUIRE_EQUAL(lost.size(), 1u);
  CAF_CHECK(lost[0].find("lease lost") != std::string::npos);
  CAF_CHECK(ctx->claims->ids().empty());
}

// An item is tracked again by its next attempt's claim as soon as the previous attempt ends: the
// database's answer about the previous claim (its lease is lost: the token changed) must not
// drop the new claim, nor tell its job that it is lost.
CAF_TEST(an answer about an earlier claim leaves the items next claim alone) {
  ctx->settings.heartbeat_rate = 60s;
  ctx->settings.heartbeat_extension = 300s;
  auto hb = heartbeat();
  auto id = track(hb);
  sched.run();
  advance_time(1s);
  sched.run();
  // The next attempt holds the item under another token, and the renewal of the first claim is
  // on its way to the database, which answers it lost.
  work->steal_claim(id);
  work->hold("renew_leases");
  advance_time(60s);
  sched.run();
  CAF_REQUIRE_EQUAL(work->held("renew_leases"), 1u);
  caf::anon_send(hb, untrack_atom_v, id);
  auto next = claim_ref{id, *work->item(id).token};
  caf::anon_send(hb, track_atom_v,
                 tracked_claim{deliver(id.str()).receipt, next, job_stub,
                               std::chrono::steady_clock::now(), ingest_st, db->row(id).document_id,
                               db->row(id).tenant_id});
  sched.run();
  work->unhold("renew_leases");
  sched.run();
  CAF_CHECK(lost.empty());
  CAF_CHECK(ctx->claims->ids() == std::vector<uuid>{id});
  // The next renewal is the new claim's, and it holds.
  advance_time(60s);
  sched.run();
  CAF_CHECK(lost.empty());
  CAF_CHECK(ctx->claims->ids() == std::vector<uuid>{id});
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
