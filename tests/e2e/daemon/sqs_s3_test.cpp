// The daemon on SQS + S3 (the fauxqs emulator) with the database in a fresh schema, both stages:
// a hundred ingestions complete exactly once, their matching jobs go through the outbox and the
// relay to the matching queue and every document is matched once, and SIGTERM exits 0.
#include <csignal>

#include <gtest/gtest.h>

#include "e2e_checks.hpp"
#include "tests/support/fauxqs/fauxqs_fixture.hpp"
#include "tests/support/postgres/await.hpp"

using namespace std::chrono_literals;
using namespace ingestd;
using namespace ingestd::test;

class e2e_daemon_sqs : public fauxqs_test {};

TEST_F(e2e_daemon_sqs, a_hundred_ingestions_complete_exactly_once_and_sigterm_exits_0) {
  e2e_setup s;
  std::string url, match_url, unpack_url, bucket;
  auto q = make_queue({}, &url);
  auto match_q = make_queue({}, &match_url);
  make_queue({}, &unpack_url);
  auto store = make_bucket(true, &bucket);
  auto ids = s.add_documents(
      100, doc_kind::text_pdf,
      [&](const std::string& key, const std::string& bytes, const std::string& type) {
        auto r = test::await<void>([&](auto cb) { store->put(key, bytes, type, cb); });
        if (!r)
          throw std::runtime_error("S3 put " + key + ": " + r.error().describe());
      });
  for (size_t i = 0; i < ids.size(); i += 10) {
    std::vector<outgoing_message> batch;
    for (size_t j = i; j < std::min(ids.size(), i + 10); ++j)
      batch.push_back(outgoing_message{ids[j]});
    auto r = test::await<std::vector<batch_entry_result>>([&](auto cb) { q->send(batch, cb); });
    ASSERT_TRUE(r) << r.error().describe();
  }
  auto d = s.start({{"INGESTD_QUEUE__BACKEND", "sqs"},
                    {"INGESTD_QUEUE__URL", url},
                    {"INGESTD_MATCHING__QUEUE_URL", match_url},
                    {"INGESTD_CONTAINERS__QUEUE_URL", unpack_url},
                    {"INGESTD_STORAGE__BACKEND", "s3"},
                    {"INGESTD_STORAGE__BUCKET", bucket},
                    {"INGESTD_STORAGE__PATH_STYLE", "true"},
                    {"INGESTD_AWS__ENDPOINT", endpoint_},
                    {"INGESTD_AWS__REGION", "us-east-1"}});
  ASSERT_TRUE(await_completed(s, 100, 480s));
  // Every message deleted: the emulator's queue is empty (visible and in flight).
  ASSERT_TRUE(wait_until(
      [&] {
        auto st = test::await<queue_stats>([&](auto cb) { q->stats(cb); });
        return st && st->visible == 0 && st->in_flight == 0;
      },
      60s))
      << s.logs();
  ASSERT_TRUE(await_complete_events(s, ids, 30s)) << s.logs();
  // The next jobs: one outbox row per document, sent, and every document matched once.
  ASSERT_TRUE(wait_until(
      [&] {
        return s.count("SELECT count(*) FROM document_matching WHERE matching_status = 'succeeded'")
               == 100;
      },
      120s))
      << s.logs();
  EXPECT_EQ(s.count("SELECT count(*) FROM event_outbox WHERE sent_at IS NOT NULL "
                    "AND destination NOT LIKE 'events%'"),
            100);
  EXPECT_EQ(s.count("SELECT count(*) FROM document_matching WHERE matching_attempts <> 1"), 0);
  ASSERT_TRUE(wait_until(
      [&] {
        auto st = test::await<queue_stats>([&](auto cb) { match_q->stats(cb); });
        return st && st->visible == 0 && st->in_flight == 0;
      },
      60s))
      << s.logs();
  d->signal(SIGTERM);
  auto rc = d->wait_exit(60s);
  ASSERT_TRUE(rc.has_value()) << d->log_tail();
  EXPECT_EQ(*rc, 0) << d->log_tail();
  expect_completed_exactly_once(s, ids);
  // The transcriptions went to S3 too.
  auto key = s.db().scalar("SELECT transcription_file_path FROM ingestion WHERE id = $1", {ids[0]});
  auto exists = test::await<bool>([&](auto cb) { store->exists(key, cb); });
  ASSERT_TRUE(exists) << exists.error().describe();
  EXPECT_TRUE(*exists) << key;
}
