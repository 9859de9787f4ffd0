// The known-file set (adapters/db/pg_known_files.cpp) against PostgreSQL: NSRL-style and plain
// lists imported idempotently, bad lines refused with nothing kept, and the claim that ends a
// known document's work item `skipped` (its ingestion's reason known_file) instead of handing it
// out.
#include <sstream>

#include "adapters/db/pg_known_files.hpp"
#include "tests/integration/db/work_fixture.hpp"

namespace ingestd::test {

namespace {

// Made-up hashes of the right shapes.
const std::string md5_a = "0123456789abcdef0123456789abcdef";
const std::string md5_b = "fedcba9876543210fedcba9876543210";
const std::string sha_a = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff";
const std::string sha_b = "ffeeddccbbaa99887766554433221100ffeeddccbbaa99887766554433221100";

class known_files_test : public work_test {
protected:
  result<known_files_import_report> import(const std::string& text) {
    std::istringstream in{text};
    pg_known_files set{db->url()};
    return set.import(in, "test.csv");
  }

  std::string count() { return db->scalar("SELECT count(*) FROM known_file"); }
};

} // namespace

TEST_F(known_files_test, an_nsrl_csv_is_imported_once_however_often_it_is_given) {
  // NSRL's legacy layout: SHA-1, MD5, CRC32, FileName, ...; quoted, with a comma in a name.
  std::string nsrl = "\"SHA-1\",\"MD5\",\"CRC32\",\"FileName\",\"FileSize\"\r\n"
                     "\"0000000000000000000000000000000000000000\",\""
                     + md5_a
                     + "\",\"00000000\",\"a, b.dll\",\"12\"\r\n"
                       "\"1111111111111111111111111111111111111111\",\""
                     + md5_b + "\",\"11111111\",\"c.exe\",\"34\"\r\n";
  auto first = import(nsrl);
  ASSERT_TRUE(first) << first.error().describe();
  EXPECT_EQ(first->hashes, 2);
  EXPECT_EQ(first->added, 2);
  EXPECT_EQ(first->lines, 3);
  auto again = import(nsrl);
  ASSERT_TRUE(again) << again.error().describe();
  EXPECT_EQ(again->hashes, 2);
  EXPECT_EQ(again->added, 0);
  EXPECT_EQ(count(), "2");
  EXPECT_EQ(
      db->scalar("SELECT algorithm || ' ' || source FROM known_file WHERE hash = $1", {md5_a}),
      "md5 test.csv");
}

TEST_F(known_files_test, a_sha256_csv_and_a_plain_list_are_read_and_upper_case_is_folded) {
  auto csv = import("sha256,sha1,md5,file_name\n" + sha_a + ",," + md5_a + ",x\n");
  ASSERT_TRUE(csv) << csv.error().describe();
  EXPECT_EQ(csv->added, 2);
  std::string upper = sha_b;
  for (auto& c : upper)
    c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  auto plain
      = import("# a comment\n\n" + md5_b + "\n" + upper + "  some-file.bin\n" + md5_a + "\n");
  ASSERT_TRUE(plain) << plain.error().describe();
  EXPECT_EQ(plain->hashes, 3);
  EXPECT_EQ(plain->added, 2); // md5_a was there already
  EXPECT_EQ(count(), "4");
  EXPECT_EQ(db->scalar("SELECT algorithm FROM known_file WHERE hash = $1", {sha_b}), "sha256");
}

TEST_F(known_files_test, a_bad_line_is_named_and_nothing_of_the_file_is_kept) {
  auto bad = import(md5_a + "\n" + md5_b + "\nnot-a-hash\n");
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().code, "known_files.bad_line");
  EXPECT_NE(bad.error().message.find("line 3"), std::string::npos) << bad.error().message;
  EXPECT_NE(bad.error().message.find("not-a-hash"), std::string::npos) << bad.error().message;
  EXPECT_EQ(count(), "0");
  auto sha1 = import("0000000000000000000000000000000000000000\n");
  ASSERT_FALSE(sha1);
  EXPECT_NE(sha1.error().message.find("SHA-1"), std::string::npos) << sha1.error().message;
  auto no_column = import("FileName,FileSize\na.dll,12\n");
  ASSERT_FALSE(no_column);
  EXPECT_NE(no_column.error().message.find("no MD5 or SHA-256 column"), std::string::npos);
  auto wrong_column = import("MD5,FileName\n" + sha_a + ",a.dll\n");
  ASSERT_FALSE(wrong_column);
  EXPECT_NE(wrong_column.error().message.find("line 2"), std::string::npos);
  EXPECT_EQ(count(), "0");
}

TEST_F(known_files_test, add_takes_both_hashes_and_is_idempotent) {
  pg_known_files set{db->url()};
  auto added = set.add({{md5_a, "md5"}, {sha_a, "sha256"}}, {"add: a", "add: a"});
  ASSERT_TRUE(added) << added.error().describe();
  EXPECT_EQ(*added, 2);
  auto again = set.add({{md5_a, "md5"}, {sha_a, "sha256"}}, {"add: a", "add: a"});
  ASSERT_TRUE(again);
  EXPECT_EQ(*again, 0);
  auto wrong = set.add({{md5_a, "sha256"}}, {"x"});
  ASSERT_FALSE(wrong);
  EXPECT_EQ(wrong.error().code, "known_files.bad_hash");
  auto n = set.count();
  ASSERT_TRUE(n);
  EXPECT_EQ(*n, 2);
}

TEST_F(known_files_test, the_claim_skips_a_known_document_by_sha256_or_md5) {
  auto by_sha = intake(sha_a);
  auto by_md5 = intake(sha_b);
  by_md5.content_md5 = md5_b;
  auto unknown = intake(uuid::v4().str());
  auto crashed = intake(uuid::v4().str());
  crashed.content_md5 = md5_a;
  for (auto* r : {&by_sha, &by_md5, &unknown, &crashed})
    ASSERT_TRUE(intake_repo->create_ingestion(*r, 30s));
  // Its holder crashed before the hash became known: the skip does not count the crash.
  claimed(crashed.ingestion_id);
  expire_lease(crashed.ingestion_id);
  ASSERT_TRUE(import(sha_a + "\n" + md5_b + "\n" + md5_a + "\n"));

  auto skipping = [](uuid id) {
    auto r = ingest_request(id);
    r.skip_known_files = true;
    return r;
  };
  for (auto* r : {&by_sha, &by_md5, &crashed}) {
    auto id = r->ingestion_id;
    auto a = claim_one(skipping(id), "w2");
    EXPECT_EQ(a.outcome, claim_outcome::finished);
    EXPECT_EQ(a.detail.rfind("known_file", 0), 0u) << a.detail;
    EXPECT_EQ(item(id, "status || ' ' || attempt_count || ' ' || crash_count || ' ' || "
                       "(claim_token IS NULL) || ' ' "
                       "|| (completed_at IS NOT NULL)"),
              "skipped 0 0 true true");
    EXPECT_EQ(ingestion(id, "status || ' ' || skip_reason || ' ' || (completed_at IS NOT NULL)"),
              "skipped known_file true");
    EXPECT_EQ(document(id, "needs_human_review"), "false");
    EXPECT_EQ(db->scalar(
                  "SELECT outcome || ' ' || worker_id FROM ingestion_event WHERE ingestion_id = $1 "
                  "AND step = 'claim'",
                  {id.str()}),
              "skipped w2");
    EXPECT_EQ(events(id, "INGESTION_SKIPPED"), 1);
    // Final: said once, never claimed again.
    auto again = claim_one(skipping(id));
    EXPECT_EQ(again.outcome, claim_outcome::finished);
    EXPECT_EQ(again.detail, "skipped");
    EXPECT_EQ(audit_rows(id, "claim"), 1);
  }
  auto normal = claim_one(skipping(unknown.ingestion_id));
  EXPECT_EQ(normal.outcome, claim_outcome::granted);
  EXPECT_EQ(item(unknown.ingestion_id, "status"), "in-progress");
  // A stage that does not skip known files takes a known one.
  auto kept = intake(sha_a, uuid::v4());
  ASSERT_TRUE(intake_repo->create_ingestion(kept, 30s));
  EXPECT_EQ(claim_one(ingest_request(kept.ingestion_id)).outcome, claim_outcome::granted);

  // Status counts them by reason, apart from failures and the review backlog.
  auto summary = intake_repo->summarize(30s);
  ASSERT_TRUE(summary) << summary.error().describe();
  EXPECT_EQ(summary->skipped, 3);
  ASSERT_EQ(summary->skipped_by_reason.size(), 1u);
  EXPECT_EQ(summary->skipped_by_reason[0].first, "known_file");
  EXPECT_EQ(summary->skipped_by_reason[0].second, 3);
  EXPECT_EQ(summary->failed, 0);
  EXPECT_EQ(summary->documents_needing_review, 0);
}

TEST_F(known_files_test, the_schema_refuses_a_skip_without_its_reason) {
  auto id = new_ingestion();
  EXPECT_THROW(db->query("UPDATE ingestion SET status = 'skipped' WHERE id = $1", {id.str()}),
               std::runtime_error);
  EXPECT_THROW(
      db->query("UPDATE ingestion SET status = 'skipped', skip_reason = 'boring' WHERE id = $1",
                {id.str()}),
      std::runtime_error);
  EXPECT_THROW(db->query("INSERT INTO known_file (hash, algorithm) VALUES ('abc', 'md5')"),
               std::runtime_error);
}

} // namespace ingestd::test
