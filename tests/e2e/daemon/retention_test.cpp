// Retention on the running daemon: documents are ingested and matched, then some are made 40
// days old in the database; the next daemon, with 30 days for originals, derived objects, the
// audit trail and the status events, prunes the old documents' objects (the original, the
// transcription, a file under the ingestion's prefix that no row names, the desk's page render),
// audit rows and events, and marks them; a new document and a tenant that keeps everything (its
// own days 0) are left whole, and the extracted data stays. On the filesystem and on the S3
// emulator's bucket.
#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>

#include <gtest/gtest.h>

#include "e2e_checks.hpp"
#include "messages/uuid.hpp"
#include "tests/support/environment.hpp"
#include "tests/support/fauxqs/fauxqs_fixture.hpp"
#include "tests/support/postgres/await.hpp"

using namespace std::chrono_literals;
using namespace ingestd;
using namespace ingestd::test;

namespace {

namespace fs = std::filesystem;

struct storage_access {
  object_writer write;
  std::function<bool(const std::string&)> exists;
  std::map<std::string, std::string> env;
};

/// The keys of an ingestion's objects: its document's original and its transcription.
std::vector<std::string> keys_of(e2e_setup& s, const std::string& ingestion) {
  auto row = s.db().query("SELECT d.file_path, i.transcription_file_path FROM ingestion AS i "
                          "JOIN document AS d ON d.id = i.document_id WHERE i.id = $1",
                          {ingestion});
  EXPECT_EQ(row.size(), 1u);
  if (row.empty())
    return {};
  return {row[0][0].value_or(""), row[0][1].value_or("")};
}

void prunes_what_is_past_its_days(e2e_setup& s, const storage_access& st) {
  auto a = uuid::v4().str();
  auto b = uuid::v4().str();
  auto old_a = s.add_documents(1, doc_kind::text_pdf, st.write, a);
  auto new_a = s.add_documents(1, doc_kind::text_pdf, st.write, a);
  auto old_b = s.add_documents(1, doc_kind::text_pdf, st.write, b);
  s.enqueue({old_a[0], new_a[0], old_b[0]});
  {
    auto d = s.start(st.env);
    ASSERT_TRUE(await_completed(s, 3, 240s)) << s.logs();
    ASSERT_TRUE(wait_until(
        [&] { return s.count("SELECT count(*) FROM work_item WHERE status = 'in-progress'") == 0; },
        120s))
        << s.logs();
    ASSERT_NO_FATAL_FAILURE(stop_cleanly(*d));
  }
  auto doc_of = [&](const std::string& ingestion) {
    return s.db().scalar("SELECT document_id FROM ingestion WHERE id = $1", {ingestion});
  };
  // The desk's render of the old document's first page, as its cache keeps it.
  auto render = a + "/review/pages/" + doc_of(old_a[0]) + "/page-0.png";
  st.write(render, "png", "image/png");
  ASSERT_TRUE(st.exists(render));
  // A derived file an attempt stored under each ingestion's prefix and no row names (a worker
  // killed before it recorded its outcome).
  auto unnamed = [&](const std::string& tenant, const std::string& ingestion) {
    auto key = tenant + "/ingestions/" + ingestion + "/preprocessed.png";
    st.write(key, "png", "image/png");
    return key;
  };
  auto old_unnamed = unnamed(a, old_a[0]);
  auto new_unnamed = unnamed(a, new_a[0]);
  // 40 days old: the document, its ingestion and its audit trail (the ingest stage's and the
  // match stage's), for A's first document and B's.
  for (const auto& id : {old_a[0], old_b[0]}) {
    auto doc = doc_of(id);
    s.db().query("UPDATE document SET created_at = now() - interval '40 days' WHERE id = $1",
                 {doc});
    s.db().query("UPDATE ingestion SET created_at = now() - interval '40 days' WHERE id = $1",
                 {id});
    s.db().query("UPDATE audit_trail SET written_at = now() - interval '40 days', "
                 "ats = array_fill(now() - interval '40 days', ARRAY[cardinality(ats)]) "
                 "WHERE ingestion_id IN ($1, $2)",
                 {id, doc});
    s.db().query("UPDATE event_outbox SET sent_at = now() - interval '40 days' "
                 "WHERE ordering_key = $1 AND sent_at IS NOT NULL",
                 {doc});
  }
  const std::string events = "SELECT count(*) FROM event_outbox WHERE ordering_key = $1";
  ASSERT_GT(s.count(events, {doc_of(old_a[0])}), 0);
  auto old_keys = keys_of(s, old_a[0]);
  auto new_keys = keys_of(s, new_a[0]);
  auto kept_keys = keys_of(s, old_b[0]);
  for (const auto& key : old_keys)
    ASSERT_TRUE(st.exists(key)) << key;
  const std::string audit_rows = "SELECT count(*) FROM ingestion_event WHERE ingestion_id = $1";
  ASSERT_GT(s.count(audit_rows, {old_a[0]}), 0);

  auto env = st.env;
  env.insert({{"INGESTD_RETENTION__ORIGINALS_DAYS", "30"},
              {"INGESTD_RETENTION__DERIVED_DAYS", "30"},
              {"INGESTD_RETENTION__AUDIT_DAYS", "30"},
              {"INGESTD_RETENTION__EVENTS_DAYS", "30"},
              {"INGESTD_OUTBOX__RETENTION_HOURS", "2000"},
              {"INGESTD_RETENTION__TENANT_DAYS", b + ":originals=0:derived=0:audit=0:events=0"},
              {"INGESTD_RETENTION__INTERVAL_SECONDS", "1"}});
  auto d = s.start(env);
  EXPECT_TRUE(wait_until(
      [&] {
        return s.count("SELECT count(*) FROM ingestion AS i JOIN document AS d ON d.id = "
                       "i.document_id WHERE i.id = $1 AND d.original_pruned_at IS NOT NULL AND "
                       "i.derived_pruned_at IS NOT NULL AND i.audit_pruned_at IS NOT NULL",
                       {old_a[0]})
                   == 1
               && s.count(events, {doc_of(old_a[0])}) == 0;
      },
      120s))
      << s.logs();
  ASSERT_NO_FATAL_FAILURE(stop_cleanly(*d));

  // A's old document: its objects and audit rows are gone, its data stays.
  for (const auto& key : old_keys)
    EXPECT_FALSE(st.exists(key)) << key;
  EXPECT_FALSE(st.exists(render));
  EXPECT_FALSE(st.exists(old_unnamed));
  EXPECT_EQ(s.count(audit_rows, {old_a[0]}), 0);
  EXPECT_EQ(
      s.count("SELECT count(*) FROM ingestion_event WHERE ingestion_id = $1", {doc_of(old_a[0])}),
      0);
  EXPECT_EQ(s.db().scalar("SELECT (structured_data IS NOT NULL)::text FROM document WHERE id = $1",
                          {doc_of(old_a[0])}),
            "true");
  // A's new document and B's old one are whole.
  for (const auto& key : new_keys)
    EXPECT_TRUE(st.exists(key)) << key;
  EXPECT_TRUE(st.exists(new_unnamed));
  for (const auto& key : kept_keys)
    EXPECT_TRUE(st.exists(key)) << key;
  EXPECT_GT(s.count(audit_rows, {new_a[0]}), 0);
  EXPECT_GT(s.count(audit_rows, {old_b[0]}), 0);
  EXPECT_GT(s.count(events, {doc_of(new_a[0])}), 0);
  EXPECT_GT(s.count(events, {doc_of(old_b[0])}), 0);
  EXPECT_EQ(s.count("SELECT count(*) FROM document WHERE original_pruned_at IS NOT NULL"), 1);
  EXPECT_EQ(s.count("SELECT count(*) FROM ingestion WHERE derived_pruned_at IS NOT NULL OR "
                    "audit_pruned_at IS NOT NULL"),
            1);
}

} // namespace

TEST(e2e_daemon_retention, documents_past_their_days_lose_their_objects_and_audit_rows) {
  e2e_setup s;
  storage_access st;
  st.write = [&](const std::string& key, const std::string& bytes, const std::string&) {
    auto path = fs::path{s.root()} / key;
    fs::create_directories(path.parent_path());
    std::ofstream{path, std::ios::binary} << bytes;
  };
  st.exists = [&](const std::string& key) { return fs::exists(fs::path{s.root()} / key); };
  prunes_what_is_past_its_days(s, st);
}

class e2e_daemon_retention_s3 : public fauxqs_test {};

TEST_F(e2e_daemon_retention_s3, documents_past_their_days_lose_their_objects_in_the_bucket) {
  e2e_setup s;
  std::string bucket;
  auto store = make_bucket(true, &bucket);
  storage_access st;
  st.env = {{"INGESTD_STORAGE__BACKEND", "s3"},
            {"INGESTD_STORAGE__BUCKET", bucket},
            {"INGESTD_STORAGE__PATH_STYLE", "true"},
            {"INGESTD_AWS__ENDPOINT", endpoint_},
            {"INGESTD_AWS__REGION", "us-east-1"}};
  st.write = [&](const std::string& key, const std::string& bytes, const std::string& type) {
    auto put = test::await<void>([&](auto cb) { store->put(key, bytes, type, cb); });
    if (!put)
      throw std::runtime_error("S3 put " + key + ": " + put.error().describe());
  };
  st.exists = [&](const std::string& key) {
    auto r = test::await<bool>([&](auto cb) { store->exists(key, cb); });
    EXPECT_TRUE(r) << r.error().describe();
    return r && *r;
  };
  prunes_what_is_past_its_days(s, st);
}
