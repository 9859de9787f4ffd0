// Bucket intake on the SQS/S3 emulator and the real PostgreSQL: objects announced by S3 event
// notifications (the message S3 sends when an object is created; the emulator has no bucket
// notifications, so the test sends what S3 would) become documents of the bucket's tenant with
// s3://BUCKET/KEY as their source, and their notifications are deleted; an object announced
// twice is taken once; keys outside the prefix, other events and S3's test event are ignored; a
// notification that is no S3 event is deleted, one of a missing object named; a database that
// is down keeps the notification for later.
#include <gtest/gtest.h>

#include <filesystem>

#include "adapters/aws/encoding.hpp"
#include "adapters/db/pg_intake_repository.hpp"
#include "adapters/queue/sqs_queue.hpp"
#include "adapters/storage/filesystem_store.hpp"
#include "adapters/storage/s3_store.hpp"
#include "adapters/support/blocking_call.hpp"
#include "intake/bucket_intake.hpp"
#include "intake/intake_service.hpp"
#include "tests/support/containers/archive_maker.hpp"
#include "tests/support/environment.hpp"
#include "tests/support/fauxqs/fauxqs_fixture.hpp"
#include "tests/support/postgres/pg_fixture.hpp"

namespace ingestd {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

/// The notification S3 sends for `key` (URL-encoded in it, a space as '+').
std::string s3_event(const std::string& bucket, const std::string& key, const std::string& etag,
                     const std::string& event = "ObjectCreated:Put") {
  std::string encoded;
  for (char c : key)
    encoded += c == ' ' ? std::string{"+"} : std::string(1, c);
  return R"({"Records":[{"eventVersion":"2.1","eventSource":"aws:s3","awsRegion":"us-east-1",)"
         R"("eventTime":"2026-11-27T08:00:00.000Z","eventName":")"
         + event + R"(","s3":{"s3SchemaVersion":"1.0","bucket":{"name":")" + bucket
         + R"(","arn":"arn:aws:s3:::)" + bucket + R"("},"object":{"key":")" + encoded
         + R"(","size":10,"eTag":")" + etag + R"(","sequencer":"0062E99A88DC407460"}}}]})";
}

class bucket_test : public test::fauxqs_test {
protected:
  void SetUp() override {
    fauxqs_test::SetUp();
    db = std::make_unique<test::pg_schema>();
    root = test::make_temp_dir("bucket");
    store = std::make_shared<filesystem_store>(root);
    queue_name = test::unique_name("q");
    test::create_stage_queues(db->url(), queue_name);
    notifications = std::shared_ptr<queue>{make_queue()};
    objects = std::shared_ptr<object_store>{make_bucket(true, &bucket)};
  }
  void TearDown() override {
    fs::remove_all(root);
    fauxqs_test::TearDown();
  }

  std::unique_ptr<bucket_intake> reader(const std::string& database_url = "") {
    intake_options opts;
    opts.ingest_queue = queue_name;
    opts.unpack_queue = "ingestd-unpack";
    opts.call_timeout = 10s;
    auto intake = std::make_shared<intake_service>(
        std::make_shared<pg_intake_repository>(database_url.empty() ? db->url() : database_url),
        store, opts);
    inbound_bucket b;
    b.tenant_id = tenant;
    b.bucket = bucket;
    b.prefix = "inbound/";
    b.notifications = notifications;
    b.objects = objects;
    return std::make_unique<bucket_intake>(intake, std::vector<inbound_bucket>{b}, 10s);
  }

  /// Writes the object and sends its notification; returns its ETag.
  std::string arrive(const std::string& key, const std::string& bytes) {
    auto put = blocking_call<void>(30s, "test.timeout", "storage", [&](auto cb) {
      objects->put(key, bytes, "application/octet-stream", cb);
    });
    EXPECT_TRUE(put) << put.error().describe();
    auto etag = aws::md5_hex(bytes);
    announce(s3_event(bucket, key, etag));
    return etag;
  }

  void announce(const std::string& body) {
    auto sent = blocking_call<std::vector<batch_entry_result>>(
        30s, "test.timeout", "queue", [&](auto cb) { notifications->send({{body}}, cb); });
    ASSERT_TRUE(sent) << sent.error().describe();
  }

  queue_stats waiting() {
    auto s = blocking_call<queue_stats>(30s, "test.timeout", "queue",
                                        [&](auto cb) { notifications->stats(cb); });
    EXPECT_TRUE(s) << s.error().describe();
    return s ? *s : queue_stats{};
  }

  int64_t count(const std::string& sql) { return std::stoll(db->scalar(sql)); }

  std::unique_ptr<test::pg_schema> db;
  std::string root, queue_name, bucket;
  std::shared_ptr<filesystem_store> store;
  std::shared_ptr<queue> notifications;
  std::shared_ptr<object_store> objects;
  uuid tenant = uuid::v7();
};

TEST_F(bucket_test, announced_objects_become_documents_and_their_notifications_go) {
  auto etag = arrive("inbound/March invoice.pdf", test::corpus_bytes("inv01_en_classic.pdf"));
  arrive("inbound/mail/0001.eml",
         test::make_email("Invoice", "Attached.",
                          {{"inv02.pdf", test::corpus_bytes("inv02_de_modern.pdf")}}));
  arrive("elsewhere/other.pdf", test::corpus_bytes("inv03_en_compact.pdf"));
  announce(s3_event(bucket, "inbound/gone.pdf", "abc", "ObjectRemoved:Delete"));
  announce(R"({"Service":"Amazon S3","Event":"s3:TestEvent","Time":"2026-11-27T08:00:00.000Z",)"
           R"("Bucket":")"
           + bucket + R"("})");
  auto r = reader();
  auto report = r->read();
  EXPECT_EQ(report.taken, 2);
  EXPECT_EQ(report.ignored, 2) << "the key outside the prefix and the removal";
  EXPECT_EQ(report.refused + report.failed, 0);
  auto left = waiting();
  EXPECT_EQ(left.visible + left.in_flight, 0) << "every notification deleted";
  EXPECT_EQ(count("SELECT count(*) FROM ingestion AS i JOIN document AS d ON d.id = i.document_id"
                  " WHERE d.tenant_id = '"
                  + tenant.str() + "' AND i.source_metadata->>'channel' = 's3'"),
            2);
  EXPECT_EQ(db->scalar("SELECT source_metadata->>'source_key' FROM ingestion WHERE "
                       "source_metadata->>'file_name' = 'March invoice.pdf'"),
            "s3://" + bucket + "/inbound/March invoice.pdf#" + etag);
  EXPECT_EQ(count("SELECT count(*) FROM ingestion WHERE source_metadata->'metadata'->>'key' = "
                  "'inbound/mail/0001.eml'"),
            1);
  EXPECT_EQ(count("SELECT count(*) FROM queue_message WHERE queue_name = 'ingestd-unpack'"), 1)
      << "the e-mail goes to the unpack stage";
}

TEST_F(bucket_test, an_object_announced_twice_is_taken_once_and_a_new_version_again) {
  auto bytes = test::corpus_bytes("inv01_en_classic.pdf");
  auto etag = arrive("inbound/a.pdf", bytes);
  announce(s3_event(bucket, "inbound/a.pdf", etag));
  auto r = reader();
  auto report = r->read();
  EXPECT_EQ(report.taken, 1);
  EXPECT_EQ(report.duplicates, 1);
  // Another object written under the same key is another document.
  arrive("inbound/a.pdf", test::corpus_bytes("inv02_de_modern.pdf"));
  auto again = r->read();
  EXPECT_EQ(again.taken, 1);
  EXPECT_EQ(count("SELECT count(*) FROM document"), 2);
}

TEST_F(bucket_test, a_notification_that_is_no_s3_event_goes_and_a_missing_object_is_named) {
  announce("hello, not an S3 event");
  announce(s3_event(bucket, "inbound/never-written.pdf", "abc"));
  arrive("inbound/text.txt", "just text, not a document");
  auto r = reader();
  auto report = r->read();
  EXPECT_EQ(report.ignored, 1);
  EXPECT_EQ(report.refused, 2) << "the missing object and the text file";
  EXPECT_EQ(report.taken + report.failed, 0);
  auto left = waiting();
  EXPECT_EQ(left.visible + left.in_flight, 0);
  EXPECT_EQ(count("SELECT count(*) FROM ingestion"), 0);
}

TEST_F(bucket_test, a_database_that_is_down_keeps_the_notification_for_later) {
  arrive("inbound/a.pdf", test::corpus_bytes("inv01_en_classic.pdf"));
  // Nothing listens there.
  auto down = reader("postgresql://ingestd@127.0.0.1:" + std::to_string(test::free_tcp_port())
                     + "/ingestd?connect_timeout=5");
  auto report = down->read();
  EXPECT_EQ(report.failed, 1);
  EXPECT_EQ(report.taken, 0);
  auto left = waiting();
  EXPECT_EQ(left.in_flight, 1) << "received, not deleted: it comes back after its visibility";
  EXPECT_EQ(count("SELECT count(*) FROM ingestion"), 0);
}

TEST(bucket_notifications, s3_events_are_read_also_through_sns_and_anything_else_is_not) {
  auto direct = parse_s3_notification(s3_event("b-1", "in/a b.pdf", "e1"));
  ASSERT_TRUE(direct);
  ASSERT_EQ(direct->size(), 1u);
  EXPECT_EQ((*direct)[0].key, "in/a b.pdf");
  EXPECT_EQ((*direct)[0].etag, "e1");
  EXPECT_EQ((*direct)[0].event, "ObjectCreated:Put");
  std::string inner = s3_event("b-1", "in/c.pdf", "e2");
  std::string escaped;
  for (char c : inner)
    escaped += c == '"' ? std::string{"\\\""} : std::string(1, c);
  auto via_sns = parse_s3_notification(R"({"Type":"Notification","MessageId":"m","Message":")"
                                       + escaped + R"("})");
  ASSERT_TRUE(via_sns);
  ASSERT_EQ(via_sns->size(), 1u);
  EXPECT_EQ((*via_sns)[0].key, "in/c.pdf");
  auto test_event = parse_s3_notification(R"({"Service":"Amazon S3","Event":"s3:TestEvent"})");
  ASSERT_TRUE(test_event);
  EXPECT_TRUE(test_event->empty());
  for (const char* bad :
       {"", "hello", "[1,2]", R"({"Records":"x"})", R"({"Records":[{"eventSource":"aws:sqs"}]})"})
    EXPECT_FALSE(parse_s3_notification(bad)) << bad;
}

} // namespace
} // namespace ingestd
