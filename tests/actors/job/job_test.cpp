// The job actor with the ingest stage's steps, on the deterministic scheduler with the port
// fakes: the claimed-work table's claim answers, and failures (retries, back-off, poison, the
// gate's verdicts), with the audit trail written with the state change it travels with. The claim
// lost, shutdown, deadlines and CPU work are in job_deadlines_test.cpp.
#define CAF_SUITE ingest_job
#include "caf/test/dsl.hpp"

#include "tests/actors/job/job_fixture.hpp"

using namespace ingestd;
using namespace std::chrono_literals;

CAF_TEST_FIXTURE_SCOPE(job_tests, job_fixture)

// ---- the claim's answers ---------------------------------------------------------------------

CAF_TEST(an invalid body is deleted without touching the database) {
  auto o = run_job("not-a-uuid", hb);
  CAF_CHECK_EQUAL(o.result, job_result::invalid);
  CAF_CHECK_EQUAL(queue->deleted_ids().size(), 1u);
  CAF_CHECK(work->claim_batch_sizes().empty());
  CAF_CHECK(work->audit().empty());
  CAF_CHECK_EQUAL(ocr->calls(), 0);
}

CAF_TEST(success runs every step and deletes the message once the outcome is stored) {
  auto id = add_document();
  auto o = run_job(id.str(), hb);
  CAF_CHECK_EQUAL(o.result, job_result::completed);
  CAF_CHECK_EQUAL(o.item, id);
  CAF_CHECK_EQUAL(o.stage, "ingest");
  CAF_CHECK_EQUAL(o.attempt_count, 1);
  auto item = work->item(id);
  CAF_CHECK_EQUAL(item.status, "completed");
  CAF_CHECK_EQUAL(item.completions, 1);
  CAF_CHECK(!item.token.has_value());
  auto row = db->row(id);
  CAF_CHECK_EQUAL(row.completions, 1);
  CAF_CHECK(row.valid_structured_data);
  CAF_REQUIRE(row.transcription.has_value());
  CAF_CHECK_EQUAL(row.transcription->transcription_file_path, transcription_key(id));
  CAF_CHECK(store->object(transcription_key(id)).has_value());
  CAF_CHECK_EQUAL(queue->deleted_ids().size(), 1u);
  for (auto step : {"claim", "load", "fetch", "transcribe", "store_transcription", "extract",
                    "gate", "complete"})
    CAF_CHECK_EQUAL(events_with(id, step), 1u);
  // The transcription is recorded with the result, not by a write of its own; at the item's
  // first claim no earlier transcription is looked for.
  CAF_CHECK_EQUAL(events_with(id, "record_transcription"), 0u);
  CAF_CHECK_EQUAL(events_with(id, "resume"), 0u);
  // The audit trail travels with the completion, in its transaction; the acknowledgement after
  // it is logged and measured only (there is no "ack" row any more).
  CAF_CHECK_EQUAL(written_by(id), std::set<std::string>{"complete"});
  CAF_CHECK_EQUAL(events_with(id, "ack"), 0u);
  // The completion counts for the document's tenant.
  CAF_CHECK(ctx->metrics->prometheus().find("ingestd_tenant_completed_total{tenant=\""
                                            + row.tenant_id.str() + "\",stage=\"ingest\"} 1\n")
            != std::string::npos);
  CAF_CHECK_EQUAL(status_events(id, "INGESTION_COMPLETED"), 1u);
  // Without the match stage, the completion adds no next work.
  CAF_CHECK(work->sent().empty());
  check_no_violations();
}

CAF_TEST(a completion adds the document s matching with its message when the match stage is on) {
  ingest.match_queue = "ingestd-match";
  auto id = add_document();
  CAF_CHECK_EQUAL(run_job(id.str(), hb).result, job_result::completed);
  auto doc = db->row(id).document_id;
  CAF_CHECK_EQUAL(work->sent_to("ingestd-match"), strings{doc.str()});
  auto next = work->item(doc);
  CAF_CHECK_EQUAL(next.stage, "match");
  CAF_CHECK_EQUAL(next.status, "in-progress");
  CAF_CHECK_EQUAL(next.document_id, doc);
  check_no_violations();
}

CAF_TEST(a document the gate passes goes to review for a check when review sample_rate picks it) {
  ingest.review_sample_rate = 1;
  auto id = add_document();
  CAF_CHECK_EQUAL(run_job(id.str(), hb).result, job_result::completed);
  CAF_CHECK_EQUAL(db->row(id).review_reason, std::string{sampled_reason});
  CAF_CHECK_EQUAL(work->item(id).last_error, std::string{sampled_reason});
  auto gate = audit_of(id, "gate");
  CAF_REQUIRE_EQUAL(gate.size(), 1u);
  CAF_CHECK_EQUAL(gate[0].event.outcome, "sampled");
  check_no_violations();
}

CAF_TEST(sampling for review is decided by the document alone at the rate asked for) {
  int picked = 0;
  for (int i = 0; i < 20000; ++i) {
    auto id = uuid::v7();
    bool once = sampled_for_review(id, 0.05);
    CAF_CHECK_EQUAL(sampled_for_review(id, 0.05), once);
    CAF_CHECK(!sampled_for_review(id, 0));
    CAF_CHECK(sampled_for_review(id, 1));
    picked += once ? 1 : 0;
  }
  // 5% of 20,000 is 1,000; four standard deviations (31 each) either side.
  CAF_CHECK_GREATER(picked, 876);
  CAF_CHECK_LESS(picked, 1124);
}

CAF_TEST(a finished job leaves no timer or delayed message behind) {
  // A pending deadline would keep the finished actor alive until it passes: at thousands of
  // ingestions per second, gigabytes.
  auto id = add_document();
  auto job = spawn_ingest_job(id.str(), hb);
  sched.run();
  CAF_REQUIRE_EQUAL(outcomes.size(), 1u);
  CAF_CHECK_EQUAL(outcomes.back().result, job_result::completed);
  CAF_CHECK_EQUAL(clock_entries_for(job), 0u);
}

CAF_TEST(a stored transcription is reused instead of transcribing again) {
  auto id = add_document();
  store_transcription(id, "stored text");
  auto o = run_job(id.str(), hb);
  CAF_CHECK_EQUAL(o.result, job_result::completed);
  CAF_CHECK_EQUAL(ocr->calls(), 0);
  CAF_CHECK_EQUAL(events_with(id, "fetch"), 0u);
  auto recorded = db->row(id).transcription;
  CAF_REQUIRE(recorded.has_value());
  CAF_CHECK_EQUAL(recorded->transcription_file_path, transcription_key(id));
  CAF_CHECK_EQUAL(recorded->preprocessed_file_path, "");
  CAF_CHECK_EQUAL(recorded->provider, "earlier");
}

CAF_TEST(a stored transcription that names its derived file is recorded with that file) {
  // An attempt that ended after storing them (a shutdown, a crash) recorded neither.
  auto id = add_document();
  store_transcription(id, "stored text", "png");
  auto o = run_job(id.str(), hb);
  CAF_CHECK_EQUAL(o.result, job_result::completed);
  auto recorded = db->row(id).transcription;
  CAF_REQUIRE(recorded.has_value());
  CAF_CHECK_EQUAL(recorded->preprocessed_file_path,
                  storage_keys::preprocessed(db->row(id).tenant_id.str(), id.str(), "png"));
  CAF_CHECK_EQUAL(events_with(id, "record_transcription"), 0u); // with the completion
}

CAF_TEST(a failed extraction records the transcription before the failure) {
  // The reviewer of the failed document reads what was read.
  auto id = add_document();
  extract->fail_next("extract", error::make_permanent("llm.refused", "the model refused"));
  auto o = run_job(id.str(), hb);
  CAF_CHECK_EQUAL(o.result, job_result::failed);
  auto recorded = db->row(id).transcription;
  CAF_REQUIRE(recorded.has_value());
  CAF_CHECK_EQUAL(recorded->transcription_file_path, transcription_key(id));
  auto rows = audit_of(id, "record_transcription");
  CAF_REQUIRE_EQUAL(rows.size(), 1u);
  CAF_CHECK_EQUAL(rows[0].event.outcome, "ok");
  CAF_CHECK_EQUAL(rows[0].written_by, "record_failure");
  CAF_CHECK_EQUAL(work->item(id).error_class, "permanent");
  check_no_violations();
}

CAF_TEST(a transcription that cannot be recorded before the failure leaves the failure recorded) {
  auto id = add_document();
  extract->fail_next("extract", error::make_transient("http_503", "upstream unavailable"));
  db->fail_next("record_transcription", error::make_transient("pg.40001", "serialization"));
  auto o = run_job(id.str(), hb);
  CAF_CHECK_EQUAL(o.result, job_result::retrying);
  CAF_CHECK(!db->row(id).transcription.has_value());
  auto item = work->item(id);
  CAF_CHECK_EQUAL(item.attempt_count, 1);
  CAF_CHECK(item.last_error.find("upstream unavailable") != std::string::npos);
  auto rows = audit_of(id, "record_transcription");
  CAF_REQUIRE_EQUAL(rows.size(), 1u);
  CAF_CHECK_EQUAL(rows[0].event.outcome, "transient");
  // The next attempt finds it in storage and records it with its result.
  auto second = run_job(id.str(), hb);
  CAF_CHECK_EQUAL(second.result, job_result::completed);
  CAF_CHECK_EQUAL(ocr->calls(), 1);
  CAF_CHECK(db->row(id).transcription.has_value());
  check_no_violations();
}

CAF_TEST(a finished ingestion is skipped and its duplicate message deleted) {
  auto id = add_document();
  CAF_CHECK_EQUAL(run_job(id.str(), hb).result, job_result::completed);
  auto o = run_job(id.str(), hb);
  CAF_CHECK_EQUAL(o.result, job_result::skipped);
  CAF_CHECK_EQUAL(o.detail, "finished: completed");
  CAF_CHECK_EQUAL(work->item(id).completions, 1);
  CAF_CHECK_EQUAL(queue->deleted_ids().size(), 2u);
  check_no_violations();
}

CAF_TEST(an ingestion another worker holds is left alone its message not deleted) {
  auto id = add_document();
  work->hold_by_other(id);
  auto o = run_job(id.str(), hb);
  CAF_CHECK_EQUAL(o.result, job_result::skipped);
  CAF_CHECK(o.detail.find("held by another worker") != std::string::npos);
  CAF_CHECK(queue->deleted_ids().empty());
  CAF_CHECK_EQUAL(ocr->calls(), 0);
  CAF_CHECK(queue->visibility_calls().empty()); // left to reappear by itself
}

CAF_TEST(an unknown work item id is deleted) {
  auto o = run_job(uuid::v7().str(), hb);
  CAF_CHECK_EQUAL(o.result, job_result::skipped);
  CAF_CHECK_EQUAL(o.detail, "no such work item for stage ingest");
  CAF_CHECK_EQUAL(queue->deleted_ids().size(), 1u);
}

CAF_TEST(a work item of another stage is unknown to this one and its message deleted) {
  auto doc = uuid::v7();
  work->add("match", doc, doc, uuid::v7());
  auto o = run_job(doc.str(), hb);
  CAF_CHECK_EQUAL(o.result, job_result::skipped);
  CAF_CHECK_EQUAL(o.detail, "no such work item for stage ingest");
  CAF_CHECK_EQUAL(queue->deleted_ids().size(), 1u);
  auto item = work->item(doc);
  CAF_CHECK_EQUAL(item.status, "in-progress");
  CAF_CHECK(!item.token.has_value());
}

CAF_TEST(an item that moved to another size class is answered moved and its stale message deleted) {
  auto id = add_document();
  work->update(id, [](test::fake_work_item& w) { w.size_class = "large"; });
  ingest_class small;
  small.name = "small";
  small.queue = queue;
  small.queue_name = test::ingest_queue_name;
  auto o = run_job(make_ingest_stage(ports, ingest, small), deliver(id.str()), hb);
  CAF_CHECK_EQUAL(o.result, job_result::moved);
  CAF_CHECK_EQUAL(o.stage, "ingest.small");
  CAF_CHECK_EQUAL(queue->deleted_ids().size(), 1u);
  CAF_CHECK_EQUAL(ocr->calls(), 0);
  auto item = work->item(id);
  CAF_CHECK_EQUAL(item.status, "in-progress");
  CAF_CHECK(!item.token.has_value());
  CAF_CHECK(work->sent().empty()); // its message is in the large queue already
  check_no_violations();
}

CAF_TEST(
    a known file ends skipped at its claim with the claim s audit row and its message deleted) {
  auto id = add_document();
  work->update(id, [](test::fake_work_item& w) { w.known_file = true; });
  auto o = run_job(id.str(), hb);
  CAF_CHECK_EQUAL(o.result, job_result::skipped);
  CAF_CHECK(o.detail.find("known_file") != std::string::npos);
  CAF_CHECK_EQUAL(work->item(id).status, "skipped");
  CAF_CHECK_EQUAL(queue->deleted_ids().size(), 1u);
  CAF_CHECK_EQUAL(ocr->calls(), 0);
  auto rows = audit_of(id, "claim");
  CAF_REQUIRE_EQUAL(rows.size(), 1u);
  CAF_CHECK_EQUAL(rows[0].event.outcome, "skipped");
  CAF_CHECK_EQUAL(rows[0].written_by, "claim");
  CAF_CHECK_EQUAL(status_events(id, "INGESTION_SKIPPED"), 1u);
  CAF_CHECK_EQUAL(ctx->metrics->known_file_skips.load(), 1);
  check_no_violations();
}

CAF_TEST(a crash below the limit counts as an attempt and the next worker carries on) {
  ingest.max_attempts = 2;
  auto id = add_document();
  work->steal_claim(id);
  work->crash_holder(id); // its worker died holding it
  auto o = run_job(id.str(), hb);
  CAF_CHECK_EQUAL(o.result, job_result::completed);
  CAF_CHECK_EQUAL(o.attempt_count, 2);
  auto item = work->item(id);
  CAF_CHECK_EQUAL(item.status, "completed");
  CAF_CHECK_EQUAL(item.crash_count, 1);
  // The claim statement recorded the crash; the job's own trail came with its completion.
  auto rows = audit_of(id, "claim");
  CAF_REQUIRE_EQUAL(rows.size(), 2u);
  CAF_CHECK_EQUAL(rows[0].event.outcome, "crash");
  CAF_CHECK_EQUAL(rows[0].written_by, "claim");
  CAF_CHECK_EQUAL(rows[1].event.outcome, "ok");
  CAF_CHECK_EQUAL(rows[1].written_by, "complete");
  check_no_violations();
}

CAF_TEST(a message whose item the claim failed as poison is deleted without processing) {
  // The stage's own limit, not the port's default, decides: at 2, the second crash is the last.
  ingest.max_attempts = 2;
  auto id = add_document("Invoice INV-1 total 119.00", 1);
  work->steal_claim(id);
  work->crash_holder(id);
  auto o = run_job(id.str(), hb);
  auto item = work->item(id);
  CAF_CHECK_EQUAL(item.status, "failed");
  CAF_CHECK_EQUAL(item.error_class, "poison");
  CAF_CHECK_EQUAL(item.attempt_count, 2);
  CAF_CHECK(!item.token.has_value());
  // Finished by this very claim: the message is acknowledged.
  CAF_CHECK_EQUAL(o.result, job_result::skipped);
  CAF_CHECK_EQUAL(o.detail.rfind("finished: poison", 0), 0u);
  CAF_CHECK_EQUAL(queue->deleted_ids().size(), 1u);
  CAF_CHECK_EQUAL(ocr->calls(), 0);
  CAF_CHECK_EQUAL(extract->calls(), 0);
  auto rows = audit_of(id, "claim");
  CAF_REQUIRE_EQUAL(rows.size(), 1u);
  CAF_CHECK_EQUAL(rows[0].event.outcome, "poison");
  // The failure event (which the failure notifier takes) is written once: a duplicate delivery
  // finds the item finished.
  CAF_CHECK_EQUAL(status_events(id, "INGESTION_FAILED"), 1u);
  auto again = run_job(id.str(), hb);
  CAF_CHECK_EQUAL(again.result, job_result::skipped);
  CAF_CHECK_EQUAL(status_events(id, "INGESTION_FAILED"), 1u);
  check_no_violations();
}

CAF_TEST(a database error at claim leaves the message for redelivery) {
  auto id = add_document();
  work->fail_next("claim", error::make_transient("pg.57P01", "admin shutdown"));
  auto o = run_job(id.str(), hb);
  CAF_CHECK_EQUAL(o.result, job_result::abandoned);
  CAF_CHECK(queue->deleted_ids().empty());
}

// ---- failures --------------------------------------------------------------------------------

CAF_TEST(a transient failure backs off through the queue then the next delivery succeeds) {
  auto id = add_document();
  extract->fail_next("extract", error::make_transient("http_503", "upstream unavailable"));
  auto first = run_job(id.str(), hb);
  CAF_CHECK_EQUAL(first.result, job_result::retrying);
  auto item = work->item(id);
  CAF_CHECK_EQUAL(item.attempt_count, 1);
  CAF_CHECK_EQUAL(item.error_class, "transient");
  CAF_CHECK(item.retry_delay == std::optional<std::chrono::seconds>{300s});
  CAF_CHECK(queue->deleted_ids().empty());
  CAF_CHECK_EQUAL(last_visibility(), 300s); // first entry of the back-off schedule
  // The trail so far travels with the failure, its own row saying what became of the attempt.
  CAF_CHECK_EQUAL(written_by(id), std::set<std::string>{"record_failure"});
  auto rows = audit_of(id, "record_failure");
  CAF_REQUIRE_EQUAL(rows.size(), 1u);
  CAF_CHECK_EQUAL(rows[0].event.outcome, "retrying");
  CAF_CHECK_EQUAL(events_with(id, "extract"), 1u);
  CAF_CHECK_EQUAL(events_with(id, "backoff"), 0u);
  auto second = run_job(id.str(), hb);
  CAF_CHECK_EQUAL(second.result, job_result::completed);
  CAF_CHECK_EQUAL(work->item(id).completions, 1);
  CAF_CHECK_EQUAL(ocr->calls(), 1); // the first attempt's transcription was reused
  check_no_violations();
}

namespace {

/// A stage's part of a job that throws where its first step would start.
struct throwing_job final : stage_job {
  void run(job_handle&) override { throw std::runtime_error("the stage's code threw"); }
};

} // namespace

CAF_TEST(an exception out of a stage s code is a failed attempt recorded like any other) {
  auto id = add_document();
  auto s = std::make_shared<stage>(*ingest_stage());
  s->make_job = [] { return std::make_unique<throwing_job>(); };
  auto job = spawn_job(sys, ctx, s, hb, deliver(id.str()));
  auto seen_at_exit = in_flight_at_exit(job);
  sched.run();
  CAF_REQUIRE_EQUAL(outcomes.size(), 1u);
  CAF_CHECK_EQUAL(outcomes.back().result, job_result::retrying);
  auto item = work->item(id);
  CAF_CHECK_EQUAL(item.attempt_count, 1);
  CAF_CHECK_EQUAL(item.error_class, "transient");
  CAF_CHECK(item.last_error.find("step.exception") != std::string::npos);
  CAF_CHECK(item.last_error.find("the stage's code threw") != std::string::npos);
  CAF_CHECK(queue->deleted_ids().empty()); // back again after the back-off
  CAF_CHECK_EQUAL(*seen_at_exit, 0);
  check_no_violations();
}

CAF_TEST(an exception that recording the failure throws too ends the job as a crash) {
  auto id = add_document();
  auto s = std::make_shared<stage>(*ingest_stage());
  s->make_job = [] { return std::make_unique<throwing_job>(); };
  s->on_failure = [](failure_plan&) { throw std::runtime_error("the failure hook threw"); };
  auto job = spawn_job(sys, ctx, s, hb, deliver(id.str()));
  auto seen_at_exit = in_flight_at_exit(job);
  sched.run();
  // Nothing recorded: the claim stays until its lease runs out (the next claim counts a crash),
  // the message until its visibility does; the node's place was given back before the job's end
  // was heard of.
  CAF_CHECK(outcomes.empty());
  auto item = work->item(id);
  CAF_CHECK_EQUAL(item.status, "in-progress");
  CAF_CHECK(item.token.has_value());
  CAF_CHECK_EQUAL(item.attempt_count, 0);
  CAF_CHECK(queue->deleted_ids().empty());
  CAF_CHECK_EQUAL(*seen_at_exit, 0);
  CAF_CHECK_EQUAL(ctx->admission->in_flight(), 0);
}

CAF_TEST(a database lost mid job gives the work back without counting an attempt) {
  // The system's own failure, not the document's: no back-off to wait out, the next delivery
  // starts at once.
  auto id = add_document();
  db->fail_next(
      "load", error::make_transient("pg.connection", "server closed the connection unexpectedly"));
  auto first = run_job(id.str(), hb);
  CAF_CHECK_EQUAL(first.result, job_result::released);
  auto item = work->item(id);
  CAF_CHECK_EQUAL(item.attempt_count, 0);
  CAF_CHECK_EQUAL(item.error_class, "");
  CAF_CHECK_EQUAL(item.releases, 1);
  CAF_CHECK(!item.lease_live);
  CAF_CHECK(!item.token.has_value());
  CAF_CHECK_EQUAL(last_visibility(), 0s);
  CAF_CHECK(queue->deleted_ids().empty());
  // The give-back carries the trail.
  CAF_CHECK_EQUAL(written_by(id), std::set<std::string>{"release"});
  CAF_CHECK_EQUAL(events_with(id, "release"), 1u);
  auto second = run_job(id.str(), hb);
  CAF_CHECK_EQUAL(second.result, job_result::completed);
  CAF_CHECK_EQUAL(work->item(id).completions, 1);
  check_no_violations();
}

CAF_TEST(a failure that cannot be recorded leaves the message and writes the trail alone) {
  auto id = add_document();
  extract->fail_next("extract", error::make_transient("http_503", "upstream unavailable"));
  work->fail_next("record_failure", error::make_transient("pg.40001", "serialization failure"));
  auto o = run_job(id.str(), hb);
  CAF_CHECK_EQUAL(o.result, job_result::abandoned);
  CAF_CHECK(queue->deleted_ids().empty());
  CAF_CHECK(queue->visibility_calls().empty()); // it reappears after its visibility timeout
  auto item = work->item(id);
  CAF_CHECK_EQUAL(item.attempt_count, 0);
  CAF_CHECK(item.token.has_value()); // the lease runs out: the next claim counts a crash
  // Nothing was recorded with a state change: the steps so far are written alone, once each.
  for (auto step : {"claim", "load", "fetch", "transcribe", "store_transcription",
                    "record_transcription", "extract"})
    CAF_CHECK_EQUAL(events_with(id, step), 1u);
  CAF_CHECK_EQUAL(written_by(id), std::set<std::string>{"append_audit"});
  check_no_violations();
}

CAF_TEST(a give back that cannot reach the database writes the trail alone) {
  auto id = add_document();
  ocr->hold("transcribe");
  auto job = spawn_ingest_job(id.str(), hb);
  sched.run();
  work->fail_next("release", error::make_transient("pg.connection", "connection refused"));
  caf::anon_send(job, stop_atom_v);
  sched.run();
  CAF_REQUIRE_EQUAL(outcomes.size(), 1u);
  CAF_CHECK_EQUAL(outcomes.back().result, job_result::released);
  CAF_CHECK_EQUAL(last_visibility(), 0s);
  for (auto step : {"claim", "load", "fetch", "release"})
    CAF_CHECK_EQUAL(events_with(id, step), 1u);
  auto rows = audit_of(id, "release");
  CAF_REQUIRE_EQUAL(rows.size(), 1u);
  CAF_CHECK_EQUAL(rows[0].event.outcome, "transient");
  CAF_CHECK_EQUAL(written_by(id), std::set<std::string>{"append_audit"});
  ocr->unhold("transcribe");
  sched.run();
  check_no_violations();
}

CAF_TEST(the backoff grows with the attempts) {
  auto id = add_document("text", 1);
  extract->fail_next("extract", error::make_transient("http_429", "rate limited"));
  CAF_CHECK_EQUAL(run_job(id.str(), hb).result, job_result::retrying);
  CAF_CHECK_EQUAL(last_visibility(), 1800s);
}

CAF_TEST(a permanent failure fails at once and deletes the message) {
  auto id = add_document();
  ocr->fail_next("transcribe", error::make_permanent("ocr.corrupt_file", "not a PDF"));
  auto o = run_job(id.str(), hb);
  CAF_CHECK_EQUAL(o.result, job_result::failed);
  auto item = work->item(id);
  CAF_CHECK_EQUAL(item.status, "failed");
  CAF_CHECK_EQUAL(item.error_class, "permanent");
  CAF_CHECK_EQUAL(item.attempt_count, 1);
  CAF_CHECK_EQUAL(queue->deleted_ids().size(), 1u);
  CAF_CHECK_EQUAL(status_events(id, "INGESTION_FAILED"), 1u);
  auto rows = audit_of(id, "record_failure");
  CAF_REQUIRE_EQUAL(rows.size(), 1u);
  CAF_CHECK_EQUAL(rows[0].event.outcome, "failed");
  CAF_CHECK_EQUAL(rows[0].written_by, "record_failure");
  auto transcribed = audit_of(id, "transcribe");
  CAF_REQUIRE_EQUAL(transcribed.size(), 1u);
  CAF_CHECK_EQUAL(transcribed[0].event.outcome, "permanent");
  check_no_violations();
}

CAF_TEST(the last attempt fails for good and deletes the message) {
  auto id = add_document("text", 2);
  extract->fail_next("extract", error::make_transient("http_500", "server error"));
  auto o = run_job(id.str(), hb);
  CAF_CHECK_EQUAL(o.result, job_result::failed);
  CAF_CHECK_EQUAL(o.attempt_count, 3);
  CAF_CHECK_EQUAL(work->item(id).status, "failed");
  CAF_CHECK_EQUAL(queue->deleted_ids().size(), 1u);
  CAF_CHECK_EQUAL(status_events(id, "INGESTION_FAILED"), 1u);
}

CAF_TEST(a decoder helper that died on the document counts a crash and is poison at the last) {
  // Below the limit: an attempt and a crash, retried like any transient failure.
  auto id = add_document("text", 1);
  ocr->fail_next("transcribe", error::make_transient(std::string{errc::decode_out_of_memory},
                                                     "the decoder helper ran out of memory"));
  CAF_CHECK_EQUAL(run_job(id.str(), hb).result, job_result::retrying);
  CAF_CHECK_EQUAL(work->item(id).status, "in-progress");
  CAF_CHECK_EQUAL(work->item(id).crash_count, 1);
  CAF_CHECK(ctx->metrics->prometheus().find("error_class=\"poison\"") == std::string::npos);
  // At the last attempt it fails for good as poison, its message deleted.
  auto last = add_document("text", 2);
  ocr->fail_next("transcribe", error::make_transient(std::string{errc::decode_crashed},
                                                     "the decoder helper died (SIGSEGV)"));
  auto o = run_job(last.str(), hb);
  CAF_CHECK_EQUAL(o.result, job_result::failed);
  CAF_CHECK_EQUAL(work->item(last).status, "failed");
  CAF_CHECK_EQUAL(work->item(last).crash_count, 1);
  CAF_CHECK(ctx->metrics->prometheus().find("error_class=\"poison\"") != std::string::npos);
  CAF_CHECK_EQUAL(queue->deleted_ids().size(), 1u);
  check_no_violations();
}

CAF_TEST(with dead letter redrive the last failure leaves the message to the queue) {
  ingest.dead_letter = true;
  auto id = add_document("text", 2);
  extract->fail_next("extract", error::make_transient("http_500", "server error"));
  CAF_CHECK_EQUAL(run_job(id.str(), hb).result, job_result::failed);
  CAF_CHECK_EQUAL(work->item(id).status, "failed");
  CAF_CHECK(queue->deleted_ids().empty());
}

CAF_TEST(a quality gate failure is a failed attempt that keeps the extracted data) {
  auto id = add_document("text", 2);
  auto bad = test::fake_extractor::valid_invoice();
  bad.structured_data = R"({"subtotal":100.0,"vat_amount":19.0,"total":120.0})";
  extract->next_result = bad;
  ports->gate = [](const extraction&) { return gate_verdict{false, "totals do not reconcile"}; };
  auto o = run_job(id.str(), hb);
  CAF_CHECK_EQUAL(o.result, job_result::failed);
  auto row = db->row(id);
  CAF_CHECK_EQUAL(row.structured_data, bad.structured_data);
  CAF_CHECK(!row.valid_structured_data);
  CAF_CHECK_EQUAL(row.kept_outputs, 1);
  CAF_CHECK(row.transcription.has_value()); // beside the kept output, for the reviewer
  CAF_CHECK(work->item(id).last_error.find("totals do not reconcile") != std::string::npos);
  CAF_CHECK_EQUAL(events_with(id, "keep_output"), 1u);
  check_no_violations();
}

CAF_TEST(an incomplete extraction by an llm is retried once then goes to review) {
  auto id = add_document();
  extract->next_result = test::fake_extractor::valid_invoice();
  ports->gate = [](const extraction&) {
    return gate_verdict{false, "totals do not reconcile", false};
  };
  auto first = run_job(id.str(), hb);
  CAF_CHECK_EQUAL(first.result, job_result::retrying);
  CAF_CHECK_EQUAL(work->item(id).error_class, "transient");
  auto second = run_job(id.str(), hb);
  CAF_CHECK_EQUAL(second.result, job_result::failed);
  CAF_CHECK_EQUAL(work->item(id).attempt_count, 2);
  CAF_CHECK(work->item(id).last_error.find("extraction incomplete") != std::string::npos);
}

CAF_TEST(the local rules verdict and missing critical fields go to review at the first attempt) {
  extract->deterministic_answers = true;
  ports->gate = [](const extraction&) { return gate_verdict{false, "confidence is low", false}; };
  auto local = add_document();
  CAF_CHECK_EQUAL(run_job(local.str(), hb).result, job_result::failed);
  CAF_CHECK_EQUAL(work->item(local).attempt_count, 1);
  extract->deterministic_answers = false;
  ports->gate = [](const extraction&) {
    return gate_verdict{false, "extraction not successful", true};
  };
  auto critical = add_document();
  CAF_CHECK_EQUAL(run_job(critical.str(), hb).result, job_result::failed);
  CAF_CHECK_EQUAL(work->item(critical).attempt_count, 1);
  CAF_CHECK(work->item(critical).last_error.find("critical fields missing") != std::string::npos);
  CAF_CHECK_EQUAL(status_events(local, "INGESTION_FAILED"), 1u);
  CAF_CHECK_EQUAL(status_events(critical, "INGESTION_FAILED"), 1u);
}

CAF_TEST(a missing file fails permanently) {
  auto id = db->add("documents/missing.pdf", "application/pdf");
  auto o = run_job(id.str(), hb);
  CAF_CHECK_EQUAL(o.result, job_result::failed);
  CAF_CHECK(work->item(id).last_error.find("storage.not_found") != std::string::npos);
}

CAF_TEST(an ingestion the stage s repository does not know fails permanently) {
  auto id = uuid::v7();
  work->add("ingest", id, uuid::v7(), uuid::v7());
  auto o = run_job(id.str(), hb);
  CAF_CHECK_EQUAL(o.result, job_result::failed);
  CAF_CHECK_EQUAL(work->item(id).error_class, "permanent");
  auto loaded = audit_of(id, "load");
  CAF_REQUIRE_EQUAL(loaded.size(), 1u);
  CAF_CHECK_EQUAL(loaded[0].event.outcome, "permanent");
}

CAF_TEST_FIXTURE_SCOPE_END()
