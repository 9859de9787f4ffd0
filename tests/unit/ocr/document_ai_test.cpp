// Document AI adapter logic without a network: request body, proto3 JSON response forms, the
// legacy quality entity, defect names and error classification; plus the adapter over a fake
// http_client (tests/support/http) that records the request it gets.

#include <gtest/gtest.h>
#include <rapidjson/document.h>

#include "adapters/ocr/document_ai_transcriber.hpp"
#include "tests/support/http/fake_http_client.hpp"
#include "tests/support/ocr/ocr_support.hpp"

using namespace ingestd;

using test::make_response;

TEST(document_ai, request_body_has_base64_content_and_ocr_config) {
  document_ai_options opts;
  auto body = document_ai_request_body(std::string("%PDF-\x01\xff", 7), "application/pdf", opts);
  rapidjson::Document d;
  d.Parse(body.c_str());
  ASSERT_FALSE(d.HasParseError());
  EXPECT_STREQ(d["rawDocument"]["content"].GetString(), "JVBERi0B/w==");
  EXPECT_STREQ(d["rawDocument"]["mimeType"].GetString(), "application/pdf");
  EXPECT_TRUE(d["processOptions"]["ocrConfig"]["enableNativePdfParsing"].GetBool());
  EXPECT_TRUE(d["processOptions"]["ocrConfig"]["enableImageQualityScores"].GetBool());
}

TEST(document_ai, defect_names_are_mapped) {
  EXPECT_EQ(map_document_ai_defect("quality/defect_blurry"), "blurry");
  EXPECT_EQ(map_document_ai_defect("quality/defect_text_too_small"), "text_too_small");
  EXPECT_EQ(map_document_ai_defect("quality/defect_glare"), "glare");
  EXPECT_EQ(map_document_ai_defect("something_else"), "something_else");
}

TEST(document_ai, parses_pages_quality_and_int64_strings) {
  // Text indices as strings, startIndex omitted on page 1 (0), pageNumber as a string on page 2.
  auto r = parse_document_ai_response(R"({"document":{
    "text":"Rechnung über 5 €\nSeite 2\n",
    "pages":[
      {"pageNumber":1,"layout":{"textAnchor":{"textSegments":[{"endIndex":"18"}]},
                                "orientation":"PAGE_UP"},
       "imageQualityScores":{"qualityScore":0.78,
         "detectedDefects":[{"type":"quality/defect_glare","confidence":0.97},
                            {"type":"quality/defect_blurry"}]}},
      {"pageNumber":"2","layout":{"textAnchor":{"textSegments":[{"startIndex":"18","endIndex":"26"}]},
                                  "orientation":1},
       "imageQualityScores":{"detectedDefects":[]}}]}})");
  ASSERT_TRUE(r.ok()) << r.error().describe();
  EXPECT_EQ(r->provider, "document_ai");
  EXPECT_FALSE(r->native_text);
  ASSERT_EQ(r->page_count, 2);
  EXPECT_EQ(r->pages[0].text, "Rechnung über 5 €\n");
  EXPECT_EQ(r->pages[1].text, "Seite 2\n");
  EXPECT_EQ(r->pages[1].number, 2);
  EXPECT_DOUBLE_EQ(r->pages[0].quality_score, 0.78);
  ASSERT_EQ(r->pages[0].defects.size(), 2u);
  EXPECT_EQ(r->pages[0].defects[0].type, "glare");
  EXPECT_DOUBLE_EQ(r->pages[0].defects[0].confidence, 0.97);
  EXPECT_EQ(r->pages[0].defects[1].type, "blurry");
  EXPECT_DOUBLE_EQ(r->pages[0].defects[1].confidence, 0.0); // omitted = proto3 default
  // qualityScore omitted inside imageQualityScores = 0.0; the document takes the minimum.
  EXPECT_DOUBLE_EQ(r->pages[1].quality_score, 0.0);
  EXPECT_DOUBLE_EQ(r->quality_score, 0.0);
}

// Tokens become the page's words with their boxes (the box around the normalized vertices, an
// omitted coordinate 0); tokens without text or without a box are left out.
TEST(document_ai, tokens_are_words_with_boxes) {
  auto r = parse_document_ai_response(R"({"document":{"text":"Total 119,00\n",
    "pages":[{"pageNumber":1,"tokens":[
      {"layout":{"textAnchor":{"textSegments":[{"endIndex":"6"}]},
       "boundingPoly":{"normalizedVertices":[{"x":0.1,"y":0.8},{"x":0.2,"y":0.8},
                                             {"x":0.2,"y":0.82},{"x":0.1,"y":0.82}]}}},
      {"layout":{"textAnchor":{"textSegments":[{"startIndex":"6","endIndex":"13"}]},
       "boundingPoly":{"normalizedVertices":[{"x":0.7,"y":0.8},{"x":0.8,"y":0.8},
                                             {"x":0.8,"y":0.82},{"x":0.7,"y":0.82}]}}},
      {"layout":{"textAnchor":{"textSegments":[{"startIndex":"6","endIndex":"13"}]}}},
      {"layout":{"boundingPoly":{"normalizedVertices":[{"x":0.7},{"x":0.8,"y":0.1}]}}},
      {"layout":{"textAnchor":{"textSegments":[{"startIndex":"0","endIndex":"5"}]},
       "boundingPoly":{"normalizedVertices":[{"x":0.3},{"x":0.4,"y":0.05}]}}}]}]}})");
  ASSERT_TRUE(r.ok()) << r.error().describe();
  ASSERT_EQ(r->pages.size(), 1u);
  auto& words = r->pages[0].words;
  ASSERT_EQ(words.size(), 3u);
  EXPECT_EQ(words[0].text, "Total");
  EXPECT_FLOAT_EQ(words[0].left, 0.1F);
  EXPECT_FLOAT_EQ(words[0].bottom, 0.82F);
  EXPECT_EQ(words[1].text, "119,00");
  EXPECT_FLOAT_EQ(words[1].right, 0.8F);
  EXPECT_FLOAT_EQ(words[2].top, 0.0F);
  EXPECT_FLOAT_EQ(words[2].bottom, 0.05F);
}

TEST(document_ai, legacy_quality_entity) {
  auto r = parse_document_ai_response(R"({"document":{"text":"abc","pages":[{"pageNumber":1}],
    "entities":[{"type":"quality_score","confidence":0.03,"pageAnchor":{"pageRefs":[{}]},
      "properties":[{"type":"quality/defect_blurry","confidence":0.96},
                    {"type":"quality/defect_dark","confidence":"0.5"}]}]}})");
  ASSERT_TRUE(r.ok()) << r.error().describe();
  ASSERT_EQ(r->pages.size(), 1u);
  EXPECT_DOUBLE_EQ(r->pages[0].quality_score, 0.03);
  EXPECT_DOUBLE_EQ(r->quality_score, 0.03);
  ASSERT_EQ(r->pages[0].defects.size(), 2u);
  EXPECT_EQ(r->pages[0].defects[0].type, "blurry");
  EXPECT_DOUBLE_EQ(r->pages[0].defects[1].confidence, 0.5);
}

TEST(document_ai, repeated_segments_and_defects_cannot_multiply_memory) {
  // Every segment repeating the whole text, and one quality entity with many defects applied to
  // many pages: the answer's size must bound the result's, not its square.
  std::string segs, pages, defects;
  for (int i = 0; i < 1000; ++i)
    segs += std::string{i ? "," : ""} + R"({"endIndex":"99999"})";
  for (int i = 0; i < 1000; ++i)
    pages += std::string{i ? "," : ""} + "{}";
  for (int i = 0; i < 1000; ++i)
    defects += std::string{i ? "," : ""} + R"({"type":"quality/defect_blurry","confidence":1})";
  auto r = parse_document_ai_response(
      R"({"document":{"text":")" + std::string(1000, 'x')
      + R"(","pages":[{"pageNumber":1e300,"layout":{"textAnchor":{"textSegments":[)" + segs
      + "]}}}," + pages
      + R"(],"entities":[{"type":"quality_score",)"
        R"("confidence":0.5,"properties":[)"
      + defects + "]}]}}");
  ASSERT_TRUE(r.ok()) << r.error().describe();
  EXPECT_EQ(r->pages[0].number, 1) << "an unreadable page number is the page's position";
  EXPECT_EQ(r->pages[0].text, std::string(1000, 'x'));
  ASSERT_EQ(r->pages.size(), 1001u);
  EXPECT_EQ(r->pages[0].defects.size(), 32u);
  EXPECT_EQ(r->pages[1000].defects.size(), 32u);
}

TEST(document_ai, deeply_nested_answers_are_bad_responses_not_crashes) {
  // A recursive JSON parser ran out of stack on a megabyte of '['.
  auto r = parse_document_ai_response(std::string(1 << 20, '['));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, "docai.bad_response");
}

TEST(document_ai, minimal_and_malformed_responses) {
  auto empty = parse_document_ai_response(R"({"document":{}})");
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ(empty->page_count, 0);
  auto text_only = parse_document_ai_response(R"({"document":{"text":"x"}})");
  ASSERT_TRUE(text_only.ok());
  EXPECT_EQ(text_only->page_count, 1);
  for (const char* bad : {"", "{", "[]", R"({"doc":{}})", R"({"document":"x"})"}) {
    auto r = parse_document_ai_response(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.error().code, "docai.bad_response");
    EXPECT_TRUE(r.error().transient());
  }
}

TEST(document_ai, errors_are_classified) {
  auto err = [](long status, const std::string& msg, const std::string& st) {
    return classify_document_ai_error(
        make_response(status, R"({"error":{"code":)" + std::to_string(status) + R"(,"message":")"
                                  + msg + R"(","status":")" + st + R"("}})"));
  };
  auto size = err(400, "Document size (34381195) exceeds the limit: 20971520.", "INVALID_ARGUMENT");
  EXPECT_TRUE(size.permanent());
  EXPECT_EQ(size.code, "docai.too_large");
  auto pages = err(400, "Document pages exceed the limit: 30 got 56", "INVALID_ARGUMENT");
  EXPECT_TRUE(pages.permanent());
  EXPECT_EQ(pages.code, "docai.too_many_pages");
  auto imageless = err(400, "Document pages in non-imageless mode exceed the limit: 15 got 18",
                       "INVALID_ARGUMENT");
  EXPECT_EQ(imageless.code, "docai.too_many_pages");
  EXPECT_TRUE(err(400, "Unsupported input file format.", "INVALID_ARGUMENT").permanent());
  EXPECT_EQ(err(401, "Request had invalid authentication credentials.", "UNAUTHENTICATED").code,
            "docai.unauthenticated");
  EXPECT_TRUE(err(403, "Permission denied", "PERMISSION_DENIED").permanent());
  EXPECT_TRUE(err(404, "Processor not found", "NOT_FOUND").permanent());
  auto quota = classify_document_ai_error(make_response(
      429, R"({"error":{"code":429,"message":"Quota exceeded","status":"RESOURCE_EXHAUSTED"}})",
      {{"retry-after", "7"}}));
  EXPECT_TRUE(quota.transient());
  EXPECT_EQ(quota.retry_after_ms, 7000);
  // LONG_MAX seconds * 1000 overflowed; the wait is clamped to max_retry_after_ms.
  auto huge = classify_document_ai_error(
      make_response(429, "", {{"retry-after", "99999999999999999999"}}));
  EXPECT_EQ(huge.retry_after_ms, max_retry_after_ms);
  EXPECT_TRUE(err(500, "Internal error", "INTERNAL").transient());
  EXPECT_TRUE(err(503, "The service is currently unavailable.", "UNAVAILABLE").transient());
  // Bodies that are not Google's JSON (a proxy's HTML page) still classify by status.
  EXPECT_TRUE(
      classify_document_ai_error(make_response(502, "<html>bad gateway</html>")).transient());
  EXPECT_TRUE(classify_document_ai_error(make_response(403, "")).permanent());
}

TEST(document_ai, adapter_sends_the_token_and_sniffed_mime_type) {
  test::fake_http_client http;
  http.respond_with(make_response(200, R"({"document":{"text":"hi","pages":[{"pageNumber":1,
    "imageQualityScores":{"qualityScore":0.9}}]}})"));
  document_ai_options opts;
  opts.endpoint = "http://127.0.0.1:1/v1/projects/p/locations/eu/processors/x:process";
  opts.access_token = "ya29.secret-token";
  document_ai_transcriber t{http, opts};
  transcription_request req;
  req.bytes = test::read_binary(test::corpus_dir() + "/inv01_en_classic_lowres.png");
  req.mime_type = "application/octet-stream";
  auto r = test::transcribe_and_wait(t, req, std::chrono::seconds(5));
  ASSERT_TRUE(r.has_value());
  ASSERT_TRUE(r->ok()) << r->error().describe();
  EXPECT_DOUBLE_EQ((*r)->quality_score, 0.9);
  ASSERT_EQ(http.request_count(), 1u);
  auto last = http.requests().back();
  EXPECT_EQ(last.method, "POST");
  EXPECT_EQ(last.url, opts.endpoint);
  bool auth = false;
  for (const auto& [k, v] : last.headers)
    auth = auth || (k == "Authorization" && v == "Bearer ya29.secret-token");
  EXPECT_TRUE(auth);
  EXPECT_NE(last.body.find(R"("mimeType":"image/png")"), std::string::npos);

  // Errors never carry the token.
  http.respond_with(
      make_response(401, R"({"error":{"code":401,"message":"bad","status":"UNAUTHENTICATED"}})"));
  auto denied = test::transcribe_and_wait(t, req, std::chrono::seconds(5));
  ASSERT_TRUE(denied.has_value());
  ASSERT_FALSE(denied->ok());
  EXPECT_EQ(denied->error().describe().find("secret"), std::string::npos);

  // Local checks before any request.
  auto before = http.request_count();
  transcription_request empty;
  auto e = test::transcribe_and_wait(t, empty, std::chrono::seconds(5));
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->error().code, "ocr.empty_file");
  transcription_request txt;
  txt.bytes = "hello";
  txt.mime_type = "text/plain";
  auto u = test::transcribe_and_wait(t, txt, std::chrono::seconds(5));
  EXPECT_EQ(u->error().code, "ocr.unsupported_type");
  opts.max_file_bytes = 10;
  document_ai_transcriber small{http, opts};
  auto big = test::transcribe_and_wait(small, req, std::chrono::seconds(5));
  EXPECT_EQ(big->error().code, "ocr.too_large");
  EXPECT_EQ(http.request_count(), before);
}
