// pg_repository on a fresh schema: intake, the fenced claim and its races, lease expiry and
// reclaim, writes fenced out after a reclaim, failure bookkeeping, lease renewal, release and
// crashes counted as attempts (repository_recovery_test.cpp: the rest).
#include "tests/integration/db/repository_fixture.hpp"

using namespace ingestd;
using namespace std::chrono_literals;
using ingestd::test::await;
using ingestd::test::repository_test;
using ingestd::test::make_completion;


TEST_F(repository_test, intake_deduplicates_documents_by_content_hash) {
  auto first = intake("hash-1");
  auto a = intake_repo->create_ingestion(first, 30s);
  ASSERT_TRUE(a) << a.error().describe();
  EXPECT_TRUE(a->document_created);
  EXPECT_TRUE(a->ingestion_created);
  EXPECT_EQ(a->document_id, first.document_id);
  EXPECT_EQ(a->file_path, first.file_path);

  auto second = intake("hash-1");
  auto b = intake_repo->create_ingestion(second, 30s);
  ASSERT_TRUE(b) << b.error().describe();
  EXPECT_FALSE(b->document_created);
  EXPECT_TRUE(b->ingestion_created);
  EXPECT_EQ(b->document_id, first.document_id);
  EXPECT_EQ(b->file_path, first.file_path);
  EXPECT_EQ(db->scalar("SELECT count(*) FROM ingestion WHERE document_id = $1",
                       {first.document_id.str()}),
            "2");

  // A retried intake (same ingestion id) creates nothing new.
  auto again = intake_repo->create_ingestion(second, 30s);
  ASSERT_TRUE(again) << again.error().describe();
  EXPECT_FALSE(again->document_created);
  EXPECT_FALSE(again->ingestion_created);
  EXPECT_EQ(db->scalar("SELECT count(*) FROM ingestion"), "2");

  // Another tenant with the same content gets its own document.
  auto other = intake("hash-1", uuid::v4());
  auto c = intake_repo->create_ingestion(other, 30s);
  ASSERT_TRUE(c);
  EXPECT_TRUE(c->document_created);
  EXPECT_EQ(column(second.ingestion_id, "source_metadata->>'channel'"), "test");
  EXPECT_EQ(column(second.ingestion_id, "status"), "in-progress");
}

TEST_F(repository_test, intake_rejects_bad_input_as_permanent) {
  auto both = intake("h");
  both.doc_source_id = uuid::v4();
  auto res = intake_repo->create_ingestion(both, 30s);
  ASSERT_FALSE(res);
  EXPECT_TRUE(res.error().permanent());
  auto bad_json = intake("h2");
  bad_json.source_metadata = "{not json";
  res = intake_repo->create_ingestion(bad_json, 30s);
  ASSERT_FALSE(res);
  EXPECT_TRUE(res.error().permanent());
  EXPECT_EQ(db->scalar("SELECT count(*) FROM document"), "0");
}

TEST_F(repository_test, concurrent_intake_of_the_same_content_makes_one_document) {
  std::vector<intake_request> requests;
  requests.reserve(8);
  for (int i = 0; i < 8; ++i)
    requests.push_back(intake("same-content"));
  pg_intake_repository other{db->url()};
  std::vector<std::thread> threads;
  std::vector<std::optional<result<intake_result>>> results(requests.size());
  for (size_t i = 0; i < requests.size(); ++i)
    threads.emplace_back([&, i] {
      intake_repository& r = i % 2 == 0 ? static_cast<intake_repository&>(*intake_repo) : other;
      results[i].emplace(r.create_ingestion(requests[i], 30s));
    });
  for (auto& t : threads)
    t.join();
  int created = 0;
  std::set<uuid> documents;
  for (auto& r : results) {
    ASSERT_TRUE(*r) << (*r).error().describe();
    created += (*r)->document_created ? 1 : 0;
    documents.insert((*r)->document_id);
  }
  EXPECT_EQ(created, 1);
  EXPECT_EQ(documents.size(), 1u);
  EXPECT_EQ(db->scalar("SELECT count(*) FROM ingestion"), "8");
}

TEST_F(repository_test, claim_returns_the_ingestion_joined_with_its_document) {
  auto req = intake("claim-join");
  ASSERT_TRUE(intake_repo->create_ingestion(req, 30s));
  auto token = uuid::v4();
  auto c = claim_one(req.ingestion_id, token);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->ingestion_id, req.ingestion_id);
  EXPECT_EQ(c->document_id, req.document_id);
  EXPECT_EQ(c->tenant_id, req.tenant_id);
  EXPECT_EQ(c->claim_token, token);
  EXPECT_EQ(c->attempt_count, 0);
  EXPECT_EQ(c->file_path, req.file_path);
  EXPECT_EQ(c->mime_type, "application/pdf");
  EXPECT_EQ(c->transcription_file_path, "");
  EXPECT_EQ(column(req.ingestion_id, "claimed_by"), "w1");
  EXPECT_EQ(column(req.ingestion_id, "started_at IS NOT NULL"), "t");
  EXPECT_EQ(column(req.ingestion_id,
                   "lease_expires_at BETWEEN now() + interval '290 s' AND now() + interval '310 s'"),
            "t");
  // Held by a live lease: nobody else claims it, not even the same worker with a new token.
  EXPECT_FALSE(claim_one(req.ingestion_id, uuid::v4()));
  // Unknown ids are simply not claimable.
  EXPECT_FALSE(claim_one(uuid::v7(), uuid::v4()));
}

TEST_F(repository_test, states_tell_finished_held_claimable_and_unknown) {
  auto claimable = new_ingestion();
  auto held = new_ingestion();
  auto expired = new_ingestion();
  auto completed = new_ingestion();
  auto failed = new_ingestion();
  auto th = uuid::v4(), te = uuid::v4(), tc = uuid::v4(), tf = uuid::v4();
  ASSERT_TRUE(claim_one(held, th));
  ASSERT_TRUE(claim_one(expired, te));
  expire_lease(expired);
  ASSERT_TRUE(claim_one(completed, tc));
  ASSERT_TRUE(await<std::vector<result<void>>>(
    [&](auto cb) { repo->complete({make_completion({completed, tc})}, cb); }));
  ASSERT_TRUE(claim_one(failed, tf));
  ASSERT_TRUE(fail({failed, tf}, error::make_permanent("x", "y")));
  auto unknown = uuid::v7();
  auto res = await<std::vector<ingestion_state>>([&](auto cb) {
    repo->states({failed, unknown, claimable, held, expired, completed, held}, cb);
  });
  ASSERT_TRUE(res) << res.error().describe();
  EXPECT_EQ(*res, (std::vector<ingestion_state>{
                    ingestion_state::failed, ingestion_state::unknown, ingestion_state::claimable,
                    ingestion_state::held, ingestion_state::claimable, ingestion_state::completed,
                    ingestion_state::held}));
}

TEST_F(repository_test, batch_claim_mixes_winners_and_losers) {
  auto a = new_ingestion();
  auto b = new_ingestion();
  auto held = new_ingestion();
  ASSERT_TRUE(claim_one(held, uuid::v4()));
  auto unknown = uuid::v7();
  std::vector<claim_request> reqs{{a, uuid::v4()}, {held, uuid::v4()}, {unknown, uuid::v4()},
                                  {b, uuid::v4()}};
  auto res = await<std::vector<std::optional<claimed_ingestion>>>(
    [&](auto cb) { repo->claim(reqs, "w2", 60s, cb); });
  ASSERT_TRUE(res) << res.error().describe();
  ASSERT_EQ(res->size(), 4u);
  ASSERT_TRUE(res->at(0));
  EXPECT_EQ(res->at(0)->ingestion_id, a);
  EXPECT_EQ(res->at(0)->claim_token, reqs[0].claim_token);
  EXPECT_FALSE(res->at(1));
  EXPECT_FALSE(res->at(2));
  ASSERT_TRUE(res->at(3));
  EXPECT_EQ(res->at(3)->ingestion_id, b);
}

TEST_F(repository_test, claim_race_has_one_winner) {
  constexpr int n = 30;
  std::vector<uuid> ids;
  ids.reserve(n);
  for (int i = 0; i < n; ++i)
    ids.push_back(new_ingestion());
  pg_repository other{db->url()};
  // Two workers claim every ingestion at the same time: one by one and in reversed batches.
  std::vector<claim_request> mine, theirs;
  for (auto& id : ids)
    mine.push_back({id, uuid::v4()});
  for (auto it = ids.rbegin(); it != ids.rend(); ++it)
    theirs.push_back({*it, uuid::v4()});
  std::barrier start{2};
  std::optional<result<std::vector<std::optional<claimed_ingestion>>>> ra, rb;
  std::thread ta{[&] {
    start.arrive_and_wait();
    ra.emplace(await<std::vector<std::optional<claimed_ingestion>>>(
      [&](auto cb) { repo->claim(mine, "a", 60s, cb); }));
  }};
  std::thread tb{[&] {
    start.arrive_and_wait();
    rb.emplace(await<std::vector<std::optional<claimed_ingestion>>>(
      [&](auto cb) { other.claim(theirs, "b", 60s, cb); }));
  }};
  ta.join();
  tb.join();
  ASSERT_TRUE(*ra) << (*ra).error().describe();
  ASSERT_TRUE(*rb) << (*rb).error().describe();
  for (int i = 0; i < n; ++i) {
    bool a_won = (**ra)[i].has_value();
    bool b_won = (**rb)[n - 1 - i].has_value();
    EXPECT_NE(a_won, b_won) << "ingestion " << i;
    auto owner = column(ids[i], "claimed_by");
    EXPECT_EQ(owner, a_won ? "a" : "b");
  }

  // And single claims racing one to one.
  for (int round = 0; round < 10; ++round) {
    auto id = new_ingestion();
    std::barrier go{2};
    std::optional<claimed_ingestion> x, y;
    std::thread t1{[&] {
      go.arrive_and_wait();
      x = claim_one(id, uuid::v4(), repo.get(), 60s, "a");
    }};
    std::thread t2{[&] {
      go.arrive_and_wait();
      y = claim_one(id, uuid::v4(), &other, 60s, "b");
    }};
    t1.join();
    t2.join();
    EXPECT_NE(x.has_value(), y.has_value()) << "round " << round;
  }
}

TEST_F(repository_test, expired_lease_is_reclaimed_and_the_old_holder_is_fenced_out) {
  auto id = new_ingestion();
  auto old_token = uuid::v4();
  ASSERT_TRUE(claim_one(id, old_token));
  expire_lease(id);
  auto new_token = uuid::v4();
  auto c = claim_one(id, new_token, nullptr, 300s, "w2");
  ASSERT_TRUE(c);
  EXPECT_EQ(c->claim_token, new_token);
  EXPECT_EQ(column(id, "claimed_by"), "w2");

  lease_ref stale{id, old_token};
  transcription_record tr{"ingestions/x/transcription-output.json", "", 0.9};
  auto t = await<void>([&](auto cb) { repo->record_transcription(stale, tr, cb); });
  ASSERT_FALSE(t);
  EXPECT_TRUE(t.error().claim_lost());
  auto done = await<std::vector<result<void>>>(
    [&](auto cb) { repo->complete({make_completion(stale)}, cb); });
  ASSERT_TRUE(done);
  ASSERT_FALSE(done->at(0));
  EXPECT_TRUE(done->at(0).error().claim_lost());
  auto f = fail(stale, error::make_transient("http_503", "unavailable"));
  ASSERT_FALSE(f);
  EXPECT_TRUE(f.error().claim_lost());
  auto rel = await<void>([&](auto cb) { repo->release(stale, cb); });
  ASSERT_FALSE(rel);
  EXPECT_TRUE(rel.error().claim_lost());
  // Nothing of the stale holder's reached the row; the reclaim counted its crash.
  EXPECT_EQ(column(id, "status"), "in-progress");
  EXPECT_EQ(column(id, "attempt_count"), "1");
  EXPECT_EQ(column(id, "transcription_file_path IS NULL"), "t");
  EXPECT_EQ(column(id, "claim_token"), new_token.str());

  // The new holder's writes go through.
  lease_ref live{id, new_token};
  ASSERT_TRUE(await<void>([&](auto cb) { repo->record_transcription(live, tr, cb); }));
  EXPECT_EQ(column(id, "transcription_file_path"), tr.transcription_file_path);
  EXPECT_EQ(column(id, "preprocessed_file_path IS NULL"), "t");
  EXPECT_EQ(column(id, "transcription_quality_score::float8"), "0.9");
  auto ok = await<std::vector<result<void>>>(
    [&](auto cb) { repo->complete({make_completion(live)}, cb); });
  ASSERT_TRUE(ok);
  EXPECT_TRUE(ok->at(0));
  EXPECT_EQ(column(id, "status"), "completed");
  EXPECT_EQ(column(id, "claim_token IS NULL AND completed_at IS NOT NULL"), "t");
  EXPECT_EQ(column(id, "extraction_input_tokens"), "1200");
  EXPECT_EQ(column(id, "extraction_model"), "local-rules");
  // A completed ingestion is not claimable again, and a second completion is fenced out.
  EXPECT_FALSE(claim_one(id, uuid::v4()));
  auto twice = await<std::vector<result<void>>>(
    [&](auto cb) { repo->complete({make_completion(live)}, cb); });
  ASSERT_TRUE(twice);
  EXPECT_TRUE(twice->at(0).error().claim_lost());
}

TEST_F(repository_test, reclaim_reuses_the_stored_transcription) {
  auto id = new_ingestion();
  auto token = uuid::v4();
  ASSERT_TRUE(claim_one(id, token));
  transcription_record tr{"ingestions/t/transcription-output.json", "ingestions/t/pre.png", 0.4};
  ASSERT_TRUE(await<void>([&](auto cb) { repo->record_transcription({id, token}, tr, cb); }));
  expire_lease(id);
  auto again = claim_one(id, uuid::v4());
  ASSERT_TRUE(again);
  EXPECT_EQ(again->transcription_file_path, tr.transcription_file_path);
}

TEST_F(repository_test, transcriptions_arriving_while_one_is_written_go_in_one_statement_each_fenced) {
  constexpr int n = 40;
  std::vector<std::pair<uuid, uuid>> held;
  for (int i = 0; i < n; ++i) {
    auto id = new_ingestion();
    auto token = uuid::v4();
    ASSERT_TRUE(claim_one(id, token));
    held.emplace_back(id, token);
  }
  // Another session holds the table: the first UPDATE waits while the other calls arrive.
  pg::connection locker{db->url()};
  ASSERT_TRUE(locker.exec_simple("BEGIN"));
  ASSERT_TRUE(locker.exec_simple("LOCK TABLE ingestion IN ACCESS EXCLUSIVE MODE"));
  std::mutex mtx;
  std::condition_variable cv;
  std::map<std::string, result<void>> answers;
  auto record = [&](uuid id, uuid token, const std::string& key) {
    transcription_record tr{"ingestions/" + id.str() + "/transcription-output.json", "", 0.9};
    repo->record_transcription({id, token}, tr, [&, key](result<void> r) {
      std::lock_guard g{mtx};
      answers.emplace(key, std::move(r));
      cv.notify_all();
    });
  };
  for (auto& [id, token] : held)
    record(id, token, id.str());
  record(held[0].first, uuid::v4(), "wrong token"); // fenced out, alone
  ASSERT_TRUE(locker.exec_simple("ROLLBACK"));
  {
    std::unique_lock g{mtx};
    ASSERT_TRUE(cv.wait_for(g, 30s, [&] { return answers.size() == n + 1; })) << answers.size();
  }
  for (auto& [id, token] : held) {
    auto& r = answers.at(id.str());
    EXPECT_TRUE(r) << r.error().describe();
    EXPECT_EQ(db->scalar("SELECT transcription_file_path FROM ingestion WHERE id = $1", {id.str()}),
              "ingestions/" + id.str() + "/transcription-output.json");
  }
  auto& fenced = answers.at("wrong token");
  ASSERT_FALSE(fenced);
  EXPECT_TRUE(fenced.error().claim_lost());
  EXPECT_LE(repo->transcription_statements(), 2u);
}

TEST_F(repository_test, batch_complete_reports_each_entry_and_fires_the_trigger) {
  auto a = new_ingestion();
  auto b = new_ingestion();
  auto c = new_ingestion();
  auto ta = uuid::v4(), tb = uuid::v4(), tc = uuid::v4();
  ASSERT_TRUE(claim_one(a, ta));
  ASSERT_TRUE(claim_one(b, tb));
  ASSERT_TRUE(claim_one(c, tc));
  auto bad = make_completion({c, tc}, "{broken");
  auto flagged = make_completion({b, tb}, R"({"total": 3})");
  flagged.record.valid_structured_data = false;
  auto res = await<std::vector<result<void>>>([&](auto cb) {
    repo->complete({make_completion({a, ta}), make_completion({b, uuid::v4()}), bad, flagged},
                   cb);
  });
  ASSERT_TRUE(res);
  ASSERT_EQ(res->size(), 4u);
  EXPECT_TRUE(res->at(0));
  EXPECT_TRUE(res->at(1).error().claim_lost());
  EXPECT_TRUE(res->at(2).error().permanent());
  EXPECT_TRUE(res->at(3));
  auto doc_of = [&](uuid id) { return column(id, "document_id"); };
  EXPECT_EQ(db->scalar("SELECT structured_data->>'invoice_number' || needs_human_review::text "
                       "FROM document WHERE id = $1",
                       {doc_of(a)}),
            "A-1false");
  EXPECT_EQ(db->scalar("SELECT needs_human_review FROM document WHERE id = $1", {doc_of(b)}), "t");
  EXPECT_EQ(column(c, "status"), "in-progress");
}

TEST_F(repository_test, a_completion_with_a_review_reason_sends_the_document_to_review_with_it) {
  auto a = new_ingestion();
  auto ta = uuid::v4();
  ASSERT_TRUE(claim_one(a, ta));
  auto c = make_completion({a, ta}, "");
  c.record.review_reason = "text_unavailable: the document has no text";
  auto res = await<std::vector<result<void>>>([&](auto cb) { repo->complete({c}, cb); });
  ASSERT_TRUE(res);
  ASSERT_TRUE(res->at(0));
  EXPECT_EQ(column(a, "status"), "completed");
  EXPECT_EQ(column(a, "last_error"), "text_unavailable: the document has no text");
  EXPECT_EQ(db->scalar("SELECT needs_human_review::text || (structured_data IS NULL)::text FROM document WHERE id = $1",
                       {column(a, "document_id")}),
            "truetrue");
}

TEST_F(repository_test, transient_failures_reach_failed_at_max_attempts) {
  auto id = new_ingestion();
  for (int attempt = 1; attempt <= 3; ++attempt) {
    auto token = uuid::v4();
    auto c = claim_one(id, token);
    ASSERT_TRUE(c) << "attempt " << attempt;
    EXPECT_EQ(c->attempt_count, attempt - 1);
    auto out = fail({id, token}, error::make_transient("http_429", "rate limited"), 3, 300s);
    ASSERT_TRUE(out) << out.error().describe();
    EXPECT_EQ(out->attempt_count, attempt);
    EXPECT_EQ(out->failed, attempt == 3);
    EXPECT_EQ(column(id, "claim_token IS NULL AND lease_expires_at IS NULL"), "t");
    EXPECT_EQ(column(id, "last_error"), "http_429: rate limited");
    EXPECT_EQ(column(id, "error_class"), "transient");
    if (attempt < 3) {
      EXPECT_EQ(column(id, "status"), "in-progress");
      EXPECT_EQ(column(id, "due_at BETWEEN now() + interval '290 s' AND now() + interval '310 s'"),
                "t");
      EXPECT_EQ(db->scalar("SELECT needs_human_review FROM document WHERE id = $1",
                           {column(id, "document_id")}),
                "f");
    }
  }
  EXPECT_EQ(column(id, "status"), "failed");
  EXPECT_EQ(column(id, "completed_at IS NOT NULL"), "t");
  EXPECT_EQ(db->scalar("SELECT needs_human_review FROM document WHERE id = $1",
                       {column(id, "document_id")}),
            "t");
  EXPECT_FALSE(claim_one(id, uuid::v4()));
}

TEST_F(repository_test, permanent_error_fails_at_once) {
  auto id = new_ingestion();
  auto token = uuid::v4();
  ASSERT_TRUE(claim_one(id, token));
  failure_record rec;
  rec.error = error::make_permanent("ocr.corrupt_file", "not a PDF");
  rec.max_attempts = 3;
  rec.structured_data = R"({"partial": true})";
  auto out = await<failure_outcome>(
    [&](auto cb) { repo->record_failure({id, token}, rec, 300s, cb); });
  ASSERT_TRUE(out) << out.error().describe();
  EXPECT_EQ(out->attempt_count, 1);
  EXPECT_TRUE(out->failed);
  EXPECT_EQ(column(id, "status"), "failed");
  EXPECT_EQ(column(id, "error_class"), "permanent");
  EXPECT_EQ(column(id, "last_error"), "ocr.corrupt_file: not a PDF");
  auto doc = column(id, "document_id");
  EXPECT_EQ(db->scalar("SELECT needs_human_review FROM document WHERE id = $1", {doc}), "t");
  EXPECT_EQ(db->scalar("SELECT structured_data->>'partial' FROM document WHERE id = $1", {doc}),
            "true");
}

TEST_F(repository_test, renew_leases_reports_lost_claims) {
  auto kept = new_ingestion();
  auto stolen = new_ingestion();
  auto finished = new_ingestion();
  auto tk = uuid::v4(), ts = uuid::v4(), tf = uuid::v4();
  ASSERT_TRUE(claim_one(kept, tk, nullptr, 30s));
  ASSERT_TRUE(claim_one(stolen, ts, nullptr, 30s));
  ASSERT_TRUE(claim_one(finished, tf, nullptr, 30s));
  expire_lease(stolen);
  ASSERT_TRUE(claim_one(stolen, uuid::v4(), nullptr, 30s, "w2"));
  ASSERT_TRUE(await<std::vector<result<void>>>(
    [&](auto cb) { repo->complete({make_completion({finished, tf})}, cb); }));
  auto lost = await<std::vector<lease_ref>>([&](auto cb) {
    repo->renew_leases({{kept, tk}, {stolen, ts}, {finished, tf}}, 600s, cb);
  });
  ASSERT_TRUE(lost) << lost.error().describe();
  std::set<uuid> lost_ids;
  for (auto& r : *lost)
    lost_ids.insert(r.ingestion_id);
  EXPECT_EQ(lost_ids, (std::set<uuid>{stolen, finished}));
  EXPECT_EQ(column(kept, "lease_expires_at > now() + interval '590 s'"), "t");
  // An expired lease that nobody took yet is still ours to renew.
  expire_lease(kept);
  lost = await<std::vector<lease_ref>>(
    [&](auto cb) { repo->renew_leases({{kept, tk}}, 60s, cb); });
  ASSERT_TRUE(lost);
  EXPECT_TRUE(lost->empty());
  EXPECT_EQ(column(kept, "lease_expires_at > now()"), "t");
}

TEST_F(repository_test, release_lets_another_worker_claim_at_once) {
  auto id = new_ingestion();
  auto token = uuid::v4();
  ASSERT_TRUE(claim_one(id, token));
  ASSERT_TRUE(await<void>([&](auto cb) { repo->release({id, token}, cb); }));
  EXPECT_EQ(column(id, "claim_token IS NULL AND lease_expires_at IS NULL"), "t");
  EXPECT_EQ(column(id, "attempt_count"), "0");
  EXPECT_EQ(column(id, "status"), "in-progress");
  EXPECT_TRUE(claim_one(id, uuid::v4(), nullptr, 60s, "w2"));
  auto again = await<void>([&](auto cb) { repo->release({id, token}, cb); });
  ASSERT_FALSE(again);
  EXPECT_TRUE(again.error().claim_lost());
}

TEST_F(repository_test, claims_that_expire_without_an_outcome_count_and_the_last_fails_as_poison) {
  constexpr int32_t max_attempts = 3;
  auto req = intake("poison");
  ASSERT_TRUE(intake_repo->create_ingestion(req, 30s));
  auto id = req.ingestion_id;
  // Each worker that claims it dies: the lease runs out with the token still set.
  for (int32_t crashes = 0; crashes < max_attempts; ++crashes) {
    auto c = claim_one(id, uuid::v4(), nullptr, 300s, "w" + std::to_string(crashes), max_attempts);
    ASSERT_TRUE(c) << "crash " << crashes;
    EXPECT_EQ(c->attempt_count, crashes);
    EXPECT_EQ(column(id, "attempt_count"), std::to_string(crashes));
    expire_lease(id);
  }
  // The claim after the N-th crash fails it instead of handing it out again, and says so to
  // its claimer (who notifies the failure): not claimed, no token, the attempts made.
  auto poisoned = claim_one(id, uuid::v4(), nullptr, 300s, "w-next", max_attempts);
  ASSERT_TRUE(poisoned);
  EXPECT_TRUE(poisoned->poisoned);
  EXPECT_EQ(poisoned->ingestion_id, id);
  EXPECT_EQ(poisoned->document_id, req.document_id);
  EXPECT_EQ(poisoned->tenant_id, req.tenant_id);
  EXPECT_EQ(poisoned->claim_token, uuid{});
  EXPECT_EQ(poisoned->attempt_count, max_attempts);
  EXPECT_EQ(column(id, "status"), "failed");
  EXPECT_EQ(column(id, "error_class"), "poison");
  EXPECT_EQ(column(id, "attempt_count"), std::to_string(max_attempts));
  EXPECT_EQ(column(id, "claim_token IS NULL AND lease_expires_at IS NULL AND completed_at IS NOT NULL"),
            "t");
  EXPECT_EQ(column(id, "last_error"),
            "poison: the claim of w2 expired without an outcome or give-back (attempt 3 of 3)");
  EXPECT_EQ(db->scalar("SELECT needs_human_review FROM document WHERE id = $1", {req.document_id.str()}),
            "t");
  auto states = await<std::vector<ingestion_state>>([&](auto cb) { repo->states({id}, cb); });
  ASSERT_TRUE(states);
  EXPECT_EQ(states->at(0), ingestion_state::failed);
  // The audit trail says what happened and who noticed.
  auto events = db->query("SELECT outcome, worker_id FROM ingestion_event WHERE ingestion_id = $1 "
                          "AND step = 'claim' ORDER BY id",
                          {id.str()});
  ASSERT_EQ(events.size(), 3u);
  EXPECT_EQ(events[0][0].value(), "crash");
  EXPECT_EQ(events[0][1].value(), "w1");
  EXPECT_EQ(events[2][0].value(), "poison");
  EXPECT_EQ(events[2][1].value(), "w-next");
  // Final: no claim (and no second poison answer: notified once), no more attempts, and the
  // sweeper never revives it however old it gets.
  EXPECT_FALSE(claim_one(id, uuid::v4(), nullptr, 300s, "w-later", max_attempts));
  EXPECT_EQ(column(id, "attempt_count"), std::to_string(max_attempts));
  long_forgotten("true");
  EXPECT_TRUE(rescue().empty());
  EXPECT_EQ(column(id, "status"), "failed");
}
