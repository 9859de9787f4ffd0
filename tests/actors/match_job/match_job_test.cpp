// Every path of the match stage's job, on the deterministic scheduler with the port fakes: the
// stage's steps (stages/match/match_stage.cpp) inside the shared lifecycle (actors/job.cpp), the
// document's work item in the claimed-work table. Its matching status and deliveries are read as
// the view document_matching shows them.
#define CAF_SUITE match_job
#include "caf/test/dsl.hpp"

#include "adapters/ocr/transcription_json.hpp"
#include "stages/match/match_stage.hpp"
#include "tests/actors/support/actor_fixture.hpp"
#include "tests/actors/support/manual_cpu.hpp"
#include "tests/support/fakes/stage_fakes.hpp"

using namespace ingestd;
using namespace std::chrono_literals;

namespace {

constexpr const char* invoice_json
    = R"({"invoice_number":"INV-77","invoice_date":"2026-01-15","supplier_name":"ACME GmbH",)"
      R"("currency":"EUR","total":119.0})";

/// A document's matching as the view document_matching shows it.
struct matching_view {
  /// pending, in-progress, succeeded, failed.
  std::string status;
  /// Deliveries: the attempts that failed or crashed, and the one running or that succeeded.
  int32_t attempts = 0;
  std::string error;
};

using test::manual_cpu;

struct match_job_fixture : test::actor_fixture {
  std::shared_ptr<test::fake_queue> match_queue = std::make_shared<test::fake_queue>();
  std::shared_ptr<test::fake_matching_repository> matching
      = std::make_shared<test::fake_matching_repository>(work);
  std::shared_ptr<test::fake_matcher> matcher = std::make_shared<test::fake_matcher>();
  std::shared_ptr<match_ports> mports = std::make_shared<match_ports>();
  match_settings msettings;
  uuid tenant = uuid::v7();
  std::shared_ptr<const stage> match_stage;
  heartbeat_actor hb;

  match_job_fixture() {
    mports->db = matching;
    mports->storage = store;
    mports->match = matcher;
    msettings.queue = match_queue;
    match_stage = make_match_stage(mports, msettings);
    hb = heartbeat();
  }

  /// A document of the tenant with an invoice's structured data, queued for matching.
  uuid add_document(const std::string& transcription = {}, int32_t attempts = 0) {
    return matching->add(tenant, invoice_json, transcription, true, attempts);
  }

  matching_view view(const uuid& id) {
    auto w = work->item(id);
    matching_view v;
    bool claimed = w.status == "in-progress" && w.token.has_value();
    v.status = w.status == "completed"     ? "succeeded"
               : w.status == "in-progress" ? (claimed ? "in-progress" : "pending")
                                           : w.status;
    v.attempts = w.attempt_count + (claimed || w.status == "completed" ? 1 : 0);
    v.error = w.last_error;
    return v;
  }

  /// A candidate of the tenant, as candidate retrieval returns it.
  match_document candidate() {
    match_document c;
    c.id = uuid::v7();
    c.tenant_id = tenant;
    c.file_name = "other.pdf";
    c.structured_data = invoice_json;
    return c;
  }

  /// Puts `body` on the match queue and receives it.
  queue_message deliver_match(const std::string& body) {
    match_queue->push(body);
    return receive(*match_queue);
  }

  job_actor spawn_match(queue_message msg) {
    return spawn_job(sys, ctx, match_stage, hb, std::move(msg));
  }

  /// Runs one match job for `msg` to the end (no timers fire) and returns its outcome.
  job_outcome run_match(queue_message msg) { return run_job(match_stage, std::move(msg), hb); }

  std::chrono::seconds last_visibility() {
    auto calls = match_queue->visibility_calls();
    CAF_REQUIRE(!calls.empty());
    return calls.back().timeout;
  }

  static bool contains(const std::string& haystack, const std::string& needle) {
    return haystack.find(needle) != std::string::npos;
  }

  /// No fake saw a breach of its port's contract.
  void check_match_violations() {
    for (auto& v : work->violations())
      CAF_FAIL("work repository: " << v);
    for (auto& v : matching->violations())
      CAF_FAIL("matching repository: " << v);
    for (auto& v : matcher->violations())
      CAF_FAIL("matcher: " << v);
    for (auto& v : match_queue->violations())
      CAF_FAIL("match queue: " << v);
  }

  /// Three deliveries of one document whose matcher fails with `err` each time: back-off by
  /// deliveries (5 min, 30 min), then failed, its failure event written, the message left for
  /// the redrive.
  void transient_cycle(const error& err) {
    CAF_MESSAGE("transient error " << err.code);
    auto id = add_document();
    matcher->fail_always(err);
    auto deleted_before = match_queue->deleted_ids().size();
    auto msg_id = match_queue->push(id.str());
    auto first = run_match(receive(*match_queue));
    CAF_CHECK_EQUAL(first.result, job_result::retrying);
    CAF_CHECK_EQUAL(first.attempt_count, 1);
    CAF_CHECK_EQUAL(last_visibility(), 300s);
    auto v = view(id);
    CAF_CHECK_EQUAL(v.status, "pending");
    CAF_CHECK_EQUAL(v.attempts, 1);
    CAF_CHECK(contains(v.error, err.code));
    CAF_CHECK(!work->item(id).token.has_value());
    match_queue->expire(msg_id); // the back-off ran out: delivery 2
    auto second = run_match(receive(*match_queue));
    CAF_CHECK_EQUAL(second.result, job_result::retrying);
    CAF_CHECK_EQUAL(second.attempt_count, 2);
    CAF_CHECK_EQUAL(last_visibility(), 1800s);
    CAF_CHECK_EQUAL(view(id).attempts, 2);
    match_queue->expire(msg_id); // delivery 3: the last the queue makes
    auto third = run_match(receive(*match_queue));
    CAF_CHECK_EQUAL(third.result, job_result::failed);
    CAF_CHECK_EQUAL(third.attempt_count, 3);
    v = view(id);
    CAF_CHECK_EQUAL(v.status, "failed");
    CAF_CHECK_EQUAL(v.attempts, 3);
    CAF_CHECK(contains(v.error, err.code));
    CAF_CHECK_EQUAL(work->item(id).error_class, "transient");
    CAF_CHECK_EQUAL(status_events(id, "MATCHING_FAILED"), 1u);
    // Not deleted: the queue's redrive moves it to the dead-letter queue (maxReceiveCount 3).
    CAF_CHECK_EQUAL(match_queue->deleted_ids().size(), deleted_before);
    CAF_CHECK_EQUAL(matching->document(id).writes, 0);
    matcher->fail_always(std::nullopt);
  }
};

} // namespace

CAF_TEST_FIXTURE_SCOPE(match_job_tests, match_job_fixture)

// ---- success ---------------------------------------------------------------------------------

CAF_TEST(a match with edges is written the document succeeds and the message is deleted) {
  auto id = add_document();
  auto a = candidate();
  auto b = candidate();
  matching->set_candidates({a, b});
  matcher->answer(
      {match_edge{a.id, match_kind::same_invoice, 0.95, "number, counterparty and total agree"}});
  auto o = run_match(deliver_match(id.str()));
  CAF_CHECK_EQUAL(o.result, job_result::completed);
  CAF_CHECK_EQUAL(o.item, id);
  CAF_CHECK_EQUAL(o.stage, "match");
  CAF_CHECK_EQUAL(o.attempt_count, 1);
  auto v = view(id);
  CAF_CHECK_EQUAL(v.status, "succeeded");
  CAF_CHECK_EQUAL(v.attempts, 1);
  CAF_CHECK(!work->item(id).token.has_value());
  auto doc = matching->document(id);
  CAF_CHECK_EQUAL(doc.writes, 1);
  CAF_REQUIRE_EQUAL(doc.edges.size(), 1u);
  CAF_CHECK_EQUAL(doc.edges.front().other, a.id);
  CAF_CHECK_EQUAL(doc.edges.front().kind, match_kind::same_invoice);
  // The features were stored before the decision and the matcher saw them and the candidates.
  CAF_REQUIRE(doc.features.has_value());
  CAF_CHECK_EQUAL(doc.features->number, "INV77");
  CAF_CHECK_EQUAL(matcher->calls(), 1);
  CAF_CHECK_EQUAL(matcher->last_document().id, id);
  CAF_CHECK_EQUAL(matcher->last_document().features.number, "INV77");
  CAF_CHECK_EQUAL(matcher->last_candidates().size(), 2u);
  auto limits = matching->candidate_limits();
  CAF_REQUIRE_EQUAL(limits.size(), 1u);
  CAF_CHECK_EQUAL(limits.front(), 20);
  CAF_CHECK_EQUAL(match_queue->deleted_ids().size(), 1u);
  CAF_CHECK_EQUAL(status_events(id, "MATCHING_COMPLETED"), 1u);
  CAF_CHECK_EQUAL(status_events(id, "MATCHING_FAILED"), 0u);
  // The match stage keeps no audit trail and never touches the ingestion's ports.
  CAF_CHECK(work->audit().empty());
  CAF_CHECK(queue->deleted_ids().empty());
  check_match_violations();
}

CAF_TEST(no match is a real answer the document succeeds without edges) {
  auto id = add_document();
  matching->set_candidates({candidate()});
  matcher->answer({});
  auto o = run_match(deliver_match(id.str()));
  CAF_CHECK_EQUAL(o.result, job_result::completed);
  CAF_CHECK_EQUAL(view(id).status, "succeeded");
  auto doc = matching->document(id);
  CAF_CHECK_EQUAL(doc.writes, 1);
  CAF_CHECK(doc.edges.empty());
  CAF_CHECK_EQUAL(match_queue->deleted_ids().size(), 1u);
  check_match_violations();
}

CAF_TEST(a document without candidates is still decided and succeeds) {
  auto id = add_document();
  auto o = run_match(deliver_match(id.str()));
  CAF_CHECK_EQUAL(o.result, job_result::completed);
  CAF_CHECK_EQUAL(matcher->calls(), 1);
  CAF_CHECK(matcher->last_candidates().empty());
  CAF_CHECK_EQUAL(view(id).status, "succeeded");
  check_match_violations();
}

CAF_TEST(a candidate limit from the settings reaches candidate retrieval) {
  msettings.candidate_limit = 3;
  match_stage = make_match_stage(mports, msettings);
  auto id = add_document();
  matching->set_candidates({candidate(), candidate(), candidate(), candidate(), candidate()});
  CAF_CHECK_EQUAL(run_match(deliver_match(id.str())).result, job_result::completed);
  auto limits = matching->candidate_limits();
  CAF_REQUIRE(!limits.empty());
  CAF_CHECK_EQUAL(limits.back(), 3);
  CAF_CHECK_EQUAL(matcher->last_candidates().size(), 3u);
}

// ---- the CPU pool ------------------------------------------------------------------------------

CAF_TEST(the features and the rules decision run on the CPU pool when the node has one) {
  auto cpu = std::make_shared<manual_cpu>();
  ctx->cpu = cpu;
  matcher->inline_rules = true;
  auto id = add_document();
  spawn_match(deliver_match(id.str()));
  sched.run();
  CAF_REQUIRE_EQUAL(cpu->jobs.size(), 1u); // the features wait for a worker
  CAF_CHECK(!matching->document(id).features.has_value());
  for (int i = 0; i < 4; ++i) { // and their step deadline waits with them
    advance_time(31s);
    sched.run();
  }
  CAF_CHECK(outcomes.empty());
  cpu->next().run();
  sched.run();
  CAF_CHECK(matching->document(id).features.has_value());
  CAF_REQUIRE_EQUAL(cpu->jobs.size(), 1u); // the decision of the rules
  CAF_CHECK_EQUAL(matcher->calls(), 0);
  cpu->next().run();
  sched.run();
  CAF_CHECK_EQUAL(matcher->calls(), 1);
  CAF_REQUIRE_EQUAL(outcomes.size(), 1u);
  CAF_CHECK_EQUAL(outcomes.back().result, job_result::completed);
  CAF_CHECK_EQUAL(view(id).status, "succeeded");
  check_match_violations();
}

CAF_TEST(a matcher that calls out decides through its port not on the CPU pool) {
  auto cpu = std::make_shared<manual_cpu>();
  ctx->cpu = cpu;
  auto id = add_document();
  spawn_match(deliver_match(id.str()));
  sched.run();
  CAF_REQUIRE_EQUAL(cpu->jobs.size(), 1u); // the features
  cpu->next().run();
  sched.run();
  CAF_CHECK(cpu->jobs.empty());
  CAF_CHECK_EQUAL(matcher->calls(), 1);
  CAF_REQUIRE_EQUAL(outcomes.size(), 1u);
  CAF_CHECK_EQUAL(outcomes.back().result, job_result::completed);
}

CAF_TEST(features that got no CPU worker in time give the work back without counting a delivery) {
  auto cpu = std::make_shared<manual_cpu>();
  ctx->cpu = cpu;
  auto id = add_document();
  spawn_match(deliver_match(id.str()));
  sched.run();
  CAF_REQUIRE_EQUAL(cpu->jobs.size(), 1u);
  cpu->next().expired();
  sched.run();
  CAF_REQUIRE_EQUAL(outcomes.size(), 1u);
  CAF_CHECK_EQUAL(outcomes.back().result, job_result::released);
  auto v = view(id);
  CAF_CHECK_EQUAL(v.status, "pending");
  CAF_CHECK_EQUAL(v.attempts, 0);
  CAF_CHECK_EQUAL(last_visibility(), 0s);
  check_match_violations();
}

// ---- the transcription -------------------------------------------------------------------------

CAF_TEST(a stored transcription is read and its text is matched on) {
  transcription t;
  t.text = "Invoice INV-77 from ACME GmbH, total 119.00 EUR";
  t.pages.push_back(transcription_page{1, t.text, 0.9, {}});
  t.page_count = 1;
  t.quality_score = 0.9;
  t.provider = "earlier";
  store->set("transcriptions/d.json", to_json(t));
  auto id = add_document("transcriptions/d.json");
  auto o = run_match(deliver_match(id.str()));
  CAF_CHECK_EQUAL(o.result, job_result::completed);
  auto doc = matching->document(id);
  CAF_REQUIRE(doc.features.has_value());
  CAF_CHECK(contains(doc.features->searchable_text, "inv-77"));
  CAF_CHECK(!doc.features->text_hash.empty());
  CAF_CHECK(contains(matcher->last_document().features.searchable_text, "acme"));
  check_match_violations();
}

CAF_TEST(a missing transcription is matched on the extracted fields) {
  auto id = add_document("transcriptions/gone.json");
  auto o = run_match(deliver_match(id.str()));
  CAF_CHECK_EQUAL(o.result, job_result::completed);
  auto doc = matching->document(id);
  CAF_REQUIRE(doc.features.has_value());
  CAF_CHECK(doc.features->searchable_text.empty());
  CAF_CHECK_EQUAL(doc.features->number, "INV77");
  CAF_CHECK_EQUAL(view(id).status, "succeeded");
  check_match_violations();
}

CAF_TEST(an unreadable transcription is matched on the extracted fields) {
  store->set("transcriptions/bad.json", "this is not a transcription");
  auto id = add_document("transcriptions/bad.json");
  auto o = run_match(deliver_match(id.str()));
  CAF_CHECK_EQUAL(o.result, job_result::completed);
  auto doc = matching->document(id);
  CAF_REQUIRE(doc.features.has_value());
  CAF_CHECK(doc.features->searchable_text.empty());
  CAF_CHECK_EQUAL(doc.features->number, "INV77");
  check_match_violations();
}

CAF_TEST(a document without a transcription does not read storage) {
  auto id = add_document();
  store->fail_next("get", error::make_transient("s3.503", "must not be called"));
  CAF_CHECK_EQUAL(run_match(deliver_match(id.str())).result, job_result::completed);
  CAF_CHECK(matching->document(id).features->searchable_text.empty());
}

CAF_TEST(a storage outage reading the transcription is a transient failure) {
  store->set("transcriptions/d.json", "{}");
  store->fail_next("get", error::make_transient("s3.503", "slow down"));
  auto id = add_document("transcriptions/d.json");
  auto o = run_match(deliver_match(id.str()));
  CAF_CHECK_EQUAL(o.result, job_result::retrying);
  CAF_CHECK_EQUAL(last_visibility(), 300s);
  CAF_CHECK(contains(view(id).error, "s3.503"));
  CAF_CHECK_EQUAL(matcher->calls(), 0);
  check_match_violations();
}

CAF_TEST(a document the stage s repository does not know fails permanently) {
  auto id = uuid::v7();
  work->add("match", id, id, tenant);
  auto o = run_match(deliver_match(id.str()));
  CAF_CHECK_EQUAL(o.result, job_result::failed);
  CAF_CHECK_EQUAL(view(id).status, "failed");
  CAF_CHECK_EQUAL(match_queue->deleted_ids().size(), 1u);
}

// ---- failures ----------------------------------------------------------------------------------

CAF_TEST(
    each transient error backs off by deliveries then fails and leaves the message to the redrive) {
  // HTTP 429, 5xx, a timeout, a refused connection, an unparseable answer, an answer that
  // violates the schema.
  auto rate_limited = error::make_transient("llm.rate_limited", "HTTP 429");
  auto server_error = error::make_transient("llm.server_error", "HTTP 503");
  auto timeout = error::make_transient("http.timeout", "no answer within 60 s");
  auto refused = error::make_transient("http.connect", "connection refused");
  auto unparseable = error::make_transient("llm.invalid_json", "the match decision is not JSON");
  auto schema
      = error::make_transient("llm.schema_invalid", "the match decision violates the schema");
  for (const auto* err : {&rate_limited, &server_error, &timeout, &refused, &unparseable, &schema})
    transient_cycle(*err);
  size_t failures = 0;
  for (auto& e : work->status_events())
    failures += e.type == "MATCHING_FAILED" ? 1 : 0;
  CAF_CHECK_EQUAL(failures, 6u);
  CAF_CHECK(match_queue->deleted_ids().empty());
  check_match_violations();
}

CAF_TEST(a transient failure followed by a good answer succeeds on the next delivery) {
  auto id = add_document();
  matcher->fail_next("decide", error::make_transient("llm.server_error", "HTTP 502"));
  matcher->answer({});
  auto msg_id = match_queue->push(id.str());
  CAF_CHECK_EQUAL(run_match(receive(*match_queue)).result, job_result::retrying);
  match_queue->expire(msg_id);
  auto o = run_match(receive(*match_queue));
  CAF_CHECK_EQUAL(o.result, job_result::completed);
  CAF_CHECK_EQUAL(o.attempt_count, 2);
  CAF_CHECK_EQUAL(view(id).status, "succeeded");
  CAF_CHECK_EQUAL(view(id).attempts, 2);
  CAF_CHECK_EQUAL(match_queue->deleted_ids().size(), 1u);
  CAF_CHECK_EQUAL(status_events(id, "MATCHING_FAILED"), 0u);
  check_match_violations();
}

CAF_TEST(a server asking for a longer wait gets it) {
  auto id = add_document();
  auto err = error::make_transient("llm.rate_limited", "HTTP 429");
  err.retry_after_ms = 3'600'000;
  matcher->fail_next("decide", err);
  CAF_CHECK_EQUAL(run_match(deliver_match(id.str())).result, job_result::retrying);
  CAF_CHECK_EQUAL(last_visibility(), 3600s);
  CAF_CHECK(work->item(id).retry_delay == std::optional<std::chrono::seconds>{3600s});
}

CAF_TEST(each permanent error fails at once and deletes the message) {
  auto unauthorized = error::make_permanent("llm.unauthorized", "HTTP 401");
  auto forbidden = error::make_permanent("llm.forbidden", "HTTP 403");
  auto context = error::make_permanent("llm.context_exceeded", "HTTP 400: context window exceeded");
  size_t n = 0;
  for (const auto* err : {&unauthorized, &forbidden, &context}) {
    CAF_MESSAGE("permanent error " << err->code);
    ++n;
    auto id = add_document();
    matcher->fail_next("decide", *err);
    auto o = run_match(deliver_match(id.str()));
    CAF_CHECK_EQUAL(o.result, job_result::failed);
    CAF_CHECK_EQUAL(o.attempt_count, 1);
    auto v = view(id);
    CAF_CHECK_EQUAL(v.status, "failed");
    CAF_CHECK_EQUAL(v.attempts, 1);
    CAF_CHECK(contains(v.error, err->code));
    CAF_CHECK_EQUAL(work->item(id).error_class, "permanent");
    CAF_CHECK_EQUAL(matching->document(id).writes, 0);
    CAF_CHECK_EQUAL(status_events(id, "MATCHING_FAILED"), 1u);
    CAF_CHECK_EQUAL(match_queue->deleted_ids().size(), n);
  }
  check_match_violations();
}

CAF_TEST(recording a failure that does not reach the database leaves the message for redelivery) {
  auto id = add_document();
  matcher->fail_next("decide", error::make_transient("llm.server_error", "HTTP 500"));
  work->fail_next("record_failure", error::make_transient("pg.40001", "serialization failure"));
  auto o = run_match(deliver_match(id.str()));
  CAF_CHECK_EQUAL(o.result, job_result::abandoned);
  CAF_CHECK(match_queue->deleted_ids().empty());
  CAF_CHECK_EQUAL(status_events(id, "MATCHING_FAILED"), 0u);
}

// ---- messages the job cannot claim
// ------------------------------------------------------------------

CAF_TEST(a duplicate message of a succeeded document is skipped and deleted) {
  auto id = add_document();
  CAF_CHECK_EQUAL(run_match(deliver_match(id.str())).result, job_result::completed);
  auto o = run_match(deliver_match(id.str()));
  CAF_CHECK_EQUAL(o.result, job_result::skipped);
  CAF_CHECK_EQUAL(o.detail, "finished: completed");
  CAF_CHECK_EQUAL(matcher->calls(), 1);
  CAF_CHECK_EQUAL(matching->document(id).writes, 1);
  CAF_CHECK_EQUAL(view(id).attempts, 1);
  CAF_CHECK_EQUAL(match_queue->deleted_ids().size(), 2u);
  check_match_violations();
}

CAF_TEST(a document another worker holds is left alone its message not deleted) {
  auto id = add_document();
  work->hold_by_other(id);
  auto o = run_match(deliver_match(id.str()));
  CAF_CHECK_EQUAL(o.result, job_result::skipped);
  CAF_CHECK(contains(o.detail, "held by another worker"));
  CAF_CHECK(match_queue->deleted_ids().empty());
  CAF_CHECK_EQUAL(matcher->calls(), 0);
  CAF_CHECK_EQUAL(view(id).attempts, 1); // the other's delivery only
  check_match_violations();
}

CAF_TEST(a failed document an unknown id and a document not queued for matching are deleted) {
  auto failed = matching->add(tenant, "{}", {}, true, 3);
  work->update(failed, [](test::fake_work_item& w) { w.status = "failed"; });
  auto not_queued = matching->add(tenant, "{}", {}, false);
  auto o = run_match(deliver_match(failed.str()));
  CAF_CHECK_EQUAL(o.result, job_result::skipped);
  CAF_CHECK_EQUAL(o.detail, "finished: failed");
  CAF_CHECK_EQUAL(run_match(deliver_match(uuid::v7().str())).result, job_result::skipped);
  CAF_CHECK_EQUAL(run_match(deliver_match(not_queued.str())).result, job_result::skipped);
  CAF_CHECK_EQUAL(match_queue->deleted_ids().size(), 3u);
  CAF_CHECK_EQUAL(matcher->calls(), 0);
  CAF_CHECK_EQUAL(run_match(deliver_match("not-a-uuid")).result, job_result::invalid);
}

CAF_TEST(an ingestion s id is unknown to the match stage) {
  auto ingestion = db->add("documents/d.txt");
  auto o = run_match(deliver_match(ingestion.str()));
  CAF_CHECK_EQUAL(o.result, job_result::skipped);
  CAF_CHECK_EQUAL(o.detail, "no such work item for stage match");
  CAF_CHECK_EQUAL(work->item(ingestion).status, "in-progress");
  CAF_CHECK(!work->item(ingestion).token.has_value());
}

CAF_TEST(a crash below the limit counts as a delivery and the next worker carries on) {
  auto id = add_document();
  work->steal_claim(id);
  work->crash_holder(id); // its worker died holding it: delivery 1
  auto o = run_match(deliver_match(id.str()));
  CAF_CHECK_EQUAL(o.result, job_result::completed);
  CAF_CHECK_EQUAL(o.attempt_count, 2);
  CAF_CHECK_EQUAL(view(id).status, "succeeded");
  CAF_CHECK_EQUAL(view(id).attempts, 2);
  CAF_CHECK_EQUAL(work->item(id).crash_count, 1);
}

CAF_TEST(a crash on the last delivery fails the document as poison and deletes the message) {
  // Two deliveries failed; the third's holder crashed: the crash is the third attempt.
  auto id = add_document({}, 2);
  work->steal_claim(id); // delivery 3
  work->crash_holder(id);
  auto o = run_match(deliver_match(id.str()));
  CAF_CHECK_EQUAL(o.result, job_result::skipped);
  CAF_CHECK_EQUAL(o.detail.rfind("finished: poison", 0), 0u);
  auto v = view(id);
  CAF_CHECK_EQUAL(v.status, "failed");
  CAF_CHECK_EQUAL(v.attempts, 3);
  CAF_CHECK(contains(v.error, "poison"));
  CAF_CHECK_EQUAL(work->item(id).error_class, "poison");
  CAF_CHECK_EQUAL(matcher->calls(), 0);
  CAF_CHECK_EQUAL(match_queue->deleted_ids().size(), 1u);
  CAF_CHECK_EQUAL(status_events(id, "MATCHING_FAILED"), 1u);
  // The match stage keeps no audit trail: the claim wrote none.
  CAF_CHECK(work->audit().empty());
}

// ---- ways out from outside
// -------------------------------------------------------------------------

CAF_TEST(a stop mid way gives the claim back without counting the delivery) {
  auto id = add_document();
  matcher->hold("decide");
  auto job = spawn_match(deliver_match(id.str()));
  sched.run();
  CAF_REQUIRE_EQUAL(matcher->held("decide"), 1u);
  CAF_REQUIRE_EQUAL(view(id).status, "in-progress");
  caf::anon_send(job, stop_atom_v);
  sched.run();
  CAF_REQUIRE_EQUAL(outcomes.size(), 1u);
  CAF_CHECK_EQUAL(outcomes.back().result, job_result::released);
  auto v = view(id);
  CAF_CHECK_EQUAL(v.status, "pending");
  CAF_CHECK_EQUAL(v.attempts, 0);
  CAF_CHECK_EQUAL(work->item(id).releases, 1);
  CAF_CHECK(!work->item(id).token.has_value());
  CAF_CHECK_EQUAL(last_visibility(), 0s);
  CAF_CHECK(match_queue->deleted_ids().empty());
  // The decision that comes after the stop writes nothing.
  matcher->unhold("decide");
  sched.run();
  CAF_CHECK_EQUAL(outcomes.size(), 1u);
  CAF_CHECK_EQUAL(matching->document(id).writes, 0);
  CAF_CHECK_EQUAL(status_events(id, "MATCHING_FAILED"), 0u);
  check_match_violations();
}

CAF_TEST(a stop during the claim gives back what the claim granted) {
  auto id = add_document();
  work->hold("claim");
  auto job = spawn_match(deliver_match(id.str()));
  sched.run();
  CAF_REQUIRE_EQUAL(work->held("claim"), 1u);
  caf::anon_send(job, stop_atom_v);
  sched.run();
  work->unhold("claim");
  sched.run();
  CAF_REQUIRE_EQUAL(outcomes.size(), 1u);
  CAF_CHECK_EQUAL(outcomes.back().result, job_result::released);
  auto v = view(id);
  CAF_CHECK_EQUAL(v.status, "pending");
  CAF_CHECK_EQUAL(v.attempts, 0);
  CAF_CHECK(!work->item(id).token.has_value());
  CAF_CHECK_EQUAL(last_visibility(), 0s);
  CAF_CHECK_EQUAL(matcher->calls(), 0);
  check_match_violations();
}

CAF_TEST(a stop while the matches are written lets the write finish) {
  // The outcome is being stored: a give-back now would race the fenced write.
  auto id = add_document();
  matching->hold("write_matches");
  auto job = spawn_match(deliver_match(id.str()));
  sched.run();
  CAF_REQUIRE_EQUAL(matching->held("write_matches"), 1u);
  caf::anon_send(job, stop_atom_v);
  sched.run();
  matching->unhold("write_matches");
  sched.run();
  CAF_REQUIRE_EQUAL(outcomes.size(), 1u);
  CAF_CHECK_EQUAL(outcomes.back().result, job_result::completed);
  CAF_CHECK_EQUAL(view(id).status, "succeeded");
  CAF_CHECK_EQUAL(work->item(id).releases, 0);
  CAF_CHECK_EQUAL(match_queue->deleted_ids().size(), 1u);
  check_match_violations();
}

CAF_TEST(a stop while a failure is recorded lets the record finish) {
  auto id = add_document();
  matcher->fail_next("decide", error::make_transient("llm.server_error", "HTTP 503"));
  work->hold("record_failure");
  auto job = spawn_match(deliver_match(id.str()));
  sched.run();
  CAF_REQUIRE_EQUAL(work->held("record_failure"), 1u);
  caf::anon_send(job, stop_atom_v);
  sched.run();
  work->unhold("record_failure");
  sched.run();
  CAF_REQUIRE_EQUAL(outcomes.size(), 1u);
  CAF_CHECK_EQUAL(outcomes.back().result, job_result::retrying);
  auto v = view(id);
  CAF_CHECK_EQUAL(v.status, "pending");
  CAF_CHECK_EQUAL(v.attempts, 1);
  CAF_CHECK_EQUAL(work->item(id).releases, 0);
  CAF_CHECK_EQUAL(last_visibility(), 300s);
  check_match_violations();
}

CAF_TEST(the database lost mid way gives the work back without counting the delivery) {
  auto id = add_document();
  matching->fail_next("store_features",
                      error::make_transient("pg.connection", "server closed the connection"));
  auto msg_id = match_queue->push(id.str());
  auto first = run_match(receive(*match_queue));
  CAF_CHECK_EQUAL(first.result, job_result::released);
  auto v = view(id);
  CAF_CHECK_EQUAL(v.status, "pending");
  CAF_CHECK_EQUAL(v.attempts, 0);
  CAF_CHECK(v.error.empty());
  CAF_CHECK_EQUAL(last_visibility(), 0s);
  CAF_CHECK(match_queue->deleted_ids().empty());
  CAF_CHECK_EQUAL(status_events(id, "MATCHING_FAILED"), 0u);
  match_queue->expire(msg_id);
  auto second = run_match(receive(*match_queue));
  CAF_CHECK_EQUAL(second.result, job_result::completed);
  CAF_CHECK_EQUAL(second.attempt_count, 1);
  check_match_violations();
}

CAF_TEST(the database lost at the write gives the work back without counting the delivery) {
  auto id = add_document();
  matching->fail_next("write_matches", error::make_transient("pg.57P01", "terminating connection"));
  auto o = run_match(deliver_match(id.str()));
  CAF_CHECK_EQUAL(o.result, job_result::released);
  auto v = view(id);
  CAF_CHECK_EQUAL(v.status, "pending");
  CAF_CHECK_EQUAL(v.attempts, 0);
  CAF_CHECK_EQUAL(matching->document(id).writes, 0);
  CAF_CHECK_EQUAL(last_visibility(), 0s);
  check_match_violations();
}

CAF_TEST(a claim taken over before the write stops the job without side effects) {
  auto id = add_document();
  matcher->hold("decide");
  spawn_match(deliver_match(id.str()));
  sched.run();
  work->steal_claim(id); // the lease expired and another worker claimed it
  matcher->unhold("decide");
  sched.run();
  CAF_REQUIRE_EQUAL(outcomes.size(), 1u);
  CAF_CHECK_EQUAL(outcomes.back().result, job_result::lost);
  CAF_CHECK_EQUAL(matching->document(id).writes, 0);
  CAF_CHECK_EQUAL(view(id).status, "in-progress");
  CAF_CHECK(match_queue->deleted_ids().empty());
  CAF_CHECK_EQUAL(status_events(id, "MATCHING_COMPLETED"), 0u);
  check_match_violations();
}

CAF_TEST(a matcher that never answers runs into the step deadline a transient failure) {
  auto id = add_document();
  matcher->hold("decide");
  spawn_match(deliver_match(id.str()));
  sched.run();
  advance_time(29s);
  sched.run();
  CAF_CHECK(outcomes.empty());
  advance_time(2s);
  sched.run();
  CAF_REQUIRE_EQUAL(outcomes.size(), 1u);
  CAF_CHECK_EQUAL(outcomes.back().result, job_result::retrying);
  auto v = view(id);
  CAF_CHECK_EQUAL(v.status, "pending");
  CAF_CHECK_EQUAL(v.attempts, 1);
  CAF_CHECK(contains(v.error, "step.timeout"));
  CAF_CHECK(contains(v.error, "decide did not finish within 30 s"));
  CAF_CHECK_EQUAL(last_visibility(), 300s);
  CAF_CHECK(match_queue->deleted_ids().empty());
  // The late answer is ignored.
  matcher->unhold("decide");
  sched.run();
  CAF_CHECK_EQUAL(outcomes.size(), 1u);
  CAF_CHECK_EQUAL(matching->document(id).writes, 0);
  check_match_violations();
}

CAF_TEST(
    the heartbeat renews the match stage s lease with the others and a lost lease stops the job) {
  ctx->settings.heartbeat_rate = 10s;
  ctx->settings.heartbeat_extension = 60s;
  hb = heartbeat();
  auto id = add_document();
  matcher->hold("decide");
  spawn_match(deliver_match(id.str()));
  sched.run();
  advance_time(10s);
  sched.run();
  CAF_CHECK_GREATER_OR_EQUAL(work->renew_calls(), 1);
  // The message's visibility is kept on the match queue, not on the ingest queue.
  CAF_CHECK(!match_queue->visibility_calls().empty());
  CAF_CHECK(queue->visibility_calls().empty());
  // The match stage's work cannot be cancelled: the heartbeat does not ask for it.
  for (auto& call : work->cancel_request_calls())
    CAF_CHECK(call.empty());
  CAF_CHECK(outcomes.empty());
  work->steal_claim(id);
  advance_time(10s);
  sched.run();
  CAF_REQUIRE_EQUAL(outcomes.size(), 1u);
  CAF_CHECK_EQUAL(outcomes.back().result, job_result::lost);
  matcher->unhold("decide");
  sched.run();
  CAF_CHECK_EQUAL(matching->document(id).writes, 0);
  CAF_CHECK(match_queue->deleted_ids().empty());
  check_match_violations();
}

CAF_TEST_FIXTURE_SCOPE_END()
