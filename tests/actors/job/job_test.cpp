// Every path of the job actor, on the deterministic scheduler with the port fakes.
#define CAF_SUITE job
#include "caf/test/unit_test_impl.hpp"

#include "adapters/extraction/fallback_extractor.hpp"
#include "adapters/extraction/local_extractor.hpp"
#include "adapters/ocr/transcription_json.hpp"
#include "adapters/storage/object_store.hpp"
#include "tests/actors/support/actor_fixture.hpp"

using namespace ingestd;
using namespace std::chrono_literals;

namespace {

struct fixture : test::actor_fixture {
  heartbeat_actor hb = heartbeat();

  uuid add_document(const std::string& text = "Invoice INV-1 total 119.00", int attempts = 0) {
    auto id = db->add("documents/d.txt", "text/plain", attempts);
    store->set("documents/d.txt", text);
    return id;
  }

  /// Timers and delayed messages the actor clock holds for `job` (each keeps the actor alive).
  size_t clock_entries_for(const job_actor& job) {
    using clk = caf::detail::simple_actor_clock;
    auto addr = caf::actor_cast<caf::strong_actor_ptr>(job);
    size_t n = 0;
    for (auto& [due, event] : sched.clock().schedule()) {
      if (auto* t = dynamic_cast<clk::ordinary_timeout*>(event.get()); t != nullptr && t->self == addr)
        ++n;
      if (auto* m = dynamic_cast<clk::actor_msg*>(event.get()); m != nullptr && m->receiver == addr)
        ++n;
    }
    return n;
  }

  /// A stored transcription of `text`, as an earlier attempt leaves it.
  void store_transcription(const uuid& id, const std::string& text) {
    transcription t;
    t.text = text;
    t.pages.push_back(transcription_page{1, text, 0.9, {}});
    t.page_count = 1;
    t.quality_score = 0.9;
    t.provider = "earlier";
    store->set(storage_keys::transcription(id.str()), to_json(t));
  }

  size_t events_with(const uuid& id, const std::string& step) {
    size_t n = 0;
    for (auto& e : db->events())
      if (e.ingestion_id == id && e.step == step)
        ++n;
    return n;
  }
};

/// A CPU pool the test drives: what is submitted waits until the test runs or expires it.
struct manual_cpu final : cpu_executor {
  std::vector<cpu_job> jobs;
  void submit(cpu_job job) override { jobs.push_back(std::move(job)); }
  cpu_job next() {
    auto job = std::move(jobs.front());
    jobs.erase(jobs.begin());
    return job;
  }
};

} // namespace

CAF_TEST_FIXTURE_SCOPE(job_tests, fixture)

CAF_TEST(an invalid body is deleted without touching the database) {
  auto o = run_job("not-a-uuid", hb);
  CAF_CHECK_EQUAL(o.result, job_result::invalid);
  CAF_CHECK_EQUAL(queue->deleted_ids().size(), 1u);
  CAF_CHECK(db->events().empty());
  CAF_CHECK_EQUAL(ocr->calls(), 0);
}

CAF_TEST(success runs every step and deletes the message once the outcome is stored) {
  auto id = add_document();
  auto o = run_job(id.str(), hb);
  CAF_CHECK_EQUAL(o.result, job_result::completed);
  CAF_CHECK_EQUAL(o.ingestion_id, id);
  auto row = db->row(id);
  CAF_CHECK_EQUAL(row.status, "completed");
  CAF_CHECK_EQUAL(row.completions, 1);
  CAF_CHECK_EQUAL(row.transcription_file_path, storage_keys::transcription(id.str()));
  CAF_CHECK(store->object(storage_keys::transcription(id.str())).has_value());
  CAF_CHECK_EQUAL(queue->deleted_ids().size(), 1u);
  for (auto step : {"claim", "resume", "fetch", "transcribe", "store_transcription",
                    "record_transcription", "extract", "gate", "complete", "ack"})
    CAF_CHECK_EQUAL(events_with(id, step), 1u);
  CAF_CHECK(db->violations().empty());
  CAF_CHECK(queue->violations().empty());
}

CAF_TEST(a finished job leaves no timer or delayed message behind) {
  // A pending deadline would keep the finished actor alive until it passes: at thousands of
  // ingestions per second, gigabytes.
  auto id = add_document();
  auto job = spawn_job(sys, ctx, hb, deliver(id.str()));
  sched.run();
  CAF_REQUIRE_EQUAL(outcomes.size(), 1u);
  CAF_CHECK_EQUAL(outcomes.back().result, job_result::completed);
  CAF_CHECK_EQUAL(clock_entries_for(job), 0u);
}

CAF_TEST(a stored transcription is reused instead of transcribing again) {
  auto id = add_document();
  transcription t;
  t.text = "stored text";
  t.pages.push_back(transcription_page{1, "stored text", 0.9, {}});
  t.page_count = 1;
  t.quality_score = 0.9;
  t.provider = "earlier";
  store->set(storage_keys::transcription(id.str()), to_json(t));
  auto o = run_job(id.str(), hb);
  CAF_CHECK_EQUAL(o.result, job_result::completed);
  CAF_CHECK_EQUAL(ocr->calls(), 0);
  CAF_CHECK_EQUAL(events_with(id, "fetch"), 0u);
  CAF_CHECK_EQUAL(db->row(id).transcription_file_path, storage_keys::transcription(id.str()));
}

CAF_TEST(a finished ingestion is skipped and its duplicate message deleted) {
  auto id = add_document();
  CAF_CHECK_EQUAL(run_job(id.str(), hb).result, job_result::completed);
  auto o = run_job(id.str(), hb);
  CAF_CHECK_EQUAL(o.result, job_result::skipped);
  CAF_CHECK_EQUAL(o.detail, "already completed");
  CAF_CHECK_EQUAL(db->row(id).completions, 1);
  CAF_CHECK_EQUAL(queue->deleted_ids().size(), 2u);
}

CAF_TEST(an ingestion another worker holds is left alone its message not deleted) {
  auto id = add_document();
  db->hold_by_other(id);
  auto o = run_job(id.str(), hb);
  CAF_CHECK_EQUAL(o.result, job_result::skipped);
  CAF_CHECK(queue->deleted_ids().empty());
  CAF_CHECK_EQUAL(ocr->calls(), 0);
}

CAF_TEST(an unknown ingestion id is deleted) {
  auto o = run_job(uuid::v7().str(), hb);
  CAF_CHECK_EQUAL(o.result, job_result::skipped);
  CAF_CHECK_EQUAL(o.detail, "no such ingestion");
  CAF_CHECK_EQUAL(queue->deleted_ids().size(), 1u);
}

CAF_TEST(a crash below the limit counts as an attempt and the next worker carries on) {
  ctx->settings.max_attempts = 2;
  auto id = add_document();
  db->steal_claim(id);
  db->crash_holder(id);  // its worker died holding it
  auto o = run_job(id.str(), hb);
  CAF_CHECK_EQUAL(o.result, job_result::completed);
  CAF_CHECK_EQUAL(o.attempt_count, 2);
  CAF_CHECK_EQUAL(db->row(id).status, "completed");
  CAF_CHECK(db->violations().empty());
}

CAF_TEST(a message whose ingestion the claim failed as poison is deleted without processing) {
  // The worker's own limit, not the port's default, decides: at 2, the second crash is the last.
  ctx->settings.max_attempts = 2;
  auto id = add_document("Invoice INV-1 total 119.00", 1);
  db->steal_claim(id);
  db->crash_holder(id);
  auto o = run_job(id.str(), hb);
  auto row = db->row(id);
  CAF_CHECK_EQUAL(row.status, "failed");
  CAF_CHECK_EQUAL(row.error_class, "poison");
  CAF_CHECK_EQUAL(row.ingestion.attempt_count, 2);
  // Finished: the path of any finished ingestion acknowledges the message.
  CAF_CHECK_EQUAL(o.result, job_result::skipped);
  CAF_CHECK_EQUAL(o.detail, "already failed");
  CAF_CHECK_EQUAL(queue->deleted_ids().size(), 1u);
  CAF_CHECK_EQUAL(ocr->calls(), 0);
  CAF_CHECK_EQUAL(extract->calls(), 0);
  CAF_CHECK(!row.token.has_value());
  // Notified as every final failure is, once: a duplicate delivery finds it finished.
  CAF_CHECK_EQUAL(notified, std::vector<std::string>{id.str() + " poison 2"});
  auto again = run_job(id.str(), hb);
  CAF_CHECK_EQUAL(again.result, job_result::skipped);
  CAF_CHECK_EQUAL(notified.size(), 1u);
  CAF_CHECK(db->violations().empty());
}

CAF_TEST(a database error at claim leaves the message for redelivery) {
  auto id = add_document();
  db->fail_next("claim", error::make_transient("pg.57P01", "admin shutdown"));
  auto o = run_job(id.str(), hb);
  CAF_CHECK_EQUAL(o.result, job_result::abandoned);
  CAF_CHECK(queue->deleted_ids().empty());
}

CAF_TEST(a transient failure backs off through the queue then the next delivery succeeds) {
  auto id = add_document();
  extract->fail_next("extract", error::make_transient("http_503", "upstream unavailable"));
  auto first = run_job(id.str(), hb);
  CAF_CHECK_EQUAL(first.result, job_result::retrying);
  CAF_CHECK_EQUAL(db->row(id).ingestion.attempt_count, 1);
  CAF_CHECK_EQUAL(db->row(id).error_class, "transient");
  CAF_CHECK(queue->deleted_ids().empty());
  auto calls = queue->visibility_calls();
  CAF_REQUIRE(!calls.empty());
  CAF_CHECK_EQUAL(calls.back().timeout, 300s);  // first entry of the backoff schedule
  auto second = run_job(id.str(), hb);
  CAF_CHECK_EQUAL(second.result, job_result::completed);
  CAF_CHECK_EQUAL(db->row(id).completions, 1);
  CAF_CHECK_EQUAL(ocr->calls(), 1);  // the first attempt's transcription was reused
}

CAF_TEST(a database lost mid-job gives the work back without counting an attempt) {
  // The system's own failure, not the document's: no back-off to wait out, the next delivery
  // starts at once.
  auto id = add_document();
  db->fail_next("record_transcription",
                error::make_transient("pg.connection", "server closed the connection unexpectedly"));
  auto first = run_job(id.str(), hb);
  CAF_CHECK_EQUAL(first.result, job_result::released);
  CAF_CHECK_EQUAL(db->row(id).ingestion.attempt_count, 0);
  CAF_CHECK_EQUAL(db->row(id).error_class, "");
  CAF_CHECK(!db->row(id).lease_live);
  CAF_CHECK(!db->row(id).token.has_value());
  auto calls = queue->visibility_calls();
  CAF_REQUIRE(!calls.empty());
  CAF_CHECK_EQUAL(calls.back().timeout, 0s);
  CAF_CHECK(queue->deleted_ids().empty());
  auto second = run_job(id.str(), hb);
  CAF_CHECK_EQUAL(second.result, job_result::completed);
  CAF_CHECK_EQUAL(db->row(id).completions, 1);
}

CAF_TEST(the backoff grows with the attempts) {
  auto id = add_document("text", 1);
  extract->fail_next("extract", error::make_transient("http_429", "rate limited"));
  CAF_CHECK_EQUAL(run_job(id.str(), hb).result, job_result::retrying);
  // A copy: CAF_CHECK_EQUAL binds a reference to its argument, which must outlive the statement.
  auto calls = queue->visibility_calls();
  CAF_CHECK_EQUAL(calls.back().timeout, 1800s);
}

CAF_TEST(a permanent failure fails at once notifies and deletes the message) {
  auto id = add_document();
  ocr->fail_next("transcribe", error::make_permanent("ocr.corrupt_file", "not a PDF"));
  auto o = run_job(id.str(), hb);
  CAF_CHECK_EQUAL(o.result, job_result::failed);
  CAF_CHECK_EQUAL(db->row(id).status, "failed");
  CAF_CHECK_EQUAL(db->row(id).error_class, "permanent");
  CAF_CHECK_EQUAL(db->row(id).ingestion.attempt_count, 1);
  CAF_CHECK_EQUAL(queue->deleted_ids().size(), 1u);
  CAF_CHECK_EQUAL(notified.size(), 1u);
}

CAF_TEST(the last attempt fails for good and deletes the message) {
  auto id = add_document("text", 2);
  extract->fail_next("extract", error::make_transient("http_500", "server error"));
  auto o = run_job(id.str(), hb);
  CAF_CHECK_EQUAL(o.result, job_result::failed);
  CAF_CHECK_EQUAL(o.attempt_count, 3);
  CAF_CHECK_EQUAL(db->row(id).status, "failed");
  CAF_CHECK_EQUAL(queue->deleted_ids().size(), 1u);
}

CAF_TEST(with dead-letter redrive the last failure leaves the message to the queue) {
  ctx->settings.dead_letter_on_final_failure = true;
  auto id = add_document("text", 2);
  extract->fail_next("extract", error::make_transient("http_500", "server error"));
  CAF_CHECK_EQUAL(run_job(id.str(), hb).result, job_result::failed);
  CAF_CHECK(queue->deleted_ids().empty());
}

CAF_TEST(a quality gate failure is a failed attempt that keeps the extracted data) {
  auto id = add_document("text", 2);
  auto bad = test::fake_extractor::valid_invoice();
  bad.structured_data = R"({"subtotal":100.0,"vat_amount":19.0,"total":120.0})";
  extract->next_result = bad;
  ctx->ports.gate = [](const extraction&) { return gate_verdict{false, "totals do not reconcile"}; };
  auto o = run_job(id.str(), hb);
  CAF_CHECK_EQUAL(o.result, job_result::failed);
  CAF_CHECK_EQUAL(db->row(id).structured_data, bad.structured_data);
  CAF_CHECK(db->row(id).last_error.find("totals do not reconcile") != std::string::npos);
}

CAF_TEST(an incomplete extraction by an llm is retried once then goes to review) {
  auto id = add_document();
  auto bad = test::fake_extractor::valid_invoice();
  extract->next_result = bad;
  ctx->ports.gate = [](const extraction&) { return gate_verdict{false, "totals do not reconcile", false}; };
  auto first = run_job(id.str(), hb);
  CAF_CHECK_EQUAL(first.result, job_result::retrying);
  CAF_CHECK_EQUAL(db->row(id).error_class, "transient");
  auto second = run_job(id.str(), hb);
  CAF_CHECK_EQUAL(second.result, job_result::failed);
  CAF_CHECK_EQUAL(db->row(id).ingestion.attempt_count, 2);
  CAF_CHECK(db->row(id).last_error.find("extraction incomplete") != std::string::npos);
}

CAF_TEST(the local rules verdict and missing critical fields go to review at the first attempt) {
  extract->deterministic_answers = true;
  ctx->ports.gate = [](const extraction&) { return gate_verdict{false, "confidence is low", false}; };
  auto local = add_document();
  CAF_CHECK_EQUAL(run_job(local.str(), hb).result, job_result::failed);
  CAF_CHECK_EQUAL(db->row(local).ingestion.attempt_count, 1);
  extract->deterministic_answers = false;
  ctx->ports.gate = [](const extraction&) { return gate_verdict{false, "extraction not successful", true}; };
  auto critical = add_document();
  CAF_CHECK_EQUAL(run_job(critical.str(), hb).result, job_result::failed);
  CAF_CHECK_EQUAL(db->row(critical).ingestion.attempt_count, 1);
  CAF_CHECK(db->row(critical).last_error.find("critical fields missing") != std::string::npos);
  CAF_CHECK_EQUAL(notified.size(), 2u);
}

CAF_TEST(a fenced write rejected mid-way stops the job without side effects) {
  auto id = add_document();
  ocr->hold("transcribe");
  spawn_job(sys, ctx, hb, deliver(id.str()));
  sched.run();
  db->steal_claim(id);  // the lease expired and another worker claimed it
  ocr->unhold("transcribe");
  sched.run();
  CAF_REQUIRE_EQUAL(outcomes.size(), 1u);
  CAF_CHECK_EQUAL(outcomes.back().result, job_result::lost);
  CAF_CHECK(queue->deleted_ids().empty());
  CAF_CHECK_EQUAL(db->row(id).ingestion.attempt_count, 0);
  CAF_CHECK_EQUAL(extract->calls(), 0);
}

CAF_TEST(a refused heartbeat stops the job and a late result is ignored) {
  auto id = add_document();
  ocr->hold("transcribe");
  auto job = spawn_job(sys, ctx, hb, deliver(id.str()));
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
  CAF_CHECK_EQUAL(db->row(id).status, "in-progress");
}

CAF_TEST(a lost notice racing a stored completion is ignored and the message deleted) {
  // The heartbeat renewed leases just after the completion committed: the row is no longer
  // in progress, so the renewal reports the claim as lost while the job is about to ack.
  auto id = add_document();
  db->hold("complete");
  auto job = spawn_job(sys, ctx, hb, deliver(id.str()));
  sched.run();
  CAF_REQUIRE_EQUAL(db->row(id).status, "completed");
  db->unhold("complete");
  caf::anon_send(job, lost_atom_v, std::string{"lease lost: the claim was taken over"});
  sched.run();
  CAF_REQUIRE_EQUAL(outcomes.size(), 1u);
  CAF_CHECK_EQUAL(outcomes.back().result, job_result::completed);
  CAF_CHECK_EQUAL(queue->deleted_ids().size(), 1u);
  CAF_CHECK_EQUAL(db->row(id).completions, 1);
}

CAF_TEST(a lost notice during the fenced completion is left to the completion to decide) {
  auto id = add_document();
  db->hold("complete");
  auto job = spawn_job(sys, ctx, hb, deliver(id.str()));
  sched.run();
  caf::anon_send(job, lost_atom_v, std::string{"lease lost: the claim was taken over"});
  sched.run();
  CAF_CHECK(outcomes.empty());
  db->unhold("complete");
  sched.run();
  CAF_REQUIRE_EQUAL(outcomes.size(), 1u);
  CAF_CHECK_EQUAL(outcomes.back().result, job_result::completed);
  CAF_CHECK_EQUAL(queue->deleted_ids().size(), 1u);
}

CAF_TEST(shutdown while in flight releases the claim and the message) {
  auto id = add_document();
  ocr->hold("transcribe");
  auto job = spawn_job(sys, ctx, hb, deliver(id.str()));
  sched.run();
  caf::anon_send(job, stop_atom_v);
  sched.run();
  CAF_REQUIRE_EQUAL(outcomes.size(), 1u);
  CAF_CHECK_EQUAL(outcomes.back().result, job_result::released);
  CAF_CHECK(!db->row(id).lease_live);
  auto calls = queue->visibility_calls();
  CAF_REQUIRE(!calls.empty());
  CAF_CHECK_EQUAL(calls.back().timeout, 0s);
  CAF_CHECK(queue->deleted_ids().empty());
  ocr->unhold("transcribe");
  sched.run();
  CAF_CHECK_EQUAL(outcomes.size(), 1u);
}

CAF_TEST(shutdown during the claim gives back what the claim granted) {
  // Left alone, a claim granted after the stop would expire and count as a crash.
  auto id = add_document();
  db->hold("claim");
  auto job = spawn_job(sys, ctx, hb, deliver(id.str()));
  sched.run();
  CAF_REQUIRE_EQUAL(db->held("claim"), 1u);
  CAF_REQUIRE(outcomes.empty());
  caf::anon_send(job, stop_atom_v);
  sched.run();
  db->unhold("claim");
  sched.run();
  CAF_REQUIRE_EQUAL(outcomes.size(), 1u);
  CAF_CHECK_EQUAL(outcomes.back().result, job_result::released);
  auto row = db->row(id);
  CAF_CHECK(!row.token.has_value());
  CAF_CHECK(!row.lease_live);
  CAF_CHECK_EQUAL(row.ingestion.attempt_count, 0);
  auto calls = queue->visibility_calls();
  CAF_REQUIRE(!calls.empty());
  CAF_CHECK_EQUAL(calls.back().timeout, 0s);
  CAF_CHECK(queue->deleted_ids().empty());
  CAF_CHECK_EQUAL(ocr->calls(), 0);
}

CAF_TEST(a step past its deadline is a transient failure) {
  auto id = add_document();
  extract->hold("extract");
  auto job = spawn_job(sys, ctx, hb, deliver(id.str()));
  sched.run();
  CAF_CHECK(outcomes.empty());
  // One deadline for the job, not one per step taken so far.
  CAF_CHECK_EQUAL(clock_entries_for(job), 1u);
  advance_time(29s);
  sched.run();
  CAF_CHECK(outcomes.empty());
  advance_time(2s);
  sched.run();
  CAF_REQUIRE_EQUAL(outcomes.size(), 1u);
  CAF_CHECK_EQUAL(outcomes.back().result, job_result::retrying);
  CAF_CHECK(db->row(id).last_error.find("step.timeout") != std::string::npos);
  // The deadline names the step that ran past it.
  CAF_CHECK(db->row(id).last_error.find("extract did not finish within 30 s") != std::string::npos);
  extract->unhold("extract");
  sched.run();
  CAF_CHECK_EQUAL(outcomes.size(), 1u);
  CAF_CHECK_EQUAL(db->row(id).completions, 0);
}

CAF_TEST(the step deadline does not run while the document waits for a CPU worker) {
  auto id = add_document();
  ocr->wait_for_cpu(true);
  auto job = spawn_job(sys, ctx, hb, deliver(id.str()));
  sched.run();
  for (int i = 0; i < 4; ++i) {  // four step deadlines (30 s each) pass while it waits
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
  auto job = spawn_job(sys, ctx, hb, deliver(id.str()));
  sched.run();
  advance_time(61s);
  sched.run();
  ocr->start_waiting();
  sched.run();
  CAF_CHECK(outcomes.empty());
  advance_time(31s);
  sched.run();
  CAF_REQUIRE_EQUAL(outcomes.size(), 1u);
  CAF_CHECK(db->row(id).last_error.find("extract did not finish within 30 s") != std::string::npos);
  extract->unhold("extract");
  sched.run();
}

CAF_TEST(a document that got no CPU worker in time is given back without counting an attempt) {
  // Load is not the document's fault: a bulk import never sends documents to review because the
  // node admitted more OCR work than its cores could finish.
  auto id = add_document();
  ocr->wait_for_cpu(true);
  spawn_job(sys, ctx, hb, deliver(id.str()));
  sched.run();
  ocr->expire_waiting();
  sched.run();
  CAF_REQUIRE_EQUAL(outcomes.size(), 1u);
  CAF_CHECK_EQUAL(outcomes.back().result, job_result::released);
  CAF_CHECK_EQUAL(db->row(id).ingestion.attempt_count, 0);
  CAF_CHECK(!db->row(id).token.has_value());
  auto calls = queue->visibility_calls();
  CAF_REQUIRE(!calls.empty());
  CAF_CHECK_EQUAL(calls.back().timeout, 0s);
  ocr->wait_for_cpu(false);
  CAF_CHECK_EQUAL(run_job(id.str(), hb).result, job_result::completed);
}

CAF_TEST(the step deadline does not run while the extraction waits for the provider limits) {
  auto id = add_document();
  extract->hold("extract");
  spawn_job(sys, ctx, hb, deliver(id.str()));
  sched.run();
  auto hooks = extract->last_context();
  CAF_REQUIRE(hooks.waiting && hooks.resumed);
  hooks.waiting();  // as rate_limited_client tells it: the request waits in the provider's line
  sched.run();
  for (int i = 0; i < 4; ++i) {  // four step deadlines (30 s each) pass while it waits
    advance_time(31s);
    sched.run();
  }
  CAF_CHECK(outcomes.empty());
  hooks.resumed();  // sent: the deadline runs from now
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
  spawn_job(sys, ctx, hb, deliver(id.str()));
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
  CAF_CHECK(db->row(id).last_error.find("extract did not finish within 30 s") != std::string::npos);
  extract->unhold("extract");
  sched.run();
}

CAF_TEST(an extraction that waited its longest for the provider is given back without counting an attempt) {
  auto id = add_document();
  extract->fail_next("extract", error::make_transient("provider.busy", "the request waited 600 s for the llm "
                                                                       "provider's limits and was not sent"));
  spawn_job(sys, ctx, hb, deliver(id.str()));
  sched.run();
  CAF_REQUIRE_EQUAL(outcomes.size(), 1u);
  CAF_CHECK_EQUAL(outcomes.back().result, job_result::released);
  CAF_CHECK_EQUAL(db->row(id).ingestion.attempt_count, 0);
  CAF_CHECK(!db->row(id).token.has_value());
  auto calls = queue->visibility_calls();
  CAF_REQUIRE(!calls.empty());
  CAF_CHECK_EQUAL(calls.back().timeout, 0s);
  CAF_CHECK_EQUAL(run_job(id.str(), hb).result, job_result::completed);
}

CAF_TEST(a stored transcription is parsed and the local rules run on the CPU pool not on a scheduler thread) {
  auto cpu = std::make_shared<manual_cpu>();
  ctx->ports.cpu = cpu;
  ctx->ports.extract = std::make_shared<local_extractor>();
  ctx->ports.gate = [](const extraction&) { return gate_verdict{true, {}, false}; };
  auto id = add_document();
  store_transcription(id, "Invoice No: INV-1\nDate: 2024-03-15\nTotal: 119.00 EUR");
  spawn_job(sys, ctx, hb, deliver(id.str()));
  sched.run();
  CAF_REQUIRE_EQUAL(cpu->jobs.size(), 1u);  // the parse waits for a worker
  for (int i = 0; i < 4; ++i) {              // and its step deadline waits with it
    advance_time(31s);
    sched.run();
  }
  CAF_CHECK(outcomes.empty());
  cpu->next().run();
  sched.run();
  CAF_REQUIRE_EQUAL(cpu->jobs.size(), 1u);  // the extraction
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
  ctx->ports.cpu = cpu;
  auto id = add_document();
  store_transcription(id, "stored text");
  spawn_job(sys, ctx, hb, deliver(id.str()));
  sched.run();
  CAF_REQUIRE_EQUAL(cpu->jobs.size(), 1u);
  cpu->next().expired();
  sched.run();
  CAF_REQUIRE_EQUAL(outcomes.size(), 1u);
  CAF_CHECK_EQUAL(outcomes.back().result, job_result::released);
  CAF_CHECK_EQUAL(db->row(id).ingestion.attempt_count, 0);
}

CAF_TEST(a stored transcription that cannot be parsed is transcribed again) {
  auto id = add_document();
  store->set(storage_keys::transcription(id.str()), "{not json");
  CAF_CHECK_EQUAL(run_job(id.str(), hb).result, job_result::completed);
  CAF_CHECK_EQUAL(ocr->calls(), 1);
}

CAF_TEST(a document with no text completes for review as text_unavailable without an extraction) {
  auto id = add_document(" \n\f ");
  auto o = run_job(id.str(), hb);
  CAF_CHECK_EQUAL(o.result, job_result::completed);
  CAF_CHECK_EQUAL(db->row(id).status, "completed");
  CAF_CHECK_EQUAL(db->row(id).last_error.rfind("text_unavailable", 0), 0u);
  CAF_CHECK_EQUAL(extract->calls(), 0);
}

CAF_TEST(a text too long for the LLM is extracted by the local rules and completed for review) {
  ctx->ports.extract = std::make_shared<fallback_extractor>(extract, std::make_shared<local_extractor>());
  ctx->ports.gate = [](const extraction&) { return gate_verdict{true, {}, false}; };
  extract->fail_next("extract", error::make_permanent("llm.context_exceeded", "maximum context length is 8192 tokens"));
  auto id = add_document("Invoice No: INV-7\nDate: 2024-03-15\nTotal: 119.00 EUR");
  auto o = run_job(id.str(), hb);
  CAF_CHECK_EQUAL(o.result, job_result::completed);
  CAF_CHECK(db->row(id).structured_data.find("INV-7") != std::string::npos);
  CAF_CHECK_EQUAL(db->row(id).last_error.rfind("extracted by the local extractor", 0), 0u);
  CAF_CHECK(db->row(id).last_error.find("llm.context_exceeded") != std::string::npos);
  // Any other LLM failure is the LLM's: no fallback.
  auto other = add_document("Invoice No: INV-8");
  extract->fail_next("extract", error::make_permanent("llm.unauthorized", "bad key"));
  CAF_CHECK_EQUAL(run_job(other.str(), hb).result, job_result::failed);
}

CAF_TEST(a missing file fails permanently) {
  auto id = db->add("documents/missing.pdf", "application/pdf");
  auto o = run_job(id.str(), hb);
  CAF_CHECK_EQUAL(o.result, job_result::failed);
  CAF_CHECK(db->row(id).last_error.find("storage.not_found") != std::string::npos);
}

CAF_TEST_FIXTURE_SCOPE_END()
