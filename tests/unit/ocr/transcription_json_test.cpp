// The stored transcription JSON: everything survives a round trip; anything else read back is a
// permanent, named error.

#include <gtest/gtest.h>

#include "adapters/ocr/transcription_json.hpp"

using namespace ingestd;

namespace {

transcription sample() {
  transcription t;
  t.text = "Rechnung Nr. 1\n\nSeite 2 \"quoted\" \\ ü €";
  t.page_count = 2;
  t.quality_score = 0.625;
  t.native_text = false;
  t.preprocessed = true;
  t.provider = "tesseract";
  t.duration_ms = 1234567890123;
  t.derived_ext = "png";
  t.derived_file = "\x89PNG...";
  transcription_page p1;
  p1.number = 1;
  p1.text = "Rechnung Nr. 1";
  p1.quality_score = 0.625;
  p1.defects = {{"blurry", 0.9}, {"skewed", 0.375}};
  p1.words = {{"Rechnung", 0.1F, 0.1F, 0.25F, 0.125F}, {"Nr.", 0.26F, 0.1F, 0.3F, 0.125F}};
  transcription_page p2;
  p2.number = 2;
  p2.text = "Seite 2 \"quoted\" \\ ü €";
  p2.quality_score = 1;
  t.pages = {p1, p2};
  t.metadata = {{"title", "Rechnung \"1\" ü"}, {"created", "2026-03-01T10:00:00Z"}};
  return t;
}

} // namespace

TEST(transcription_json, round_trip_keeps_everything_but_the_image_bytes) {
  auto t = sample();
  auto back = transcription_from_json(to_json(t));
  ASSERT_TRUE(back.ok()) << back.error().describe();
  EXPECT_EQ(back->text, t.text);
  EXPECT_EQ(back->page_count, 2);
  EXPECT_DOUBLE_EQ(back->quality_score, 0.625);
  EXPECT_FALSE(back->native_text);
  EXPECT_TRUE(back->preprocessed);
  EXPECT_EQ(back->provider, "tesseract");
  EXPECT_EQ(back->duration_ms, 1234567890123);
  EXPECT_EQ(back->derived_ext, "png");
  EXPECT_TRUE(back->derived_file.empty());
  ASSERT_EQ(back->pages.size(), 2u);
  EXPECT_EQ(back->pages[0].number, 1);
  EXPECT_EQ(back->pages[0].text, "Rechnung Nr. 1");
  ASSERT_EQ(back->pages[0].defects.size(), 2u);
  EXPECT_EQ(back->pages[0].defects[0].type, "blurry");
  EXPECT_DOUBLE_EQ(back->pages[0].defects[0].confidence, 0.9);
  EXPECT_EQ(back->pages[0].defects[1].type, "skewed");
  ASSERT_EQ(back->pages[0].words.size(), 2u);
  EXPECT_EQ(back->pages[0].words[1].text, "Nr.");
  EXPECT_FLOAT_EQ(back->pages[0].words[1].left, 0.26F);
  EXPECT_FLOAT_EQ(back->pages[0].words[1].bottom, 0.125F);
  EXPECT_TRUE(back->pages[1].words.empty());
  EXPECT_EQ(back->pages[1].text, t.pages[1].text);
  EXPECT_DOUBLE_EQ(back->pages[1].quality_score, 1);
  EXPECT_TRUE(back->pages[1].defects.empty());
  EXPECT_EQ(back->metadata, t.metadata);
  // Stable: serialising the read-back gives the same bytes.
  EXPECT_EQ(to_json(*back), to_json(t));
}

TEST(transcription_json, empty_transcription_round_trips) {
  transcription t;
  t.provider = "document_ai";
  auto back = transcription_from_json(to_json(t));
  ASSERT_TRUE(back.ok()) << back.error().describe();
  EXPECT_EQ(back->page_count, 0);
  EXPECT_TRUE(back->pages.empty());
}

TEST(transcription_json, deep_nesting_is_an_error_not_a_crash) {
  // A recursive JSON parser ran out of stack on a megabyte of '['.
  auto r = transcription_from_json(std::string(1 << 20, '['));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, "ocr.bad_transcription_json");
}

TEST(transcription_json, garbage_is_a_permanent_named_error) {
  auto good = to_json(sample());
  std::vector<std::pair<std::string, std::string>> cases = {
      {"", "not JSON"},
      {"not json", "not JSON"},
      {good.substr(0, good.size() / 2), "not JSON"},
      {"[1,2]", "not an object"},
      {"{}", "version"},
      {R"({"version":99})", "unknown version"},
  };
  auto replace = [&](const std::string& from, const std::string& to) {
    auto s = good;
    auto pos = s.find(from);
    EXPECT_NE(pos, std::string::npos) << from;
    return s.replace(pos, from.size(), to);
  };
  cases.emplace_back(replace("\"page_count\":2", "\"page_count\":3"), "page_count");
  cases.emplace_back(replace("\"page_count\":2", "\"page_count\":\"2\""), "page_count");
  cases.emplace_back(replace("\"quality_score\":0.625", "\"quality_score\":1.5"), "quality_score");
  cases.emplace_back(replace("\"native_text\":false", "\"native_text\":0"), "native_text");
  cases.emplace_back(replace("\"provider\":\"tesseract\",", ""), "provider");
  cases.emplace_back(replace("\"type\":\"blurry\"", "\"type\":7"), "pages[0].defects[0]");
  cases.emplace_back(replace("\"defects\":[]", "\"defects\":{}"), "defects");
  cases.emplace_back(replace("[\"Nr.\",0.26", "[\"Nr.\",1.26"), "within the page");
  cases.emplace_back(replace("[\"Nr.\",0.26", "[7,0.26"), "[text, left, top, right, bottom]");
  cases.emplace_back(replace("\"words\":[", "\"words\":7,\"x\":["), "\"words\"");
  for (const auto& [json, needle] : cases) {
    auto r = transcription_from_json(json);
    ASSERT_FALSE(r.ok()) << json;
    EXPECT_TRUE(r.error().permanent());
    EXPECT_EQ(r.error().code, "ocr.bad_transcription_json");
    EXPECT_NE(r.error().message.find(needle), std::string::npos)
        << "message \"" << r.error().message << "\" should mention " << needle;
  }
}

TEST(transcription_json, the_summary_is_the_stored_form_without_version_text_and_pages) {
  EXPECT_EQ(
      to_summary_json(sample()),
      "{\"provider\":\"tesseract\",\"page_count\":2,\"quality_score\":0.625,"
      "\"native_text\":false,\"preprocessed\":true,\"duration_ms\":1234567890123,\"warnings\":[]}");
}

TEST(transcription_json, warnings_round_trip_and_an_older_form_without_them_reads) {
  auto t = sample();
  t.warnings = {"page 2: ocr.too_large: too large to render; kept its text layer only"};
  auto back = transcription_from_json(to_json(t));
  ASSERT_TRUE(back.ok()) << back.error().describe();
  EXPECT_EQ(back->warnings, t.warnings);
  auto older = to_json(sample());
  auto at = older.find(",\"warnings\":[]");
  ASSERT_NE(at, std::string::npos);
  older.erase(at, std::string{",\"warnings\":[]"}.size());
  auto read = transcription_from_json(older);
  ASSERT_TRUE(read.ok()) << read.error().describe();
  EXPECT_TRUE(read->warnings.empty());
  auto bad = to_json(sample());
  bad.replace(bad.find("\"warnings\":[]"), 13, "\"warnings\":[1]");
  EXPECT_FALSE(transcription_from_json(bad).ok());
}

TEST(transcription_json, metadata_is_optional_on_read_and_must_be_strings) {
  auto stored = to_json(sample());
  auto at = stored.find(",\"metadata\":{");
  ASSERT_NE(at, std::string::npos) << stored;
  auto end = stored.find('}', at);
  auto older = stored;
  older.erase(at, end + 1 - at);
  auto back = transcription_from_json(older);
  ASSERT_TRUE(back) << back.error().describe();
  EXPECT_TRUE(back->metadata.empty());
  auto bad = stored;
  bad.replace(bad.find("\"created\":\"2026-03-01T10:00:00Z\""), 32, "\"created\":7");
  auto refused = transcription_from_json(bad);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, bad_transcription_json);
  EXPECT_NE(refused.error().message.find("metadata"), std::string::npos);
}
