// Bucket intake as an operator runs it, on the SQS/S3 emulator: `ingestd run` with
// acquisition.buckets reads the notifications of objects written under the bucket's prefix (the
// test sends what S3's event notification would: the emulator has none) and each object becomes
// a document read to completion (an e-mail with its attachment), the notifications deleted.
#include <csignal>

#include <gtest/gtest.h>

#include "adapters/aws/encoding.hpp"
#include "e2e_checks.hpp"
#include "messages/uuid.hpp"
#include "tests/support/await.hpp"
#include "tests/support/containers/archive_maker.hpp"
#include "tests/support/environment.hpp"
#include "tests/support/fauxqs/fauxqs_fixture.hpp"

using namespace std::chrono_literals;
using namespace ingestd;
using namespace ingestd::test;

class e2e_daemon_bucket : public fauxqs_test {};

TEST_F(e2e_daemon_bucket, objects_announced_on_the_queue_are_read_into_documents) {
  e2e_setup s;
  std::string bucket, url;
  auto objects = make_bucket(true, &bucket);
  auto notifications = make_queue({}, &url);
  auto tenant = uuid::v7().str();
  auto arrive = [&](const std::string& key, const std::string& bytes) {
    auto put = test::await<void>(
        [&](auto cb) { objects->put(key, bytes, "application/octet-stream", cb); });
    ASSERT_TRUE(put) << put.error().describe();
    auto body = R"({"Records":[{"eventVersion":"2.1","eventSource":"aws:s3","eventName":)"
                R"("ObjectCreated:Put","s3":{"bucket":{"name":")"
                + bucket + R"("},"object":{"key":")" + key + R"(","eTag":")" + aws::md5_hex(bytes)
                + R"("}}}]})";
    auto sent = test::await<std::vector<batch_entry_result>>(
        [&](auto cb) { notifications->send({{body}}, cb); });
    ASSERT_TRUE(sent) << sent.error().describe();
  };
  arrive("inbound/inv01.pdf", corpus_bytes("inv01_en_classic.pdf"));
  arrive("inbound/mail-1.eml",
         make_email("Invoice", "Attached.", {{"inv02.pdf", corpus_bytes("inv02_de_modern.pdf")}}));
  auto node = s.start(
      {{"INGESTD_STAGES__ENABLED", "ingest,unpack"},
       {"INGESTD_ACQUISITION__BUCKETS", tenant + ":s3://" + bucket + "/inbound/?queue=" + url},
       {"INGESTD_ACQUISITION__POLL_INTERVAL_SECONDS", "1"},
       {"INGESTD_STORAGE__PATH_STYLE", "true"},
       {"INGESTD_AWS__ENDPOINT", endpoint_},
       {"INGESTD_AWS__REGION", "us-east-1"}});
  // The PDF, the e-mail and its attachment.
  ASSERT_TRUE(wait_until(
      [&] {
        return s.count("SELECT count(*) FROM ingestion WHERE status = 'completed'") == 3
               && s.count("SELECT count(*) FROM ingestion") == 3;
      },
      180s))
      << s.logs();
  EXPECT_EQ(s.count("SELECT count(*) FROM ingestion WHERE source_metadata->>'channel' = 's3' "
                    "AND source_metadata->>'source_key' LIKE 's3://%'"),
            2);
  ASSERT_TRUE(wait_until(
      [&] {
        auto st = test::await<queue_stats>([&](auto cb) { notifications->stats(cb); });
        return st && st->visible == 0 && st->in_flight == 0;
      },
      60s))
      << s.logs();
  node->signal(SIGTERM);
  auto rc = node->wait_exit(60s);
  ASSERT_TRUE(rc.has_value()) << node->log_tail();
  EXPECT_EQ(*rc, 0) << node->log_tail();
}
