// The known-file set (adapters/db/pg_known_files.cpp) against PostgreSQL: NSRL-style and plain
// lists imported idempotently, bad lines refused with nothing kept, and the claim that ends a
// known document's ingestion `skipped` (reason known_file) instead of handing it out.
#include <sstream>

#include "adapters/db/pg_known_files.hpp"
#include "tests/integration/db/repository_fixture.hpp"

namespace ingestd::test {

namespace {

// Made-up hashes of the right shapes.
const std::string md5_a = "0123456789abcdef0123456789abcdef";
const std::string md5_b = "fedcba9876543210fedcba9876543210";
const std::string sha_a = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff";
const std::string sha_b = "ffeeddccbbaa99887766554433221100ffeeddccbbaa99887766554433221100";

class known_files_test : public repository_test {
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
                     "\"0000000000000000000000000000000000000000\",\"" + md5_a
                     + "\",\"00000000\",\"a, b.dll\",\"12\"\r\n"
                       "\"1111111111111111111111111111111111111111\",\"" + md5_b
                     + "\",\"11111111\",\"c.exe\",\"34\"\r\n";
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
  EXPECT_EQ(db->scalar("SELECT algorithm || ' ' || source FROM known_file WHERE hash = $1", {md5_a}),
            "md5 test.csv");
}

TEST_F(known_files_test, a_sha256_csv_and_a_plain_list_are_read_and_upper_case_is_folded) {
  auto csv = import("sha256,sha1,md5,file_name\n" + sha_a + ",," + md5_a + ",x\n");
  ASSERT_TRUE(csv) << csv.error().describe();
  EXPECT_EQ(csv->added, 2);
  std::string upper = sha_b;
  for (auto& c : upper)
    c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  auto plain = import("# a comment\n\n" + md5_b + "\n" + upper + "  some-file.bin\n" + md5_a + "\n");
  ASSERT_TRUE(plain) << plain.error().describe();
  EXPECT_EQ(plain->hashes, 3);
  EXPECT_EQ(plain->added, 2);  // md5_a was there already
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
  for (auto* r : {&by_sha, &by_md5, &unknown})
    ASSERT_TRUE(intake_repo->create_ingestion(*r, 30s));
  ASSERT_TRUE(import(sha_a + "\n" + md5_b + "\n"));

  for (auto* r : {&by_sha, &by_md5}) {
    auto id = r->ingestion_id;
    auto c = claim_one(id, uuid::v4());
    ASSERT_TRUE(c);
    EXPECT_TRUE(c->skipped);
    EXPECT_FALSE(c->poisoned);
    EXPECT_EQ(c->document_id, r->document_id);
    EXPECT_EQ(column(id, "status"), "skipped");
    EXPECT_EQ(column(id, "skip_reason"), "known_file");
    EXPECT_EQ(column(id, "claim_token IS NULL AND completed_at IS NOT NULL AND attempt_count = 0"), "t");
    EXPECT_EQ(db->scalar("SELECT needs_human_review FROM document WHERE id = $1", {r->document_id.str()}),
              "f");
    auto states = await<std::vector<ingestion_state>>([&](auto cb) { repo->states({id}, cb); });
    ASSERT_TRUE(states);
    EXPECT_EQ(states->at(0), ingestion_state::skipped);
    EXPECT_EQ(db->scalar("SELECT outcome FROM ingestion_event WHERE ingestion_id = $1 AND step = 'claim'",
                         {id.str()}),
              "skipped");
    // Final: said once, never claimed again.
    EXPECT_FALSE(claim_one(id, uuid::v4()));
  }
  auto normal = claim_one(unknown.ingestion_id, uuid::v4());
  ASSERT_TRUE(normal);
  EXPECT_FALSE(normal->skipped);
  EXPECT_EQ(column(unknown.ingestion_id, "status"), "in-progress");

  // Status counts them by reason, apart from failures and the review backlog.
  auto summary = intake_repo->summarize(30s);
  ASSERT_TRUE(summary) << summary.error().describe();
  EXPECT_EQ(summary->skipped, 2);
  ASSERT_EQ(summary->skipped_by_reason.size(), 1u);
  EXPECT_EQ(summary->skipped_by_reason[0].first, "known_file");
  EXPECT_EQ(summary->failed, 0);
  EXPECT_EQ(summary->documents_needing_review, 0);
}

TEST_F(known_files_test, the_schema_refuses_a_skip_without_its_reason) {
  auto id = new_ingestion();
  EXPECT_THROW(db->query("UPDATE ingestion SET status = 'skipped' WHERE id = $1", {id.str()}),
               std::runtime_error);
  EXPECT_THROW(db->query("UPDATE ingestion SET status = 'skipped', skip_reason = 'boring' WHERE id = $1",
                         {id.str()}),
               std::runtime_error);
  EXPECT_THROW(db->query("INSERT INTO known_file (hash, algorithm) VALUES ('abc', 'md5')"), std::runtime_error);
}

} // namespace ingestd::test
