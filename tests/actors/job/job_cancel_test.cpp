// Cancellation of a running ingest job, on the deterministic scheduler with the port fakes: at
// every step the job stops at the step's boundary, records `cancelled` with its fenced token and
// its audit trail in the same call, and deletes the message; nothing after the step runs.
#define CAF_SUITE job_cancel
#include "caf/test/dsl.hpp"

#include "adapters/storage/object_store.hpp"
#include "tests/actors/support/actor_fixture.hpp"

using namespace ingestd;
using namespace std::chrono_literals;

namespace {

struct job_cancel_fixture : test::actor_fixture {
  heartbeat_actor hb;

  job_cancel_fixture() {
    ctx->settings.heartbeat_rate = 10s;
    ctx->settings.lease = 60s;
    hb = heartbeat();
  }

  uuid add_document() {
    auto id = db->add("documents/d.txt", "text/plain");
    store->set("documents/d.txt", "Invoice INV-1 total 119.00");
    return id;
  }

  size_t events_with(const uuid& id, const std::string& step, const std::string& outcome) {
    size_t n = 0;
    for (auto& row : audit_of(id, step))
      n += row.event.outcome == outcome ? 1 : 0;
    return n;
  }

  /// The fake that serves `op`, to hold and release it.
  test::fault_script& owner(const std::string& op) {
    if (op == "get" || op == "put")
      return *store;
    if (op == "transcribe")
      return *ocr;
    if (op == "extract")
      return *extract;
    return *db;
  }

  /// Runs a job until `op` is held, cancels it there (directly, as the heartbeat would tell
  /// it), then lets the step answer. Returns the job's outcome.
  job_outcome cancel_at(const uuid& id, const std::string& op) {
    auto before = outcomes.size();
    owner(op).hold(op);
    auto job = spawn_ingest_job(id.str(), hb);
    sched.run();
    CAF_REQUIRE_EQUAL(owner(op).held(op), 1u);
    CAF_REQUIRE_EQUAL(outcomes.size(), before);
    work->request_cancel(id);
    caf::anon_send(job, cancel_atom_v);
    sched.run();
    // Nothing happens until the step's boundary.
    CAF_CHECK_EQUAL(outcomes.size(), before);
    owner(op).unhold(op);
    sched.run();
    CAF_REQUIRE_EQUAL(outcomes.size(), before + 1);
    return outcomes.back();
  }

  void check_cancelled(const uuid& id, const job_outcome& o) {
    CAF_CHECK_EQUAL(o.result, job_result::cancelled);
    auto item = work->item(id);
    CAF_CHECK_EQUAL(item.status, "cancelled");
    CAF_CHECK(!item.token.has_value());
    CAF_CHECK(!item.lease_live);
    CAF_CHECK_EQUAL(item.completions, 0);
    CAF_CHECK_EQUAL(db->row(id).completions, 0);
    CAF_CHECK_EQUAL(events_with(id, "cancel", "ok"), 1u);
    // The trail travels with the cancellation, in its call.
    for (auto& row : work->audit_rows())
      if (row.event.item == id)
        CAF_CHECK_EQUAL(row.written_by, "record_cancelled");
    CAF_CHECK_EQUAL(status_events(id, "INGESTION_CANCELLED"), 1u);
    check_no_violations();
  }
};

} // namespace

CAF_TEST_FIXTURE_SCOPE(job_cancel_tests, job_cancel_fixture)

CAF_TEST(a cancel at each step stops the job at that step boundary) {
  // The ingest stage's port calls in order: the ingestion's load, the fetch (get: at the item's
  // first claim there is no earlier transcription to look up), OCR, storing the transcription
  // (put), extraction.
  const std::vector<std::pair<std::string, int>> steps
      = {{"load", 0}, {"get", 0}, {"transcribe", 1}, {"put", 1}, {"extract", 1}};
  size_t deleted = 0;
  for (auto& [op, ocr_calls] : steps) {
    CAF_MESSAGE("cancel while " << op << " runs");
    auto id = add_document();
    auto ocr_before = ocr->calls();
    auto extract_before = extract->calls();
    auto o = cancel_at(id, op);
    check_cancelled(id, o);
    // Nothing after the step ran: no OCR when cancelled at the fetch, no extraction at all.
    CAF_CHECK_EQUAL(ocr->calls() - ocr_before, ocr_calls);
    CAF_CHECK_EQUAL(extract->calls() - extract_before, op == "extract" ? 1 : 0);
    // A transcription stored before the cancel is recorded with it, for the reviewer.
    CAF_CHECK_EQUAL(db->row(id).transcription.has_value(), op == "extract");
    CAF_CHECK_EQUAL(queue->deleted_ids().size(), ++deleted);
  }
}

CAF_TEST(the heartbeat tells a running job of its cancel request) {
  auto id = add_document();
  ocr->hold("transcribe");
  spawn_ingest_job(id.str(), hb);
  sched.run();
  work->request_cancel(id);
  CAF_REQUIRE(work->item(id).cancel_requested);
  advance_time(10s); // the heartbeat's tick looks the requests up
  sched.run();
  ocr->unhold("transcribe");
  sched.run();
  CAF_REQUIRE_EQUAL(outcomes.size(), 1u);
  check_cancelled(id, outcomes.back());
  CAF_CHECK_EQUAL(extract->calls(), 0);
  CAF_CHECK_EQUAL(queue->deleted_ids().size(), 1u);
}

CAF_TEST(a cancel whose step runs past its deadline stops at the deadline) {
  auto id = add_document();
  extract->hold("extract");
  auto job = spawn_ingest_job(id.str(), hb);
  sched.run();
  work->request_cancel(id);
  caf::anon_send(job, cancel_atom_v);
  sched.run();
  advance_time(31s);
  sched.run();
  CAF_REQUIRE_EQUAL(outcomes.size(), 1u);
  check_cancelled(id, outcomes.back());
  // Cancelled, not a failed attempt.
  CAF_CHECK_EQUAL(work->item(id).attempt_count, 0);
  extract->unhold("extract");
  sched.run();
  CAF_CHECK_EQUAL(outcomes.size(), 1u);
}

CAF_TEST(a cancel while the outcome is stored comes too late) {
  auto id = add_document();
  db->hold("complete");
  auto job = spawn_ingest_job(id.str(), hb);
  sched.run();
  caf::anon_send(job, cancel_atom_v);
  sched.run();
  db->unhold("complete");
  sched.run();
  CAF_REQUIRE_EQUAL(outcomes.size(), 1u);
  CAF_CHECK_EQUAL(outcomes.back().result, job_result::completed);
  CAF_CHECK_EQUAL(work->item(id).status, "completed");
  CAF_CHECK_EQUAL(queue->deleted_ids().size(), 1u);
  CAF_CHECK_EQUAL(events_with(id, "cancel", "ok"), 0u);
  check_no_violations();
}

CAF_TEST(
    a queued ingestion cancelled before its message arrives is skipped and the message deleted) {
  auto id = add_document();
  work->request_cancel(id);
  CAF_REQUIRE_EQUAL(work->item(id).status, "cancelled");
  auto o = run_job(id.str(), hb);
  CAF_CHECK_EQUAL(o.result, job_result::skipped);
  CAF_CHECK_EQUAL(o.detail, "finished: cancelled");
  CAF_CHECK_EQUAL(queue->deleted_ids().size(), 1u);
  CAF_CHECK_EQUAL(ocr->calls(), 0);
  CAF_CHECK_EQUAL(work->item(id).status, "cancelled");
}

CAF_TEST(a cancel that cannot be recorded gives the claim and the message back) {
  auto id = add_document();
  ocr->hold("transcribe");
  auto job = spawn_ingest_job(id.str(), hb);
  sched.run();
  work->request_cancel(id);
  work->fail_next("record_cancelled", error::make_transient("pg.connection", "connection lost"));
  caf::anon_send(job, cancel_atom_v);
  ocr->unhold("transcribe");
  sched.run();
  CAF_REQUIRE_EQUAL(outcomes.size(), 1u);
  CAF_CHECK_EQUAL(outcomes.back().result, job_result::released);
  auto item = work->item(id);
  CAF_CHECK_EQUAL(item.status, "in-progress");
  CAF_CHECK(!item.token.has_value());
  CAF_CHECK(queue->deleted_ids().empty());
  auto calls = queue->visibility_calls();
  CAF_REQUIRE(!calls.empty());
  CAF_CHECK_EQUAL(calls.back().timeout, 0s);
  // The trail the cancellation could not carry goes with the give-back, each row once: the
  // steps so far, the step the cancel stopped, and the give-back's own.
  for (auto step : {"claim", "load", "fetch", "release"})
    CAF_CHECK_EQUAL(audit_of(id, step).size(), 1u);
  auto stopped = audit_of(id, "transcribe");
  CAF_REQUIRE_EQUAL(stopped.size(), 1u);
  CAF_CHECK_EQUAL(stopped[0].event.outcome, "cancelled");
  CAF_CHECK_EQUAL(audit_of(id, "cancel").size(), 0u);
  for (auto& row : work->audit_rows())
    if (row.event.item == id)
      CAF_CHECK_EQUAL(row.written_by, "release");
  check_no_violations();
}

CAF_TEST_FIXTURE_SCOPE_END()
