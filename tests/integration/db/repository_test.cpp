// pg_repository on a fresh schema: intake, the fenced claim and its races, lease expiry and
// reclaim, writes fenced out after a reclaim, failure bookkeeping, lease renewal, release,
// audit events, the sweeper's rescue, status figures, and surviving a terminated backend.
#include <algorithm>
#include <barrier>
#include <mutex>
#include <map>
#include <condition_variable>
#include <future>
#include <set>
#include <thread>

#include <gtest/gtest.h>
#include <libpq-fe.h>

#include "adapters/db/pg_connection.hpp"
#include "adapters/db/pg_intake_repository.hpp"
#include "adapters/db/pg_repository.hpp"
#include "tests/support/postgres/await.hpp"
#include "tests/support/postgres/pg_fixture.hpp"

using namespace ingestd;
using namespace std::chrono_literals;
using ingestd::test::await;

namespace {

class repository_test : public ingestd::test::postgres_test {
protected:
  void SetUp() override {
    postgres_test::SetUp();
    if (HasFatalFailure())
      return;
    repo = std::make_unique<pg_repository>(db->url());
    intake_repo = std::make_unique<pg_intake_repository>(db->url());
  }

  void TearDown() override {
    repo.reset();
    intake_repo.reset();
    postgres_test::TearDown();
  }

  intake_request intake(const std::string& content_hash, uuid tenant = tenant_) {
    intake_request r;
    r.document_id = uuid::v7();
    r.ingestion_id = uuid::v7();
    r.tenant_id = tenant;
    r.content_hash = content_hash;
    r.file_path = "documents/" + r.document_id.str() + ".pdf";
    r.mime_type = "application/pdf";
    r.uploaded_by = uuid::v4();
    r.source_metadata = R"({"channel": "test"})";
    return r;
  }

  /// A new in-progress ingestion of a new document.
  uuid new_ingestion() {
    auto res = intake_repo->create_ingestion(intake(uuid::v4().str()), 30s);
    EXPECT_TRUE(res) << res.error().describe();
    return res->ingestion_id;
  }

  std::optional<claimed_ingestion> claim_one(uuid id, uuid token, repository* r = nullptr,
                                             std::chrono::seconds lease = 300s,
                                             std::string worker = "w1", int32_t max_attempts = 3) {
    auto& target = r != nullptr ? *r : *repo;
    auto res = await<std::vector<std::optional<claimed_ingestion>>>([&](auto cb) {
      target.claim({claim_request{id, token, max_attempts}}, worker, lease, cb);
    });
    EXPECT_TRUE(res) << res.error().describe();
    EXPECT_EQ(res->size(), 1u);
    return res->at(0);
  }

  /// Simulates the passing of the lease (instead of sleeping through it).
  void expire_lease(uuid id) {
    db->query("UPDATE ingestion SET lease_expires_at = now() - interval '1 minute' WHERE id = $1",
              {id.str()});
  }

  /// Simulates an hour without a due time or a sign of the ingestion's message.
  void long_forgotten(const std::string& where) {
    db->query("UPDATE ingestion SET due_at = now() - interval '1 hour', "
              "message_seen_at = now() - interval '1 hour' WHERE " + where);
  }

  /// A message of the Postgres queue whose body names `id`.
  void queue_message_for(uuid id, const std::string& queue_name = "ingest") {
    db->query("INSERT INTO queue_message (id, queue_name, body, visible_at, sent_at) "
              "VALUES ($1, $2, $3, now() - interval '2 hours', now() - interval '2 hours')",
              {uuid::v4().str(), queue_name, id.str()});
  }

  std::vector<uuid> rescue(int limit = 100, pg_repository* r = nullptr) {
    auto& target = r != nullptr ? *r : *repo;
    auto got = await<std::vector<uuid>>([&](auto cb) { target.rescue_stranded(60s, limit, cb); });
    EXPECT_TRUE(got) << got.error().describe();
    return got ? *got : std::vector<uuid>{};
  }

  std::string column(uuid id, const std::string& expr) {
    return db->scalar("SELECT " + expr + " FROM ingestion WHERE id = $1", {id.str()});
  }

  result<failure_outcome> fail(lease_ref ref, error err, int max_attempts = 3,
                               std::chrono::seconds retry = 300s) {
    failure_record rec;
    rec.error = std::move(err);
    rec.max_attempts = max_attempts;
    return await<failure_outcome>([&](auto cb) { repo->record_failure(ref, rec, retry, cb); });
  }

  static inline const uuid tenant_ = uuid::v4();
  std::unique_ptr<pg_repository> repo;
  /// Creates the ingestions that the worker's repository works on, and the status look-ups.
  std::unique_ptr<pg_intake_repository> intake_repo;
};

completion make_completion(lease_ref ref, std::string data = R"({"invoice_number": "A-1"})") {
  completion c;
  c.ref = ref;
  c.record.structured_data = std::move(data);
  c.record.valid_structured_data = true;
  c.record.input_tokens = 1200;
  c.record.output_tokens = 300;
  c.record.model = "local-rules";
  return c;
}

} // namespace

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

TEST_F(repository_test, give_backs_and_recorded_outcomes_are_not_crashes) {
  // Released (shutdown, drain, work never started) as often as you like: nothing is counted.
  auto released = new_ingestion();
  for (int i = 0; i < 5; ++i) {
    auto token = uuid::v4();
    auto c = claim_one(released, token, nullptr, 300s, "w1", 2);
    ASSERT_TRUE(c) << "round " << i;
    EXPECT_EQ(c->attempt_count, 0);
    ASSERT_TRUE(await<void>([&](auto cb) { repo->release({released, token}, cb); }));
    expire_lease(released);  // nothing to expire: the give-back cleared the claim
  }
  EXPECT_EQ(column(released, "attempt_count"), "0");
  EXPECT_EQ(column(released, "status"), "in-progress");
  EXPECT_EQ(db->scalar("SELECT count(*) FROM ingestion_event WHERE ingestion_id = $1", {released.str()}),
            "0");

  // A recorded failure counts once, not again as a crash; a crash after it reaches the limit.
  auto failing = new_ingestion();
  auto t1 = uuid::v4();
  ASSERT_TRUE(claim_one(failing, t1, nullptr, 300s, "w1", 2));
  auto f = fail({failing, t1}, error::make_transient("http_503", "unavailable"), 2, 0s);
  ASSERT_TRUE(f);
  EXPECT_FALSE(f->failed);
  auto again = claim_one(failing, uuid::v4(), nullptr, 300s, "w1", 2);
  ASSERT_TRUE(again);
  EXPECT_EQ(again->attempt_count, 1);
  expire_lease(failing);
  auto poisoned = claim_one(failing, uuid::v4(), nullptr, 300s, "w2", 2);
  ASSERT_TRUE(poisoned);
  EXPECT_TRUE(poisoned->poisoned);
  EXPECT_EQ(column(failing, "status || ' ' || error_class || ' ' || attempt_count"), "failed poison 2");

  // A live claim of another worker is neither taken nor counted.
  auto held = new_ingestion();
  ASSERT_TRUE(claim_one(held, uuid::v4(), nullptr, 300s, "w1", 1));
  EXPECT_FALSE(claim_one(held, uuid::v4(), nullptr, 300s, "w2", 1));
  EXPECT_EQ(column(held, "status || ' ' || attempt_count"), "in-progress 0");
  // A completion is final, not a crash.
  auto done = new_ingestion();
  auto td = uuid::v4();
  ASSERT_TRUE(claim_one(done, td, nullptr, 300s, "w1", 1));
  ASSERT_TRUE(await<std::vector<result<void>>>([&](auto cb) { repo->complete({make_completion({done, td})}, cb); }));
  EXPECT_FALSE(claim_one(done, uuid::v4(), nullptr, 300s, "w2", 1));
  EXPECT_EQ(column(done, "status || ' ' || attempt_count || ' ' || (error_class IS NULL)"), "completed 0 true");
}

TEST_F(repository_test, events_are_appended_in_one_call) {
  auto id = new_ingestion();
  std::vector<audit_event> events;
  events.push_back({id, "claim", "ok", "", 3, "w1", 1'700'000'000'000});
  events.push_back({id, "fetch", "transient", "s3.SlowDown: \"quoted\" \\ backslash", 120, "w1",
                    0});
  events.push_back({uuid::v7(), "parse", "permanent", "unknown ingestion", 0, "", 0});
  ASSERT_TRUE(await<void>([&](auto cb) { repo->append_events(events, cb); }));
  EXPECT_EQ(db->scalar("SELECT count(*) FROM ingestion_event"), "3");
  auto rows = db->query("SELECT step, outcome, detail, duration_ms, worker_id, "
                        "floor(extract(epoch FROM at) * 1000)::bigint FROM ingestion_event "
                        "WHERE ingestion_id = $1 ORDER BY id",
                        {id.str()});
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0][0].value(), "claim");
  EXPECT_EQ(rows[0][1].value(), "ok");
  EXPECT_FALSE(rows[0][2].has_value());
  EXPECT_EQ(rows[0][3].value(), "3");
  EXPECT_EQ(rows[0][4].value(), "w1");
  EXPECT_EQ(rows[0][5].value(), "1700000000000");
  EXPECT_EQ(rows[1][2].value(), "s3.SlowDown: \"quoted\" \\ backslash");
  ASSERT_TRUE(await<void>([&](auto cb) { repo->append_events({}, cb); }));
}

TEST_F(repository_test, rescue_stranded_finds_only_unheld_overdue_ingestions) {
  auto stranded1 = new_ingestion();
  auto stranded2 = new_ingestion();
  auto expired = new_ingestion();
  auto held = new_ingestion();
  auto recent = new_ingestion();
  auto done = new_ingestion();
  auto te = uuid::v4(), th = uuid::v4(), td = uuid::v4();
  ASSERT_TRUE(claim_one(expired, te));
  expire_lease(expired);
  ASSERT_TRUE(claim_one(held, th));
  ASSERT_TRUE(claim_one(done, td));
  ASSERT_TRUE(await<std::vector<result<void>>>(
    [&](auto cb) { repo->complete({make_completion({done, td})}, cb); }));
  long_forgotten("id <> '" + recent.str() + "'");

  // Another node holds the sweeper lock: nothing for us.
  auto lock_key = "SELECT pg_advisory_lock(1769104, hashtext($1))";
  db->query(lock_key, {db->name()});
  auto none = await<std::vector<uuid>>([&](auto cb) { repo->rescue_stranded(60s, 100, cb); });
  ASSERT_TRUE(none) << none.error().describe();
  EXPECT_TRUE(none->empty());
  db->query("SELECT pg_advisory_unlock(1769104, hashtext($1))", {db->name()});

  auto got = await<std::vector<uuid>>([&](auto cb) { repo->rescue_stranded(60s, 100, cb); });
  ASSERT_TRUE(got) << got.error().describe();
  EXPECT_EQ(std::set<uuid>(got->begin(), got->end()),
            (std::set<uuid>{stranded1, stranded2, expired}));
  EXPECT_EQ(column(stranded1, "due_at > now() - interval '10 s'"), "t");
  // Marked due now: not stranded again until the threshold passes once more.
  auto again = await<std::vector<uuid>>([&](auto cb) { repo->rescue_stranded(60s, 100, cb); });
  ASSERT_TRUE(again);
  EXPECT_TRUE(again->empty());
  // The limit bounds one sweep.
  long_forgotten("status = 'in-progress'");
  auto limited = await<std::vector<uuid>>([&](auto cb) { repo->rescue_stranded(60s, 2, cb); });
  ASSERT_TRUE(limited);
  EXPECT_EQ(limited->size(), 2u);
}

TEST_F(repository_test, only_one_of_two_concurrent_sweepers_gets_rows) {
  std::set<uuid> expected;
  for (int i = 0; i < 20; ++i)
    expected.insert(new_ingestion());
  pg_repository other{db->url()};
  for (int round = 0; round < 5; ++round) {
    long_forgotten("true");
    std::barrier go{2};
    std::optional<result<std::vector<uuid>>> a, b;
    std::thread ta{[&] {
      go.arrive_and_wait();
      a.emplace(await<std::vector<uuid>>([&](auto cb) { repo->rescue_stranded(60s, 100, cb); }));
    }};
    std::thread tb{[&] {
      go.arrive_and_wait();
      b.emplace(await<std::vector<uuid>>([&](auto cb) { other.rescue_stranded(60s, 100, cb); }));
    }};
    ta.join();
    tb.join();
    ASSERT_TRUE(*a) << (*a).error().describe();
    ASSERT_TRUE(*b) << (*b).error().describe();
    EXPECT_NE((*a)->empty(), (*b)->empty()) << "round " << round;
    std::set<uuid> all((*a)->begin(), (*a)->end());
    all.insert((*b)->begin(), (*b)->end());
    EXPECT_EQ(all, expected);
    EXPECT_EQ((*a)->size() + (*b)->size(), expected.size());
  }
}

TEST_F(repository_test, rescue_stranded_leaves_ingestions_with_a_queue_message_alone) {
  // A backlog in the Postgres queue: messages that waited an hour, never received.
  auto waiting = new_ingestion();
  queue_message_for(waiting);
  // One whose message went to a dead-letter queue: not stranded either.
  auto dead_lettered = new_ingestion();
  queue_message_for(dead_lettered, "ingest-dlq");
  // One whose message is gone.
  auto lost = new_ingestion();
  long_forgotten("true");
  EXPECT_EQ(rescue(), std::vector<uuid>{lost});
  // However long the backlog waits, every sweep leaves it alone.
  for (int sweep = 0; sweep < 3; ++sweep) {
    long_forgotten("true");
    auto got = rescue();
    EXPECT_EQ(std::count(got.begin(), got.end(), waiting), 0) << "sweep " << sweep;
    EXPECT_EQ(std::count(got.begin(), got.end(), dead_lettered), 0) << "sweep " << sweep;
  }
  // Once its message is deleted without an outcome, the net catches it.
  db->query("DELETE FROM queue_message WHERE body = $1", {waiting.str()});
  long_forgotten("true");
  auto got = rescue();
  EXPECT_EQ(std::count(got.begin(), got.end(), waiting), 1);
}

TEST_F(repository_test, rescue_stranded_waits_while_the_message_was_seen_recently) {
  // SQS: the database cannot see the queue, so a receive, a renewal or a give-back says the
  // message is still there; the sweeper's threshold outlasts any invisibility.
  auto received = new_ingestion();
  auto renewed = new_ingestion();
  auto given_back = new_ingestion();
  auto forgotten = new_ingestion();
  auto tr = uuid::v4(), tg = uuid::v4();
  ASSERT_TRUE(claim_one(renewed, tr));
  ASSERT_TRUE(claim_one(given_back, tg));
  long_forgotten("true");
  db->query("UPDATE ingestion SET lease_expires_at = now() - interval '1 minute' WHERE claim_token IS NOT NULL");
  // A delivery of `received` while another worker holds it: not claimed, but its message seen.
  auto other = uuid::v4();
  db->query("UPDATE ingestion SET claim_token = $2, lease_expires_at = now() + interval '1 minute' "
            "WHERE id = $1",
            {received.str(), other.str()});
  EXPECT_FALSE(claim_one(received, uuid::v4()));
  db->query("UPDATE ingestion SET lease_expires_at = now() - interval '1 minute' WHERE id = $1",
            {received.str()});
  auto lost = await<std::vector<lease_ref>>([&](auto cb) { repo->renew_leases({{renewed, tr}}, 60s, cb); });
  ASSERT_TRUE(lost);
  EXPECT_TRUE(lost->empty());
  expire_lease(renewed);
  ASSERT_TRUE(await<void>([&](auto cb) { repo->release({given_back, tg}, cb); }));
  db->query("UPDATE ingestion SET due_at = now() - interval '1 hour'");
  EXPECT_EQ(rescue(), std::vector<uuid>{forgotten});
  // Rescued: seen now (a message was just sent), so not again within the threshold.
  EXPECT_EQ(column(forgotten, "message_seen_at > now() - interval '10 s'"), "t");
  db->query("UPDATE ingestion SET due_at = now() - interval '1 hour'");
  EXPECT_TRUE(rescue().empty());
}

TEST_F(repository_test, find_and_summarize_for_status) {
  auto ok = new_ingestion();
  auto bad = new_ingestion();
  auto busy = new_ingestion();
  (void) busy;
  auto to = uuid::v4(), tb = uuid::v4();
  ASSERT_TRUE(claim_one(ok, to));
  ASSERT_TRUE(claim_one(bad, tb));
  ASSERT_TRUE(await<std::vector<result<void>>>(
    [&](auto cb) { repo->complete({make_completion({ok, to})}, cb); }));
  ASSERT_TRUE(fail({bad, tb}, error::make_permanent("llm.context_length_exceeded", "too long")));
  db->query("UPDATE ingestion SET created_at = now() - interval '100 s' WHERE id = $1",
            {busy.str()});

  auto s = intake_repo->summarize(30s);
  ASSERT_TRUE(s) << s.error().describe();
  EXPECT_EQ(s->in_progress, 1);
  EXPECT_EQ(s->completed, 1);
  EXPECT_EQ(s->failed, 1);
  EXPECT_GE(s->oldest_in_progress_seconds, 100);
  EXPECT_LT(s->oldest_in_progress_seconds, 200);
  ASSERT_EQ(s->failures_by_error_class.size(), 1u);
  EXPECT_EQ(s->failures_by_error_class[0].first, "permanent");
  EXPECT_EQ(s->failures_by_error_class[0].second, 1);
  EXPECT_EQ(s->documents_needing_review, 1);

  auto f = intake_repo->find_ingestion(bad, 30s);
  ASSERT_TRUE(f);
  ASSERT_TRUE(*f);
  EXPECT_EQ((*f)->status, "failed");
  EXPECT_EQ((*f)->attempt_count, 1);
  EXPECT_EQ((*f)->error_class, "permanent");
  EXPECT_EQ((*f)->last_error, "llm.context_length_exceeded: too long");
  EXPECT_TRUE((*f)->needs_human_review);
  EXPECT_FALSE((*f)->claimed);
  auto g = intake_repo->find_ingestion(ok, 30s);
  ASSERT_TRUE(g && *g);
  EXPECT_EQ((*g)->document_structured_data, R"({"invoice_number": "A-1"})");
  auto missing = intake_repo->find_ingestion(uuid::v7(), 30s);
  ASSERT_TRUE(missing);
  EXPECT_FALSE(*missing);
}

TEST_F(repository_test, survives_a_terminated_backend) {
  auto id = new_ingestion();
  // The pool has connected.
  for (int i = 0; i < 4; ++i)
    ASSERT_TRUE(await<std::vector<ingestion_state>>([&](auto cb) { repo->states({id}, cb); }));
  auto killed = db->terminate_adapter_backends();
  ASSERT_GE(killed, 1);
  // The next calls reconnect and succeed, on every pool thread.
  for (int i = 0; i < 4; ++i) {
    auto token = uuid::v4();
    auto res = await<std::vector<ingestion_state>>([&](auto cb) { repo->states({id}, cb); });
    ASSERT_TRUE(res) << res.error().describe();
    ASSERT_EQ(res->size(), 1u);
    EXPECT_EQ(res->front(), ingestion_state::claimable);
    (void) token;
  }
  auto token = uuid::v4();
  EXPECT_TRUE(claim_one(id, token));
  EXPECT_GE(std::stoi(db->scalar("SELECT count(*) FROM pg_stat_activity WHERE "
                                 "application_name = $1",
                                 {db->name()})),
            1);
}

TEST_F(repository_test, completion_cut_off_by_connection_loss_is_reread_not_redone) {
  auto id = new_ingestion();
  auto token = uuid::v4();
  ASSERT_TRUE(claim_one(id, token));
  // Another session holds the row so that the completion is in flight when its backend is
  // terminated (the fixture's session watches pg_stat_activity, which a transaction would freeze).
  auto holder = PQconnectdb(db->base_url().c_str());
  ASSERT_EQ(PQstatus(holder), CONNECTION_OK);
  auto run = [&](const char* sql, std::vector<const char*> params) {
    auto r = PQexecParams(holder, sql, static_cast<int>(params.size()), nullptr, params.data(),
                          nullptr, nullptr, 0);
    auto status = PQresultStatus(r);
    PQclear(r);
    return status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK;
  };
  ASSERT_TRUE(run("SELECT set_config('search_path', $1, false)", {db->name().c_str()}));
  ASSERT_TRUE(run("BEGIN", {}));
  auto id_text = id.str();
  ASSERT_TRUE(run("SELECT 1 FROM ingestion WHERE id = $1 FOR UPDATE", {id_text.c_str()}));
  std::promise<result<std::vector<result<void>>>> promise;
  auto future = promise.get_future();
  repo->complete({make_completion({id, token})},
                 [&](result<std::vector<result<void>>> r) { promise.set_value(std::move(r)); });
  auto deadline = std::chrono::steady_clock::now() + 10s;
  while (db->scalar("SELECT count(*) FROM pg_stat_activity WHERE application_name = $1 AND "
                    "wait_event_type = 'Lock'",
                    {db->name()})
         == "0") {
    ASSERT_LT(std::chrono::steady_clock::now(), deadline) << "the completion never blocked";
    std::this_thread::sleep_for(5ms);
  }
  ASSERT_GE(db->terminate_adapter_backends(), 1);
  ASSERT_EQ(future.wait_for(10s), std::future_status::ready);
  run("ROLLBACK", {});
  PQfinish(holder);
  auto res = future.get();
  ASSERT_TRUE(res) << res.error().describe();
  ASSERT_EQ(res->size(), 1u);
  // Re-read on a new connection: not applied and still ours, so a transient error (retry safe),
  // not claim_lost.
  ASSERT_FALSE(res->at(0));
  EXPECT_TRUE(res->at(0).error().transient()) << res->at(0).error().describe();
  EXPECT_EQ(column(id, "status"), "in-progress");
  auto again = await<std::vector<result<void>>>(
    [&](auto cb) { repo->complete({make_completion({id, token})}, cb); });
  ASSERT_TRUE(again);
  EXPECT_TRUE(again->at(0)) << again->at(0).error().describe();
  EXPECT_EQ(column(id, "status"), "completed");
}

TEST(repository_errors, unreachable_database_is_a_transient_error) {
  pg_repository repo{"postgresql://ingestd@127.0.0.1:1/none?connect_timeout=2"};
  auto res = await<std::vector<ingestion_state>>([&](auto cb) { repo.states({uuid::v4()}, cb); });
  ASSERT_FALSE(res);
  EXPECT_TRUE(res.error().transient());
  EXPECT_EQ(res.error().code, "pg.connection");
  // While backing off, calls fail fast rather than queueing behind connect attempts.
  auto t0 = std::chrono::steady_clock::now();
  auto again = await<std::vector<ingestion_state>>([&](auto cb) { repo.states({uuid::v4()}, cb); });
  ASSERT_FALSE(again);
  EXPECT_TRUE(again.error().transient());
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 2s);
}
