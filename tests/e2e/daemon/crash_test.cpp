// kill -9 mid-run: a second daemon finishes everything, nothing is completed twice, and the dead
// daemon's claims are taken over once their lease expires, their stored transcriptions reused. A
// document whose worker is killed every time it processes it ends `failed` as poison after
// max_retry_attempts crashes; so does one whose decoder helper is killed by its memory limit each
// time, while the node and the other documents carry on.
#include <csignal>
#include <filesystem>

#include <sys/stat.h>

#include <gtest/gtest.h>

#include "e2e_checks.hpp"
#include "tests/support/ocr/ocr_support.hpp"

using namespace std::chrono_literals;
using namespace ingestd::test;

TEST(e2e_daemon_crash, sigkill_mid_run_then_restart_completes_everything_exactly_once) {
  e2e_setup s;
  held_llm_server llm;
  auto ids = s.add_documents(8, doc_kind::scan_png);
  auto text = s.add_documents(4, doc_kind::text_pdf);
  ids.insert(ids.end(), text.begin(), text.end());
  s.enqueue(ids);
  // The first daemon's jobs wait on an LLM that answers when the test says so: the kill comes
  // after some completions and while the other claims are held, whatever this machine's speed.
  auto first = s.start({{"INGESTD_WORKER__ID", "e2e-first"},
                        {"INGESTD_EXTRACTION__PROVIDER", "llm"},
                        {"INGESTD_EXTRACTION__LLM_BASE_URL", llm.url()}});
  ASSERT_TRUE(await_waiting_on_extraction(s, static_cast<int64_t>(ids.size()), 300s)) << s.logs();
  constexpr int finished_first = 4;
  llm.release(finished_first);
  ASSERT_TRUE(wait_until([&] { return s.with_status("completed") == finished_first; }, 120s))
      << s.logs();
  first->signal(SIGKILL);
  auto rc = first->wait_exit(30s);
  ASSERT_TRUE(rc.has_value());
  EXPECT_EQ(*rc, 128 + SIGKILL);
  auto held = s.db().query("SELECT id FROM work_item WHERE stage = 'ingest' AND status = "
                           "'in-progress' AND claimed_by = 'e2e-first' "
                           "AND claim_token IS NOT NULL");
  ASSERT_FALSE(held.empty());
  EXPECT_EQ(held.size(), ids.size() - finished_first);
  EXPECT_EQ(s.with_status("completed"), finished_first);
  // The audit trail is written in the completion's transaction: a kill -9 cannot separate them,
  // so the one-event-each check covers every ingestion, those finished before the kill included.

  // The local rules this time.
  auto second = s.start({{"INGESTD_WORKER__ID", "e2e-second"}});
  ASSERT_TRUE(await_completed(s, static_cast<int64_t>(ids.size()), 420s));
  ASSERT_TRUE(wait_until([&] { return queue_depth(s) == 0; }, 60s)) << s.logs();
  second->signal(SIGTERM);
  rc = second->wait_exit(60s);
  ASSERT_TRUE(rc.has_value()) << second->log_tail();
  EXPECT_EQ(*rc, 0) << second->log_tail();

  expect_completed_exactly_once(s, ids);
  EXPECT_EQ(s.with_status("completed"), static_cast<int64_t>(ids.size()));
  EXPECT_EQ(
      s.count(
          "SELECT count(*) FROM (SELECT ingestion_id FROM ingestion_event WHERE step = 'complete' "
          "AND outcome = 'ok' GROUP BY ingestion_id HAVING count(*) > 1) x"),
      0)
      << "an ingestion was completed twice";
  EXPECT_EQ(s.count("SELECT count(*) FROM ingestion i JOIN document d ON d.id = i.document_id "
                    "WHERE d.structured_data IS NOT NULL AND NOT d.needs_human_review"),
            static_cast<int64_t>(ids.size()));
  // The dead daemon's claims were reclaimed by the second one, not before their lease expired.
  std::vector<std::string> held_ids;
  held_ids.reserve(held.size());
  for (auto& r : held)
    held_ids.push_back(*r[0]);
  auto arr = pg_array(held_ids);
  EXPECT_EQ(s.count("SELECT count(*) FROM ingestion_event WHERE ingestion_id = ANY($1::uuid[]) "
                    "AND step = 'complete' AND outcome = 'ok' AND worker_id = 'e2e-second'",
                    {arr}),
            static_cast<int64_t>(held_ids.size()));
  EXPECT_EQ(s.count("SELECT count(*) FROM work_item WHERE id = ANY($1::uuid[]) AND claimed_by IS "
                    "DISTINCT FROM NULL "
                    "AND claimed_by <> 'e2e-second'",
                    {arr}),
            0);
  // Each takeover counted the dead daemon's claim as a crash, once.
  EXPECT_EQ(s.count("SELECT count(*) FROM work_item WHERE id = ANY($1::uuid[]) AND crash_count = 1",
                    {arr}),
            static_cast<int64_t>(held_ids.size()));
  EXPECT_EQ(s.count("SELECT count(*) FROM ingestion_event WHERE ingestion_id = ANY($1::uuid[]) "
                    "AND step = 'claim' AND outcome = 'crash' AND worker_id = 'e2e-second'",
                    {arr}),
            static_cast<int64_t>(held_ids.size()));
  // The dead daemon had stored their transcriptions: the takeover reused them.
  EXPECT_EQ(s.count("SELECT count(*) FROM ingestion_event WHERE ingestion_id = ANY($1::uuid[]) "
                    "AND step = 'resume' AND outcome = 'found' AND worker_id = 'e2e-second'",
                    {arr}),
            static_cast<int64_t>(held_ids.size()));
}

TEST(e2e_daemon_crash, a_document_that_kills_its_worker_every_time_ends_failed_as_poison) {
  constexpr int max_attempts = 3;
  e2e_setup s;
  auto ids = s.add_documents(1, doc_kind::text_pdf);
  auto id = ids.front();
  // Its file is a FIFO nobody writes: reading it never returns, so every worker that takes the
  // document is still processing it when it is killed (a decoder crash, the OOM killer).
  auto file = s.root() + "/"
              + s.db().scalar(
                  "SELECT d.file_path FROM document d JOIN ingestion i ON i.document_id = d.id "
                  "WHERE i.id = $1",
                  {id});
  std::filesystem::remove(file);
  ASSERT_EQ(::mkfifo(file.c_str(), 0600), 0);
  s.enqueue(ids);
  std::map<std::string, std::string> env{
      {"INGESTD_WORKER__MAX_RETRY_ATTEMPTS", std::to_string(max_attempts)}};

  for (int crash = 0; crash < max_attempts; ++crash) {
    auto worker = "e2e-crash-" + std::to_string(crash);
    env["INGESTD_WORKER__ID"] = worker;
    auto d = s.start(env);
    ASSERT_TRUE(wait_until(
        [&] {
          return s.count("SELECT count(*) FROM work_item WHERE id = $1 AND claim_token IS NOT NULL "
                         "AND claimed_by = $2",
                         {id, worker})
                 == 1;
        },
        60s, 10ms))
        << s.logs();
    d->signal(SIGKILL);
    ASSERT_EQ(d->wait_exit(30s), 128 + SIGKILL);
    EXPECT_EQ(s.with_status("in-progress"), 1) << "crash " << crash;
    EXPECT_EQ(s.count("SELECT attempt_count FROM work_item WHERE id = $1", {id}), crash);
    // The lease and the message's visibility run out now instead of after their 20 s (the
    // recovery tests wait for them): the next worker receives the message at its start.
    s.db().query(
        "UPDATE work_item SET lease_expires_at = now() - interval '1 second' WHERE id = $1", {id});
    s.db().query("UPDATE queue_message SET visible_at = now() WHERE queue_name = $1",
                 {s.queue_name()});
  }

  // The next worker's claim counts the last crash and fails the document for review instead of
  // taking it, and the message is acknowledged: nothing loops.
  env["INGESTD_WORKER__ID"] = "e2e-after";
  auto after = s.start(env);
  ASSERT_TRUE(wait_until([&] { return s.with_status("failed") == 1 && queue_depth(s) == 0; }, 60s))
      << s.logs();
  EXPECT_EQ(s.count("SELECT count(*) FROM work_item WHERE id = $1 AND status = 'failed' AND "
                    "error_class = 'poison' "
                    "AND attempt_count = $2 AND crash_count = $2 AND claim_token IS NULL",
                    {id, std::to_string(max_attempts)}),
            1);
  EXPECT_EQ(s.count("SELECT count(*) FROM document d JOIN ingestion i ON i.document_id = d.id "
                    "WHERE i.id = $1 AND d.needs_human_review",
                    {id}),
            1);
  EXPECT_EQ(
      s.count("SELECT count(*) FROM ingestion_event WHERE ingestion_id = $1 AND step = 'claim' "
              "AND outcome = 'crash'",
              {id}),
      max_attempts - 1);
  EXPECT_EQ(
      s.count("SELECT count(*) FROM ingestion_event WHERE ingestion_id = $1 AND step = 'claim' "
              "AND outcome = 'poison' AND worker_id = 'e2e-after'",
              {id}),
      1);
  after->signal(SIGTERM);
  auto rc = after->wait_exit(60s);
  ASSERT_TRUE(rc.has_value()) << after->log_tail();
  EXPECT_EQ(*rc, 0) << after->log_tail();
}

TEST(e2e_daemon_crash,
     a_page_over_the_decoder_memory_limit_fails_as_poison_and_the_others_complete) {
  // A node whose decoder helpers may use 1 GiB each reads two scans and a 7600 x 7600 page
  // that needs more: that page's helper is killed by its limit at each attempt, the document
  // ends failed as poison, and the node and the other documents carry on.
  constexpr int max_attempts = 2;
  e2e_setup s;
  auto ids = s.add_documents(2, doc_kind::scan_png);
  auto big = s.add_document_bytes(blank_png(7600), "png", "image/png");
  auto all = ids;
  all.push_back(big);
  s.enqueue(all);
  auto d = s.start({{"INGESTD_TRANSCRIPTION__DECODER_MEMORY_BYTES", std::to_string(1u << 30)},
                    {"INGESTD_WORKER__MAX_RETRY_ATTEMPTS", std::to_string(max_attempts)},
                    {"INGESTD_WORKER__RETRY_BACKOFF_SECONDS", "1"}});
  ASSERT_TRUE(wait_until(
      [&] { return s.with_status("completed") == 2 && s.with_status("failed") == 1; }, 300s))
      << s.logs();
  EXPECT_TRUE(d->running()) << s.logs();
  EXPECT_EQ(s.count("SELECT count(*) FROM work_item WHERE id = $1 AND status = 'failed' AND "
                    "error_class = 'poison' AND crash_count = $2 AND attempt_count = $2 AND "
                    "last_error LIKE 'poison: decode.out_of_memory:%'",
                    {big, std::to_string(max_attempts)}),
            1)
      << s.db().scalar("SELECT last_error FROM work_item WHERE id = $1", {big});
  expect_completed_exactly_once(s, ids);
  d->signal(SIGTERM);
  auto rc = d->wait_exit(60s);
  ASSERT_TRUE(rc.has_value()) << d->log_tail();
  EXPECT_EQ(*rc, 0) << d->log_tail();
}
