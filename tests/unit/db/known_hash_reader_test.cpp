// known_hash_reader without a database: NSRL-style and plain lists, quoting, byte-order marks and
// CRLF, errors naming the line, chunks of any size reading the same; checked_known_hash.
#include <gtest/gtest.h>

#include <sstream>

#include "adapters/db/known_hash_reader.hpp"

namespace ingestd {
namespace {

// Made-up hashes of the right shapes.
const std::string md5_a = "0123456789abcdef0123456789abcdef";
const std::string md5_b = "fedcba9876543210fedcba9876543210";
const std::string sha_a = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff";
const std::string sha1 = "0000000000000000000000000000000000000000";

std::string upper(std::string s) {
  for (auto& c : s)
    c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

struct read_result {
  std::vector<known_hash> hashes;
  int64_t lines = 0;
  std::optional<error> failed;
};

read_result read(const std::string& text, size_t want = 20000) {
  std::istringstream in{text};
  known_hash_reader reader{in};
  read_result out;
  for (;;) {
    auto more = reader.next(out.hashes, out.hashes.size() + want);
    if (!more) {
      out.failed = more.error();
      break;
    }
    if (!*more)
      break;
  }
  out.lines = reader.lines();
  return out;
}

std::vector<std::string> hashes_of(const read_result& r) {
  std::vector<std::string> out;
  for (auto& h : r.hashes)
    out.push_back(h.algorithm + " " + h.hash);
  return out;
}

TEST(known_hash_algorithm, names_md5_and_sha256_by_length_of_hex) {
  EXPECT_EQ(known_hash_algorithm(md5_a), "md5");
  EXPECT_EQ(known_hash_algorithm(upper(sha_a)), "sha256");
  EXPECT_EQ(known_hash_algorithm(sha1), std::nullopt);
  EXPECT_EQ(known_hash_algorithm("0123456789abcdef0123456789abcdeg"), std::nullopt);
  EXPECT_EQ(known_hash_algorithm(""), std::nullopt);
}

TEST(known_hash_reader, reads_the_md5_column_of_a_quoted_nsrl_csv) {
  auto r = read("\"SHA-1\",\"MD5\",\"CRC32\",\"FileName\",\"FileSize\"\r\n\"" + sha1 + "\",\""
                + md5_a + "\",\"00000000\",\"a, b.dll\",\"12\"\r\n\"" + sha1 + "\",\""
                + upper(md5_b) + "\",\"11111111\",\"c \"\"x\"\".exe\",\"34\"\r\n");
  ASSERT_FALSE(r.failed) << r.failed->describe();
  EXPECT_EQ(hashes_of(r), (std::vector<std::string>{"md5 " + md5_a, "md5 " + md5_b}));
  EXPECT_EQ(r.lines, 3);
}

TEST(known_hash_reader, reads_both_columns_and_skips_an_empty_cell) {
  auto r = read("sha256,sha1,md5,file_name\n" + sha_a + ",," + md5_a + ",x\n,," + md5_b + ",y\n");
  ASSERT_FALSE(r.failed) << r.failed->describe();
  EXPECT_EQ(hashes_of(r),
            (std::vector<std::string>{"md5 " + md5_a, "sha256 " + sha_a, "md5 " + md5_b}));
}

TEST(known_hash_reader, reads_a_plain_list_with_comments_names_bom_and_crlf) {
  auto r = read("\xEF\xBB\xBF# a comment\r\n\r\n" + md5_b + "\r\n" + upper(sha_a)
                + "  some-file.bin\n\"" + md5_a + "\"\t# quoted\n   \n");
  ASSERT_FALSE(r.failed) << r.failed->describe();
  EXPECT_EQ(hashes_of(r),
            (std::vector<std::string>{"md5 " + md5_b, "sha256 " + sha_a, "md5 " + md5_a}));
  EXPECT_EQ(r.lines, 6);
}

TEST(known_hash_reader, the_chunk_size_changes_nothing) {
  std::string csv = "md5,sha256\n";
  for (int i = 0; i < 5; ++i)
    csv.append(md5_a).append(",").append(sha_a).append("\n");
  auto all = read(csv);
  auto one = read(csv, 1);
  EXPECT_EQ(hashes_of(one), hashes_of(all));
  EXPECT_EQ(all.hashes.size(), 10u);
  EXPECT_EQ(one.lines, all.lines);
}

TEST(known_hash_reader, a_bad_line_is_named_with_what_is_wrong) {
  auto bad = read(md5_a + "\n" + md5_b + "\nnot-a-hash\n" + md5_a + "\n");
  ASSERT_TRUE(bad.failed);
  EXPECT_EQ(bad.failed->code, "known_files.bad_line");
  EXPECT_TRUE(bad.failed->permanent());
  EXPECT_EQ(bad.failed->message, "line 3: \"not-a-hash\" is neither an MD5 (32 hex digits) nor a "
                                 "SHA-256 (64 hex digits)");
  EXPECT_EQ(bad.lines, 3);

  auto long_value = read(std::string(200, 'x') + "\n");
  ASSERT_TRUE(long_value.failed);
  EXPECT_NE(long_value.failed->message.find(std::string(80, 'x') + "...\""), std::string::npos);
  EXPECT_EQ(long_value.failed->message.find(std::string(81, 'x')), std::string::npos);

  auto sha1_list = read(sha1 + "\n");
  ASSERT_TRUE(sha1_list.failed);
  EXPECT_NE(sha1_list.failed->message.find("is a SHA-1"), std::string::npos);

  auto no_column = read("FileName,FileSize\na.dll,12\n");
  ASSERT_TRUE(no_column.failed);
  EXPECT_EQ(no_column.failed->message.rfind("line 1: the header names no MD5 or SHA-256 column", 0),
            0u);

  auto short_row = read("FileName,MD5\na.dll\n");
  ASSERT_TRUE(short_row.failed);
  EXPECT_EQ(short_row.failed->message,
            "line 2: it has 1 fields; the header's md5 column is number 2");

  auto wrong_column = read("MD5,FileName\n" + sha_a + ",a.dll\n");
  ASSERT_TRUE(wrong_column.failed);
  EXPECT_EQ(wrong_column.failed->message,
            "line 2: \"" + sha_a + "\" in the md5 column is not an MD5 (32 hex digits)");
}

TEST(checked_known_hash, lower_cases_a_hash_of_its_algorithm_and_refuses_others) {
  auto ok = checked_known_hash({upper(sha_a), "sha256"});
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->hash, sha_a);
  EXPECT_EQ(ok->algorithm, "sha256");
  auto wrong = checked_known_hash({md5_a, "sha256"});
  ASSERT_FALSE(wrong);
  EXPECT_EQ(wrong.error().code, "known_files.bad_hash");
  EXPECT_EQ(wrong.error().message, "\"" + md5_a + "\" is not a sha256 hash");
  EXPECT_FALSE(checked_known_hash({sha1, "sha1"}));
}

} // namespace
} // namespace ingestd
