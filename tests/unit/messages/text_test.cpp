// Unit tests of the text cleaning before storage (messages/text.hpp): cuts on character
// boundaries, NUL and malformed UTF-8 in text, \u0000 and lone surrogates in JSON strings.
#include <string>

#include <gtest/gtest.h>

#include "messages/text.hpp"

using namespace ingestd;
using namespace std::string_literals;

namespace {

const std::string euro = "\xE2\x82\xAC";      // 3 bytes
const std::string emoji = "\xF0\x9F\x98\x80"; // 4 bytes
const std::string fffd = "\xEF\xBF\xBD";

} // namespace

TEST(utf8_prefix, keeps_short_text_and_cuts_ascii_at_the_limit) {
  EXPECT_EQ(utf8_prefix("abc", 3), "abc");
  EXPECT_EQ(utf8_prefix("abc", 10), "abc");
  EXPECT_EQ(utf8_prefix("abcdef", 4), "abcd");
  EXPECT_EQ(utf8_prefix("abc", 0), "");
}

TEST(utf8_prefix, never_cuts_a_character_in_half) {
  auto s = "ab" + euro + "cd"; // a b [e2 82 ac] c d
  EXPECT_EQ(utf8_prefix(s, 2), "ab");
  EXPECT_EQ(utf8_prefix(s, 3), "ab");
  EXPECT_EQ(utf8_prefix(s, 4), "ab");
  EXPECT_EQ(utf8_prefix(s, 5), "ab" + euro);
  auto e = "x" + emoji;
  for (size_t n = 1; n < 5; ++n)
    EXPECT_EQ(utf8_prefix(e, n), "x") << n;
  EXPECT_EQ(utf8_prefix(e, 5), e);
  // Every cut of a mixed text is clean text.
  auto mixed = "é" + euro + "a" + emoji + "ü";
  for (size_t n = 0; n <= mixed.size(); ++n) {
    auto p = utf8_prefix(mixed, n);
    EXPECT_LE(p.size(), n);
    EXPECT_EQ(clean_text(p), p) << n;
  }
}

TEST(clean_text, leaves_clean_text_alone) {
  auto s = "Rechnung Nr. 7 — " + euro + " 12,50 " + emoji;
  EXPECT_EQ(clean_text(s), s);
  EXPECT_EQ(clean_text(""), "");
}

TEST(clean_text, drops_nul_and_replaces_bytes_that_are_not_utf8) {
  EXPECT_EQ(clean_text("a\0b"s), "ab");
  EXPECT_EQ(clean_text("\0\0"s), "");
  // A character cut in half at the end (a byte-count truncation) and in the middle.
  EXPECT_EQ(clean_text("total " + euro.substr(0, 2)), "total " + fffd + fffd);
  EXPECT_EQ(clean_text("a" + emoji.substr(0, 3) + "b"), "a" + fffd + fffd + fffd + "b");
  // Latin-1, overlong forms, surrogates and code points above U+10FFFF are not UTF-8 either.
  EXPECT_EQ(clean_text("caf\xE9"), "caf" + fffd);
  EXPECT_EQ(clean_text("\xC0\xAF"), fffd + fffd);
  EXPECT_EQ(clean_text("\xED\xA0\x80"), fffd + fffd + fffd);
  EXPECT_EQ(clean_text("\xF4\x90\x80\x80"), fffd + fffd + fffd + fffd);
  EXPECT_EQ(clean_text("\xFF"), fffd);
}

TEST(clean_json, leaves_clean_json_alone) {
  auto j = R"({"a": "x\"y\\u0000z", "b": [1, 2.5e3, null], "c": "\u00e9\ud83d\ude00"})"s;
  EXPECT_EQ(clean_json(j), j); // \\u0000 is a backslash and "u0000", not the escape
  EXPECT_EQ(clean_json(""), "");
}

TEST(clean_json, drops_the_nul_escape_from_strings_and_keys) {
  EXPECT_EQ(clean_json(R"({"vendor": "ACME\u0000 GmbH"})"), R"({"vendor": "ACME GmbH"})");
  EXPECT_EQ(clean_json(R"({"a\u0000b": ["\u0000", "\u0000\u0000x"]})"), R"({"ab": ["", "x"]})");
  EXPECT_EQ(clean_json(R"(["\\\u0000"])"), R"(["\\"])");
}

TEST(clean_json, replaces_unpaired_surrogates_and_keeps_pairs) {
  EXPECT_EQ(clean_json(R"(["\ud800"])"), R"(["\ufffd"])");
  EXPECT_EQ(clean_json(R"(["\udc00x"])"), R"(["\ufffdx"])");
  EXPECT_EQ(clean_json(R"(["\ud800\u0041"])"), R"(["\ufffd\u0041"])");
  EXPECT_EQ(clean_json(R"(["\uD83D\uDE00"])"), R"(["\uD83D\uDE00"])");
}

TEST(clean_json, cleans_raw_nul_and_malformed_bytes) {
  EXPECT_EQ(clean_json("{\"a\": \"x\0y\"}"s), R"({"a": "xy"})");
  EXPECT_EQ(clean_json(R"({"error": "too long )" + euro.substr(0, 1) + R"("})"),
            R"({"error": "too long )" + fffd + R"("})");
}

TEST(percent_decode, decodes_escapes_keeps_malformed_ones_and_plus_only_in_forms) {
  EXPECT_EQ(percent_decode("a%20b%2fc+d%zz%4"), "a b/c+d%zz%4");
  EXPECT_EQ(percent_decode("a+b%20c", false), "a+b c");
  EXPECT_EQ(percent_decode("a+b%20c", true), "a b c");
  EXPECT_EQ(percent_decode("%41%"), "A%");
  EXPECT_EQ(percent_decode(""), "");
}
