// The load file's CSV: what spreadsheets and RFC 4180 write, and each kind of bad row or header.
#include <gtest/gtest.h>

#include "intake/manifest.hpp"

using namespace ingestd;
using fields = std::vector<std::pair<std::string, std::string>>;

TEST(manifest, rows_carry_the_path_and_the_other_columns_in_order) {
  auto rows = parse_manifest("path,po_number,cost centre\n"
                             "march/inv01.pdf,PO-1,Kantine\n"
                             "inv02.pdf,,Lager\n");
  ASSERT_TRUE(rows) << rows.error().message;
  ASSERT_EQ(rows->size(), 2u);
  EXPECT_EQ((*rows)[0].line, 2u);
  EXPECT_EQ((*rows)[0].path, "march/inv01.pdf");
  EXPECT_EQ((*rows)[0].metadata, (fields{{"po_number", "PO-1"}, {"cost centre", "Kantine"}}));
  EXPECT_EQ((*rows)[1].path, "inv02.pdf");
  EXPECT_EQ((*rows)[1].metadata, (fields{{"cost centre", "Lager"}})) << "empty values left out";
  EXPECT_TRUE((*rows)[1].error.empty());
}

TEST(manifest, reads_quotes_crlf_a_byte_order_mark_and_blank_lines) {
  auto rows = parse_manifest("\xEF\xBB\xBF"
                             "note,path\r\n"
                             "\"a, b\",\"x.pdf\"\r\n"
                             "\r\n"
                             "\"two\nlines and \"\"quotes\"\"\",y.pdf\r\n"
                             "last,z.pdf");
  ASSERT_TRUE(rows) << rows.error().message;
  ASSERT_EQ(rows->size(), 3u);
  EXPECT_EQ((*rows)[0].metadata, (fields{{"note", "a, b"}}));
  EXPECT_EQ((*rows)[0].path, "x.pdf");
  EXPECT_EQ((*rows)[1].metadata, (fields{{"note", "two\nlines and \"quotes\""}}));
  EXPECT_EQ((*rows)[1].line, 4u);
  EXPECT_EQ((*rows)[2].line, 6u) << "the quoted line break counts";
  EXPECT_EQ((*rows)[2].path, "z.pdf");
}

TEST(manifest, a_bad_row_is_refused_with_its_reason_and_the_others_go_on) {
  manifest_limits limits;
  limits.max_value_bytes = 8;
  auto rows = parse_manifest("path,po\n"
                             "a.pdf,1,extra\n"
                             "b.pdf\n"
                             ",3\n"
                             "c.pdf,\xFF\xFE\n"
                             "d.pdf,123456789\n"
                             "e.pdf,x\"y\n"
                             "ok.pdf,5\n"
                             "f.pdf,\"open\n",
                             limits);
  ASSERT_TRUE(rows) << rows.error().message;
  ASSERT_EQ(rows->size(), 8u);
  auto error_of = [&](size_t i) { return (*rows)[i].error; };
  EXPECT_NE(error_of(0).find("3 fields; the header has 2"), std::string::npos) << error_of(0);
  EXPECT_NE(error_of(1).find("1 fields"), std::string::npos) << error_of(1);
  EXPECT_NE(error_of(2).find("path is empty"), std::string::npos) << error_of(2);
  EXPECT_NE(error_of(3).find("not UTF-8"), std::string::npos) << error_of(3);
  EXPECT_NE(error_of(4).find("longer than 8 bytes"), std::string::npos) << error_of(4);
  EXPECT_NE(error_of(5).find("quote inside an unquoted field"), std::string::npos) << error_of(5);
  EXPECT_TRUE(error_of(6).empty()) << error_of(6);
  EXPECT_EQ((*rows)[6].path, "ok.pdf");
  EXPECT_NE(error_of(7).find("not closed"), std::string::npos) << error_of(7);
}

TEST(manifest, a_bad_header_or_file_refuses_the_whole_manifest) {
  for (const char* text :
       {"", "\n\n", "file,po\na.pdf,1\n", "path,po,po\na,1,2\n", "path,,po\na,1,2\n", "\"path\n"}) {
    auto rows = parse_manifest(text);
    ASSERT_FALSE(rows) << text;
    EXPECT_EQ(rows.error().code, "intake.manifest");
  }
  manifest_limits small;
  small.max_bytes = 10;
  EXPECT_FALSE(parse_manifest("path\na-long-name.pdf\n", small));
  small = {};
  small.max_columns = 2;
  EXPECT_FALSE(parse_manifest("path,a,b\n", small));
}

TEST(metadata_json, an_object_of_text_values_keeps_its_order_and_leaves_empty_values_out) {
  auto m = parse_metadata_json(R"({"po_number":"4711","cost centre":"A-12","note":"","ü":"ß"})");
  ASSERT_TRUE(m) << m.error().describe();
  EXPECT_EQ(*m, (std::vector<std::pair<std::string, std::string>>{
                    {"po_number", "4711"}, {"cost centre", "A-12"}, {"ü", "ß"}}));
  auto empty = parse_metadata_json("{}");
  ASSERT_TRUE(empty);
  EXPECT_TRUE(empty->empty());
}

TEST(metadata_json, anything_else_is_a_clear_error) {
  manifest_limits limits;
  std::string many = "{";
  for (size_t i = 0; i <= limits.max_columns; ++i)
    many += (i ? "," : "") + std::string{"\"k"} + std::to_string(i) + "\":\"v\"";
  many += "}";
  for (const std::string& bad :
       {std::string{"not json"}, std::string{"[\"a\"]"}, std::string{R"({"po":4711})"},
        std::string{R"({"po":null})"}, std::string{R"({"po":"1","po":"2"})"},
        std::string{R"({"":"x"})"}, std::string{R"({"po":"a\u0000b"})"},
        std::string{"{\"po\":\"\xff\"}"},
        "{\"" + std::string(limits.max_name_bytes + 1, 'k') + "\":\"v\"}",
        "{\"po\":\"" + std::string(limits.max_value_bytes + 1, 'v') + "\"}", many}) {
    auto m = parse_metadata_json(bad);
    ASSERT_FALSE(m) << bad.substr(0, 80);
    EXPECT_EQ(m.error().code, "intake.invalid_metadata");
    EXPECT_TRUE(m.error().permanent());
    EXPECT_EQ(m.error().message.rfind("metadata: ", 0), 0u) << m.error().message;
  }
}
