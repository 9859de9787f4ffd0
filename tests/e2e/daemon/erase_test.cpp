// `ingestd erase` after the daemon has ingested and matched documents: the erased document leaves
// nothing of itself in a dump of the database or in the storage tree (filesystem and the S3
// emulator), its neighbour stays whole, the receipt and the DOCUMENT_ERASED event say what
// happened; a tenant's erasure takes all its documents and its credentials and nothing of another
// tenant's.
#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>

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

/// The schema's data as pg_dump writes it.
std::string dump(e2e_setup& s) {
  auto r = run_shell("pg_dump --data-only --no-owner -n " + s.db().name() + " '" + s.db().base_url()
                     + "' 2>&1");
  EXPECT_EQ(r.code, 0) << r.output;
  return r.output;
}

std::string file_text(const fs::path& p) {
  std::ifstream in{p, std::ios::binary};
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

/// Every file of the storage tree (the daemons' logs, which the test keeps there too, aside).
std::vector<fs::path> storage_files(e2e_setup& s) {
  std::vector<fs::path> out;
  for (auto& e : fs::recursive_directory_iterator{s.root()})
    if (e.is_regular_file() && e.path().filename().string().rfind("daemon-", 0) != 0)
      out.push_back(e.path());
  return out;
}

/// What identifies a document's content: a piece of its bytes, its invoice number, a line of
/// its transcription, its objects' keys. (Its id may stay: the receipt and the event name it.)
struct traces {
  std::string document_id;
  std::string original_bytes;
  std::string invoice_number;
  std::string transcribed_line;
  std::vector<std::string> keys;
};

traces traces_of(e2e_setup& s, const std::string& ingestion_id,
                 const std::function<std::string(const std::string&)>& read) {
  traces t;
  auto row = s.db().query(
      "SELECT d.id::text, d.structured_data ->> 'invoice_number', d.file_path, "
      "i.transcription_file_path FROM ingestion AS i JOIN document AS d ON d.id = i.document_id "
      "WHERE i.id = $1",
      {ingestion_id});
  EXPECT_EQ(row.size(), 1u);
  if (row.empty())
    return t;
  t.document_id = row[0][0].value_or("");
  t.invoice_number = row[0][1].value_or("");
  t.keys = {row[0][2].value_or(""), row[0][3].value_or("")};
  auto original = read(t.keys[0]);
  EXPECT_GT(original.size(), 1000u);
  t.original_bytes = original.substr(original.size() / 2, 64);
  // The longest line of the transcription that holds the invoice number, as stored.
  auto transcription = read(t.keys[1]);
  std::istringstream lines{transcription};
  for (std::string line; std::getline(lines, line, '\\');)
    if (line.find(t.invoice_number) != std::string::npos && line.size() > t.transcribed_line.size()
        && line.size() < 200)
      t.transcribed_line = line;
  if (t.transcribed_line.empty())
    t.transcribed_line = t.invoice_number;
  return t;
}

void expect_absent(const std::string& haystack, const traces& t, const std::string& where) {
  auto absent = [&](const std::string& needle, const std::string& what) {
    auto at = haystack.find(needle);
    if (at == std::string::npos)
      return;
    // The line it is on, and the heading of the table it belongs to.
    auto begin = haystack.rfind('\n', at);
    auto end = haystack.find('\n', at);
    auto table = haystack.rfind("COPY ", at);
    ADD_FAILURE() << what << " in " << where << ", "
                  << haystack.substr(table == std::string::npos ? 0 : table, 80) << "...: "
                  << haystack.substr(begin == std::string::npos ? 0 : begin + 1,
                                     std::min<size_t>(end - begin, 1000));
  };
  absent(t.original_bytes, "a piece of the original");
  absent(t.invoice_number, "the invoice number " + t.invoice_number);
  absent(t.transcribed_line, "the transcribed text");
  for (auto& key : t.keys)
    absent(key, "the object key " + key);
}

/// Ingests two documents of one tenant on a daemon and waits until they and their matching are
/// done; answers the ingestion ids.
std::vector<std::string> ingest_two(e2e_setup& s, const std::string& tenant,
                                    const object_writer& write,
                                    const std::map<std::string, std::string>& env) {
  auto ids = s.add_documents(2, doc_kind::text_pdf, write, tenant);
  s.enqueue(ids);
  auto d = s.start(env);
  EXPECT_TRUE(await_completed(s, 2, 240s)) << s.logs();
  EXPECT_TRUE(await_complete_events(s, ids, 60s)) << s.logs();
  EXPECT_TRUE(wait_until(
      [&] { return s.count("SELECT count(*) FROM work_item WHERE status = 'in-progress'") == 0; },
      120s))
      << s.logs();
  stop_cleanly(*d);
  return ids;
}

} // namespace

TEST(e2e_daemon_erase, an_erased_document_leaves_no_byte_in_the_database_or_the_storage_tree) {
  e2e_setup s;
  auto tenant = uuid::v4().str();
  auto ids = ingest_two(s, tenant, {}, {});
  auto read = [&](const std::string& key) { return file_text(fs::path{s.root()} / key); };
  auto erased = traces_of(s, ids[0], read);
  auto kept = traces_of(s, ids[1], read);
  ASSERT_FALSE(erased.invoice_number.empty());
  ASSERT_NE(erased.invoice_number, kept.invoice_number);
  // The desk's page render, as its cache keeps it.
  auto render = tenant + "/review/pages/" + erased.document_id + "/page-0.png";
  fs::create_directories((fs::path{s.root()} / render).parent_path());
  std::ofstream{fs::path{s.root()} / render} << "png of " << erased.invoice_number;
  // Before: the dump holds the document (the checks below can see it).
  ASSERT_NE(dump(s).find(erased.invoice_number), std::string::npos);
  const std::string kept_items
      = "SELECT count(*) FROM work_item WHERE document_id = $1 AND status = 'completed'";
  auto kept_before = s.count(kept_items, {kept.document_id});

  auto r = run_cli(s, {"erase", "--document", erased.document_id, "--by", "privacy-desk", "--json"},
                   {}, 120);
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  EXPECT_NE(r.out.find("\"documents\":1"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\"erased_by\":\"privacy-desk\""), std::string::npos) << r.out;
  // The original, the transcription and the page render at least.
  auto objects_at = r.out.find("\"objects\":");
  ASSERT_NE(objects_at, std::string::npos) << r.out;
  EXPECT_GE(std::stoi(r.out.substr(objects_at + 10)), 3) << r.out;

  // Nothing of it in the database...
  auto after = dump(s);
  expect_absent(after, erased, "the database dump");
  // ...nor in storage, where its neighbour's objects stay.
  for (auto& file : storage_files(s)) {
    auto rel = fs::relative(file, s.root()).string();
    EXPECT_EQ(rel.find(erased.document_id), std::string::npos) << rel;
    EXPECT_EQ(rel.find(ids[0]), std::string::npos) << rel;
    expect_absent(file_text(file), erased, rel);
  }
  EXPECT_TRUE(fs::exists(fs::path{s.root()} / kept.keys[0]));
  EXPECT_TRUE(fs::exists(fs::path{s.root()} / kept.keys[1]));
  EXPECT_NE(after.find(kept.invoice_number), std::string::npos);
  EXPECT_EQ(s.count(kept_items, {kept.document_id}), kept_before)
      << "the neighbour's ingestion and matching stay";
  // The receipt and the event name the document by its id only.
  EXPECT_EQ(s.count("SELECT count(*) FROM erasure_receipt WHERE subject_id = $1 AND "
                    "erased_by = 'privacy-desk' AND documents = 1",
                    {erased.document_id}),
            1);
  EXPECT_EQ(s.count("SELECT count(*) FROM event_outbox WHERE destination = 'events' AND "
                    "body::jsonb ->> 'type' = 'DOCUMENT_ERASED' AND ordering_key = $1",
                    {erased.document_id}),
            1);
  auto listed = run_cli(s, {"erase", "--receipts", "--tenant", tenant}, {}, 120);
  EXPECT_EQ(listed.exit_code, 0) << listed.err;
  EXPECT_NE(listed.out.find(erased.document_id), std::string::npos) << listed.out;
  // Again: there is nothing left to erase.
  auto again = run_cli(s, {"erase", "--document", erased.document_id}, {}, 120);
  EXPECT_EQ(again.exit_code, 1);
  EXPECT_NE(again.err.find("erase.not_found"), std::string::npos) << again.err;
  // Another tenant's document is not found through --tenant.
  auto other = run_cli(s, {"erase", "--document", kept.document_id, "--tenant", uuid::v4().str()},
                       {}, 120);
  EXPECT_EQ(other.exit_code, 1);
  EXPECT_EQ(run_cli(s, {"erase"}, {}, 120).exit_code, 2);
  EXPECT_EQ(run_cli(s, {"erase", "--tenant", tenant}, {}, 120).exit_code, 2)
      << "--all-documents is needed";
}

TEST(e2e_daemon_erase, a_tenants_erasure_takes_its_documents_and_credentials_and_no_other) {
  e2e_setup s;
  auto tenant = uuid::v4().str();
  auto other = uuid::v4().str();
  auto mine = ingest_two(s, tenant, {}, {});
  auto theirs = s.add_documents(1, doc_kind::text_pdf, {}, other);
  s.db().query("INSERT INTO tenant (id, name) VALUES ($1, 'leaving')", {tenant});
  s.db().query("INSERT INTO tenant_credential (token_sha256, tenant_id) VALUES (repeat('a', 64), "
               "$1)",
               {tenant});
  // What its reviewers taught about a supplier goes too; another tenant's stays.
  for (auto& t : {tenant, other})
    s.db().query("INSERT INTO supplier_knowledge (tenant_id, supplier, field, value, learned_by) "
                 "VALUES ($1, 'name:soletrader', 'supplier_name', 'Jane Doe', 'erin')",
                 {t});
  auto r = run_cli(s, {"erase", "--tenant", tenant, "--all-documents", "--by", "offboarding"}, {},
                   120);
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  EXPECT_NE(r.out.find("2 document(s)"), std::string::npos) << r.out;
  EXPECT_EQ(s.count("SELECT count(*) FROM document WHERE tenant_id = $1", {tenant}), 0);
  EXPECT_EQ(s.count("SELECT count(*) FROM work_item WHERE tenant_id = $1", {tenant}), 0);
  EXPECT_EQ(s.count("SELECT count(*) FROM tenant WHERE id = $1", {tenant}), 0);
  EXPECT_EQ(s.count("SELECT count(*) FROM tenant_credential WHERE tenant_id = $1", {tenant}), 0);
  EXPECT_EQ(s.count("SELECT count(*) FROM supplier_knowledge WHERE tenant_id = $1", {tenant}), 0);
  EXPECT_EQ(s.count("SELECT count(*) FROM supplier_knowledge WHERE tenant_id = $1", {other}), 1);
  EXPECT_EQ(s.count("SELECT count(*) FROM document WHERE tenant_id = $1", {other}), 1);
  EXPECT_EQ(s.count("SELECT count(*) FROM ingestion WHERE id = $1", {theirs[0]}), 1);
  EXPECT_EQ(s.count("SELECT count(*) FROM erasure_receipt WHERE scope = 'tenant' AND "
                    "subject_id = $1 AND documents = 2",
                    {tenant}),
            1);
  for (auto& file : storage_files(s)) {
    auto rel = fs::relative(file, s.root()).string();
    EXPECT_EQ(rel.find(tenant), std::string::npos) << rel;
    for (auto& id : mine)
      EXPECT_EQ(rel.find(id), std::string::npos) << rel;
  }
}

class e2e_daemon_erase_s3 : public fauxqs_test {};

TEST_F(e2e_daemon_erase_s3, an_erased_document_leaves_no_object_in_the_bucket) {
  e2e_setup s;
  std::string bucket;
  auto store = make_bucket(true, &bucket);
  std::map<std::string, std::string> env{{"INGESTD_STORAGE__BACKEND", "s3"},
                                         {"INGESTD_STORAGE__BUCKET", bucket},
                                         {"INGESTD_STORAGE__PATH_STYLE", "true"},
                                         {"INGESTD_AWS__ENDPOINT", endpoint_},
                                         {"INGESTD_AWS__REGION", "us-east-1"}};
  auto tenant = uuid::v4().str();
  auto ids = ingest_two(
      s, tenant,
      [&](const std::string& key, const std::string& bytes, const std::string& type) {
        auto r = test::await<void>([&](auto cb) { store->put(key, bytes, type, cb); });
        if (!r)
          throw std::runtime_error("S3 put " + key + ": " + r.error().describe());
      },
      env);
  auto read = [&](const std::string& key) {
    auto r = test::await<std::string>([&](auto cb) { store->get(key, 1 << 24, cb); });
    return r ? *r : std::string{};
  };
  auto erased = traces_of(s, ids[0], read);
  auto kept = traces_of(s, ids[1], read);
  ASSERT_FALSE(erased.invoice_number.empty());
  auto r = run_cli(s, {"erase", "--document", erased.document_id, "--json"}, env, 120);
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  expect_absent(dump(s), erased, "the database dump");
  auto keys = test::await<std::vector<std::string>>([&](auto cb) { store->list("", cb); });
  ASSERT_TRUE(keys) << keys.error().describe();
  for (auto& key : *keys) {
    EXPECT_EQ(key.find(erased.document_id), std::string::npos) << key;
    EXPECT_EQ(key.find(ids[0]), std::string::npos) << key;
    expect_absent(read(key), erased, key);
  }
  EXPECT_EQ(read(kept.keys[0]).empty(), false) << "the neighbour's original stays";
}
