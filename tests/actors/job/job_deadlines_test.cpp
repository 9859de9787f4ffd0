// The job actor with the ingest stage's steps when the claim is lost or the node stops, against
// its deadlines (a step's, the wait for a CPU worker or the provider's limits), with its CPU work
// on the pool, and a stage that stores nothing of its own; on the deterministic scheduler with the
// port fakes (job_fixture.hpp).
#define CAF_SUITE job_deadlines
#include "caf/test/dsl.hpp"

#include "tests/actors/job/job_fixture.hpp"
#include "tests/actors/support/manual_cpu.hpp"

using namespace ingestd;
using namespace std::chrono_literals;

namespace {

using test::manual_cpu;

/// A stage that stores nothing of its own: one step (a read of `key`), then job.complete() with
/// the next stage's work.
struct probe_job final : stage_job {
  std::shared_ptr<object_store> storage;
  explicit probe_job(std::shared_ptr<object_store> s) : storage(std::move(s)) {}
  void run(job_handle& job) override {
    job.request<std::string>(
        "look", [&](auto cb) { storage->get("probe/key", 1024, std::move(cb)); },
        [&job](result<std::string> r) {
          if (!r)
            return job.step_failed(r.error());
          job.step_done("ok");
          auto& c = job.claim();
          job.complete({next_work{c.document_id, "match", c.document_id, c.tenant_id, c.priority,
                                  "small", "ingestd-match", true}});
        });
  }
};

std::shared_ptr<const stage> probe_stage(std::shared_ptr<object_store> storage,
                                         std::shared_ptr<ingestd::queue> q) {
  auto s = std::make_shared<stage>();
  s->name = "unpack";
  s->label = "unpack";
  s->queue = std::move(q);
  s->queue_name = "ingestd-unpack";
  s->audit = true;
  s->make_job = [storage = std::move(storage)] { return std::make_unique<probe_job>(storage); };
  return s;
}

} // namespace

CAF_TEST_FIXTURE_SCOPE(job_deadlines_tests, job_fixture)

// ---- the claim lost, shutdown ------------------------------------------------------------------

CAF_TEST(a fenced write rejected mid way stops the job without side effects) {
  auto id = add_document();
  ocr->hold("transcribe");
  spawn_ingest_job(id.str(), hb);
  sched.run();
  work->steal_claim(id); // the lease expired and another worker claimed it
  ocr->unhold("transcribe");
  sched.run();
  CAF_REQUIRE_EQUAL(outcomes.size(), 1u);
  CAF_CHECK_EQUAL(outcomes.back().result, job_result::lost);
  CAF_CHECK(queue->deleted_ids().empty());
  CAF_CHECK_EQUAL(work->item(id).attempt_count, 0);
  // The first fenced write is the completion: the extraction ran, and nothing of it, nor the
  // transcription recorded with it, was written.
  CAF_CHECK_EQUAL(extract->calls(), 1);
  CAF_CHECK_EQUAL(db->row(id).completions, 0);
  CAF_CHECK(!db->row(id).transcription.has_value());
  // No state change carried the trail: it is written alone.
  CAF_CHECK_EQUAL(written_by(id), std::set<std::string>{"append_audit"});
  check_no_violations();
}

CAF_TEST(a refused heartbeat stops the job and a late result is ignored) {
  auto id = add_document();
  ocr->hold("transcribe");
  auto job = spawn_ingest_job(id.str(), hb);
  sched.run();
  caf::anon_send(job, lost_atom_v, std::string{"visibility extension refused"});
  sched.run();
  CAF_REQUIRE_EQUAL(outcomes.size(), 1u);
  CAF_CHECK_EQUAL(outcomes.back().result, job_result::lost);
  ocr->unhold("transcribe");
  sched.run();
  CAF_CHECK_EQUAL(outcomes.size(), 1u);
  CAF_CHECK_EQUAL(extract->calls(), 0);
  CAF_CHECK(queue->deleted_ids().empty());
  auto item = work->item(id);
  CAF_CHECK_EQUAL(item.status, "in-progress");
  // Its claim is given up with the trail so far, the last row saying why.
  CAF_CHECK(!item.token.has_value());
  CAF_CHECK_EQUAL(item.attempt_count, 0);
  auto rows = audit_of(id, "transcribe");
  CAF_REQUIRE_EQUAL(rows.size(), 1u);
  CAF_CHECK_EQUAL(rows[0].event.outcome, "claim_lost");
  CAF_CHECK_EQUAL(rows[0].written_by, "release");
  check_no_violations();
}

CAF_TEST(a lost notice racing a stored completion is ignored and the message deleted) {
  // The heartbeat renewed leases just after the completion committed: the item is no longer in
  // progress, so the renewal reports the claim as lost while the job is about to ack.
  auto id = add_document();
  db->hold("complete");
  auto job = spawn_ingest_job(id.str(), hb);
  sched.run();
  CAF_REQUIRE_EQUAL(work->item(id).status, "completed");
  db->unhold("complete");
  caf::anon_send(job, lost_atom_v, std::string{"lease lost: the claim was taken over"});
  sched.run();
  CAF_REQUIRE_EQUAL(outcomes.size(), 1u);
  CAF_CHECK_EQUAL(outcomes.back().result, job_result::completed);
  CAF_CHECK_EQUAL(queue->deleted_ids().size(), 1u);
  CAF_CHECK_EQUAL(work->item(id).completions, 1);
  check_no_violations();
}

CAF_TEST(a lost notice during the fenced completion is left to the completion to decide) {
  auto id = add_document();
  db->hold("complete");
  auto job = spawn_ingest_job(id.str(), hb);
  sched.run();
  caf::anon_send(job, lost_atom_v, std::string{"lease lost: the claim was taken over"});
  sched.run();
  CAF_CHECK(outcomes.empty());
  db->unhold("complete");
  sched.run();
  CAF_REQUIRE_EQUAL(outcomes.size(), 1u);
  CAF_CHECK_EQUAL(outcomes.back().result, job_result::completed);
  CAF_CHECK_EQUAL(queue->deleted_ids().size(), 1u);
  check_no_violations();
}

CAF_TEST(a completion fenced out stops the job as lost and writes the trail alone once) {
  auto id = add_document();
  extract->hold("extract");
  spawn_ingest_job(id.str(), hb);
  sched.run();
  work->steal_claim(id);
  extract->unhold("extract");
  sched.run();
  CAF_REQUIRE_EQUAL(outcomes.size(), 1u);
  CAF_CHECK_EQUAL(outcomes.back().result, job_result::lost);
  CAF_CHECK_EQUAL(db->row(id).completions, 0);
  CAF_CHECK(queue->deleted_ids().empty());
  // The completion wrote nothing: the trail is written alone, each row once.
  CAF_CHECK_EQUAL(written_by(id), std::set<std::string>{"append_audit"});
  CAF_CHECK_EQUAL(events_with(id, "claim"), 1u);
  check_no_violations();
}

CAF_TEST(shutdown while in flight releases the claim and the message) {
  auto id = add_document();
  ocr->hold("transcribe");
  auto job = spawn_ingest_job(id.str(), hb);
  sched.run();
  caf::anon_send(job, stop_atom_v);
  sched.run();
  CAF_REQUIRE_EQUAL(outcomes.size(), 1u);
  CAF_CHECK_EQUAL(outcomes.back().result, job_result::released);
  CAF_CHECK(!work->item(id).lease_live);
  CAF_CHECK(!work->item(id).token.has_value());
  CAF_CHECK_EQUAL(last_visibility(), 0s);
  CAF_CHECK(queue->deleted_ids().empty());
  auto rows = audit_of(id, "release");
  CAF_REQUIRE_EQUAL(rows.size(), 1u);
  CAF_CHECK_EQUAL(rows[0].event.detail, "shutdown");
  CAF_CHECK_EQUAL(written_by(id), std::set<std::string>{"release"});
  ocr->unhold("transcribe");
  sched.run();
  CAF_CHECK_EQUAL(outcomes.size(), 1u);
  check_no_violations();
}

CAF_TEST(shutdown during the claim gives back what the claim granted) {
  // Left alone, a claim granted after the stop would expire and count as a crash.
  auto id = add_document();
  work->hold("claim");
  auto job = spawn_ingest_job(id.str(), hb);
  sched.run();
  CAF_REQUIRE_EQUAL(work->held("claim"), 1u);
  CAF_REQUIRE(outcomes.empty());
  caf::anon_send(job, stop_atom_v);
  sched.run();
  work->unhold("claim");
  sched.run();
  CAF_REQUIRE_EQUAL(outcomes.size(), 1u);
  CAF_CHECK_EQUAL(outcomes.back().result, job_result::released);
  auto item = work->item(id);
  CAF_CHECK(!item.token.has_value());
  CAF_CHECK(!item.lease_live);
  CAF_CHECK_EQUAL(item.attempt_count, 0);
  CAF_CHECK_EQUAL(item.releases, 1);
  CAF_CHECK_EQUAL(last_visibility(), 0s);
  CAF_CHECK(queue->deleted_ids().empty());
  CAF_CHECK_EQUAL(ocr->calls(), 0);
  check_no_violations();
}

// ---- deadlines ---------------------------------------------------------------------------------

CAF_TEST(a step past its deadline is a transient failure) {
  auto id = add_document();
  extract->hold("extract");
  auto job = spawn_ingest_job(id.str(), hb);
  sched.run();
  CAF_CHECK(outcomes.empty());
  // One deadline for the job, not one per step taken so far: its entry in the node's table, and
  // no timer of its own in CAF's clock.
  CAF_CHECK_EQUAL(ctx->deadlines->size(), 1u);
  CAF_CHECK_EQUAL(clock_entries_for(job), 0u);
  advance_time(29s);
  sched.run();
  CAF_CHECK(outcomes.empty());
  advance_time(2s);
  sched.run();
  CAF_REQUIRE_EQUAL(outcomes.size(), 1u);
  CAF_CHECK_EQUAL(outcomes.back().result, job_result::retrying);
  auto item = work->item(id);
  CAF_CHECK(item.last_error.find("step.timeout") != std::string::npos);
  // The deadline names the step that ran past it.
  CAF_CHECK(item.last_error.find("extract did not finish within 30 s") != std::string::npos);
  extract->unhold("extract");
  sched.run();
  CAF_CHECK_EQUAL(outcomes.size(), 1u);
  CAF_CHECK_EQUAL(work->item(id).completions, 0);
  CAF_CHECK_EQUAL(ctx->deadlines->size(), 0u); // the job ended: its entry went with it
}

CAF_TEST(the step deadline does not run while the document waits for a CPU worker) {
  auto id = add_document();
  ocr->wait_for_cpu(true);
  spawn_ingest_job(id.str(), hb);
  sched.run();
  for (int i = 0; i < 4; ++i) { // four step deadlines (30 s each) pass while it waits
    advance_time(31s);
    sched.run();
  }
  CAF_CHECK(outcomes.empty());
  ocr->start_waiting();
  sched.run();
  CAF_REQUIRE_EQUAL(outcomes.size(), 1u);
  CAF_CHECK_EQUAL(outcomes.back().result, job_result::completed);
}

CAF_TEST(the step deadline runs once a CPU worker has started) {
  auto id = add_document();
  ocr->wait_for_cpu(true);
  extract->hold("extract");
  spawn_ingest_job(id.str(), hb);
  sched.run();
  advance_time(61s);
  sched.run();
  ocr->start_waiting();
  sched.run();
  CAF_CHECK(outcomes.empty());
  advance_time(31s);
  sched.run();
  CAF_REQUIRE_EQUAL(outcomes.size(), 1u);
  CAF_CHECK(work->item(id).last_error.find("extract did not finish within 30 s")
            != std::string::npos);
  extract->unhold("extract");
  sched.run();
}

CAF_TEST(a document that got no CPU worker in time is given back without counting an attempt) {
  // Load is not the document's fault: a bulk import never sends documents to review because the
  // node admitted more OCR work than its cores could finish.
  auto id = add_document();
  ocr->wait_for_cpu(true);
  spawn_ingest_job(id.str(), hb);
  sched.run();
  ocr->expire_waiting();
  sched.run();
  CAF_REQUIRE_EQUAL(outcomes.size(), 1u);
  CAF_CHECK_EQUAL(outcomes.back().result, job_result::released);
  CAF_CHECK_EQUAL(work->item(id).attempt_count, 0);
  CAF_CHECK(!work->item(id).token.has_value());
  CAF_CHECK_EQUAL(last_visibility(), 0s);
  ocr->wait_for_cpu(false);
  CAF_CHECK_EQUAL(run_job(id.str(), hb).result, job_result::completed);
}

CAF_TEST(the step deadline does not run while the extraction waits for the provider limits) {
  auto id = add_document();
  extract->hold("extract");
  spawn_ingest_job(id.str(), hb);
  sched.run();
  auto hooks = extract->last_context();
  CAF_REQUIRE(hooks.waiting && hooks.resumed);
  hooks.waiting(); // as rate_limited_client tells it: the request waits in the provider's line
  sched.run();
  for (int i = 0; i < 4; ++i) { // four step deadlines (30 s each) pass while it waits
    advance_time(31s);
    sched.run();
  }
  CAF_CHECK(outcomes.empty());
  hooks.resumed(); // sent: the deadline runs from now
  sched.run();
  advance_time(29s);
  sched.run();
  CAF_CHECK(outcomes.empty());
  extract->unhold("extract");
  sched.run();
  CAF_REQUIRE_EQUAL(outcomes.size(), 1u);
  CAF_CHECK_EQUAL(outcomes.back().result, job_result::completed);
}

CAF_TEST(the step deadline runs again once the request has left the provider line) {
  auto id = add_document();
  extract->hold("extract");
  spawn_ingest_job(id.str(), hb);
  sched.run();
  auto hooks = extract->last_context();
  hooks.waiting();
  sched.run();
  advance_time(61s);
  sched.run();
  hooks.resumed();
  sched.run();
  CAF_CHECK(outcomes.empty());
  advance_time(31s);
  sched.run();
  CAF_REQUIRE_EQUAL(outcomes.size(), 1u);
  CAF_CHECK(work->item(id).last_error.find("extract did not finish within 30 s")
            != std::string::npos);
  extract->unhold("extract");
  sched.run();
}

CAF_TEST(an extraction that waited its longest for the provider is given back without counting an attempt) {
  auto id = add_document();
  extract->fail_next("extract",
                     error::make_transient("provider.busy", "the request waited 600 s for the llm "
                                                            "provider's limits and was not sent"));
  spawn_ingest_job(id.str(), hb);
  sched.run();
  CAF_REQUIRE_EQUAL(outcomes.size(), 1u);
  CAF_CHECK_EQUAL(outcomes.back().result, job_result::released);
  CAF_CHECK_EQUAL(work->item(id).attempt_count, 0);
  CAF_CHECK(!work->item(id).token.has_value());
  CAF_CHECK_EQUAL(last_visibility(), 0s);
  CAF_CHECK_EQUAL(run_job(id.str(), hb).result, job_result::completed);
}

// ---- CPU work, the text ----------------------------------------------------------------------

CAF_TEST(a stored transcription is parsed and the local rules run on the CPU pool not on a scheduler
             thread) {
  auto cpu = std::make_shared<manual_cpu>();
  ctx->cpu = cpu;
  ports->extract = std::make_shared<local_extractor>();
  ports->gate = [](const extraction&) { return gate_verdict{true, {}, false}; };
  auto id = add_document();
  store_transcription(id, "Invoice No: INV-1\nDate: 2024-03-15\nTotal: 119.00 EUR");
  spawn_ingest_job(id.str(), hb);
  sched.run();
  CAF_REQUIRE_EQUAL(cpu->jobs.size(), 1u); // the parse waits for a worker
  for (int i = 0; i < 4; ++i) {            // and its step deadline waits with it
    advance_time(31s);
    sched.run();
  }
  CAF_CHECK(outcomes.empty());
  cpu->next().run();
  sched.run();
  CAF_REQUIRE_EQUAL(cpu->jobs.size(), 1u); // the extraction
  CAF_CHECK(outcomes.empty());
  cpu->next().run();
  sched.run();
  CAF_REQUIRE_EQUAL(outcomes.size(), 1u);
  CAF_CHECK_EQUAL(outcomes.back().result, job_result::completed);
  CAF_CHECK_EQUAL(events_with(id, "parse_transcription"), 1u);
  CAF_CHECK_EQUAL(events_with(id, "extract"), 1u);
  CAF_CHECK_EQUAL(ocr->calls(), 0);
  CAF_CHECK(db->row(id).structured_data.find("INV-1") != std::string::npos);
}

CAF_TEST(CPU work that got no worker in time is given back without counting an attempt) {
  auto cpu = std::make_shared<manual_cpu>();
  ctx->cpu = cpu;
  auto id = add_document();
  store_transcription(id, "stored text");
  spawn_ingest_job(id.str(), hb);
  sched.run();
  CAF_REQUIRE_EQUAL(cpu->jobs.size(), 1u);
  cpu->next().expired();
  sched.run();
  CAF_REQUIRE_EQUAL(outcomes.size(), 1u);
  CAF_CHECK_EQUAL(outcomes.back().result, job_result::released);
  CAF_CHECK_EQUAL(work->item(id).attempt_count, 0);
}

CAF_TEST(a stored transcription that cannot be parsed is transcribed again) {
  auto id = add_document();
  store->set(transcription_key(id), "{not json");
  CAF_CHECK_EQUAL(run_job(id.str(), hb).result, job_result::completed);
  CAF_CHECK_EQUAL(ocr->calls(), 1);
}

CAF_TEST(a document with no text completes for review as text_unavailable without an extraction) {
  auto id = add_document(" \n\f ");
  auto o = run_job(id.str(), hb);
  CAF_CHECK_EQUAL(o.result, job_result::completed);
  auto item = work->item(id);
  CAF_CHECK_EQUAL(item.status, "completed");
  CAF_CHECK_EQUAL(item.last_error.rfind("text_unavailable", 0), 0u);
  CAF_CHECK_EQUAL(db->row(id).review_reason.rfind("text_unavailable", 0), 0u);
  CAF_CHECK_EQUAL(extract->calls(), 0);
}

CAF_TEST(a text too long for the LLM is extracted by the local rules and completed for review) {
  ports->extract
      = std::make_shared<fallback_extractor>(extract, std::make_shared<local_extractor>());
  ports->gate = [](const extraction&) { return gate_verdict{true, {}, false}; };
  extract->fail_next("extract", error::make_permanent("llm.context_exceeded",
                                                      "maximum context length is 8192 tokens"));
  auto id = add_document("Invoice No: INV-7\nDate: 2024-03-15\nTotal: 119.00 EUR");
  auto o = run_job(id.str(), hb);
  CAF_CHECK_EQUAL(o.result, job_result::completed);
  CAF_CHECK(db->row(id).structured_data.find("INV-7") != std::string::npos);
  auto item = work->item(id);
  CAF_CHECK_EQUAL(item.last_error.rfind("extracted by the local extractor", 0), 0u);
  CAF_CHECK(item.last_error.find("llm.context_exceeded") != std::string::npos);
  // Any other LLM failure is the LLM's: no fallback.
  auto other = add_document("Invoice No: INV-8");
  extract->fail_next("extract", error::make_permanent("llm.unauthorized", "bad key"));
  CAF_CHECK_EQUAL(run_job(other.str(), hb).result, job_result::failed);
}

// ---- a stage that stores nothing of its own
// ------------------------------------------------------

CAF_TEST(a stage that stores nothing of its own finishes its item through the work repository) {
  store->set("probe/key", "x");
  auto id = db->add("documents/c.zip", "application/zip", 0, "unpack");
  auto o = run_job(probe_stage(store, queue), deliver(id.str()), hb);
  CAF_CHECK_EQUAL(o.result, job_result::completed);
  CAF_CHECK_EQUAL(work->item(id).status, "completed");
  CAF_CHECK_EQUAL(queue->deleted_ids().size(), 1u);
  auto doc = db->row(id).document_id;
  CAF_CHECK_EQUAL(work->sent_to("ingestd-match"), strings{doc.str()});
  for (auto step : {"claim", "look", "complete"})
    CAF_CHECK_EQUAL(events_with(id, step), 1u);
  CAF_CHECK_EQUAL(written_by(id), std::set<std::string>{"complete"});
  check_no_violations();
}

CAF_TEST(a stage s completion through the work repository fenced out is lost and its trail written
             once) {
  store->set("probe/key", "x");
  auto id = db->add("documents/c.zip", "application/zip", 0, "unpack");
  store->hold("get");
  spawn_job(sys, ctx, probe_stage(store, queue), hb, deliver(id.str()));
  sched.run();
  work->steal_claim(id);
  store->unhold("get");
  sched.run();
  CAF_REQUIRE_EQUAL(outcomes.size(), 1u);
  CAF_CHECK_EQUAL(outcomes.back().result, job_result::lost);
  CAF_CHECK_EQUAL(work->item(id).status, "in-progress");
  CAF_CHECK(work->sent().empty());
  CAF_CHECK(queue->deleted_ids().empty());
  // The completion's statement writes the trail whatever its fence says: not again after it.
  for (auto step : {"claim", "look", "complete"})
    CAF_CHECK_EQUAL(events_with(id, step), 1u);
  check_no_violations();
}

CAF_TEST_FIXTURE_SCOPE_END()
